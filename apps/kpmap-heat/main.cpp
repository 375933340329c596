// kpmap-heat: heat conduction on a Cartesian block decomposition, TeaLeaf's
// problem solved on kpmap's halo layer, from kpmap-heat TOML decks or
// TeaLeaf's own *tea decks.
//
//   mpiexec -n 4 kpmap-heat inputs/heat2d.toml
//   mpiexec -n 2 kpmap-heat inputs/tea_bm_1.in
//
// Each step solves backward Euler for u = density x energy (or takes one
// explicit FTCS step). Summaries, checkpoints, field dumps and summary.json
// go to output.dir; see docs/heat.md.

#include "../common/driver.hpp"
#include "tealeaf_answers.hpp"

#include <kpmap/kpmap.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/simulation.hpp>
#include <kpmap/sim/tea_deck.hpp>
#include <kpmap/version.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace sim = kpmap::sim;
namespace heat = kpmap::apps::heat;
using kpmap::apps::Phase;

std::string cells_text(const sim::HeatConfig& c) {
  std::string s;
  for (int d = 0; d < c.ndim; ++d) s += (d ? " x " : "") + std::to_string(c.cells[d]);
  return s;
}

std::string method_text(const sim::HeatConfig& c) {
  if (c.scheme == sim::Scheme::explicit_ftcs) return "explicit FTCS";
  std::string s = sim::to_string(c.solver.method);
  if (c.solver.preconditioner != sim::Preconditioner::none) {
    s += std::string(" + ") + sim::to_string(c.solver.preconditioner);
  }
  char eps[32];
  std::snprintf(eps, sizeof eps, " (eps %.1e)", c.solver.eps);
  return s + eps;
}

// The last step the run will take (for the ETA): the step limit, or the
// steps to the end time, whichever comes first.
long last_step(const sim::HeatConfig& c) {
  const long by_time = static_cast<long>(std::ceil(c.end_time / c.dt - 1e-9));
  return c.end_step > 0 ? std::min(c.end_step, by_time) : by_time;
}

void print_summary(const sim::Summary& s, long step, double time) {
  std::printf("%6s %14s %22s %22s %22s %22s %22s\n", "step", "time", "volume", "mass", "density",
              "energy", "U");
  std::printf("%6ld %14.7e %22.15e %22.15e %22.15e %22.15e %22.15e\n", step, time, s.volume, s.mass,
              s.density, s.energy, s.u);
}

std::string csv_row(long step, double time, const sim::Summary& s, long iterations, double error,
                    double wall) {
  using J = kpmap::apps::Json;
  return std::to_string(step) + ',' + J::number(time) + ',' + J::number(s.volume) + ',' +
         J::number(s.mass) + ',' + J::number(s.density) + ',' + J::number(s.energy) + ',' +
         J::number(s.u) + ',' + std::to_string(iterations) + ',' + J::number(error) + ',' +
         J::number(wall);
}

// KPMAP_FAULT_INJECT=R:S:nan: one NaN in this rank's first owned cell of
// the energy, as corrupted data or a bad kernel would leave it.
void poison(sim::Simulation& s) {
  const auto b = s.layout().interior();
  Kokkos::deep_copy(Kokkos::subview(s.energy(), b.lo[2], b.lo[1], b.lo[0]), std::nan(""));
}

int run_heat(const sim::HeatConfig& c, const kpmap::deck::Deck& deck,
             const kpmap::apps::RunOptions& opts, const kpmap::Runtime& rt) {
  const bool root = rt.rank() == 0;
  const MPI_Comm comm = rt.comm();
  kpmap::apps::PhaseTimes times;
  const double t_start = MPI_Wtime();
  const fs::path out = kpmap::apps::prepare_output_dir(c.output_dir, comm);
  if (c.fields_every > 0) kpmap::apps::prepare_output_dir((out / "fields").string(), comm);

  sim::Simulation s(c);
  // Phase times: the simulation accumulates its own halo and reduction
  // seconds; everything else a step does is compute.
  auto account = [&](double wall, const sim::Timings& before) {
    const double halo = s.timings().halo_s - before.halo_s;
    const double coll = s.timings().collectives_s - before.collectives_s;
    times.add(Phase::halo, halo);
    times.add(Phase::collectives, coll);
    times.add(Phase::compute, wall - halo - coll);
  };
  {
    const auto before = s.timings();
    const double t0 = MPI_Wtime();
    if (opts.restart.empty()) {
      s.initialise();
      account(MPI_Wtime() - t0, before);
    } else {
      s.restart(opts.restart);
      times.add(Phase::checkpoint, MPI_Wtime() - t0);
    }
  }
  if (!opts.restart.empty() && s.done()) {
    throw kpmap::InputError("restart file " + opts.restart + " is at step " +
                                std::to_string(s.step_count()) +
                                ", where the deck's run ends: nothing left to do (raise "
                                "time.end_step or time.end_time)",
                            kpmap::ErrorScope::all_ranks);
  }
  const long first = s.step_count();
  const long last = last_step(c);
  if (root) {
    std::printf("kpmap-heat %s: %d-D, %s cells, %zu states, %s, dt %g s, steps to %ld\n",
                KPMAP_VERSION_STRING, c.ndim, cells_text(c).c_str(), c.states.size(),
                method_text(c).c_str(), c.dt, last);
    std::printf("kpmap-heat: %d ranks: %s; deck %s\n", rt.size(), s.layout().describe().c_str(),
                deck.source().c_str());
    std::printf("kpmap-heat: rank 0 runs on %s\n", kpmap::apps::execution_text(rt).c_str());
    if (!opts.restart.empty()) {
      std::printf("kpmap-heat: restarting from %s at step %ld, time %.9g\n", opts.restart.c_str(),
                  first, s.time());
    }
    if (c.scheme == sim::Scheme::explicit_ftcs) {
      std::printf("kpmap-heat: explicit scheme, stable for dt <= %.6e s\n", s.stable_dt());
    }
    kpmap::files::write_atomic((out / "deck.toml").string(), deck.to_toml());
  }

  // The per-step summary, appended to after a restart.
  const fs::path csv = out / "summary.csv";
  kpmap::apps::CsvTable table(csv, "step,time,volume,mass,density,energy,u,iterations,error,wall_s",
                              first > 0, root);
  sim::Summary summary;
  {
    const auto before = s.timings();
    const double t0 = MPI_Wtime();
    summary = s.summary();
    account(MPI_Wtime() - t0, before);
  }
  if (root) {
    print_summary(summary, first, s.time());
    if (first == 0) table.row(csv_row(0, 0.0, summary, 0, 0.0, 0.0));
  }

  kpmap::apps::Progress progress(first, last);
  long long total_iterations = 0;
  long long total_inner = 0;
  double last_error = 0.0;
  double exact_error = -1.0;
  auto write = [&](const std::string& file) {
    const double t0 = MPI_Wtime();
    s.write_checkpoint(file, deck.to_toml());
    times.add(Phase::checkpoint, MPI_Wtime() - t0);
  };
  // Watchdog, fault injection, stop signals, and the newest checkpoint of
  // this run (or the restart file): what a failure leaves to continue from.
  kpmap::RunControl run(comm, out.string(), c.keep_last, opts.restart);
  auto write_step_checkpoint = [&](long step) {
    char name[64];
    std::snprintf(name, sizeof name, "checkpoint_%06ld.h5", step);
    run.checkpoint(name, "step " + std::to_string(step), write, /*rotate=*/true, step);
  };
  int stopped_by = 0;
  while (!s.done()) {
    const auto before = s.timings();
    const double t0 = MPI_Wtime();
    if (run.begin_step(s.step_count() + 1)) poison(s);
    sim::StepReport r;
    try {
      r = s.step();
      summary = s.summary();
    } catch (const kpmap::Error& e) {
      if (e.code() != kpmap::exit_code::diverged) throw;
      kpmap::apps::rethrow_with_context(e, "", run.last_good_note());
    }
    account(MPI_Wtime() - t0, before);
    total_iterations += r.solve.iterations;
    total_inner += r.solve.inner_iterations;
    last_error = r.solve.error;
    exact_error = r.solve.exact_error;
    const long step = s.step_count();
    const bool done = s.done();
    if (root) {
      table.row(
          csv_row(step, s.time(), summary, r.solve.iterations, r.solve.error, progress.elapsed()));
      if (c.progress_every > 0 && (step % c.progress_every == 0 || done)) {
        char solve[96] = "";
        if (c.scheme == sim::Scheme::implicit) {
          std::snprintf(solve, sizeof solve, "  iterations %ld  residual %.3e", r.solve.iterations,
                        r.solve.error);
          if (r.solve.exact_error >= 0) {
            const std::size_t n = std::strlen(solve);
            std::snprintf(solve + n, sizeof solve - n, " (true %.3e)", r.solve.exact_error);
          }
        }
        std::printf("step %ld/%ld  time %.6e%s  elapsed %s  ETA %s\n", step, last, s.time(), solve,
                    kpmap::apps::Progress::format(progress.elapsed()).c_str(),
                    kpmap::apps::Progress::format(progress.eta(step)).c_str());
      }
      if ((c.summary_every > 0 && step % c.summary_every == 0) || done) {
        print_summary(summary, step, s.time());
      }
      std::fflush(stdout);
    }
    if (c.fields_every > 0 && step % c.fields_every == 0) {
      char name[64];
      std::snprintf(name, sizeof name, "fields_%06ld.h5", step);
      write((out / "fields" / name).string());
    }
    const bool due = done || (c.checkpoint_every > 0 && step % c.checkpoint_every == 0);
    if (due) write_step_checkpoint(step);
    if (!done && (stopped_by = run.poll_stop()) != 0) {
      if (!due) write_step_checkpoint(step);
      break;
    }
  }

  const auto report = times.reduce(MPI_Wtime() - t_start, comm);
  kpmap::apps::Json j;
  j.set("app", "kpmap-heat")
      .set("kpmap_version", KPMAP_VERSION_STRING)
      .set("deck", deck.source())
      .set("restart", opts.restart)
      .set("ranks", rt.size())
      .set("decomposition", s.layout().describe())
      .set("dimensions", c.ndim)
      .set("cells", std::vector<long long>(c.cells.begin(), c.cells.begin() + c.ndim))
      .set("scheme", sim::to_string(c.scheme))
      .set("solver", c.scheme == sim::Scheme::implicit ? sim::to_string(c.solver.method) : "ftcs")
      .set("preconditioner", sim::to_string(c.solver.preconditioner))
      .set("step", static_cast<long long>(s.step_count()))
      .set("steps_run", static_cast<long long>(s.step_count() - first))
      .set("time", s.time())
      .set("dt", c.dt)
      .set("volume", summary.volume)
      .set("mass", summary.mass)
      .set("density", summary.density)
      .set("energy", summary.energy)
      .set("u", summary.u)
      .set("total_iterations", total_iterations)
      .set("total_inner_iterations", total_inner)
      .set("last_error", last_error);
  if (exact_error >= 0) j.set("last_exact_error", exact_error);
  bool answer_failed = false;
  if (c.test_problem > 0) {
    // TeaLeaf's check: the final U within 0.001 % of its published value.
    const double expected = heat::tealeaf_expected_u(c.ndim, c.test_problem);
    const double diff = std::abs(100.0 * (summary.u / expected) - 100.0);
    const bool passed = diff < 0.001;
    answer_failed = !passed;
    j.set("test_problem", kpmap::apps::Json()
                              .set("number", c.test_problem)
                              .set("expected_u", expected)
                              .set("difference_percent", diff)
                              .set("tolerance_percent", 0.001)
                              .set("passed", passed));
    if (root) {
      std::printf("Test problem %d: U = %.17g, TeaLeaf's expected U = %.17g\n", c.test_problem,
                  summary.u, expected);
      std::printf(
          "Test problem %d is within %.7e %% of the expected solution (tolerance 0.001 %%)\n",
          c.test_problem, diff);
      std::printf("This test is considered %s\n", passed ? "PASSED" : "FAILED");
    }
  }
  int code = kpmap::apps::finish_result(j, out / "summary.json", stopped_by, run.last_good(),
                                        report, root);
  kpmap::apps::make_plots("heat", out, root);
  // A run that finished with a wrong answer has not succeeded.
  if (code == kpmap::exit_code::success && answer_failed) code = kpmap::exit_code::check_failed;
  if (root) {
    std::printf("kpmap-heat: %lld iterations in %ld steps, %s; results in %s\nkpmap-heat: %s",
                total_iterations, s.step_count() - first,
                kpmap::apps::Progress::format(report.wall).c_str(), out.c_str(),
                kpmap::apps::phase_table(report).c_str());
    if (stopped_by) {
      std::printf(
          "kpmap-heat: %s received: stopped after step %ld of %ld; continue with --restart %s\n",
          kpmap::StopSignals::name(stopped_by).c_str(), s.step_count(), last,
          run.last_good().c_str());
    }
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) {
    CLI::App app{
        "kpmap-heat: heat conduction (TeaLeaf's problem) on a block decomposition over every "
        "rank.\nDECK is a kpmap-heat TOML deck or a TeaLeaf deck (*tea ... *endtea)."};
    app.footer(
        "Examples:\n"
        "  mpiexec -n 4 kpmap-heat inputs/heat2d.toml\n"
        "  mpiexec -n 2 kpmap-heat inputs/tea_bm_1.in --set tl_max_iters=500\n"
        "  mpiexec -n 3 kpmap-heat inputs/heat3d.toml --set solver.method=ppcg --output run1\n"
        "  mpiexec -n 4 kpmap-heat inputs/heat2d.toml --restart heat2d_out/checkpoint_000010.h5 "
        "--set time.end_step=40\n"
        "Outputs in output.dir: summary.json, summary.csv, checkpoint_NNNNNN.h5 (+ .xmf for "
        "ParaView), deck.toml.\n"
        "Exit codes: 0 success, 1 an unexpected error, 2 bad input, 3 a solve failed (no "
        "convergence, NaN), 4 stopped by SIGTERM, SIGINT or SIGUSR1 after writing a checkpoint, "
        "5 a TeaLeaf test problem's answer failed its check (see docs/reliability.md).");
    app.set_version_flag("--version", std::string("kpmap-heat ") + KPMAP_VERSION_STRING);
    kpmap::apps::RunOptions opts;
    kpmap::apps::add_run_options(app, opts);
    const auto& schema = sim::heat_schema();
    if (auto code = kpmap::apps::parse_run_command_line(app, opts, schema, argc, argv, rt)) {
      return *code;
    }
    const auto deck = kpmap::apps::load_deck(schema, opts, rt.comm(), sim::heat_deck_translator);
    const sim::HeatConfig c = sim::from_deck(deck);
    return run_heat(c, deck, opts, rt);
  });
}
