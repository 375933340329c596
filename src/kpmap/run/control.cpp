// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/error.hpp>
#include <kpmap/base/fault.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/run/control.hpp>
#include <kpmap/tools/profiling.hpp>

#include <filesystem>

namespace kpmap {

namespace {
int rank_of(MPI_Comm comm) {
  int r = 0;
  int size = 1;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &size);
  fault::check_ranks(size);  // an injection aimed at no rank is refused, not ignored
  return r;
}
}  // namespace

RunControl::RunControl(MPI_Comm comm, std::string dir, int keep, std::string last_good)
    : comm_(comm),
      rank_(rank_of(comm)),
      dir_(std::move(dir)),
      keep_(keep),
      last_good_(std::move(last_good)),
      watchdog_(Watchdog::from_environment(), rank_, "step", Watchdog::automatic_floor, &liveness_),
      hosts_(comm, HostMonitor::timeout_from_environment(), &stop_, &liveness_) {
  namespace fs = std::filesystem;
  if (!last_good_.empty()) {
    const fs::path from = fs::path(last_good_).parent_path();
    std::error_code ec;
    continues_folder_ = fs::equivalent(from.empty() ? fs::path(".") : from,
                                       dir_.empty() ? fs::path(".") : fs::path(dir_), ec);
  }
  liveness_.note(last_good_note());
}

bool RunControl::begin_step(long long step) {
  watchdog_.beat(step);
  return fault::at_step(step, rank_);
}

std::string RunControl::checkpoint(const std::string& name, const std::string& what,
                                   const std::function<void(const std::string&)>& write,
                                   bool rotate, long long newest) {
  const ProfilingRegion region("kpmap::checkpoint");
  const std::string path = (std::filesystem::path(dir_) / name).string();
  watchdog_.alive();  // a checkpoint is progress: it gets a whole limit of its own
  try {
    write(path);
  } catch (const Error& e) {
    throw Error(what + ": the checkpoint failed: " + e.what() + last_good_note(), e.code(),
                e.scope());
  }
  watchdog_.alive();
  last_good_ = path;
  liveness_.note(last_good_note());
  if (rotate && rank_ == 0) {
    if (continues_folder_) {
      checkpoint::keep_last(dir_, "checkpoint", keep_, newest);
    } else {
      if (written_.empty() || written_.back() != path) written_.push_back(path);
      checkpoint::keep_last(written_, keep_);
    }
  }
  return path;
}

std::string RunControl::last_good_note() const { return checkpoint::last_good_note(last_good_); }

int RunControl::end_step(long long step, bool done, long long every,
                         const std::function<void()>& write) {
  const bool due = done || (every > 0 && step % every == 0);
  if (due) write();
  if (done) return 0;
  const int signal = poll_stop();
  if (signal != 0 && !due) write();
  return signal;
}

}  // namespace kpmap
