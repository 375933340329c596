// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/tools/trace.hpp>

#include <kpmap/base/detail/finalize.hpp>
#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/mpi_util.hpp>
#include <kpmap/base/environment.hpp>
#include <kpmap/base/version.hpp>
#include <kpmap/transport/host.hpp>

#include <Kokkos_Core.hpp>

#include <unistd.h>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

namespace kpmap {

namespace {

Runtime* g_runtime = nullptr;
int world_rank_or_minus_one() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Called when an exception escapes main (or noexcept code): name the rank and
// the message, then take the whole job down instead of leaving peers waiting.
[[noreturn]] void terminate_handler() {
  std::string message = "terminate called without an active exception";
  if (auto eptr = std::current_exception()) {
    try {
      std::rethrow_exception(eptr);
    } catch (const std::exception& e) {
      message = std::string("uncaught exception: ") + e.what();
    } catch (...) {
      message = "uncaught exception of unknown type";
    }
  }
  abort_job(message, exit_code::failure);
}

bool user_chose_device(int argc, char** argv) {
  for (const char* var : {"KOKKOS_DEVICE_ID", "KOKKOS_NUM_DEVICES", "KOKKOS_MAP_DEVICE_ID_BY"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    for (std::string_view flag : {"--kokkos-device", "--kokkos-num-devices", "--kokkos-ndevices",
                                  "--kokkos-map-device-id-by"}) {
      if (arg.substr(0, flag.size()) == flag) return true;
    }
  }
  return false;
}

// MPI's own errors inside a collective (the default handler aborts with
// MPI's words only, e.g. MPI_ERR_TRUNCATE and exit 15): one kpmap line naming
// the collective and its axis, and what a truncation means, then the job ends.
void on_mpi_error(MPI_Comm*, int* code, ...) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(*code, text, &len);
  int cls = 0;
  MPI_Error_class(*code, &cls);
  std::string message = "MPI reported an error";
  const auto& site = detail::collective_site();
  if (site.name != nullptr) {
    message += std::string(" in ") + site.name + " over axis '" + site.axis + "'";
  }
  message += ": " + std::string(text, static_cast<std::size_t>(len));
  if (cls == MPI_ERR_TRUNCATE) {
    message +=
        " (the ranks passed this collective arrays of different sizes: every rank of the axis "
        "must pass the same element type and shape; run with KPMAP_CHECK=1 to have kpmap name "
        "the argument and each rank's shape before MPI sees them)";
  }
  abort_job(message, exit_code::failure);
}

}  // namespace

void abort_job(const std::string& message, int code) {
  const int rank = world_rank_or_minus_one();
  std::string line = "kpmap: ";
  if (rank >= 0) line += "rank " + std::to_string(rank) + ": ";
  line += message + "\n";
  std::fflush(stdout);  // what the program printed, before the error
  detail::last_words(line.data(), line.size());
  if (rank >= 0) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

Runtime::Runtime(int& argc, char**& argv, RuntimeOptions options) {
  if (g_runtime != nullptr) {
    throw Error("kpmap::Runtime: a Runtime already exists in this process");
  }
  uncaught_at_start_ = std::uncaught_exceptions();
  const char* before = std::getenv("KPMAP_DEVICE_BEFORE_MPI");
  const bool early = options.device_before_mpi ||
                     (before != nullptr && *before != '\0' && std::string_view(before) != "0");
  std::string error;
  // A write past the file size limit (ulimit -f) fails with EFBIG, which the
  // writers report, instead of killing the rank with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  if (early) init_before_mpi(argc, argv, error);
  init_mpi(argc, argv, options);
  std::set_terminate(terminate_handler);
  g_runtime = this;
  init_node_topology();
  agree_on_settings(argc > 0 ? argv[0] : nullptr);
  if (!early) choose_host_threads(argc, argv);
  // Before any matrix product; once a process, as the choice changes what
  // the BLAS itself would report the next time.
  static const detail::BlasKernels blas = detail::choose_blas_kernels();
  blas_kernels_ = blas;
  try {
    if (!early) init_kokkos(argc, argv, node_rank_, "MPI_COMM_TYPE_SHARED");
    if (error.empty()) transport::set_gpu_awareness(transport::detect_gpu_awareness());
    if (error.empty()) {
      shutdown_limit_ = seconds_from_environment(
          "KPMAP_WATCHDOG", detail::default_hang_limit,
          "the longest time without progress, in seconds (> 0; 0 turns the watchdog off; "
          "unset, it is automatic)");
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (early && error.empty() && early_rank_ >= 0 && early_rank_ != node_rank_ && device_id_ >= 0) {
    std::fprintf(stderr,
                 "kpmap: rank %d: warning: the launcher's node-local rank (%d) is not MPI's "
                 "(%d): two ranks may share a GPU (check the binding with kpmap-info)\n",
                 rank_, early_rank_, node_rank_);
  }
  // A bad setting is usually seen by every rank: let the lowest failing rank
  // report it once and end the job; the others wait to be taken down.
  const int failing = error.empty() ? size_ : rank_;
  int first_failing = failing;
  transport::host_allreduce(&first_failing, 1, MPI_MIN, MPI_COMM_WORLD);
  if (first_failing < size_) {
    if (rank_ == first_failing) abort(error, exit_code::bad_input);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // KPMAP_TRACE_MAX_EVENTS is checked whether or not a trace is asked for:
  // a wrong setting is never silently ignored.
  try {
    trace::check_environment();
  } catch (const InputError& e) {
    abort_together(e.what(), exit_code::bad_input);
  }
  // KPMAP_TRACE=FILE: a timeline of every rank (kpmap/tools/trace.hpp), recorded
  // when every rank has it (starting is collective).
  const char* trace_file = std::getenv("KPMAP_TRACE");
  int tracing = trace_file != nullptr && *trace_file != '\0' ? 1 : 0;
  transport::host_allreduce(&tracing, 1, MPI_MIN, comm_);  // only if every rank has it
  if (tracing != 0) {
    try {
      trace::start(trace_file, comm_);
    } catch (const InputError& e) {  // asked for and impossible: bad input, before any work
      abort_together(std::string("KPMAP_TRACE: ") + e.what(), exit_code::bad_input);
    }
  }
}

void Runtime::init_mpi(int& argc, char**& argv, const RuntimeOptions& options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Query_thread(&thread_provided_);
  } else {
    // Open MPI 4's "lockedfile" shared-file-pointer component, asked at every
    // MPI_File_open (HDF5's), formats the file's name with a suffix into a
    // 256-byte buffer on the stack: a path of about 240 bytes or more aborts
    // the job with a buffer overflow at its first checkpoint. kpmap uses no
    // shared file pointers; leave that component out unless the user has
    // chosen the components (docs/reliability.md). Other MPIs read no such
    // variable.
    ::setenv("OMPI_MCA_sharedfp", "^lockedfile", 0);
    if (MPI_Init_thread(&argc, &argv, options.mpi_thread_level, &thread_provided_) != MPI_SUCCESS) {
      abort_job("MPI_Init_thread failed", exit_code::failure);
    }
    owns_mpi_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (thread_provided_ < options.mpi_thread_level) {
    abort_job("the MPI library provides thread level " + std::to_string(thread_provided_) +
                  " but kpmap needs " + std::to_string(options.mpi_thread_level) +
                  " (see MPI_THREAD_* in mpi.h)",
              exit_code::failure);
  }
}

namespace detail {

LauncherRank launcher_local_rank() {
  // (rank, size) variables of each launcher, in the order they are looked for.
  static const std::pair<const char*, const char*> vars[] = {
      {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},
      {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
      {"PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"},
      {"SLURM_LOCALID", nullptr},
      {"PALS_LOCAL_RANKID", nullptr},
      {"FLUX_TASK_LOCAL_ID", nullptr},
  };
  auto number = [](const char* var, int least) {
    const char* v = std::getenv(var);
    if (v == nullptr) return -1;
    const std::string_view text(v);
    int n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < least) {
      throw InputError(std::string(var) + "='" + v + "': the launcher's node-local " +
                       (least == 0 ? "rank" : "rank count") + " must be a whole number" +
                       (least == 0 ? "" : " of at least 1") +
                       " (kpmap reads it to choose the device before MPI_Init)");
    }
    return n;
  };
  LauncherRank r;
  for (const auto& [rank_var, size_var] : vars) {
    if (std::getenv(rank_var) == nullptr) continue;
    r.rank = number(rank_var, 0);
    r.source = rank_var;
    if (size_var != nullptr) r.size = number(size_var, 1);
    break;
  }
  return r;
}

}  // namespace detail

// RuntimeOptions::device_before_mpi: Kokkos (and so the GPU) first, from
// what the launcher says of the node. An error is kept for the collective
// report once MPI is up.
void Runtime::init_before_mpi(int& argc, char**& argv, std::string& error) {
  try {
    const detail::LauncherRank launcher = detail::launcher_local_rank();
    if (detail::threaded_host_backend) {
      std::string source;
      const auto user = detail::user_host_threads(argc, argv, source);
      host_threads_ = detail::decide_host_threads(user, source, detail::usable_cores(),
                                                  launcher.size > 0 ? launcher.size : 1);
      if (launcher.size < 0 && !user) {
        host_threads_.reason +=
            " (before MPI_Init, and no launcher variable gives the node's "
            "rank count: give --kokkos-num-threads)";
      }
    } else {
      host_threads_.reason = "1 thread: serial host backend";
    }
    if (detail::visible_device_count() > 0 && launcher.rank < 0 && !user_chose_device(argc, argv)) {
      throw InputError(
          "KPMAP_DEVICE_BEFORE_MPI: no launcher variable gives this rank's node-local rank "
          "(OMPI_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, "
          "PMI_LOCAL_RANK, SLURM_LOCALID, PALS_LOCAL_RANKID, FLUX_TASK_LOCAL_ID), so no GPU "
          "can be chosen before MPI_Init; choose one with --kokkos-device-id or "
          "KOKKOS_DEVICE_ID");
    }
    init_kokkos(argc, argv, launcher.rank, launcher.source);
    device_binding_ += "; Kokkos initialised before MPI_Init";
    early_rank_ = launcher.rank;
  } catch (const std::exception& e) {
    error = e.what();
  }
}

void Runtime::init_node_topology() {
  // Communicators made from these (every mesh's) inherit the handler.
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  MPI_Comm_create_errhandler(&on_mpi_error, &handler);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
  MPI_Errhandler_free(&handler);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_);
  MPI_Comm_rank(node_comm_, &node_rank_);
  MPI_Comm_size(node_comm_, &node_size_);
  // Node leaders (node rank 0) number the nodes in order of their world rank.
  const int leader = node_rank_ == 0 ? 1 : 0;
  const int leaders_before = transport::sum_below(leader, MPI_COMM_WORLD);
  node_count_ = leader;
  transport::host_allreduce(&node_count_, 1, MPI_SUM, MPI_COMM_WORLD);
  node_index_ = leaders_before;
  transport::host_bcast(&node_index_, 1, 0, node_comm_);
}

namespace {
// What every rank of a job must hold alike: each environment variable kpmap
// reads, the program (its file's name) and its build (kpmap's version and
// commit, Kokkos and its backends, the MPI library, the compiler).
std::vector<transport::Identity> settings_and_build(const char* program) {
  std::vector<transport::Identity> items;
  for (const char* name : environment_settings) {
    const char* v = std::getenv(name);
    items.push_back({name, v == nullptr ? "unset" : "'" + std::string(v) + "'"});
  }
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(mpi, &length);
  std::string mpi_version(mpi, static_cast<std::size_t>(std::max(length, 0)));
  mpi_version = mpi_version.substr(0, mpi_version.find_first_of(",\n"));
  const std::string kokkos =
      std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
      "." + std::to_string(KOKKOS_VERSION % 100) + " (" + Kokkos::DefaultExecutionSpace::name() +
      ", host " + Kokkos::DefaultHostExecutionSpace::name() + ")";
  const std::string_view path(program == nullptr ? "" : program);
  items.push_back({"the program", "'" + std::string(path.substr(path.rfind('/') + 1)) + "'"});
  items.push_back({"kpmap version", version_string});
  items.push_back({"kpmap commit", "'" + std::string(build_commit()) + "'"});
  items.push_back({"Kokkos", kokkos});
  items.push_back({"MPI library", mpi_version});
#ifdef __VERSION__
  items.push_back({"compiler", __VERSION__});
#endif
  return items;
}
}  // namespace

void Runtime::agree_on_settings(const char* program) {
  // Before any other collective: a rank that reads another limit, another
  // checked mode or another staging rule, or runs another build, would leave
  // the others waiting in a collective it never makes. One allreduce when
  // they agree.
  const std::string differs = transport::disagreement(MPI_COMM_WORLD, settings_and_build(program));
  if (differs.empty()) return;
  // Every rank holds the same text: rank 0 prints it, and all leave together.
  if (rank_ == 0) {
    const std::string line =
        "kpmap: error: the ranks of this job do not run alike: " + differs +
        ". Every rank must run the same build with the same KPMAP_* settings: pass the settings "
        "to every host (mpirun -x NAME, srun --export) and start every rank from one "
        "installation\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
  }
  if (Kokkos::is_initialized()) Kokkos::finalize();  // KPMAP_DEVICE_BEFORE_MPI
  if (owns_mpi_) MPI_Finalize();
  std::exit(exit_code::bad_input);
}

void Runtime::choose_host_threads(int argc, char** argv) {
  if (!detail::threaded_host_backend) {
    host_threads_.reason = "1 thread: serial host backend";
    return;
  }
  // Collective over the node (every rank takes part, whatever it decides).
  const int sharing = detail::ranks_sharing_cores(node_comm_);
  std::string source;
  const auto user = detail::user_host_threads(argc, argv, source);
  host_threads_ = detail::decide_host_threads(user, source, detail::usable_cores(), sharing);
  if (host_threads_.oversubscribed && node_rank_ == 0) {
    std::fprintf(stderr,
                 "kpmap: warning: %s: more threads than cores on node %d; expect slow runs "
                 "(OMP_WAIT_POLICY=passive softens it)\n",
                 host_threads_.reason.c_str(), node_index_);
  }
}

namespace {
// Kokkos' numeric flags must hold whole numbers ("N,M" for the device
// counts): checked here, where the message can name the argument, since
// Kokkos itself says only "stoi" (3.x) or aborts (4.x).
void check_kokkos_numbers(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    for (std::string_view flag :
         {"--kokkos-num-threads", "--kokkos-threads", "--kokkos-device-id", "--kokkos-device",
          "--kokkos-numa", "--kokkos-num-devices", "--kokkos-ndevices"}) {
      if (arg.substr(0, flag.size()) != flag) continue;
      if (arg.size() > flag.size() && arg[flag.size()] != '=') continue;  // a longer flag
      const bool counts = flag == "--kokkos-num-devices" || flag == "--kokkos-ndevices";
      const std::string_view value = arg.size() > flag.size() ? arg.substr(flag.size() + 1)
                                     : i + 1 < argc           ? std::string_view(argv[i + 1])
                                                              : std::string_view();
      const bool ok = !value.empty() && value.size() <= 9 &&
                      value.find_first_not_of(counts ? "0123456789," : "0123456789") ==
                          std::string_view::npos &&
                      value.front() != ',' && value.back() != ',';
      if (!ok) {
        throw InputError("command line: " + std::string(arg) +
                         (arg.size() > flag.size() ? "" : " " + std::string(value)) + ": " +
                         std::string(flag) + " takes a whole number" + (counts ? " (or N,M)" : "") +
                         ", found '" + std::string(value) + "'");
      }
      break;
    }
  }
}
}  // namespace

void Runtime::init_kokkos(int& argc, char**& argv, int local_rank, const std::string& rank_source) {
  check_kokkos_numbers(argc, argv);
  if (Kokkos::is_initialized()) {
    device_binding_ = "chosen by the caller, who initialised Kokkos before kpmap::Runtime";
    device_id_ = detail::kokkos_device_id(-1);
    return;
  }
  const int devices = detail::visible_device_count();
  // Kokkos prints its own 40-line help for a plain --help: the program's
  // --help is the program's (Kokkos' stays reachable as --kokkos-help).
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (i > 0 && (arg == "--help" || arg == "-h")) continue;
    args.push_back(argv[i]);
  }
  std::string device_flag;
  int chosen = -1;
  if (devices == 0) {
    device_binding_ = "host backend: the rank runs on its CPU cores";
  } else if (user_chose_device(argc, argv)) {
    device_binding_ = "chosen by Kokkos options (--kokkos-device-id / KOKKOS_DEVICE_ID / ...)";
  } else {
    chosen = local_rank % devices;
    device_flag = "--kokkos-device-id=" + std::to_string(chosen);
    args.push_back(device_flag.data());
    device_binding_ = "node-local rank " + std::to_string(local_rank) + " (" + rank_source +
                      ") mod " + std::to_string(devices) + " visible GPU(s)";
  }
  // kpmap's thread count, unless the user gave one (Kokkos then reads theirs).
  std::string threads_flag;
  if (detail::threaded_host_backend && !host_threads_.chosen_by_user) {
    threads_flag = detail::num_threads_flag(host_threads_.threads);
    args.push_back(threads_flag.data());
  }
  args.push_back(nullptr);
  int nargs = static_cast<int>(args.size()) - 1;
  try {
    Kokkos::initialize(nargs, args.data());
  } catch (const std::exception& e) {
    // Kokkos says only "stoi" for --kokkos-threads=x: name what was given.
    std::string given;
    for (int i = 0; i < nargs; ++i) {
      const std::string_view arg(args[i]);
      if (arg.substr(0, 9) == "--kokkos-") given += (given.empty() ? "" : " ") + std::string(arg);
    }
    throw InputError("Kokkos could not read its command-line arguments (" + given +
                     "): " + e.what() +
                     "; --kokkos-num-threads (--kokkos-threads before Kokkos 3.7) and "
                     "--kokkos-device-id take a whole number, and kpmap chooses both when they "
                     "are left out");
  }
  owns_kokkos_ = true;
  // Kokkos removed the arguments it understood; hand the rest back to the
  // caller in their order, with the --help Kokkos was not shown.
  const std::vector<char*> left(args.begin(), args.begin() + nargs);
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    const bool hidden = i > 0 && (arg == "--help" || arg == "-h");
    if (hidden || std::find(left.begin(), left.end(), argv[i]) != left.end()) {
      argv[kept++] = argv[i];
    }
  }
  argv[kept] = nullptr;
  argc = kept;
  device_id_ = devices == 0 ? -1 : detail::kokkos_device_id(chosen);
}

Runtime::~Runtime() {
  if (std::uncaught_exceptions() > uncaught_at_start_) {
    // Unwinding past the Runtime: the other ranks may be blocked in a
    // collective with this one, and MPI_Finalize could hang. End the job.
    abort("an exception propagated out of the scope of kpmap::Runtime", exit_code::failure);
  }
  await_every_rank();
  detail::run_finalize_hooks();
  g_runtime = nullptr;
  if (owns_kokkos_) Kokkos::finalize();
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (owns_mpi_) MPI_Finalize();
}

namespace {

// "1", "1 and 3", "1, 2 and 5".
std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

}  // namespace

void Runtime::await_every_rank() const {
  if (size_ == 1 || comm_ == MPI_COMM_NULL) return;
  if (!(shutdown_limit_ > 0)) {
    MPI_Barrier(comm_);
    return;
  }
  // Every rank tells rank 0 it is here and rank 0 tells every rank, so that
  // past the limit rank 0 knows who never came, and the others whether rank
  // 0 did (and will say who is missing). Then one non-blocking barrier.
  constexpr int tag = 32001;
  static const int here = 1;
  std::vector<int> heard(static_cast<std::size_t>(size_), 0);
  std::vector<MPI_Request> receives, sends;
  const auto post = [&](int peer) {
    MPI_Request r;
    MPI_Irecv(&heard[static_cast<std::size_t>(peer)], 1, MPI_INT, peer, tag, comm_, &r);
    receives.push_back(r);
    MPI_Isend(&here, 1, MPI_INT, peer, tag, comm_, &r);
    sends.push_back(r);
  };
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) post(r);
  } else {
    post(0);
  }
  MPI_Request barrier;
  MPI_Ibarrier(comm_, &barrier);
  const auto wait_for_barrier = [&](double seconds) {
    const double start = MPI_Wtime();
    std::chrono::duration<double> nap(1e-4);
    int done = 0;
    for (;;) {
      MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
      if (done != 0 || MPI_Wtime() - start > seconds) return done != 0;
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::duration<double>(0.05));
    }
  };
  const auto finish = [&] {
    MPI_Waitall(static_cast<int>(receives.size()), receives.data(), MPI_STATUSES_IGNORE);
    MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
  };
  if (wait_for_barrier(shutdown_limit_)) return finish();
  std::vector<int> missing;
  for (std::size_t i = 0; i < receives.size(); ++i) {
    int arrived = 0;
    MPI_Test(&receives[i], &arrived, MPI_STATUS_IGNORE);
    if (arrived == 0) missing.push_back(rank_ == 0 ? static_cast<int>(i) + 1 : 0);
  }
  // Rank 0 is here and names who is missing: give it time to end the job.
  if (rank_ != 0 && missing.empty() && wait_for_barrier(10.0)) return finish();
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", shutdown_limit_);
  const std::string who = missing.empty()       ? std::string("some ranks")
                          : missing.size() == 1 ? "rank " + rank_list(missing)
                                                : "ranks " + rank_list(missing);
  abort(who + " did not reach the end of the program within " + limit + " s of rank " +
            std::to_string(rank_) +
            ": still working, or waiting in a collective that the ranks which ended never "
            "called (every rank must call the same collectives in the same order); ending the "
            "job (KPMAP_WATCHDOG=SECONDS sets this limit, 0 waits for ever)",
        exit_code::failure);
}

Runtime& Runtime::current() {
  if (g_runtime == nullptr) {
    throw Error("kpmap::Runtime::current(): no kpmap::Runtime is alive; create one first");
  }
  return *g_runtime;
}

void Runtime::at_finalize(std::function<void()> hook) { detail::at_finalize(std::move(hook)); }

bool Runtime::active() noexcept { return g_runtime != nullptr; }

void Runtime::abort(const std::string& message, int code) const { abort_job(message, code); }

void Runtime::abort_together(const std::string& message, int code) const {
  // Rank 0 alone prints; every rank is here (the error was raised together),
  // so the barrier ends, and no rank's abort kills rank 0 before it has.
  const std::string line = rank_ == 0 ? "kpmap: error: " + message + "\n" : "";
  std::fflush(stdout);
  detail::last_words(line.data(), line.size());
  MPI_Barrier(comm_);
  MPI_Abort(comm_, code);
  std::_Exit(code);
}

namespace detail {
bool allocation_failed(const std::exception& e) noexcept {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  return std::string_view(e.what()).find("failed to allocate memory") != std::string_view::npos;
}
}  // namespace detail

}  // namespace kpmap
