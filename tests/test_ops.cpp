// SPDX-License-Identifier: BSD-3-Clause
// The array operations of kpmap/spmd/ops.hpp: each against the same sums
// written as host loops or closed forms, on LayoutRight, LayoutLeft and
// strided Views, their errors naming the shapes, and their kernels counted
// (one each, on the Views' own execution space); and the row-major range
// their kernels and the library's use, with corners as they come. Uneven
// shapes against host loops: test_ops_shapes.cpp (the same executable).

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

// v(i, j) = f(i, j), filled on the device.
template <class V, class F>
void fill2(const V& v, F f) {
  Kokkos::parallel_for(
      "test_ops::fill",
      Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>(
          {0, 0}, {std::int64_t(v.extent(0)), std::int64_t(v.extent(1))}),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) { v(i, j) = f(double(i), double(j)); });
}
template <class V, class F>
void fill1(const V& v, F f) {
  Kokkos::parallel_for(
      "test_ops::fill", Kokkos::RangePolicy<Exec>(0, v.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i) { v(i) = f(double(i)); });
}
using kpmap::test::host;

struct Aij {
  KOKKOS_FUNCTION double operator()(double i, double j) const { return i + 2 * j; }
};
struct Bjl {
  KOKKOS_FUNCTION double operator()(double j, double l) const { return j - l + 0.5; }
};
struct Ones {
  KOKKOS_FUNCTION double operator()(double) const { return 1.0; }
};
struct Iota {
  KOKKOS_FUNCTION double operator()(double i) const { return i + 1; }
};
}  // namespace

TEMPLATE_TEST_CASE("matmul is the product of the host loop, in any layout", "[ops]",
                   Kokkos::LayoutRight, Kokkos::LayoutLeft) {
  const std::size_t m = 5, k = 4, n = 3;
  Kokkos::View<double**, TestType, Exec> a("a", m, k);
  Kokkos::View<double**, TestType, Exec> b("b", k, n);
  fill2(a, Aij{});
  fill2(b, Bjl{});
  const auto c = kpmap::matmul(a, b);
  REQUIRE(c.extent(0) == m);
  REQUIRE(c.extent(1) == n);
  const auto hc = host(c);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t l = 0; l < n; ++l) {
      double s = 0;
      for (std::size_t j = 0; j < k; ++j) s += Aij{}(i, j) * Bjl{}(j, l);
      CHECK(hc(i, l) == s);
    }
  }
  // A matrix times a vector of ones: the rows' sums, k i + k (k - 1).
  Kokkos::View<double*, Exec> x("x", k);
  fill1(x, Ones{});
  const auto y = kpmap::matmul(Exec(), a, x);
  const auto hy = host(y);
  REQUIRE(hy.extent(0) == m);
  for (std::size_t i = 0; i < m; ++i) CHECK(hy(i) == double(k * i + k * (k - 1)));
}

TEST_CASE("matmul and sums of strided blocks (a shard_map body's)", "[ops]") {
  // Columns 1 to 3 of a 6 x 5 matrix: a block with a stride.
  Kokkos::View<double**, Exec> whole("whole", 6, 5);
  fill2(whole, Aij{});
  const auto a = Kokkos::subview(whole, Kokkos::ALL, Kokkos::make_pair(1, 4));
  Kokkos::View<double*, Exec> x("x", 3);
  fill1(x, Iota{});
  const auto hy = host(kpmap::matmul(a, x));
  for (std::size_t i = 0; i < 6; ++i) {
    // sum over c = 1..3 of (i + 2c)(c): 6 i + 2 (1 + 4 + 9)
    CHECK(hy(i) == 6.0 * i + 28.0);
  }
  // Sums over each axis and of everything.
  const auto cols = host(kpmap::sum(a, 0));  // sum_i (i + 2c) = 15 + 12 c
  const auto rows = host(kpmap::sum(a, 1));  // sum_c (i + 2c) = 3 i + 12
  REQUIRE(cols.extent(0) == 3);
  REQUIRE(rows.extent(0) == 6);
  for (std::size_t c = 0; c < 3; ++c) CHECK(cols(c) == 15.0 + 12.0 * (c + 1));
  for (std::size_t i = 0; i < 6; ++i) CHECK(rows(i) == 3.0 * i + 12.0);
  CHECK(kpmap::sum(a) == 45.0 + 72.0);
  CHECK(kpmap::sum(x) == 6.0);
  CHECK_THROWS_WITH(kpmap::sum(a, 2), ContainsSubstring("axis 2 of a matrix of shape (6, 3)"));
}

TEST_CASE("dot, axpy and the elementwise operations", "[ops]") {
  const std::size_t n = 100;
  Kokkos::View<double*, Exec> x("x", n);
  Kokkos::View<double*, Exec> one("one", n);
  fill1(x, Iota{});
  fill1(one, Ones{});
  CHECK(kpmap::dot(x, one) == n * (n + 1) / 2.0);
  CHECK(kpmap::dot(Exec(), x, x) == n * (n + 1) * (2 * n + 1) / 6.0);
  kpmap::axpy(2.0, x, one);  // one = 1 + 2 (i + 1)
  const auto h = host(one);
  for (std::size_t i = 0; i < n; ++i) CHECK(h(i) == 2.0 * i + 3.0);
  const auto sum = host(kpmap::add(x, one));        // 3 i + 4
  const auto prod = host(kpmap::multiply(x, one));  // (i + 1)(2 i + 3)
  const auto twice = host(kpmap::scale(2.0, x));    // 2 i + 2
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(sum(i) == 3.0 * i + 4.0);
    CHECK(prod(i) == (i + 1.0) * (2.0 * i + 3.0));
    CHECK(twice(i) == 2.0 * i + 2.0);
  }
  // Rank 2, one of them LayoutLeft: the result is LayoutRight.
  Kokkos::View<double**, Exec> a("a", 3, 4);
  Kokkos::View<double**, Kokkos::LayoutLeft, Exec> b("b", 3, 4);
  fill2(a, Aij{});
  fill2(b, Bjl{});
  const auto hab = host(kpmap::multiply(a, b));
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) CHECK(hab(i, j) == Aij{}(i, j) * Bjl{}(i, j));
  }
  // Shapes that differ are named.
  Kokkos::View<double**, Exec> c("c", 4, 3);
  CHECK_THROWS_WITH(kpmap::add(a, c),
                    ContainsSubstring("kpmap::add: the shapes (3, 4) and (4, 3)"));
  CHECK_THROWS_WITH(kpmap::matmul(a, a),
                    ContainsSubstring("kpmap::matmul: (3, 4) @ (3, 4): the inner extents differ"));
  Kokkos::View<double*, Exec> short_one("short", 3);
  CHECK_THROWS_WITH(kpmap::dot(x, short_one),
                    ContainsSubstring("kpmap::dot: the shapes (100,) and (3,) differ"));
  CHECK_THROWS_WITH(kpmap::axpy(1.0, x, short_one), ContainsSubstring("kpmap::axpy"));
}

TEMPLATE_TEST_CASE("max and min are NaN where any element is, as jnp.max and jnp.min", "[ops]",
                   double, float) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  // jnp.max([0, nan, 2, 3]) is nan; the NaN first, last, and after the
  // largest; a long array whose partial results join across threads.
  for (const std::vector<T>& values :
       {std::vector<T>{0, nan, 2, 3}, std::vector<T>{nan, 1, 2}, std::vector<T>{3, 1, nan},
        std::vector<T>{-1, 7, nan, 2, -8}}) {
    Kokkos::View<T*, Exec> a("a", values.size());
    auto h = Kokkos::create_mirror_view(a);
    for (std::size_t i = 0; i < values.size(); ++i) h(i) = values[i];
    Kokkos::deep_copy(a, h);
    CHECK(std::isnan(kpmap::max(a)));
    CHECK(std::isnan(kpmap::min(a)));
  }
  const std::size_t n = 100003;
  for (std::size_t at : {std::size_t(0), std::size_t(51234), n - 1}) {
    CAPTURE(at);
    Kokkos::View<T*, Exec> a("a", n);
    Kokkos::parallel_for(
        "test_ops::fill", Kokkos::RangePolicy<Exec>(0, n),
        KOKKOS_LAMBDA(std::int64_t i) { a(i) = std::size_t(i) == at ? nan : T(i % 97); });
    CHECK(std::isnan(kpmap::max(a)));
    CHECK(std::isnan(kpmap::min(a)));
    // Without the NaN, the numbers' own max and min.
    Kokkos::parallel_for(
        "test_ops::fill", Kokkos::RangePolicy<Exec>(0, n),
        KOKKOS_LAMBDA(std::int64_t i) { a(i) = std::size_t(i) == at ? T(-5) : T(i % 97); });
    CHECK(kpmap::max(a) == T(96));
    CHECK(kpmap::min(a) == T(-5));
  }
  // Along an axis: the column or row that holds the NaN gives NaN, the others
  // their numbers' max and min.
  Kokkos::View<T**, Exec> m("m", 3, 4);
  auto hm = Kokkos::create_mirror_view(m);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) hm(i, j) = T(i * 4 + j);
  }
  hm(1, 2) = nan;
  Kokkos::deep_copy(m, hm);
  const auto cols = host(kpmap::max(m, 0));
  const auto rows = host(kpmap::min(m, 1));
  CHECK(cols(0) == T(8));
  CHECK(cols(1) == T(9));
  CHECK(std::isnan(cols(2)));
  CHECK(cols(3) == T(11));
  CHECK(rows(0) == T(0));
  CHECK(std::isnan(rows(1)));
  CHECK(rows(2) == T(8));
}

TEST_CASE("float Views stay float", "[ops]") {
  Kokkos::View<float**, Exec> a("a", 2, 3);
  Kokkos::View<float*, Exec> x("x", 3);
  Kokkos::deep_copy(a, 2.0f);
  Kokkos::deep_copy(x, 0.5f);
  const auto y = kpmap::matmul(a, x);
  static_assert(std::is_same_v<decltype(y)::value_type, float>);
  CHECK(host(y)(1) == 3.0f);
  CHECK(kpmap::sum(kpmap::scale(2.0f, x)) == 3.0f);
}

TEST_CASE("row_major_range takes a View's extents as they come", "[ops]") {
  // std::size_t extents in braces, no casts: the corners take any integral type.
  Kokkos::View<double**, Exec> a("a", 3, 5);
  Kokkos::parallel_for(
      "test_ops::fill", kpmap::row_major_range<2>({0, 0}, {a.extent(0), a.extent(1)}),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) { a(i, j) = double(i * 5 + j); });
  CHECK(kpmap::sum(a) == 14.0 * 15.0 / 2.0);
  Kokkos::parallel_for(
      "test_ops::fill", kpmap::row_major_range<2>(Exec(), {1u, 1u}, {a.extent(0), a.extent(1)}),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) { a(i, j) = 0; });
  CHECK(kpmap::sum(a) == 0 + 1 + 2 + 3 + 4 + 5 + 10);  // row 0 and column 0 are left
}

namespace {
// The kernels kpmap's operations start: (name, Kokkos Tools' device type).
std::vector<std::pair<std::string, std::uint32_t>>& ops_kernels() {
  static std::vector<std::pair<std::string, std::uint32_t>> k;
  return k;
}
void record_ops_kernel(const char* name, std::uint32_t device_id, std::uint64_t*) {
  if (std::strncmp(name, "kpmap::", 7) == 0) ops_kernels().emplace_back(name, device_id >> 24);
}
// The kernels `call` starts.
template <class F>
std::vector<std::pair<std::string, std::uint32_t>> kernels_of(F&& call) {
  namespace tools = Kokkos::Tools::Experimental;
  ops_kernels().clear();
  tools::set_begin_parallel_for_callback(record_ops_kernel);
  tools::set_begin_parallel_reduce_callback(record_ops_kernel);
  call();
  tools::set_begin_parallel_for_callback(nullptr);
  tools::set_begin_parallel_reduce_callback(nullptr);
  return ops_kernels();
}
template <class E>
std::uint32_t space_id() {
  return Kokkos::Tools::Experimental::device_id(E()) >> 24;
}
// `call` starts one kernel, named `name`, on execution space E.
template <class E, class F>
void one_kernel(F&& call, const char* name) {
  const auto k = kernels_of(call);
  CAPTURE(name);
  REQUIRE(k.size() == 1);
  CHECK(k[0].first == name);
  CHECK(k[0].second == space_id<E>());
}
}  // namespace

TEMPLATE_TEST_CASE("each elementwise operation and sum is one kernel on its Views' space", "[ops]",
                   Kokkos::DefaultExecutionSpace, Kokkos::DefaultHostExecutionSpace) {
  // Views in TestType's memory: the kernel runs on TestType (in an OpenMP
  // or GPU build the host Views' kernels run on the host, not the default).
  using M = typename TestType::memory_space;
  Kokkos::View<double**, M> a("a", 4, 3), b("b", 4, 3);
  const auto one = [](auto&& call, const char* name) { one_kernel<TestType>(call, name); };
  one([&] { kpmap::add(a, b); }, "kpmap::add");
  one([&] { kpmap::multiply(a, b); }, "kpmap::multiply");
  one([&] { kpmap::scale(2.0, a); }, "kpmap::scale");
  one([&] { kpmap::sum(a, 0); }, "kpmap::sum");
  one([&] { kpmap::sum(a, 1); }, "kpmap::sum");
  one([&] { (void)kpmap::sum(a); }, "kpmap::sum");
}

TEMPLATE_TEST_CASE("each new operation is one kernel on its Views' space", "[ops]",
                   Kokkos::DefaultExecutionSpace, Kokkos::DefaultHostExecutionSpace) {
  using M = typename TestType::memory_space;
  Kokkos::View<double**, M> a("a", 4, 3), b("b", 4, 3);
  Kokkos::deep_copy(a, 1.0);
  Kokkos::deep_copy(b, 2.0);
  Kokkos::View<int**, M> c("c", 4, 3);
  Kokkos::View<double***, M> x("x", 2, 4, 3), y("y", 2, 3, 5);
  const auto one = [](auto&& call, const char* name) { one_kernel<TestType>(call, name); };
  one([&] { kpmap::subtract(a, b); }, "kpmap::subtract");
  one([&] { kpmap::divide(a, b); }, "kpmap::divide");
  one([&] { kpmap::maximum(a, b); }, "kpmap::maximum");
  one([&] { kpmap::minimum(a, b); }, "kpmap::minimum");
  one([&] { kpmap::exp(a); }, "kpmap::exp");
  one([&] { kpmap::log(a); }, "kpmap::log");
  one([&] { kpmap::tanh(a); }, "kpmap::tanh");
  one([&] { kpmap::sqrt(a); }, "kpmap::sqrt");
  one([&] { kpmap::abs(a); }, "kpmap::abs");
  one([&] { kpmap::relu(a); }, "kpmap::relu");
  one([&] { kpmap::where(c, a, b); }, "kpmap::where");
  one([&] { kpmap::zeros_like(a); }, "kpmap::zeros_like");
  one([&] { kpmap::ones_like(a); }, "kpmap::ones_like");
  one([&] { kpmap::full_like(a, 3.0); }, "kpmap::full_like");
  one([&] { kpmap::transpose(a); }, "kpmap::transpose");
  one([&] { (void)kpmap::mean(a); }, "kpmap::mean");
  one([&] { (void)kpmap::max(a); }, "kpmap::max");
  one([&] { (void)kpmap::min(a); }, "kpmap::min");
  one([&] { kpmap::mean(a, 0); }, "kpmap::mean");
  one([&] { kpmap::max(a, 1); }, "kpmap::max");
  one([&] { kpmap::min(a, 0); }, "kpmap::min");
  one([&] { (void)kpmap::norm(a); }, "kpmap::norm");
  one([&] { kpmap::matmul(x, y); }, "kpmap::matmul");
}
