// Data-parallel linear regression: full-batch gradient descent on sharded
// synthetic data converges to the least-squares solution of the normal
// equations (solved here independently), and gives the same parameters on
// one rank as on all of them.

#include "support/mpi_test.hpp"

#include <kpmap/train/linear.hpp>

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <vector>

using kpmap::train::LinearParams;
using kpmap::train::SyntheticRegression;

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;

// Full-batch gradient descent; returns (w..., b) on the host.
std::vector<double> train(const SyntheticRegression& d, const kpmap::Axis& axis, int epochs,
                          double lr) {
  auto data = kpmap::train::shard_synthetic<Mem>(d, axis);
  LinearParams<Mem> p{Kokkos::View<double*, Mem>("w", d.features), Kokkos::View<double, Mem>("b")};
  LinearParams<Mem> g{Kokkos::View<double*, Mem>("gw", d.features),
                      Kokkos::View<double, Mem>("gb")};
  for (int e = 0; e < epochs; ++e) {
    kpmap::train::mse_and_gradient(data, p, g, axis);
    auto w = p.w;
    auto b = p.b;
    auto gw = g.w;
    auto gb = g.b;
    Kokkos::parallel_for(
        "sgd", d.features + 1, KOKKOS_LAMBDA(std::size_t j) {
          if (j < w.extent(0)) {
            w(j) -= lr * gw(j);
          } else {
            b() -= lr * gb();
          }
        });
  }
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.w);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.b);
  std::vector<double> out(hw.data(), hw.data() + hw.size());
  out.push_back(hb());
  return out;
}

// Least squares for [X 1] theta = y by the normal equations, Gaussian
// elimination with partial pivoting, on the whole data set, serially.
std::vector<double> least_squares(const SyntheticRegression& d) {
  const std::size_t m = d.features + 1;
  std::vector<double> a(m * (m + 1), 0.0);  // augmented [A^T A | A^T y]
  std::vector<double> row(m);
  for (std::size_t i = 0; i < d.samples; ++i) {
    for (std::size_t j = 0; j < d.features; ++j) row[j] = d.x(i, j);
    row[d.features] = 1.0;
    const double yi = d.y(i);
    for (std::size_t r = 0; r < m; ++r) {
      for (std::size_t c = 0; c < m; ++c) a[r * (m + 1) + c] += row[r] * row[c];
      a[r * (m + 1) + m] += row[r] * yi;
    }
  }
  for (std::size_t k = 0; k < m; ++k) {
    std::size_t piv = k;
    for (std::size_t r = k + 1; r < m; ++r)
      if (std::abs(a[r * (m + 1) + k]) > std::abs(a[piv * (m + 1) + k])) piv = r;
    for (std::size_t c = 0; c <= m; ++c) std::swap(a[k * (m + 1) + c], a[piv * (m + 1) + c]);
    for (std::size_t r = 0; r < m; ++r) {
      if (r == k) continue;
      const double f = a[r * (m + 1) + k] / a[k * (m + 1) + k];
      for (std::size_t c = k; c <= m; ++c) a[r * (m + 1) + c] -= f * a[k * (m + 1) + c];
    }
  }
  std::vector<double> theta(m);
  for (std::size_t k = 0; k < m; ++k) theta[k] = a[k * (m + 1) + m] / a[k * (m + 1) + k];
  return theta;
}

double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("full-batch GD reaches the least-squares solution at any rank count", "[train]") {
  // 203 samples: uneven shards at 2, 3 and 4 ranks.
  const SyntheticRegression d{203, 5, 42, 0.1};
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const auto theta = train(d, axis, 1500, 0.1);
  const auto exact = least_squares(d);
  INFO("relative difference to the normal equations: " << relative_difference(theta, exact));
  CHECK(relative_difference(theta, exact) < 1e-8);
  // The data follow y = X w_true + b_true + 0.1 noise: the fit is near the truth.
  for (std::size_t j = 0; j < d.features; ++j) CHECK(std::abs(theta[j] - d.true_w(j)) < 0.05);
  CHECK(std::abs(theta[d.features] - d.true_b()) < 0.05);

  // The same training on rank 0 alone gives the same parameters.
  MPI_Comm solo;
  MPI_Comm_split(MPI_COMM_WORLD, kpmap::test::world_rank() == 0 ? 0 : MPI_UNDEFINED, 0, &solo);
  if (solo != MPI_COMM_NULL) {
    const kpmap::Mesh one(solo);
    const auto theta1 = train(d, one.axis("devices"), 1500, 0.1);
    INFO("relative difference between 1 and " << kpmap::test::world_size()
                                              << " ranks: " << relative_difference(theta, theta1));
    CHECK(relative_difference(theta, theta1) < 1e-12);
    MPI_Comm_free(&solo);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
