// SPDX-License-Identifier: BSD-3-Clause
// kpmap-bench-checkpoint: parallel HDF5 checkpoint bandwidth against plain
// POSIX write()/read() of the same bytes by every rank, in the same run.
//
//   mpiexec -n 4 kpmap-bench-checkpoint --benchmark_filter=1024
//
// The argument is the total size in MiB (a global array of doubles split in
// row blocks). Files go to $KPMAP_BENCH_DIR (default: the current directory).
// Both sides sync to disk: the checkpoint's commit fsyncs before its rename,
// the reference fsyncs each rank's file.
// `hash_in_cache` (read): XXH3 of the bytes already in cache over read()'s
// time, the least the checksum can add to the read's ratio on this processor.

#include "support/mpi_benchmark.hpp"

#include <kpmap/io/checkpoint.hpp>
#include <kpmap/io/detail/attributes.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/spmd/pmap.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
constexpr std::size_t kCols = 1024;

std::string bench_dir() {
  const char* d = std::getenv("KPMAP_BENCH_DIR");
  return d != nullptr && *d != '\0' ? d : ".";
}

struct Setup {
  std::size_t rows;
  kpmap::BlockPartition part;
  Kokkos::View<double**, Exec> local;
  kpmap::checkpoint::Block block;
  std::string h5;
  std::string raw;
};

Setup setup(std::size_t mib) {
  auto& rt = kpmap::Runtime::current();
  const std::size_t rows = (mib << 20) / (kCols * sizeof(double));
  kpmap::BlockPartition part(rows, rt.size());
  Kokkos::View<double**, Exec> local("bench::local", part.count(rt.rank()), kCols);
  Kokkos::deep_copy(local, 1.5 + rt.rank());
  auto block = kpmap::checkpoint::row_block({rows, kCols}, part.begin(rt.rank()), local.extent(0));
  const std::string stem = bench_dir() + "/kpmap_bench_" + std::to_string(mib);
  return {rows,  part,         local,
          block, stem + ".h5", stem + "_rank" + std::to_string(rt.rank()) + ".bin"};
}

void posix_write(const std::string& path, const void* data, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::size_t done = 0;
  while (fd >= 0 && done < bytes) {
    const ssize_t n = ::write(fd, static_cast<const char*>(data) + done, bytes - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  if (done != bytes) throw kpmap::Error("bench: writing " + path + " failed");
}

void posix_read(const std::string& path, void* data, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  std::size_t done = 0;
  while (fd >= 0 && done < bytes) {
    const ssize_t n = ::read(fd, static_cast<char*>(data) + done, bytes - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (fd >= 0) ::close(fd);
  if (done != bytes) throw kpmap::Error("bench: reading " + path + " failed");
}

kpmap::checkpoint::Metadata meta() {
  kpmap::checkpoint::Metadata m;
  m.app = "kpmap-bench-checkpoint";
  return m;
}

void BM_paired_checkpoint_write(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  auto s = setup(static_cast<std::size_t>(state.range(0)));
  const std::size_t bytes = s.local.size() * sizeof(double);
  kpmap::bench::run_paired(
      state, rt.comm(), [&] { posix_write(s.raw, s.local.data(), bytes); },
      [&] {
        kpmap::checkpoint::Writer w(s.h5, rt.comm(), meta());
        w.write("field", s.local, s.block);
        w.commit();
      });
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(state.range(0) << 20));
  std::remove(s.raw.c_str());
  MPI_Barrier(rt.comm());
  if (rt.rank() == 0) std::remove(s.h5.c_str());
}

void BM_paired_checkpoint_read(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  auto s = setup(static_cast<std::size_t>(state.range(0)));
  const std::size_t bytes = s.local.size() * sizeof(double);
  posix_write(s.raw, s.local.data(), bytes);
  {
    kpmap::checkpoint::Writer w(s.h5, rt.comm(), meta());
    w.write("field", s.local, s.block);
    w.commit();
  }
  Kokkos::View<double**, Exec> back("bench::back", s.local.extent(0), kCols);
  kpmap::bench::run_paired(
      state, rt.comm(), [&] { posix_read(s.raw, back.data(), bytes); },
      [&] {
        kpmap::checkpoint::Reader r(s.h5, rt.comm(), "kpmap-bench-checkpoint");
        r.read("field", back, s.block);
      });
  // The least the read's checksum adds on this processor: XXH3 (BlockHash)
  // over as many bytes as the rank reads, found in cache (128 KiB of `back`
  // again and again), in units of the reference's read() (slowest rank).
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Exec::memory_space>::accessible) {
    constexpr std::size_t piece = std::size_t{128} << 10;
    const auto t0 = std::chrono::steady_clock::now();
    kpmap::checkpoint::detail::BlockHash hash;
    for (std::size_t done = 0; done < bytes; done += piece) {
      hash.add(back.data(), std::min(piece, bytes - done));
    }
    benchmark::DoNotOptimize(hash.value());
    double us = 1e6 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, rt.comm());
    const double ref = state.counters["reference_us"];
    state.counters["hash_in_cache"] = ref > 0 ? us / ref : 0;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(state.range(0) << 20));
  std::remove(s.raw.c_str());
  MPI_Barrier(rt.comm());
  if (rt.rank() == 0) std::remove(s.h5.c_str());
}

}  // namespace

BENCHMARK(BM_paired_checkpoint_write)
    ->Arg(16)
    ->Arg(1024)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_paired_checkpoint_read)
    ->Arg(16)
    ->Arg(1024)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
