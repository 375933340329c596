// SPDX-License-Identifier: BSD-3-Clause
// The optimizers' updates and the learning-rate schedules against their
// closed forms (part of the test_train_model executable).

#include "support/mpi_test.hpp"
#include "support/train_checks.hpp"

#include <kpmap/runtime/mesh.hpp>
#include <kpmap/train/config.hpp>
#include <kpmap/train/layers/conv2d.hpp>
#include <kpmap/train/layers/maxpool2d.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>
#include <kpmap/train/sequential.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace kpmap::train;
using namespace train_checks;

}  // namespace

TEST_CASE("optimizer updates follow their closed forms", "[train]") {
  using Params = FlatParams<double, Mem>;
  auto run = [&](const std::string& kind, const std::vector<std::vector<double>>& grads) {
    Params p{Kokkos::View<double*, Mem>("p", 9)};
    Params g{Kokkos::View<double*, Mem>("g", 9)};
    auto h = Kokkos::create_mirror_view(p.all);
    for (std::size_t i = 0; i < 9; ++i) h(i) = std::sin(double(i));
    Kokkos::deep_copy(p.all, h);
    const auto p0 = to_host(p.all);
    OptimizerConfig c;
    c.kind = kind;
    c.learning_rate = 0.1;
    if (kind == "momentum") c.keys["momentum"] = 0.5;
    Optimizer<double, Mem, Params> opt(c, p);
    for (const auto& step : grads) {
      auto hg = Kokkos::create_mirror_view(g.all);
      for (std::size_t i = 0; i < step.size(); ++i) hg(i) = step[i];
      Kokkos::deep_copy(g.all, hg);
      opt.step(p, g);
    }
    return std::make_pair(p0, to_host(p.all));
  };
  const std::size_t n = 2 * 3 + 3;
  std::vector<double> g1(n), g2(n);
  for (std::size_t i = 0; i < n; ++i) {
    g1[i] = 0.3 * double(i) - 1.0;
    g2[i] = 0.7 - 0.2 * double(i);
  }
  {  // gd: p - lr g
    auto [p0, p1] = run("gd", {g1});
    for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(p1[i] - (p0[i] - 0.1 * g1[i])) < 1e-15);
  }
  {  // momentum: v1 = g1, v2 = 0.5 g1 + g2; p2 = p0 - lr (v1 + v2)
    auto [p0, p2] = run("momentum", {g1, g2});
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(std::abs(p2[i] - (p0[i] - 0.1 * (g1[i] + 0.5 * g1[i] + g2[i]))) < 1e-14);
    }
  }
  {  // adam, first step: the bias-corrected moments are g and g^2, so the
     // step is lr g / (|g| + eps)
    auto [p0, p1] = run("adam", {g1});
    for (std::size_t i = 0; i < n; ++i) {
      const double expected = p0[i] - 0.1 * g1[i] / (std::abs(g1[i]) + 1e-8);
      CHECK(std::abs(p1[i] - expected) < 1e-13);
    }
  }
}

namespace {
// A parameter tree of a program's own: two Views of other ranks than the
// library's trees, shown to a visitor.
struct OwnTree {
  Kokkos::View<double**, Mem> w;
  Kokkos::View<double*, Mem> b;
  template <class F>
  void for_each_view(F&& f) const {
    f(w);
    f(b);
  }
};
}  // namespace

TEST_CASE("an optimizer over a tree of a program's own builds from optimizer.hpp alone",
          "[train]") {
  // This file includes optimizer.hpp and not optimizer_def.hpp: an
  // Optimizer<double, Mem, OwnTree> links only if the header brings the
  // members' definitions. Momentum's two steps, p = 1, g = 0.5 then 0.25,
  // lr 0.1, beta 0.9 (momentum's default): v1 = 0.5, p1 = 0.95;
  // v2 = 0.9 * 0.5 + 0.25 = 0.7, p2 = 0.88.
  OwnTree p{Kokkos::View<double**, Mem>("w", 2, 3), Kokkos::View<double*, Mem>("b", 3)};
  OwnTree g{Kokkos::View<double**, Mem>("gw", 2, 3), Kokkos::View<double*, Mem>("gb", 3)};
  Kokkos::deep_copy(p.w, 1.0);
  Kokkos::deep_copy(p.b, 1.0);
  OptimizerConfig config;
  config.kind = "momentum";
  config.learning_rate = 0.1;
  Optimizer<double, Mem, OwnTree> opt(config, p);
  for (const double gv : {0.5, 0.25}) {
    Kokkos::deep_copy(g.w, gv);
    Kokkos::deep_copy(g.b, gv);
    opt.step(p, g);
  }
  const auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.w);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.b);
  CHECK(std::abs(hw(1, 2) - 0.88) < 1e-14);
  CHECK(std::abs(hb(0) - 0.88) < 1e-14);
  CHECK(opt.steps() == 2);
}

TEST_CASE("learning-rate schedules follow their closed forms", "[train]") {
  OptimizerConfig c;
  c.learning_rate = 0.4;
  c.warmup_steps = 4;
  CHECK(c.rate(1) == 0.1);  // linear warm-up: lr t / warmup
  CHECK(c.rate(4) == 0.4);
  CHECK(c.rate(100) == 0.4);  // then constant
  c.schedule = OptimizerConfig::Schedule::cosine;
  c.decay_steps = 10;
  CHECK(std::abs(c.rate(4 + 5) - 0.2) < 1e-15);  // half-way down the half cosine
  CHECK(std::abs(c.rate(4 + 10)) < 1e-15);       // 0 at the end, and after
  CHECK(std::abs(c.rate(4 + 20)) < 1e-15);
  c.schedule = OptimizerConfig::Schedule::step;
  c.decay_factor = 0.5;
  CHECK(c.rate(4 + 9) == 0.4);  // s = 9 < 10
  CHECK(c.rate(4 + 10) == 0.2);
  CHECK(c.rate(4 + 25) == 0.1);
  // The optimizer uses the step's rate: a gd step moves lr(t) g.
  FlatParams<double, Mem> p{Kokkos::View<double*, Mem>("p", 1)};
  FlatParams<double, Mem> g{Kokkos::View<double*, Mem>("g", 1)};
  Kokkos::deep_copy(g.all, 1.0);
  OptimizerConfig gd;
  gd.kind = "gd";
  gd.learning_rate = 0.4;
  gd.warmup_steps = 4;
  Optimizer<double, Mem, FlatParams<double, Mem>> opt(gd, p);
  opt.step(p, g);
  opt.step(p, g);
  CHECK(std::abs(to_host(p.all)[0] - -(0.1 + 0.2)) < 1e-15);
}

TEST_CASE("a sharded optimizer keeps its part of the state and updates as a replicated one",
          "[train]") {
  // 5 weights and a bias (one value, fewer than the ranks): at 4 ranks the
  // parts are 2, 2, 1, 1 values, the last two each of one array.
  using Params = LinearParams<double, Mem>;
  const auto axis = kpmap::Mesh::world().axis("devices");
  const int P = axis.size(), me = axis.index();
  Params replicated("r", 5), sharded("s", 5), g("g", 5);
  const auto fill = [](const Params& t, double scale) {
    auto hw = Kokkos::create_mirror_view(t.w);
    for (std::size_t i = 0; i < 5; ++i) hw(i) = scale * std::cos(double(i) + scale);
    Kokkos::deep_copy(t.w, hw);
    Kokkos::deep_copy(t.b, scale * 0.25);
  };
  Params from_part("f", 5);
  fill(replicated, 1.0);
  fill(sharded, 1.0);
  fill(from_part, 1.0);
  // This rank's elements of a tree laid end to end (w, b), as the parts
  // that ZeRO stages 2 and 3 keep.
  const kpmap::BlockPartition split(6, P);
  const auto part_of = [&](const Params& t) {
    Kokkos::View<double*, Mem> out("part", split.count(me));
    auto h = Kokkos::create_mirror_view(out);
    const auto w = to_host(t.w);
    const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.b);
    for (std::size_t i = 0; i < h.extent(0); ++i) {
      const std::size_t k = split.begin(me) + i;
      h(i) = k < 5 ? w[k] : b();
    }
    Kokkos::deep_copy(out, h);
    return out;
  };
  // Stage 3: the parameters themselves are this rank's part alone.
  const auto params_part = part_of(from_part);
  OptimizerConfig c;
  c.kind = "adam";
  c.learning_rate = 0.05;
  Optimizer<double, Mem, Params> whole(c, replicated), part(c, sharded, axis),
      given_part(c, from_part, axis), only_part(c, from_part, axis);
  CHECK_FALSE(whole.sharded());
  CHECK(part.sharded());
  CHECK(part.owned() == std::make_pair(split.begin(me), split.end(me)));
  REQUIRE(part.state().size() == 2);  // Adam's m and v
  for (const auto& [name, arrays] : part.state()) {
    std::size_t kept = 0;
    for (const auto& a : arrays) kept += a.size();
    CHECK(kept == split.count(me));
  }
  for (int step = 1; step <= 3; ++step) {
    fill(g, 0.5 * step);  // the same reduced gradient on every rank
    whole.step(replicated, g);
    part.step(sharded, g);
    // The same from this rank's part of the gradient laid end to end (w, b).
    const auto gpart = part_of(g);
    given_part.step_from_part(Mem::execution_space(), from_part, gpart);
    only_part.step_part(Mem::execution_space(), params_part, gpart);
  }
  CHECK(to_host(from_part.w) == to_host(replicated.w));
  CHECK(to_host(params_part) == to_host(part_of(replicated)));
  const auto hw = to_host(replicated.w), sw = to_host(sharded.w);
  CHECK(hw == sw);  // an elementwise update, gathered: bit for bit
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), replicated.b);
  const auto sb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sharded.b);
  CHECK(hb() == sb());
  CHECK(hb() != 0.25);  // and the update did move them
}
