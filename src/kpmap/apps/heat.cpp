// SPDX-License-Identifier: BSD-3-Clause
// kpmap-heat: heat conduction on a Cartesian block decomposition, TeaLeaf's
// problem solved on kpmap's halo layer, from kpmap-heat TOML decks or
// TeaLeaf's own *tea decks.
//
//   mpiexec -n 4 kpmap-heat inputs/heat2d.toml
//   mpiexec -n 2 kpmap-heat inputs/tea_bm_1.in
//
// Each step solves backward Euler for u = density x energy (or takes one
// explicit FTCS step). Summaries, checkpoints, field dumps and result.json
// go to output.dir; see docs/heat.md.

#include <kpmap/apps/heat.hpp>

#include <kpmap/apps/options.hpp>

#include <kpmap/base/version.hpp>
#include <kpmap/kpmap.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/result.hpp>
#include <kpmap/sim/simulation.hpp>
#include <kpmap/sim/tea_deck.hpp>
#include <kpmap/sim/time_loop.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace sim = kpmap::sim;
using kpmap::Phase;

std::string cells_text(const sim::HeatConfig& c) {
  std::string s;
  for (int d = 0; d < c.ndim; ++d) s += (d ? " x " : "") + std::to_string(c.cells[d]);
  return s;
}

std::string method_text(const sim::HeatConfig& c) {
  if (c.scheme == sim::Scheme::explicit_ftcs) return "explicit FTCS";
  std::string s = c.solver.method;
  if (c.solver.preconditioner != sim::Preconditioner::none) {
    s += std::string(" + ") + kpmap::word_of(c.solver.preconditioner);
  }
  char eps[32];
  std::snprintf(eps, sizeof eps, " (eps %.1e)", c.solver.eps);
  return s + eps;
}

int run_heat(const sim::HeatConfig& c, const kpmap::deck::Deck& deck,
             const kpmap::apps::RunOptions& opts, const kpmap::Runtime& rt) {
  const bool root = rt.rank() == 0;
  const MPI_Comm comm = rt.comm();
  kpmap::PhaseTimes times;
  const double t_start = MPI_Wtime();
  const fs::path out = kpmap::prepare_output_dir(c.output.dir, comm);
  const kpmap::OutputLock lock(out, comm);  // one run per folder
  kpmap::check_folder_app(out, "kpmap-heat", comm);
  kpmap::check_outputs(out, kpmap::run_files({"field.png"}), {opts.deck, opts.restart}, comm);
  kpmap::apps::start_trace(opts, out, kpmap::run_files({"field.png"}), comm);
  if (!opts.restart.empty()) sim::check_restart(deck, opts.restart, comm);
  sim::Simulation s(c);
  sim::TimeLoop loop(s, {out, deck.to_toml(), opts.restart}, times);
  loop.start();
  const long first = s.step_count();
  const long last = sim::last_step(c);
  if (root) {
    std::printf("kpmap-heat %s: %d-D, %s cells, %zu states, %s, dt %g s, steps to %ld\n",
                KPMAP_VERSION_STRING, c.ndim, cells_text(c).c_str(), c.states.size(),
                method_text(c).c_str(), c.dt, last);
    std::printf("kpmap-heat: %d ranks: %s; deck %s\n", rt.size(), s.layout().describe().c_str(),
                deck.source().c_str());
    std::printf("kpmap-heat: rank 0 runs on %s\n", kpmap::apps::execution_text(rt).c_str());
    kpmap::apps::print_blas_lines("kpmap-heat", rt);
    if (!opts.restart.empty()) {
      std::printf("kpmap-heat: restarting from %s at step %ld, time %.9g\n", opts.restart.c_str(),
                  first, s.time());
    }
    if (c.scheme == sim::Scheme::explicit_ftcs) {
      std::printf("kpmap-heat: explicit scheme, stable for dt <= %.6e s\n", s.stable_dt());
    }
    kpmap::files::write_atomic((out / kpmap::run_file::deck).string(), deck.to_toml());
  }
  const sim::LoopResult res = loop.run();
  const auto report = times.reduce(MPI_Wtime() - t_start, comm);
  const sim::RunFacts facts{deck.source(),         opts.restart,   rt.size(),
                            s.layout().describe(), s.step_count(), s.time()};
  auto result = sim::heat_result(c, facts, res, root);
  int code = kpmap::write_result(result.json, out, res.stopped_by, res.checkpoint, report, root);
  // A run that finished with a wrong answer has not succeeded.
  if (code == kpmap::exit_code::success && result.check_failed) {
    code = kpmap::exit_code::check_failed;
  }
  if (root) {
    std::printf("kpmap-heat: %lld iterations in %ld steps, %s; results in %s\nkpmap-heat: %s",
                res.iterations, s.step_count() - first,
                kpmap::Progress::format(report.wall).c_str(), out.c_str(),
                kpmap::phase_table(report).c_str());
    std::printf("kpmap-heat: plots (field.png): %s\n", kpmap::plot_command(out).c_str());
    if (res.stopped_by) {
      std::printf(
          "kpmap-heat: %s received: stopped after step %ld of %ld; continue with --restart %s\n",
          kpmap::StopSignals::name(res.stopped_by).c_str(), s.step_count(), last,
          res.checkpoint.c_str());
    }
  }
  return code;
}

}  // namespace

int kpmap::apps::heat_main(int argc, char** argv) {
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) {
    const auto started = kpmap::apps::start_app(
        {"kpmap-heat",
         "kpmap-heat: heat conduction (TeaLeaf's problem) on a block decomposition over every "
         "rank.\nDECK is a kpmap-heat TOML deck or a TeaLeaf deck (*tea ... *endtea).",
         "  mpiexec -n 4 kpmap-heat inputs/heat2d.toml\n"
         "  mpiexec -n 2 kpmap-heat inputs/tea_bm_1.in --set tl_max_iters=500\n"
         "  mpiexec -n 3 kpmap-heat inputs/heat2d.toml --set solver.method=ppcg --output run1\n"
         "  mpiexec -n 4 kpmap-heat inputs/heat2d.toml --restart heat2d_out/checkpoint_000010.h5 "
         "--set time.end_step=40\n",
         "result.json, history.csv, checkpoint_NNNNNN.h5 (+ .xmf for ParaView), deck.toml",
         "a solve failed (no convergence, NaN)",
         "a TeaLeaf test problem's answer failed its check"},
        sim::heat_schema(), argc, argv, rt, sim::heat_deck_translator);
    if (started.exit) return *started.exit;
    const sim::HeatConfig c = sim::from_deck(*started.deck);
    return run_heat(c, *started.deck, started.options, rt);
  });
}
