// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/error.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/run/control.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/run/output_keys.hpp>
#include <kpmap/sim/time_loop.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>

namespace kpmap::sim {

namespace {

void print_summary(const Summary& s, long step, double time) {
  std::printf("%6s %14s %22s %22s %22s %22s %22s\n", "step", "time", "volume", "mass", "density",
              "energy", "U");
  std::printf("%6ld %14.7e %22.15e %22.15e %22.15e %22.15e %22.15e\n", step, time, s.volume, s.mass,
              s.density, s.energy, s.u);
}

std::string csv_row(long step, double time, const Summary& s, long iterations, double error,
                    double wall) {
  return std::to_string(step) + ',' + csv_number(time) + ',' + csv_number(s.volume) + ',' +
         csv_number(s.mass) + ',' + csv_number(s.density) + ',' + csv_number(s.energy) + ',' +
         csv_number(s.u) + ',' + std::to_string(iterations) + ',' + csv_number(error) + ',' +
         csv_number(wall);
}

// KPMAP_FAULT_INJECT=R:S:nan: one NaN in this rank's first owned cell of
// the energy, as corrupted data or a bad kernel would leave it.
template <class Exec>
void poison(Simulation<Exec>& s) {
  const auto b = s.layout().interior();
  Kokkos::deep_copy(Kokkos::subview(s.energy(), b.lo[2], b.lo[1], b.lo[0]), std::nan(""));
}

}  // namespace

template <class Exec>
TimeLoop<Exec>::TimeLoop(Simulation<Exec>& simulation, LoopOutput output, PhaseTimes& times)
    : s_(simulation), out_(std::move(output)), times_(times) {
  if (s_.config().fields_every > 0) {
    prepare_run_subfolder(out_.dir, "fields", s_.layout().comm());
  }
}

long last_step(const HeatConfig& c) {
  // In floating point first: end_time / dt may be far beyond a long (1e300 /
  // 0.004), and no run goes past the steps a checkpoint may record.
  const double limit = static_cast<double>(checkpoint::max_step);
  const long by_time = static_cast<long>(std::min(std::ceil(c.end_time / c.dt - 1e-9), limit));
  const long by_step = static_cast<long>(std::min<long long>(c.end_step, checkpoint::max_step));
  return c.end_step > 0 ? std::min(by_step, by_time) : by_time;
}

template <class Exec>
void TimeLoop<Exec>::account(double wall, const Timings& before) {
  const double halo = s_.timings().halo_s - before.halo_s;
  const double coll = s_.timings().collectives_s - before.collectives_s;
  times_.add(Phase::halo, halo);
  times_.add(Phase::collectives, coll);
  times_.add(Phase::compute, wall - halo - coll);
}

template <class Exec>
void TimeLoop<Exec>::write(const std::string& path) {
  const double t0 = MPI_Wtime();
  s_.write_checkpoint(path, out_.deck);
  times_.add(Phase::checkpoint, MPI_Wtime() - t0);
}

template <class Exec>
void TimeLoop<Exec>::start() {
  const auto before = s_.timings();
  const double t0 = MPI_Wtime();
  if (out_.restart.empty()) {
    s_.initialise();
    account(MPI_Wtime() - t0, before);
    return;
  }
  s_.restart(out_.restart);
  times_.add(Phase::checkpoint, MPI_Wtime() - t0);
  if (s_.done()) {
    throw InputError("restart file " + out_.restart + " is at step " +
                         std::to_string(s_.step_count()) +
                         ", where the deck's run ends: nothing left to do (raise "
                         "time.end_step or time.end_time)",
                     ErrorScope::all_ranks);
  }
}

template <class Exec>
LoopResult TimeLoop<Exec>::run(
    const std::function<void(const StepReport&, const Summary&)>& on_step) {
  const HeatConfig& c = s_.config();
  const bool root = s_.layout().rank() == 0;
  LoopResult res;
  res.first_step = s_.step_count();
  const long last = last_step(c);

  // The per-step summary, appended to after a restart.
  CsvTable table(out_.dir / run_file::history,
                 "step,time,volume,mass,density,energy,u,iterations,error,wall_s",
                 out_.restart.empty() ? -1 : res.first_step, root);
  {
    const auto before = s_.timings();
    const double t0 = MPI_Wtime();
    res.summary = s_.summary();
    account(MPI_Wtime() - t0, before);
  }
  if (root) {
    print_summary(res.summary, res.first_step, s_.time());
    if (res.first_step == 0) table.row(csv_row(0, 0.0, res.summary, 0, 0.0, 0.0));
  }

  Progress progress(res.first_step, last);
  const long long progress_every = progress_cadence(c.output.progress_every, last - res.first_step);
  // Watchdog, fault injection, stop signals, and the newest checkpoint of
  // this run (or the restart file): what a failure leaves to continue from.
  RunControl run(s_.layout().comm(), out_.dir.string(), c.output.keep_last, out_.restart);
  auto write_step_checkpoint = [&](long step) {
    run.checkpoint(
        checkpoint_file_name(step), "step " + std::to_string(step),
        [&](const std::string& path) { write(path); }, /*rotate=*/true, step);
  };
  while (!s_.done()) {
    const auto before = s_.timings();
    const double t0 = MPI_Wtime();
    if (run.begin_step(s_.step_count() + 1)) poison(s_);
    StepReport r;
    try {
      r = s_.step();
      res.summary = s_.summary();
    } catch (const Error& e) {
      if (e.code() != exit_code::diverged) throw;
      throw Error(e.what() + run.last_good_note(), e.code(), e.scope());
    }
    account(MPI_Wtime() - t0, before);
    res.iterations += r.solve.iterations;
    res.inner_iterations += r.solve.inner_iterations;
    res.last_error = r.solve.error;
    res.last_exact_error = r.solve.exact_error;
    const long step = s_.step_count();
    const bool done = s_.done();
    if (root) {
      table.row(csv_row(step, s_.time(), res.summary, r.solve.iterations, r.solve.error,
                        progress.elapsed()));
      if (progress_every > 0 &&
          (step % progress_every == 0 || step == res.first_step + 1 || done)) {
        char solve[96] = "";
        if (c.scheme == Scheme::implicit) {
          std::snprintf(solve, sizeof solve, "  iterations %ld  residual %.3e", r.solve.iterations,
                        r.solve.error);
          if (r.solve.exact_error >= 0) {
            const std::size_t n = std::strlen(solve);
            std::snprintf(solve + n, sizeof solve - n, " (true %.3e)", r.solve.exact_error);
          }
        }
        std::printf("step %ld/%ld  time %.6e%s  elapsed %s  ETA %s\n", step, last, s_.time(), solve,
                    Progress::format(progress.elapsed()).c_str(),
                    Progress::format(progress.eta(step)).c_str());
      }
      if ((c.summary_every > 0 && step % c.summary_every == 0) || done) {
        print_summary(res.summary, step, s_.time());
      }
      std::fflush(stdout);
    }
    if (on_step) on_step(r, res.summary);
    if (c.fields_every > 0 && step % c.fields_every == 0) {
      char name[64];
      std::snprintf(name, sizeof name, "fields_%06ld.h5", step);
      write((out_.dir / "fields" / name).string());
    }
    res.stopped_by =
        run.end_step(step, done, c.output.checkpoint_every, [&] { write_step_checkpoint(step); });
    if (res.stopped_by != 0) break;
  }
  res.checkpoint = run.last_good();
  return res;
}

#define KPMAP_SIM_INSTANTIATE(E) template class TimeLoop<E>;
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim
