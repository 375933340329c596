// SPDX-License-Identifier: BSD-3-Clause
// The array operations of kpmap/spmd/ops.hpp against host loops on uneven
// shapes and layouts: the elementwise operations, the reductions whole and
// along an axis, and batched matmul (their kernels are counted in
// test_ops.cpp, part of the same executable).

#include "support/mpi_test.hpp"
#include "support/views.hpp"

#include <kpmap/spmd/ops.hpp>

#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {
using Exec = Kokkos::DefaultExecutionSpace;
using kpmap::test::host;
}  // namespace

namespace {
// Values with both signs, no two alike in a row: v(i, j, k) on the host.
double value(std::size_t i, std::size_t j = 0, std::size_t k = 0) {
  return static_cast<double>((i * 7 + j * 3 + k * 5) % 11) - 5.25;
}
// A View of Exec's memory filled with value() (or f(value())) through its host mirror.
template <class V, class F>
V filled(V v, F f) {
  auto h = Kokkos::create_mirror_view(v);
  if constexpr (V::rank == 1) {
    for (std::size_t i = 0; i < h.extent(0); ++i) h(i) = f(value(i));
  } else if constexpr (V::rank == 2) {
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j) h(i, j) = f(value(i, j));
  } else {
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j)
        for (std::size_t k = 0; k < h.extent(2); ++k) h(i, j, k) = f(value(i, j, k));
  }
  Kokkos::deep_copy(v, h);
  return v;
}
template <class V>
V filled(V v) {
  return filled(v, [](double x) { return x; });
}
// Within a few units in the last place: Kokkos' math on a device need not
// round as the host's libm does.
bool close(double got, double want) {
  return std::abs(got - want) <= 4 * std::numeric_limits<double>::epsilon() * std::abs(want);
}
}  // namespace

TEST_CASE("the elementwise operations match host loops on uneven shapes and layouts", "[ops]") {
  // Rank 1 (7), rank 2 LayoutLeft (5 x 3), a strided block of a 6 x 5
  // matrix (5 x 3), and rank 3 (2 x 3 x 4).
  const auto v = filled(Kokkos::View<double*, Exec>("v", 7));
  const auto w = filled(Kokkos::View<double*, Exec>("w", 7), [](double x) { return 2 - x; });
  Kokkos::View<double**, Exec> big("big", 6, 5);
  filled(big);
  const auto block = Kokkos::subview(big, std::make_pair(1, 6), std::make_pair(1, 4));
  const auto m = filled(Kokkos::View<double**, Kokkos::LayoutLeft, Exec>("m", 5, 3));
  const auto t = filled(Kokkos::View<double***, Exec>("t", 2, 3, 4));
  const auto t2 =
      filled(Kokkos::View<double***, Exec>("t2", 2, 3, 4), [](double x) { return x * x + 1; });

  const auto hv = host(v), hw = host(w);
  const auto sub = host(kpmap::subtract(v, w)), quo = host(kpmap::divide(v, w));
  const auto hi = host(kpmap::maximum(v, w)), lo = host(kpmap::minimum(v, w));
  const auto ab = host(kpmap::abs(v)), re = host(kpmap::relu(v));
  const auto ex = host(kpmap::exp(v)), th = host(kpmap::tanh(v));
  const auto positive = kpmap::add(kpmap::abs(v), kpmap::full_like(v, 0.25));
  const auto lg = host(kpmap::log(positive)), sq = host(kpmap::sqrt(positive));
  for (std::size_t i = 0; i < 7; ++i) {
    CAPTURE(i);
    CHECK(sub(i) == hv(i) - hw(i));
    CHECK(quo(i) == hv(i) / hw(i));
    CHECK(hi(i) == std::max(hv(i), hw(i)));
    CHECK(lo(i) == std::min(hv(i), hw(i)));
    CHECK(ab(i) == std::abs(hv(i)));
    CHECK(re(i) == (hv(i) > 0 ? hv(i) : 0.0));
    CHECK(close(ex(i), std::exp(hv(i))));
    CHECK(close(th(i), std::tanh(hv(i))));
    CHECK(close(lg(i), std::log(std::abs(hv(i)) + 0.25)));
    CHECK(close(sq(i), std::sqrt(std::abs(hv(i)) + 0.25)));
  }
  // Rank 2: a strided block against a LayoutLeft matrix of the same shape.
  const auto hb = host(kpmap::add(block, kpmap::zeros_like(block)));
  const auto hm = host(m);
  const auto d = host(kpmap::subtract(block, m));
  const auto mx = host(kpmap::maximum(block, m));
  const auto tr = host(kpmap::transpose(block));
  REQUIRE(tr.extent(0) == 3);
  REQUIRE(tr.extent(1) == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      CHECK(hb(i, j) == value(i + 1, j + 1));
      CHECK(d(i, j) == value(i + 1, j + 1) - value(i, j));
      CHECK(mx(i, j) == std::max(value(i + 1, j + 1), value(i, j)));
      CHECK(tr(j, i) == value(i + 1, j + 1));
      CHECK(hm(i, j) == value(i, j));
    }
  }
  // Rank 3, and where with a mask of another element type.
  Kokkos::View<bool***, Exec> mask("mask", 2, 3, 4);
  filled(mask, [](double x) { return x > 0; });
  const auto pick = host(kpmap::where(mask, t, t2));
  const auto prod = host(kpmap::multiply(t, t2));
  const auto ones = host(kpmap::ones_like(t));
  const auto sevens = host(kpmap::full_like(t, 7.0));
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      for (std::size_t k = 0; k < 4; ++k) {
        const double x = value(i, j, k), y = x * x + 1;
        CHECK(pick(i, j, k) == (x > 0 ? x : y));
        CHECK(prod(i, j, k) == x * y);
        CHECK(ones(i, j, k) == 1.0);
        CHECK(sevens(i, j, k) == 7.0);
      }
    }
  }
  CHECK_THROWS_WITH(kpmap::subtract(v, Kokkos::View<double*, Exec>("u", 6)),
                    ContainsSubstring("kpmap::subtract: the shapes (7,) and (6,) differ"));
  CHECK_THROWS_WITH(kpmap::where(Kokkos::View<bool***, Exec>("c", 2, 3, 3), t, t2),
                    ContainsSubstring("kpmap::where: the shapes (2, 3, 3) and (2, 3, 4) differ"));
}

TEST_CASE("sum, mean, max, min and norm, whole and along an axis, match host loops", "[ops]") {
  const auto v = filled(Kokkos::View<double*, Exec>("v", 7));
  Kokkos::View<double**, Exec> big("big", 6, 5);
  filled(big);
  const auto block = Kokkos::subview(big, std::make_pair(1, 6), std::make_pair(1, 4));  // 5 x 3
  const auto t = filled(Kokkos::View<double***, Exec>("t", 2, 3, 4));
  // Every element: sums of quarter-integers are exact in any order.
  double s1 = 0, s1sq = 0, mx1 = -1e300, mn1 = 1e300;
  for (std::size_t i = 0; i < 7; ++i) {
    s1 += value(i);
    s1sq += value(i) * value(i);
    mx1 = std::max(mx1, value(i));
    mn1 = std::min(mn1, value(i));
  }
  CHECK(kpmap::sum(v) == s1);
  CHECK(kpmap::mean(v) == s1 / 7);
  CHECK(kpmap::max(v) == mx1);
  CHECK(kpmap::min(Exec(), v) == mn1);
  CHECK(close(kpmap::norm(v), std::sqrt(s1sq)));
  double s3 = 0, mx3 = -1e300;
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k) {
        s3 += value(i, j, k);
        mx3 = std::max(mx3, value(i, j, k));
      }
  CHECK(kpmap::sum(t) == s3);
  CHECK(kpmap::max(t) == mx3);
  CHECK(kpmap::mean(t) == s3 / 24);
  // Along each axis of the 5 x 3 strided block.
  for (int axis = 0; axis < 2; ++axis) {
    CAPTURE(axis);
    const auto s = host(kpmap::sum(block, axis));
    const auto me = host(kpmap::mean(block, axis));
    const auto mx = host(kpmap::max(block, axis));
    const auto mn = host(kpmap::min(block, axis));
    const std::size_t n = axis == 0 ? 3 : 5, along = axis == 0 ? 5 : 3;
    REQUIRE(s.extent(0) == n);
    for (std::size_t r = 0; r < n; ++r) {
      double want = 0, hi = -1e300, low = 1e300;
      for (std::size_t q = 0; q < along; ++q) {
        const double x = axis == 0 ? value(q + 1, r + 1) : value(r + 1, q + 1);
        want += x;
        hi = std::max(hi, x);
        low = std::min(low, x);
      }
      CHECK(s(r) == want);
      CHECK(close(me(r), want / along));
      CHECK(mx(r) == hi);
      CHECK(mn(r) == low);
    }
  }
  CHECK(close(kpmap::norm(block), [&] {
    double q = 0;
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 3; ++j) q += value(i + 1, j + 1) * value(i + 1, j + 1);
    return std::sqrt(q);
  }()));
  CHECK_THROWS_WITH(kpmap::max(Kokkos::View<double*, Exec>("empty", 0)),
                    ContainsSubstring("kpmap::max: the array of shape (0,) has no elements"));
  CHECK_THROWS_WITH(kpmap::mean(block, 2),
                    ContainsSubstring("kpmap::mean: axis 2 of a matrix of shape (5, 3)"));
  CHECK(kpmap::sum(Kokkos::View<double*, Exec>("empty", 0)) == 0.0);
}

TEST_CASE("batched matmul multiplies each pair of matrices, on uneven shapes", "[ops]") {
  // (3, 2, 5) @ (3, 5, 4): integers, exact in any order.
  const auto a = filled(Kokkos::View<double***, Exec>("a", 3, 2, 5));
  Kokkos::View<double***, Kokkos::LayoutLeft, Exec> b("b", 3, 5, 4);
  filled(b, [](double x) { return x + 0.25; });
  const auto c = host(kpmap::matmul(a, b));
  REQUIRE(c.extent(0) == 3);
  REQUIRE(c.extent(1) == 2);
  REQUIRE(c.extent(2) == 4);
  for (std::size_t q = 0; q < 3; ++q)
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 4; ++j) {
        double want = 0;
        for (std::size_t k = 0; k < 5; ++k) want += value(q, i, k) * (value(q, k, j) + 0.25);
        CHECK(c(q, i, j) == want);
      }
  CHECK_THROWS_WITH(kpmap::matmul(a, Kokkos::View<double***, Exec>("d", 2, 5, 4)),
                    ContainsSubstring("kpmap::matmul: (3, 2, 5) @ (2, 5, 4): the batch extents "
                                      "differ"));
  CHECK_THROWS_WITH(kpmap::matmul(a, Kokkos::View<double***, Exec>("d", 3, 4, 4)),
                    ContainsSubstring("the inner extents differ"));
}
