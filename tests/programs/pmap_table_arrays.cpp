// SPDX-License-Identifier: BSD-3-Clause
// The JAX-to-kpmap table of docs/pmap.md, its lines on jnp's array
// operations, pytrees and checkpoints (pmap_table.cpp has the others and the
// program): each "// [row]" block as pmap_table.cpp describes.

#include "pmap_table.hpp"

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

namespace pmap_table {

void array_lines(const Ranks& ranks) {
  [[maybe_unused]] const int n = ranks.n;
  [[maybe_unused]] const int me = ranks.me;
  [[maybe_unused]] const double tri = ranks.tri;
  [[maybe_unused]] const int model = ranks.model;

  line([&] {
    // [row] `jnp.sum(a, axis=1)`, `jnp.sum(a)`, `a + b`, `a * b`, `2.0 * a`, `y + alpha * x`
    Kokkos::View<double**> a("a", 2, 3), b("b", 2, 3);
    Kokkos::deep_copy(a, 2.0);
    Kokkos::deep_copy(b, 3.0);
    const double alpha = 0.5;
    const Vector x = iota(3), y = iota(3);
    auto rows = kpmap::sum(a, 1);
    const double all = kpmap::sum(a);
    auto plus = kpmap::add(a, b);
    auto times = kpmap::multiply(a, b);
    auto twice = kpmap::scale(2.0, a);
    kpmap::axpy(alpha, x, y);
    // [end]
    auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plus);
    auto ht = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), times);
    auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), twice);
    expect(host(rows)(1) == 6.0 && all == 12.0 && hp(1, 2) == 5.0 && ht(1, 2) == 6.0 &&
               h2(0, 1) == 4.0 && host(y)(2) == 4.5,
           "sum over an axis and of all, add, multiply, scale, axpy");
  });
  line([&] {
    // [row] `a - b`, `a / b`, `jnp.maximum(a, b)`, `jnp.minimum(a, b)`, `jnp.where(c, a, b)`
    const Vector a = iota(3);  // 1 2 3
    Vector b("b", 3);
    Kokkos::deep_copy(b, 2.0);
    Kokkos::View<bool*> c("c", 3);
    Kokkos::deep_copy(Kokkos::subview(c, 0), true);
    auto diff = kpmap::subtract(a, b);
    auto ratio = kpmap::divide(a, b);
    auto hi = kpmap::maximum(a, b);
    auto lo = kpmap::minimum(a, b);
    auto picked = kpmap::where(c, a, b);
    // [end]
    expect(host(diff)(0) == -1.0 && host(ratio)(2) == 1.5 && host(hi)(0) == 2.0 &&
               host(hi)(2) == 3.0 && host(lo)(2) == 2.0 && host(picked)(0) == 1.0 &&
               host(picked)(2) == 2.0,
           "subtract, divide, maximum, minimum, where");
  });
  line([&] {
    // [row] `jnp.exp`, `log`, `tanh`, `sqrt`, `abs`, `jax.nn.relu` of `a`
    Vector a("a", 2);
    Kokkos::deep_copy(a, 4.0);
    Kokkos::deep_copy(Kokkos::subview(a, 1), -1.0);
    auto e = kpmap::exp(a);
    auto l = kpmap::log(kpmap::abs(a));
    auto t = kpmap::tanh(a);
    auto r = kpmap::sqrt(kpmap::relu(a));
    // [end]
    expect(std::abs(host(e)(1) - 0.36787944117144233) < 1e-15 && host(l)(1) == 0.0 &&
               std::abs(host(t)(1) + 0.7615941559557649) < 1e-15 && host(r)(0) == 2.0 &&
               host(r)(1) == 0.0,
           "exp, log, abs, tanh, sqrt, relu");
  });
  line([&] {
    // [row] `jnp.mean(a)`, `jnp.max(a, axis=0)`, `jnp.min(a, axis=1)`, `jnp.linalg.norm(x)`
    Matrix a("a", 2, 3);  // [[1, 2, 3], [4, 5, 6]]
    Kokkos::parallel_for(
        "table::fill", kpmap::row_major_range<2>({0, 0}, {2, 3}),
        KOKKOS_LAMBDA(int i, int j) { a(i, j) = 3.0 * i + j + 1; });
    const Vector x = iota(2);  // (1, 2)
    const double m = kpmap::mean(a);
    auto column_max = kpmap::max(a, 0);
    auto row_min = kpmap::min(a, 1);
    const double n = kpmap::norm(x);
    // [end]
    expect(m == 3.5 && host(column_max)(2) == 6.0 && host(row_min)(1) == 4.0 &&
               std::abs(n - 2.23606797749979) < 1e-14,
           "mean, max and min along an axis, norm");
  });
  line([&] {
    // [row] `a.T`, `jnp.zeros_like(a)`, `jnp.ones_like(a)`, `jnp.full_like(a, v)`
    Matrix a("a", 2, 3);
    Kokkos::deep_copy(Kokkos::subview(a, 0, 2), 7.0);
    const double v = 0.5;
    auto at = kpmap::transpose(a);
    auto zeros = kpmap::zeros_like(a);
    auto ones = kpmap::ones_like(a);
    auto halves = kpmap::full_like(a, v);
    // [end]
    expect(at.extent(0) == 3 && host(at)(2, 0) == 7.0 && host(zeros)(1, 1) == 0.0 &&
               host(ones)(1, 2) == 1.0 && host(halves)(0, 0) == 0.5,
           "transpose, zeros_like, ones_like, full_like");
  });
  line([&] {
    // [row] `jnp.matmul(a, b)` of stacks, `(B, M, K) @ (B, K, N)`
    Kokkos::View<double***> a("a", 2, 1, 2), b("b", 2, 2, 1);
    Kokkos::deep_copy(a, 1.0);
    Kokkos::deep_copy(b, 3.0);
    Kokkos::deep_copy(Kokkos::subview(b, 1, Kokkos::ALL, 0), 5.0);
    auto c = kpmap::matmul(a, b);  // (2, 1, 1): 1*3 + 1*3, 1*5 + 1*5
    // [end]
    expect(c.extent(0) == 2 && host(c)(0, 0, 0) == 6.0 && host(c)(1, 0, 0) == 10.0,
           "batched matmul");
  });
  line([&] {
    // [row] `jax.tree_util.tree_map(f, t, *rest)`, `tree_leaves(t)`
    const auto t = std::make_tuple(iota(2), iota(3));
    const auto rest = std::make_tuple(iota(2), iota(3));
    auto f = [](const auto& a, const auto& b) { return kpmap::add(a, b); };
    auto doubled = kpmap::tree_map(f, t, rest);
    auto leaves = kpmap::tree_leaves<Vector>(t);
    const std::size_t n = kpmap::tree_leaf_count(t);
    // [end]
    expect(host(std::get<1>(doubled))(2) == 6.0 && leaves.size() == 2 && n == 2 &&
               leaves[1].extent(0) == 3,
           "tree_map, tree_leaves, tree_leaf_count");
  });
  line([&] {
    // [row] Orbax's `save(path, tree)`, `restore(path, tree)`
    const std::string path = "pmap_table_tree_np" + std::to_string(n) + ".h5";
    const auto tree = std::make_tuple(iota(3), Vector("b", 2));
    std::tuple<Vector, Vector> back;
    kpmap::checkpoint::save(path, tree);
    kpmap::checkpoint::restore(path, back);
    const bool whole = std::get<0>(back).extent(0) == 3 && host(std::get<0>(back))(2) == 3.0;
    kpmap::checkpoint::save(path, tree, "devices");  // each rank's rows of (3 n) and (2 n)
    kpmap::checkpoint::restore(path, back, "devices");
    // [end]
    expect(whole && std::get<0>(back).extent(0) == 3 && host(std::get<0>(back))(2) == 3.0 &&
               std::get<1>(back).extent(0) == 2,
           "checkpoint::save and restore of a tree, whole and split");
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) std::remove(path.c_str());
  });
  line([&] {
    // [row] a pytree of arrays (of any dtypes)
    Vector w("w", 3);
    Kokkos::View<float*> b("b", 2);
    Kokkos::View<int*> count("count", 1);
    Kokkos::deep_copy(w, me + 1.0);
    Kokkos::deep_copy(b, me + 1.0f);
    Kokkos::deep_copy(count, me + 1);
    std::tuple<Vector, Kokkos::View<float*>, Kokkos::View<int*>> tree{w, b, count};
    kpmap::psum_inplace(tree, "devices");  // one stream per element type
    std::vector<Vector> layers{iota(2), iota(3)};
    kpmap::pmax_inplace(layers, "devices");
    // [end]
    expect(host(w)(2) == tri && host(b)(1) == float(tri) && host(count)(0) == int(tri) &&
               host(layers[1])(2) == 3.0,
           "pytree");
  });
  line([&] {
    // [row] `lax.psum(tree, ax)`: a new pytree (`pmean`, `pmax`, `pmin` too)
    const char* ax = "devices";
    Vector w("w", 3);
    Kokkos::View<float*> b("b", 2);
    Kokkos::View<int*> count("count", 1);
    Kokkos::deep_copy(w, me + 1.0);
    Kokkos::deep_copy(b, me + 1.0f);
    Kokkos::deep_copy(count, me + 1);
    auto [w2, b2, n2] = kpmap::psum(std::make_tuple(w, b, count), ax);
    Params params{iota(2), iota(3)};
    Params s = kpmap::psum(params, ax);
    // [end]
    expect(host(w2)(2) == tri && host(b2)(1) == float(tri) && host(n2)(0) == int(tri) &&
               host(w)(2) == me + 1.0 && host(s.b)(2) == 3.0 * n && host(params.b)(2) == 3.0,
           "psum of a tree: a new tree, the argument unchanged");
  });
}

}  // namespace pmap_table
