// SPDX-License-Identifier: BSD-3-Clause
// Data-parallel linear regression: full-batch gradient descent on sharded
// synthetic data converges to the least-squares solution of the normal
// equations (solved here independently), and gives the same parameters on
// one rank as on all of them.

#include "support/mpi_test.hpp"

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/train/batches.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

using kpmap::train::LinearParams;
using kpmap::train::SyntheticRegression;

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Exec = Mem::execution_space;

// Gradient descent over the epoch's batches (batch 0: full batch); returns
// (w..., b) on the host.
std::vector<double> train(const SyntheticRegression& d, const kpmap::Axis& axis, int epochs,
                          double lr, std::size_t batch = 0, const std::string& kind = "gd",
                          const Exec& exec = Exec()) {
  const auto data = kpmap::train::generate_shard<double, Mem>(d, 0, d.samples, axis);
  LinearParams<double, Mem> p("p", d.features);
  LinearParams<double, Mem> g("g", d.features);
  Kokkos::View<double, Mem> loss("loss");
  const kpmap::train::LinearWorkspace<double, Mem> ws(data.rows(), d.features);
  kpmap::train::OptimizerConfig config;
  config.kind = kind;
  config.learning_rate = lr;
  kpmap::train::Optimizer<double, Mem, LinearParams<double, Mem>> opt(config, p);
  for (int e = 0; e < epochs; ++e) {
    const auto plan = kpmap::train::plan_epoch(exec, d.samples, data.begin, data.rows(), batch, 7,
                                               static_cast<std::uint64_t>(e));
    for (std::size_t k = 0; k < plan.batches; ++k) {
      kpmap::train::linear_loss_and_gradient(exec, data, plan.order, plan.offsets[k],
                                             plan.offsets[k + 1], plan.global_size(k), p, g, loss,
                                             ws, axis);
      opt.step(exec, p, g);
    }
  }
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.w);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.b);
  std::vector<double> out(hw.data(), hw.data() + hw.size());
  out.push_back(hb());
  return out;
}

// The same training on rank 0 alone; checks the parameters agree to `tol`.
template <class Train>
void check_same_on_one_rank(const std::vector<double>& theta, Train&& train_on, double tol);

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
  check_same_on_one_rank(
      theta, [&](const kpmap::Axis& one) { return train(d, one, 1500, 0.1); }, 1e-12);
}

TEST_CASE("shuffled minibatches give the same parameters at any rank count", "[train]") {
  // 203 samples in batches of 16: the last batch is partial (11 samples), and
  // each batch falls unevenly on the ranks; the gradient is still the mean
  // over the batch, so one rank and many agree.
  const SyntheticRegression d{203, 4, 3, 0.1};
  const auto& axis = kpmap::Mesh::world().axis("devices");
  for (const std::string kind : {"sgd", "momentum", "adam"}) {
    const auto theta = train(d, axis, 20, 0.02, 16, kind);
    check_same_on_one_rank(
        theta, [&](const kpmap::Axis& one) { return train(d, one, 20, 0.02, 16, kind); }, 1e-12);
    // ... and the fit approaches the least-squares solution (to SGD's noise floor).
    CHECK(relative_difference(theta, least_squares(d)) < 0.1);
  }
}

TEST_CASE("training on an execution space instance of its own matches the default instance",
          "[train]") {
  // The gradient kernels, the gemv, the fused psum and the optimizer all go to
  // the instance given; one left on the default instance would race on a GPU.
  // (On Kokkos 3.4, without partition_space, both runs use the default instance.)
  const SyntheticRegression d{203, 4, 3, 0.1};
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const auto plain = train(d, axis, 5, 0.02, 16, "adam");
  const auto own = train(d, axis, 5, 0.02, 16, "adam", kpmap::detail::independent_instance(Exec()));
  CHECK(own == plain);
}

namespace {

// A shard of `rows` rows of `f` features with values from a fixed rule, on the
// device, and the same rows on the host.
struct LocalData {
  kpmap::train::Shard<double, Mem> shard;
  std::vector<double> x, y;
  LocalData(std::size_t rows, std::size_t f) : x(rows * f), y(rows) {
    shard.x = Kokkos::View<double**, Kokkos::LayoutRight, Mem>("x", rows, f);
    shard.y = Kokkos::View<double*, Mem>("y", rows);
    shard.global_rows = rows;
    auto hx = Kokkos::create_mirror_view(shard.x);
    auto hy = Kokkos::create_mirror_view(shard.y);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < f; ++j)
        x[i * f + j] = hx(i, j) = std::sin(0.37 * (i * f + j) + 1);
      y[i] = hy(i) = std::cos(0.11 * i);
    }
    Kokkos::deep_copy(shard.x, hx);
    Kokkos::deep_copy(shard.y, hy);
  }
};

}  // namespace

TEST_CASE("the gradient kernel gives 2/N X^T r at any row and feature count, shuffled or not",
          "[train]") {
  // Up to 64 rows make chunks of 8, more rows chunks of 64; the fused form
  // runs on host backends up to 64 features, the team form beyond (and on
  // GPUs); the fused form's dot products go in feature order below 32
  // features, in 8 lanes from 32 (37: 5 features past the last whole 8). The
  // reference is summed here, serially, in long double.
  for (std::size_t f : {std::size_t(1), std::size_t(5), std::size_t(32), std::size_t(37),
                        std::size_t(64), std::size_t(70)}) {
    for (std::size_t rows : {1, 7, 8, 63, 64, 65, 130, 203}) {
      for (bool shuffled : {false, true}) {
        const LocalData d(rows, f);
        // The batch: all rows, or every row but the first in a scrambled order.
        std::vector<std::uint32_t> pick;
        for (std::size_t t = shuffled ? 1 : 0; t < rows; ++t) {
          pick.push_back(static_cast<std::uint32_t>((t * 37) % rows));
        }
        if (shuffled && rows > 1) {
          std::vector<int> seen(rows, 0);
          for (auto i : pick) seen[i] += 1;
          REQUIRE(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(pick.size()));
        }
        Kokkos::View<std::uint32_t*, Mem> order;
        if (shuffled) {
          order = Kokkos::View<std::uint32_t*, Mem>("order", pick.size());
          Kokkos::deep_copy(
              order, Kokkos::View<std::uint32_t*, Kokkos::HostSpace>(pick.data(), pick.size()));
        }
        const std::size_t n = pick.size();
        if (n == 0) continue;
        LinearParams<double, Mem> p("p", f), g("g", f);
        auto hw = Kokkos::create_mirror_view(p.w);
        for (std::size_t j = 0; j < f; ++j) hw(j) = 0.1 * double(j % 7) - 0.3;
        Kokkos::deep_copy(p.w, hw);
        Kokkos::deep_copy(p.b, 0.2);
        Kokkos::View<double, Mem> loss("loss");
        const kpmap::train::LinearWorkspace<double, Mem> ws(rows, f);
        kpmap::train::linear_local_gradient(Exec(), d.shard, order, 0, n, n, p, g, loss, ws);
        auto gw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g.w);
        auto gb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g.b);
        auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), loss);

        std::vector<long double> rw(f, 0);
        long double rb = 0, rl = 0;
        for (std::size_t t = 0; t < n; ++t) {
          const std::size_t i = pick[t];
          long double r = 0.2L - d.y[i];
          for (std::size_t j = 0; j < f; ++j) r += (long double)d.x[i * f + j] * hw(j);
          for (std::size_t j = 0; j < f; ++j) rw[j] += r * d.x[i * f + j];
          rb += r;
          rl += r * r;
        }
        INFO(f << " features, " << rows << " rows, " << (shuffled ? "shuffled" : "in order"));
        const auto near = [](double got, long double want) {
          return std::abs(got - double(want)) <= 1e-12 * (1 + std::abs(double(want)));
        };
        for (std::size_t j = 0; j < f; ++j) CHECK(near(gw(j), 2 * rw[j] / n));
        CHECK(near(gb(), 2 * rb / n));
        CHECK(near(hl(), rl / n));
      }
    }
  }
}

TEST_CASE("the team form of the gradient kernel gives the same bits at any team size", "[train]") {
  // The team form's sums may not depend on the team's size. (Serial's teams
  // have one thread; the OpenMP build's test runs with two.)
  using Partials = kpmap::train::detail::LinearPartials<double, Exec>;
  for (std::size_t f : {std::size_t(5), std::size_t(70)}) {
    const std::size_t rows = 61;
    const LocalData d(rows, f);
    LinearParams<double, Mem> p("p", f);
    Kokkos::deep_copy(p.w, 0.25);
    Kokkos::deep_copy(p.b, -0.5);
    Kokkos::View<double**, Kokkos::LayoutRight, Mem> one("one", 1, f + 2), many("many", 1, f + 2);
    const Kokkos::View<std::uint32_t*, Mem> none;
    const auto run = [&](const Kokkos::View<double**, Kokkos::LayoutRight, Mem>& out, int size) {
      const Partials k{d.shard.x, d.shard.y, p.w, p.b, none, out, 0, rows, 64};
      Kokkos::TeamPolicy<Exec> teams(1, size, kpmap::train::detail::linear_vector_lanes<Exec>(f));
      teams.set_scratch_size(0, Kokkos::PerTeam(Partials::scratch_bytes()));
      Kokkos::parallel_for("test::partials", teams, k);
    };
    const Kokkos::TeamPolicy<Exec> probe(1, 1);
    const int most = probe.team_size_max(
        Partials{d.shard.x, d.shard.y, p.w, p.b, none, one, 0, rows, 64}, Kokkos::ParallelForTag());
    run(one, 1);
    run(many, most < 4 ? most : 4);
    auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), one);
    auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), many);
    INFO(f << " features, teams of 1 and " << (most < 4 ? most : 4));
    for (std::size_t j = 0; j < f + 2; ++j) CHECK(a(0, j) == b(0, j));
  }
}

TEST_CASE("an epoch's batches hold every training sample once, whatever the rank count",
          "[train]") {
  const std::size_t n = 1001;
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const kpmap::BlockPartition part(n, axis);
  const std::size_t begin = part.begin(axis.index());
  const std::size_t local = part.count(axis.index());
  for (std::size_t batch : {std::size_t(1), std::size_t(64), std::size_t(1000)}) {
    const auto plan =
        kpmap::train::plan_epoch(Mem::execution_space(), n, begin, local, batch, 11, 5);
    REQUIRE(plan.batches == (n + batch - 1) / batch);
    auto order = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.order);
    const kpmap::train::EpochOrder epoch{11, 5, n};
    std::vector<int> seen(n, 0);
    for (std::size_t k = 0; k < plan.batches; ++k) {
      // This rank's rows of batch k are exactly those whose position falls in it.
      // In storage order within the batch (which, with the line above, is the
      // whole plan): the sums of a batch add its rows in one order on every run.
      for (std::size_t t = plan.offsets[k]; t < plan.offsets[k + 1]; ++t) {
        const std::size_t g = begin + order(t);
        CHECK(epoch.position(g) / batch == k);
        if (t > plan.offsets[k]) CHECK(order(t - 1) < order(t));
        seen[g] += 1;
      }
      // The batch sizes over all ranks add up to the global batch size.
      CHECK(kpmap::psum(static_cast<long long>(plan.local_size(k)), axis) ==
            static_cast<long long>(plan.global_size(k)));
    }
    kpmap::psum_inplace(Kokkos::View<int*, Kokkos::HostSpace>(seen.data(), n), axis);
    for (std::size_t g = 0; g < n; ++g) CHECK(seen[g] == 1);
  }
  // The order is a permutation of [0, n) that changes from epoch to epoch.
  std::vector<int> hits(n, 0);
  std::size_t moved = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto p = kpmap::train::EpochOrder{11, 5, n}.position(i);
    REQUIRE(p < n);
    hits[p] += 1;
    moved += p != kpmap::train::EpochOrder{11, 6, n}.position(i);
  }
  for (int h : hits) CHECK(h == 1);
  CHECK(moved > n / 2);
}

namespace {
template <class Train>
void check_same_on_one_rank(const std::vector<double>& theta, Train&& train_on, double tol) {
  MPI_Comm solo;
  MPI_Comm_split(MPI_COMM_WORLD, kpmap::test::world_rank() == 0 ? 0 : MPI_UNDEFINED, 0, &solo);
  if (solo != MPI_COMM_NULL) {
    const kpmap::Mesh one(solo);
    const auto theta1 = train_on(one.axis("devices"));
    INFO("relative difference between 1 and " << kpmap::test::world_size()
                                              << " ranks: " << relative_difference(theta, theta1));
    CHECK(relative_difference(theta, theta1) < tol);
    MPI_Comm_free(&solo);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
}  // namespace

TEST_CASE("the first target that is no class index is found on the device", "[train]") {
  // Class indices for 3 classes are 0, 1 and 2: a 3, a fraction, a negative
  // value and a NaN are not.
  const auto first = [](const std::vector<double>& targets, std::size_t classes) {
    kpmap::train::Shard<double, Mem> shard;
    shard.y = Kokkos::View<double*, Mem>("y", targets.size());
    auto h = Kokkos::create_mirror_view(shard.y);
    for (std::size_t i = 0; i < targets.size(); ++i) h(i) = targets[i];
    Kokkos::deep_copy(shard.y, h);
    return kpmap::train::first_bad_label(shard, classes);
  };
  const std::vector<double> targets = {0, 1, 2, 3, 2.5, -1, std::nan(""), 1, 0};
  CHECK(first(targets, 3) == 3);
  CHECK(first(targets, 4) == 4);  // 3 is a class of 4
  CHECK(first({0, 1, 2, 1, 0, 2.5}, 3) == 5);
  CHECK(first({0, 1, -1}, 3) == 2);
  CHECK(first({0, 1, std::nan("")}, 3) == 2);
  CHECK(first({0, 1, 2, 1}, 3) == 4);  // none: the row count
  CHECK(first({}, 3) == 0);
}
