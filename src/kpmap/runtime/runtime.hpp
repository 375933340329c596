// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief `kpmap::Runtime`: MPI and Kokkos up and down in the right order, one
/// device per rank, and one rank's error turned into a prompt job-wide abort.

#include <kpmap/base/detail/blas_kernels.hpp>
#include <kpmap/base/detail/host_threads.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/tools/trace.hpp>
#include <kpmap/transport/gpu_aware.hpp>

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <utility>

namespace kpmap {

/// \brief Start-up choices for kpmap::Runtime.
struct RuntimeOptions {
  /// The MPI thread level kpmap requires. FUNNELED suffices for Kokkos' host
  /// backends (only the thread that called MPI_Init_thread talks to MPI).
  int mpi_thread_level = MPI_THREAD_FUNNELED;
  /// Initialise Kokkos, and so bind this rank to its GPU, before MPI_Init:
  /// MPIs that set up their GPU support in MPI_Init (MVAPICH2-GDR, some UCX
  /// builds of Open MPI) need the device chosen first. The node-local rank
  /// then comes from the launcher's environment (detail::launcher_local_rank),
  /// as MPI cannot yet say. Also on with KPMAP_DEVICE_BEFORE_MPI=1.
  bool device_before_mpi = false;
};

namespace detail {
/// \brief This rank's place on its node as the launcher exports it, before
/// MPI is up: Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, MVAPICH2's
/// MV2_COMM_WORLD_LOCAL_RANK, MPICH's and Intel MPI's MPI_LOCALRANKID,
/// PMI_LOCAL_RANK, Slurm's SLURM_LOCALID, Cray PALS' PALS_LOCAL_RANKID or
/// Flux's FLUX_TASK_LOCAL_ID, the first one set; the node's rank count from
/// the same family (OMPI_COMM_WORLD_LOCAL_SIZE, MV2_COMM_WORLD_LOCAL_SIZE,
/// MPI_LOCALNRANKS, PMI_LOCAL_SIZE) where it exports one.
struct LauncherRank {
  int rank = -1;       ///< -1: no launcher variable is set
  int size = -1;       ///< -1: not exported
  std::string source;  ///< the variable the rank came from
};
/// \throws InputError naming the variable when one holds no whole number.
LauncherRank launcher_local_rank();
}  // namespace detail

/// \brief RAII owner of MPI and Kokkos for one process (one rank, one device).
///
/// The constructor initialises MPI with `MPI_Init_thread` (the requested level
/// is checked), finds this rank's node-local rank with
/// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`, binds the rank to GPU
/// `node_rank % visible GPUs` unless the user chose a device through Kokkos'
/// own flags (`--kokkos-device-id`, `KOKKOS_DEVICE_ID`, ...), then initialises
/// Kokkos. On a threaded host backend (OpenMP) it also chooses each rank's
/// thread count: the cores the rank may use, shared evenly by the node's
/// ranks that may use the same cores, so a default run never runs more
/// threads than cores; a count the user gives (`--kokkos-num-threads`,
/// `OMP_NUM_THREADS`, ...) wins, with a one-line warning when it
/// oversubscribes the cores. Where the host BLAS (a DYNAMIC_ARCH OpenBLAS)
/// picked narrower kernels than the CPU and the BLAS have, as an OpenBLAS
/// older than its processor does, it has the BLAS take the widest
/// (blas_kernels()). With RuntimeOptions::device_before_mpi, Kokkos
/// is initialised first, from the launcher's node-local rank and size. The destructor finalises
/// Kokkos, then MPI. If MPI or Kokkos was already initialised by the caller, the Runtime neither
/// initialises nor finalises it.
///
/// At the end (the destructor) every rank waits for the others in a
/// non-blocking barrier, up to KPMAP_WATCHDOG seconds (unset: 600, the run
/// watchdog's automatic floor; 0: for ever): a rank that returns while others
/// wait in a collective it never called would otherwise leave the job hung
/// (MPI_Finalize waits for every rank). Past the limit rank 0 names the ranks
/// that never arrived (another rank names rank 0 when rank 0 is the one
/// missing) and the job ends with exit code 1.
///
/// An exception that escapes to `std::terminate` on any rank prints
/// `kpmap: rank R: message` and aborts the whole job with `MPI_Abort`, so the
/// other ranks never wait forever. Use kpmap::run() to get the same for
/// exceptions thrown by the program body, with exit codes.
///
/// Construction and destruction are collective over MPI_COMM_WORLD. At most
/// one Runtime exists per process.
class Runtime {
 public:
  Runtime(int& argc, char**& argv, RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  Runtime(Runtime&&) = delete;
  Runtime& operator=(Runtime&&) = delete;

  /// \brief The live Runtime. \throws kpmap::Error if there is none.
  static Runtime& current();
  /// \brief True while a Runtime exists.
  static bool active() noexcept;

  /// \brief MPI_COMM_WORLD, for the program's own MPI calls.
  MPI_Comm world() const noexcept { return MPI_COMM_WORLD; }
  /// \brief kpmap's private duplicate of MPI_COMM_WORLD, so that kpmap's
  /// messages never match the program's own. Owned by the Runtime.
  MPI_Comm comm() const noexcept { return comm_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// \brief The ranks that share this rank's node (shared-memory domain).
  MPI_Comm node_comm() const noexcept { return node_comm_; }
  int node_rank() const noexcept { return node_rank_; }
  int node_size() const noexcept { return node_size_; }
  /// \brief Number of distinct nodes in the job.
  int node_count() const noexcept { return node_count_; }
  /// \brief Index of this rank's node, 0 .. node_count()-1 (ordered by lowest world rank).
  int node_index() const noexcept { return node_index_; }

  /// \brief The GPU this rank runs on, or -1 when Kokkos' default execution
  /// space is a host backend.
  int device_id() const noexcept { return device_id_; }
  /// \brief How device_id() was chosen ("node-local rank 1 of 4 GPUs", ...).
  const std::string& device_binding() const noexcept { return device_binding_; }

  int mpi_thread_level_provided() const noexcept { return thread_provided_; }

  /// \brief Host threads this rank runs (1 on the Serial backend), and why.
  const detail::HostThreads& host_threads() const noexcept { return host_threads_; }

  /// \brief The host BLAS's kernel set and who chose it: where the BLAS
  /// picked narrower kernels than the CPU and the BLAS have (an OpenBLAS
  /// older than the processor), the Runtime had it take the widest, once
  /// per process, before anything ran; an OPENBLAS_CORETYPE of the user's wins.
  const detail::BlasKernels& blas_kernels() const noexcept { return blas_kernels_; }

  /// \brief Whether MPI may be handed device pointers, and why: the
  /// transport's decision, made when the Runtime started.
  const transport::GpuAwareness& gpu_awareness() const noexcept {
    return transport::gpu_awareness();
  }
  /// \brief Switches KPMAP_STAGING=always on or off for this process from
  /// now on, as benchmarks do to compare the staged and direct paths. Every
  /// rank must make the same choice.
  void set_staging_always(bool on) noexcept { transport::set_staging_always(on); }

  /// \brief Registers `hook` to run when the Runtime shuts down, before Kokkos
  /// and MPI are finalised (last registered, first run). Layers that keep
  /// Kokkos memory or MPI objects for the life of the process release them here.
  static void at_finalize(std::function<void()> hook);

  /// \brief Prints `kpmap: rank R: message` to stderr and aborts every rank of
  /// the job with exit code `code`. Not collective: one rank may call it alone.
  [[noreturn]] void abort(const std::string& message, int code = exit_code::failure) const;
  /// \brief Rank 0 prints `kpmap: error: message`, then every rank aborts the
  /// job with `code`, without finalising. Collective: for an error every rank
  /// raised together whose clean-up cannot run (ErrorScope::all_ranks_abort).
  [[noreturn]] void abort_together(const std::string& message, int code) const;

 private:
  void init_mpi(int& argc, char**& argv, const RuntimeOptions& options);
  void init_node_topology();
  /// Ends the job (exit 2) where the ranks see different KPMAP_* settings or
  /// run different programs or builds, naming what differs and where.
  void agree_on_settings(const char* program);
  void init_kokkos(int& argc, char**& argv, int local_rank, const std::string& rank_source);
  void choose_host_threads(int argc, char** argv);
  void init_before_mpi(int& argc, char**& argv, std::string& error);
  /// Waits for every rank at the end, up to shutdown_limit_ (see the class).
  void await_every_rank() const;

  bool owns_mpi_ = false;
  bool owns_kokkos_ = false;
  int rank_ = 0;
  int size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  int node_rank_ = 0;
  int node_size_ = 1;
  int node_count_ = 1;
  int node_index_ = 0;
  int device_id_ = -1;
  int early_rank_ = -1;  // the launcher's node-local rank, with device_before_mpi
  std::string device_binding_;
  detail::HostThreads host_threads_;
  detail::BlasKernels blas_kernels_;
  int thread_provided_ = MPI_THREAD_SINGLE;
  int uncaught_at_start_ = 0;
  double shutdown_limit_ = 0;  ///< seconds; 0: wait for ever
};

/// \brief Prints `kpmap: rank R: message` and aborts the job; usable with or
/// without a live Runtime (falls back to std::_Exit before MPI is up).
[[noreturn]] void abort_job(const std::string& message, int code = exit_code::failure);

/// \brief Runs `body(runtime)` as a program's main with kpmap's error contract.
///
/// - `body` returns the exit code (0 on success); a trace (kpmap/tools/trace.hpp)
///   that cannot be written at the end turns success into 1;
/// - a kpmap::Error raised by all ranks together (`all_ranks()`) is printed
///   once by rank 0 and every rank leaves cleanly with its code (2 for input);
///   one whose scope is ErrorScope::all_ranks_abort is printed once too, and
///   the job aborted with its code;
/// - any other exception aborts the whole job at once with
///   `kpmap: rank R: message`, so no rank waits forever on the one that failed.
///
/// Collective over MPI_COMM_WORLD.
namespace detail {
/// \brief Whether `e` says an allocation failed: std::bad_alloc (Kokkos 4's
/// RawMemoryAllocationFailure is one), or Kokkos 3's runtime_error "Kokkos
/// failed to allocate memory ...".
bool allocation_failed(const std::exception& e) noexcept;
}  // namespace detail

template <class Body>
int run(int& argc, char**& argv, Body&& body, RuntimeOptions options = {}) {
  Runtime runtime(argc, argv, options);
  try {
    const int code = std::forward<Body>(body)(runtime);
    // A trace that was asked for and could not be written fails the run.
    if (!trace::finish() && code == exit_code::success) return exit_code::failure;
    return code;
  } catch (const Error& e) {
    if (e.scope() == ErrorScope::this_rank) runtime.abort(e.what(), e.code());
    if (e.scope() == ErrorScope::all_ranks_abort) runtime.abort_together(e.what(), e.code());
    if (runtime.rank() == 0) {
      std::fputs(("kpmap: error: " + std::string(e.what()) + "\n").c_str(), stderr);
    }
    return e.code();
  } catch (const std::exception& e) {
    // A run too big for what this rank may allocate (ulimit -v, the cgroup,
    // the device) is bad input, as the estimate's refusal is.
    if (detail::allocation_failed(e)) {
      runtime.abort(std::string("out of memory: ") + e.what() +
                        " (the run needs more memory than this rank may allocate: use more "
                        "ranks or a smaller problem; KPMAP_MEMORY_LIMIT makes kpmap's "
                        "estimate refuse it up front)",
                    exit_code::bad_input);
    }
    runtime.abort(e.what(), exit_code::failure);
  } catch (...) {
    runtime.abort("unknown exception", exit_code::failure);
  }
}

}  // namespace kpmap
