// SPDX-License-Identifier: BSD-3-Clause
// vmap: equal to a host loop of the per-example function, in_axes and
// out_axes, nesting, per-team maps, pmap of vmap at any rank count, errors.

#include "support/mpi_test.hpp"

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/spmd/vmap.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

using Catch::Matchers::ContainsSubstring;

namespace {
using Host = Kokkos::HostSpace;
using Mem = Kokkos::DefaultExecutionSpace::memory_space;

// One example: y(i) = sum_k w(k) x(i + k) + shift, a 1-D "valid" convolution.
struct Conv1D {
  template <class X, class W, class S, class Y>
  KOKKOS_FUNCTION void operator()(const X& x, const W& w, const S& shift, const Y& y) const {
    for (std::size_t i = 0; i < y.extent(0); ++i) {
      double s = shift;
      for (std::size_t k = 0; k < w.extent(0); ++k) s += w(k) * x(i + k);
      y(i) = s;
    }
  }
};

// Conv1D with the shape of its output, from one example of each input: what
// lets kpmap::returns<double*>() allocate without a shape function.
struct SizedConv1D : Conv1D {
  template <class X, class W>
  std::array<std::size_t, 1> shape(const X& x, const W& w, double) const {
    return {std::size_t(x.extent(0) - w.extent(0) + 1)};
  }
};

// The same example with its outputs spread over a team.
struct TeamConv1D {
  template <class Member, class X, class W, class S, class Y>
  KOKKOS_FUNCTION void operator()(const Member& team, const X& x, const W& w, const S& shift,
                                  const Y& y) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, y.extent(0)), [&](std::size_t i) {
      double s = shift;
      for (std::size_t k = 0; k < w.extent(0); ++k) s += w(k) * x(i + k);
      y(i) = s;
    });
  }
};

// One example: the sum and the maximum of a row, into two numbers.
struct RowStats {
  template <class R, class S, class M>
  KOKKOS_FUNCTION void operator()(const R& row, const S& sum, const M& max) const {
    double s = 0, m = row(0);
    for (std::size_t i = 0; i < row.extent(0); ++i) {
      s += row(i);
      m = row(i) > m ? row(i) : m;
    }
    sum() = s;
    max() = m;
  }
};

// Random multiples of 1/64 in [-4, 4): every product and sum below is exact,
// so the comparisons can be bitwise whatever order or contraction a compiler picks.
template <class V>
void fill(const V& v, std::uint64_t seed) {
  auto h = Kokkos::create_mirror_view(v);
  auto* p = h.data();
  for (std::size_t i = 0; i < h.size(); ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    p[i] = static_cast<double>(static_cast<int>((seed >> 33) % 512) - 256) / 64.0;
  }
  Kokkos::deep_copy(v, h);
}

// Element by element, by index: a device View's default layout (LayoutLeft
// on a GPU) need not be the host's, so their memory orders differ.
template <class A, class B>
bool bitwise_equal(const A& a, const B& b) {
  static_assert(kpmap::detail::rank_v<A> == kpmap::detail::rank_v<B>);
  auto ha = Kokkos::create_mirror_view_and_copy(Host(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Host(), b);
  const auto e = kpmap::detail::extents_of(ha);
  for (int d = 0; d < kpmap::detail::rank_v<A>; ++d) {
    if (ha.extent(d) != hb.extent(d)) return false;
  }
  for (std::size_t k = 0; k < ha.size(); ++k) {
    std::size_t idx[8];
    kpmap::detail::unflatten(k, e, kpmap::detail::rank_v<A>, idx);
    if (kpmap::detail::at(ha, idx) != kpmap::detail::at(hb, idx)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("vmap equals a host loop of the per-example function, bit for bit", "[vmap]") {
  const std::size_t B = 7, n = 20, K = 5;
  Kokkos::View<double**, Mem> x("x", B, n), y("y", B, n - K + 1);
  Kokkos::View<double*, Mem> w("w", K);
  fill(x, 1);
  fill(w, 2);
  const double shift = 0.25;

  auto conv =
      kpmap::vmap(Conv1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                  kpmap::out_axes(kpmap::batched));
  conv(x, w, shift, y);

  // The reference: the same function, example by example, on host copies.
  auto hx = Kokkos::create_mirror_view_and_copy(Host(), x);
  auto hw = Kokkos::create_mirror_view_and_copy(Host(), w);
  Kokkos::View<double**, Host> expect("expect", B, n - K + 1);
  for (std::size_t b = 0; b < B; ++b) {
    Conv1D{}(Kokkos::subview(hx, b, Kokkos::ALL), hw, shift,
             Kokkos::subview(expect, b, Kokkos::ALL));
  }
  CHECK(bitwise_equal(y, expect));

  SECTION("returned outputs equal outputs written in place") {
    auto make =
        kpmap::vmap(Conv1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                    kpmap::out_axes(kpmap::batched),
                    kpmap::returns<double*>([](const auto& xs, const auto& ws, double) {
                      return std::array<std::size_t, 1>{xs.extent(1) - ws.extent(0) + 1};
                    }));
    auto y2 = make(x, w, shift);
    static_assert(std::is_same_v<decltype(y2), Kokkos::View<double**, Kokkos::LayoutRight, Mem>>);
    CHECK(y2.extent(0) == B);
    CHECK(y2.extent(1) == n - K + 1);
    CHECK(bitwise_equal(y2, expect));
  }

  SECTION("the shortest form: out_axes defaulted, the shape from the function") {
    // jax.vmap(f, in_axes=(0, None, None))(x, w, shift): out_axes=0 is JAX's
    // default, and SizedConv1D::shape gives one example's output extents.
    auto y2 = kpmap::vmap(SizedConv1D{},
                          kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                          kpmap::returns<double*>())(x, w, shift);
    REQUIRE(y2.extent(0) == B);
    REQUIRE(y2.extent(1) == n - K + 1);
    CHECK(bitwise_equal(y2, expect));
    // An empty batch asks the function for no example's shape.
    Kokkos::View<double**, Mem> none("none", 0, n);
    auto y0 = kpmap::vmap(SizedConv1D{},
                          kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                          kpmap::returns<double*>())(none, w, shift);
    CHECK(y0.extent(0) == 0);
  }

  SECTION("batch axes other than the first, for inputs and outputs") {
    // x transposed: (n, B), batch along axis 1; the output batch along axis 1 too.
    Kokkos::View<double**, Mem> xt("xt", n, B), yt("yt", n - K + 1, B);
    Kokkos::parallel_for(
        "transpose", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {B, n}),
        KOKKOS_LAMBDA(std::size_t b, std::size_t i) { xt(i, b) = x(b, i); });
    auto conv_t = kpmap::vmap(
        Conv1D{}, kpmap::in_axes(kpmap::batched_at<1>, kpmap::broadcast, kpmap::broadcast),
        kpmap::out_axes(kpmap::batched_at<1>));
    conv_t(xt, w, shift, yt);
    auto h = Kokkos::create_mirror_view_and_copy(Host(), yt);
    bool same = true;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i + K <= n; ++i) same = same && h(i, b) == expect(b, i);
    CHECK(same);
  }

  SECTION("a batched weight: in_axes says which arguments carry the batch") {
    Kokkos::View<double**, Mem> ws("ws", B, K);
    fill(ws, 3);
    auto both =
        kpmap::vmap(Conv1D{}, kpmap::in_axes(kpmap::batched, kpmap::batched, kpmap::broadcast),
                    kpmap::out_axes(kpmap::batched));
    both(x, ws, shift, y);
    auto hws = Kokkos::create_mirror_view_and_copy(Host(), ws);
    for (std::size_t b = 0; b < B; ++b) {
      Conv1D{}(Kokkos::subview(hx, b, Kokkos::ALL), Kokkos::subview(hws, b, Kokkos::ALL), shift,
               Kokkos::subview(expect, b, Kokkos::ALL));
    }
    CHECK(bitwise_equal(y, expect));
  }

  SECTION("one team per example") {
    auto team_conv = kpmap::vmap(kpmap::per_team, TeamConv1D{},
                                 kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                                 kpmap::out_axes(kpmap::batched));
    Kokkos::View<double**, Mem> y3("y3", B, n - K + 1);
    team_conv(x, w, shift, y3);
    CHECK(bitwise_equal(y3, expect));
  }
}

TEST_CASE("several outputs, and one number per example", "[vmap]") {
  const std::size_t B = 5, n = 9;
  Kokkos::View<double**, Mem> x("x", B, n);
  fill(x, 4);
  // Per example: the sum and the maximum of a row, as two returned outputs.
  auto stats = kpmap::vmap(RowStats{}, kpmap::in_axes(kpmap::batched), kpmap::returns<double>(),
                           kpmap::returns<double>());  // out_axes=(0, 0), JAX's default
  auto [sum, max] = stats(x);
  static_assert(std::is_same_v<decltype(sum), Kokkos::View<double*, Kokkos::LayoutRight, Mem>>);
  auto hx = Kokkos::create_mirror_view_and_copy(Host(), x);
  auto hs = Kokkos::create_mirror_view_and_copy(Host(), sum);
  auto hm = Kokkos::create_mirror_view_and_copy(Host(), max);
  bool same = true;
  for (std::size_t b = 0; b < B; ++b) {
    double s = 0, m = hx(b, 0);
    for (std::size_t i = 0; i < n; ++i) {
      s += hx(b, i);
      m = hx(b, i) > m ? hx(b, i) : m;
    }
    same = same && hs(b) == s && hm(b) == m;
  }
  CHECK(same);
}

TEST_CASE("a vmap of a vmap is one map over both batch axes", "[vmap]") {
  // x: (B1, B2, n); the inner map runs over B2 with w broadcast, the outer over B1.
  const std::size_t B1 = 3, B2 = 4, n = 12, K = 3;
  Kokkos::View<double***, Mem> x("x", B1, B2, n), y("y", B1, B2, n - K + 1);
  Kokkos::View<double*, Mem> w("w", K);
  fill(x, 5);
  fill(w, 6);
  const auto axes = kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast);
  auto inner = kpmap::vmap(Conv1D{}, axes, kpmap::out_axes(kpmap::batched));
  auto outer = kpmap::vmap(inner, axes, kpmap::out_axes(kpmap::batched));
  static_assert(decltype(outer)::depth == 2);
  outer(x, w, -1.5, y);

  auto hx = Kokkos::create_mirror_view_and_copy(Host(), x);
  auto hw = Kokkos::create_mirror_view_and_copy(Host(), w);
  Kokkos::View<double***, Host> expect("expect", B1, B2, n - K + 1);
  for (std::size_t a = 0; a < B1; ++a)
    for (std::size_t b = 0; b < B2; ++b)
      Conv1D{}(Kokkos::subview(hx, a, b, Kokkos::ALL), hw, -1.5,
               Kokkos::subview(expect, a, b, Kokkos::ALL));
  CHECK(bitwise_equal(y, expect));

  // Inner batch along axis 1 of the whole array: outer over axis 0, inner over
  // what was axis 2 (axis 1 of an example), i.e. x viewed as (B1, n, B2).
  Kokkos::View<double***, Mem> xs("xs", B1, n, B2), ys("ys", B1, n - K + 1, B2);
  Kokkos::parallel_for(
      "swap", Kokkos::MDRangePolicy<Kokkos::Rank<3>>({0, 0, 0}, {B1, B2, n}),
      KOKKOS_LAMBDA(std::size_t a, std::size_t b, std::size_t i) { xs(a, i, b) = x(a, b, i); });
  auto inner1 = kpmap::vmap(
      Conv1D{}, kpmap::in_axes(kpmap::batched_at<1>, kpmap::broadcast, kpmap::broadcast),
      kpmap::out_axes(kpmap::batched_at<1>));
  kpmap::vmap(inner1, axes, kpmap::out_axes(kpmap::batched))(xs, w, -1.5, ys);
  auto hys = Kokkos::create_mirror_view_and_copy(Host(), ys);
  bool same = true;
  for (std::size_t a = 0; a < B1; ++a)
    for (std::size_t b = 0; b < B2; ++b)
      for (std::size_t i = 0; i + K <= n; ++i) same = same && hys(a, i, b) == expect(a, b, i);
  CHECK(same);
}

TEST_CASE("pmap of vmap at N ranks equals one device's vmap over the whole batch", "[vmap][mpi]") {
  const std::size_t n = 16, K = 4;
  auto conv =
      kpmap::vmap(Conv1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                  kpmap::out_axes(kpmap::batched),
                  kpmap::returns<double*>([](const auto& xs, const auto& ws, double) {
                    return std::array<std::size_t, 1>{xs.extent(1) - ws.extent(0) + 1};
                  }));
  // 10 examples split unevenly over 3 and 4 ranks; 2 leave ranks with none.
  for (const std::size_t B : {std::size_t(10), std::size_t(2)}) {
    CAPTURE(B);
    Kokkos::View<double**, Mem> x("x", B, n);
    Kokkos::View<double*, Mem> w("w", K);
    fill(x, 7 + B);  // the same on every rank
    fill(w, 8);
    auto whole = conv(x, w, 0.5);  // one device, the whole batch
    auto sharded = kpmap::pmap("devices", conv,
                               kpmap::in_axes(kpmap::sharded, kpmap::replicated, kpmap::replicated),
                               kpmap::out_axes(kpmap::gathered))(x, w, 0.5);
    CHECK(kpmap::test::all_ranks(bitwise_equal(sharded, whole)));
  }
}

TEST_CASE("mismatched batch sizes name both arguments and sizes", "[vmap]") {
  Kokkos::View<double**, Mem> x("x", 7, 10), x6("x6", 6, 10), y("y", 7, 8), y5("y5", 5, 8);
  Kokkos::View<double*, Mem> w("w", 3);
  auto both =
      kpmap::vmap(Conv1D{}, kpmap::in_axes(kpmap::batched, kpmap::batched, kpmap::broadcast),
                  kpmap::out_axes(kpmap::batched));
  Kokkos::View<double**, Mem> ws("ws", 6, 3);
  CHECK_THROWS_WITH(both(x, ws, 0.0, y),
                    "kpmap::vmap: argument 2 has 6 examples along its batch axis 0, but "
                    "argument 1 has 7");
  auto conv =
      kpmap::vmap(Conv1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                  kpmap::out_axes(kpmap::batched));
  CHECK_THROWS_WITH(conv(x, w, 0.0, y5),
                    "kpmap::vmap: argument 4 (an output) has 5 examples along its batch axis 0, "
                    "but argument 1 has 7");
  // A nested map checks its inner batch too (here: examples of 10 against 9).
  Kokkos::View<double***, Mem> x3("x3", 2, 10, 4), y3("y3", 2, 9, 8);
  auto inner =
      kpmap::vmap(Conv1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                  kpmap::out_axes(kpmap::batched));
  CHECK_THROWS_WITH(
      kpmap::vmap(inner, kpmap::in_axes(kpmap::batched, kpmap::broadcast, kpmap::broadcast),
                  kpmap::out_axes(kpmap::batched))(x3, w, 0.0, y3),
      "kpmap::vmap: argument 4 (an output) has 9 examples along its batch axis 0, "
      "but argument 1 has 10");
  (void)x6;
}
