// SPDX-License-Identifier: BSD-3-Clause
// kpmap::Runtime: topology, device binding and the GPU-aware decision.

#include "support/mpi_test.hpp"

#include <kpmap/base/detail/blas_kernels.hpp>
#include <kpmap/base/fault.hpp>
#include <kpmap/run/host_monitor.hpp>
#include <kpmap/run/stop.hpp>
#include <kpmap/run/watchdog.hpp>
#include <kpmap/runtime/memory.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/transport/host.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using kpmap::transport::decide_gpu_awareness;
using kpmap::transport::MpiGpuSupport;

TEST_CASE("Runtime reports the MPI world and the node topology", "[runtime]") {
  auto& rt = kpmap::Runtime::current();
  REQUIRE(kpmap::Runtime::active());
  CHECK(rt.rank() == kpmap::test::world_rank());
  CHECK(rt.size() == kpmap::test::world_size());
  CHECK(Kokkos::is_initialized());
  CHECK(rt.mpi_thread_level_provided() >= MPI_THREAD_FUNNELED);

  // Every rank is on exactly one node: the node sizes, counted once per node
  // by its leader, add up to the world size.
  CHECK(rt.node_rank() >= 0);
  CHECK(rt.node_rank() < rt.node_size());
  const int leader_share = rt.node_rank() == 0 ? rt.node_size() : 0;
  int total = 0;
  MPI_Allreduce(&leader_share, &total, 1, MPI_INT, MPI_SUM, rt.world());
  CHECK(total == rt.size());
  CHECK(rt.node_index() >= 0);
  CHECK(rt.node_index() < rt.node_count());
  CHECK(rt.node_count() <= rt.size());

  // The node communicator holds exactly the ranks with the same node index.
  int same_node = 0;
  int one = 1;
  MPI_Allreduce(&one, &same_node, 1, MPI_INT, MPI_SUM, rt.node_comm());
  CHECK(same_node == rt.node_size());
}

TEST_CASE("Runtime binds host backends to no GPU", "[runtime]") {
  auto& rt = kpmap::Runtime::current();
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                 Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  if (host) {
    CHECK(rt.device_id() == -1);
    CHECK_THAT(rt.device_binding(), ContainsSubstring("host"));
  } else {
    CHECK(rt.device_id() >= 0);
  }
}

TEST_CASE("The launcher's node-local rank, read before MPI_Init, is MPI's", "[runtime]") {
  // What device_before_mpi binds by, against MPI_Comm_split_type's answer.
  auto& rt = kpmap::Runtime::current();
  const auto launcher = kpmap::detail::launcher_local_rank();
  INFO("from " << launcher.source);
  REQUIRE(launcher.rank >= 0);
  CHECK(launcher.rank == rt.node_rank());
  if (launcher.size > 0) CHECK(launcher.size == rt.node_size());
}

TEST_CASE("Launcher variables are read in order and refused by name", "[runtime]") {
  const char* names[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                         "OMPI_COMM_WORLD_LOCAL_SIZE",
                         "MV2_COMM_WORLD_LOCAL_RANK",
                         "MV2_COMM_WORLD_LOCAL_SIZE",
                         "MPI_LOCALRANKID",
                         "MPI_LOCALNRANKS",
                         "PMI_LOCAL_RANK",
                         "PMI_LOCAL_SIZE",
                         "SLURM_LOCALID",
                         "PALS_LOCAL_RANKID",
                         "FLUX_TASK_LOCAL_ID"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* n : names) {
    if (const char* v = std::getenv(n)) saved.emplace_back(n, v);
    ::unsetenv(n);
  }
  using kpmap::detail::launcher_local_rank;
  CHECK(launcher_local_rank().rank == -1);
  ::setenv("SLURM_LOCALID", "3", 1);
  CHECK(launcher_local_rank().rank == 3);
  CHECK(launcher_local_rank().size == -1);
  CHECK(launcher_local_rank().source == "SLURM_LOCALID");
  // MPICH's pair comes before Slurm's.
  ::setenv("MPI_LOCALRANKID", "1", 1);
  ::setenv("MPI_LOCALNRANKS", "4", 1);
  CHECK(launcher_local_rank().rank == 1);
  CHECK(launcher_local_rank().size == 4);
  ::setenv("MPI_LOCALNRANKS", "0", 1);
  CHECK_THROWS_WITH(launcher_local_rank(), ContainsSubstring("MPI_LOCALNRANKS='0'"));
  ::setenv("MPI_LOCALRANKID", "1x", 1);
  CHECK_THROWS_AS(launcher_local_rank(), kpmap::InputError);
  CHECK_THROWS_WITH(launcher_local_rank(), ContainsSubstring("MPI_LOCALRANKID='1x'"));
  for (const char* n : names) ::unsetenv(n);
  for (const auto& [n, v] : saved) ::setenv(n.c_str(), v.c_str(), 1);
}

TEST_CASE("There is only one Runtime", "[runtime]") {
  int argc = 1;
  char name[] = "second";
  char* args[] = {name, nullptr};
  char** argv = args;
  CHECK_THROWS_AS(kpmap::Runtime(argc, argv), kpmap::Error);
}

TEST_CASE("GPU-aware decision follows KPMAP_GPU_AWARE and the MPI library", "[transport]") {
  const MpiGpuSupport yes{true, "library says yes"};
  const MpiGpuSupport no{false, "library says no"};

  SECTION("auto asks the MPI library") {
    auto g = decide_gpu_awareness(std::nullopt, std::nullopt, false, yes);
    CHECK(g.gpu_aware);
    CHECK_THAT(g.reason, ContainsSubstring("auto: library says yes"));
    g = decide_gpu_awareness(std::string("auto"), std::nullopt, false, no);
    CHECK_FALSE(g.gpu_aware);
    CHECK_THAT(g.reason, ContainsSubstring("library says no"));
  }
  SECTION("on and off override the library, in any case") {
    CHECK(decide_gpu_awareness(std::string("ON"), std::nullopt, false, no).gpu_aware);
    CHECK_FALSE(decide_gpu_awareness(std::string("off"), std::nullopt, false, yes).gpu_aware);
    CHECK_THAT(decide_gpu_awareness(std::string("off"), std::nullopt, false, yes).reason,
               ContainsSubstring("KPMAP_GPU_AWARE=off"));
  }
  SECTION("host memory needs no decision, and says so") {
    auto g = decide_gpu_awareness(std::nullopt, std::nullopt, true, no);
    CHECK(g.device_memory_is_host_accessible);
    CHECK_THAT(g.reason, ContainsSubstring("host-accessible"));
  }
  SECTION("KPMAP_STAGING=always forces staging") {
    CHECK(decide_gpu_awareness(std::nullopt, std::string("always"), true, no).staging_always);
    CHECK_FALSE(decide_gpu_awareness(std::nullopt, std::string("auto"), true, no).staging_always);
  }
  SECTION("a bad value is an input error naming the variable") {
    CHECK_THROWS_WITH(decide_gpu_awareness(std::string("maybe"), std::nullopt, false, no),
                      ContainsSubstring("KPMAP_GPU_AWARE='maybe'"));
    CHECK_THROWS_AS(decide_gpu_awareness(std::nullopt, std::string("sometimes"), false, no),
                    kpmap::InputError);
    try {
      decide_gpu_awareness(std::nullopt, std::string("sometimes"), false, no);
    } catch (const kpmap::Error& e) {
      CHECK(e.code() == kpmap::exit_code::bad_input);
      CHECK_THAT(std::string(e.what()), ContainsSubstring("KPMAP_STAGING"));
    }
  }
}

TEST_CASE("A stop signal on one rank reaches every rank at the same poll", "[stop]") {
  const int me = kpmap::test::world_rank();
  const int size = kpmap::test::world_size();
  for (int sig : {SIGTERM, SIGINT, SIGUSR1}) {
    kpmap::StopSignals stop;
    CHECK(stop.pending() == 0);
    CHECK(stop.poll(MPI_COMM_WORLD) == 0);
    // The last rank receives the signal; the handler only records it.
    if (me == size - 1) std::raise(sig);
    CHECK(stop.pending() == (me == size - 1 ? sig : 0));
    CHECK(stop.poll(MPI_COMM_WORLD) == sig);
  }
  // The handlers are gone with the instance; a new one starts clean.
  kpmap::StopSignals again;
  CHECK(again.pending() == 0);
  CHECK_THROWS_AS(kpmap::StopSignals(), kpmap::Error);
  CHECK(kpmap::StopSignals::name(SIGUSR1) == "SIGUSR1");
}

// Sets an environment variable (or unsets it) for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

TEST_CASE("The watchdog is on by default, its limit ten times the longest step", "[watchdog]") {
  {
    const ScopedEnv unset("KPMAP_WATCHDOG", nullptr);
    CHECK(kpmap::Watchdog::from_environment() == kpmap::Watchdog::automatic);
  }
  {
    const ScopedEnv off("KPMAP_WATCHDOG", "0");
    CHECK(kpmap::Watchdog::from_environment() == 0.0);
  }
  {
    const ScopedEnv fixed("KPMAP_WATCHDOG", "2.5");
    CHECK(kpmap::Watchdog::from_environment() == 2.5);
  }
  for (const char* bad : {"-1", "abc", "inf", "3s"}) {
    const ScopedEnv wrong("KPMAP_WATCHDOG", bad);
    CHECK_THROWS_WITH(kpmap::Watchdog::from_environment(),
                      ContainsSubstring("KPMAP_WATCHDOG='" + std::string(bad) + "'"));
  }
  // Automatic: the floor until a step is longer than a tenth of it.
  kpmap::Watchdog automatic(kpmap::Watchdog::automatic, 0);
  CHECK(automatic.seconds() == kpmap::Watchdog::automatic_floor);
  automatic.beat(1);
  automatic.beat(2);
  CHECK(automatic.seconds() == kpmap::Watchdog::automatic_floor);
  // With a floor of 0.5 s, a step of at least 0.1 s sets it to 10 x the step.
  // `step` spans the watchdog's own step (t0 before its first beat, the end
  // after its second), so the bound holds however the process is scheduled.
  kpmap::Watchdog short_floor(kpmap::Watchdog::automatic, 0, "step", 0.5);
  const auto t0 = std::chrono::steady_clock::now();
  short_floor.beat(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  short_floor.beat(2);
  const double step = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(short_floor.seconds() >= 1.0);
  CHECK(short_floor.seconds() <= 10 * step + 1e-9);
  // A shorter step later leaves the limit where the longest put it.
  const double after_long = short_floor.seconds();
  short_floor.beat(3);
  CHECK(short_floor.seconds() == after_long);
  const kpmap::Watchdog off(0.0, 0);
  CHECK(off.seconds() == 0.0);
}

namespace {
// Each rank's host as MPI names it, gathered apart from the code under test.
std::vector<std::string> host_names() {
  const int size = kpmap::test::world_size();
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> names;
  for (int r = 0; r < size; ++r) {
    names.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  }
  return names;
}
}  // namespace

TEST_CASE("disagreement() is empty where the ranks agree, else names what differs and where",
          "[agree]") {
  const int rank = kpmap::test::world_rank();
  const int size = kpmap::test::world_size();
  using kpmap::transport::disagreement;
  CHECK(disagreement(MPI_COMM_WORLD, {{"A", "'1'"}, {"B", "unset"}}).empty());
  CHECK(disagreement(MPI_COMM_WORLD, {}).empty());
  // The last rank holds another B: every rank gets the same text, naming the
  // two groups of ranks, their values and their hosts (as MPI names them).
  const std::vector<std::string> names = host_names();
  auto host = [&](int r) { return names[static_cast<std::size_t>(r)]; };
  const std::string text = disagreement(
      MPI_COMM_WORLD, {{"A", "'1'"}, {"B", rank == size - 1 ? "'x'" : "unset"}, {"C", "2"}});
  if (size == 1) {
    CHECK(text.empty());
    return;
  }
  std::vector<std::string> first_hosts;
  for (int r = 0; r < size - 1; ++r) {
    if (std::find(first_hosts.begin(), first_hosts.end(), host(r)) == first_hosts.end()) {
      first_hosts.push_back(host(r));
    }
  }
  std::string hosts = first_hosts[0];
  for (std::size_t i = 1; i < first_hosts.size(); ++i) hosts += ", " + first_hosts[i];
  const std::string first = size == 2 ? "rank 0" : "ranks 0-" + std::to_string(size - 2);
  CHECK(text == "B is unset on " + first + (first_hosts.size() > 1 ? " (hosts " : " (host ") +
                    hosts + ") but 'x' on rank " + std::to_string(size - 1) + " (host " +
                    host(size - 1) + ")");
  // Several that differ: each, in the order the ranks list them.
  const std::string two = disagreement(
      MPI_COMM_WORLD, {{"P", rank == 0 ? "0" : "1"}, {"Q", "1"}, {"R", rank == 0 ? "0" : "1"}});
  CHECK_THAT(two, ContainsSubstring("P is 0 on rank 0 (host " + host(0) + ") but 1 on "));
  CHECK_THAT(two, ContainsSubstring("; R is 0 on rank 0 (host "));
  CHECK(two.find("Q is") == std::string::npos);
}

TEST_CASE("The host monitor finds the job's hosts and watches only several", "[hosts]") {
  {
    const ScopedEnv unset("KPMAP_HOST_TIMEOUT", nullptr);
    CHECK(kpmap::HostMonitor::timeout_from_environment() == 60.0);
  }
  {
    const ScopedEnv off("KPMAP_HOST_TIMEOUT", "0");
    CHECK(kpmap::HostMonitor::timeout_from_environment() == 0.0);
  }
  for (const char* bad : {"-2", "x", "nan"}) {
    const ScopedEnv wrong("KPMAP_HOST_TIMEOUT", bad);
    CHECK_THROWS_WITH(kpmap::HostMonitor::timeout_from_environment(),
                      ContainsSubstring("KPMAP_HOST_TIMEOUT='" + std::string(bad) + "'"));
  }
  // The hosts as MPI names them, gathered here apart from the monitor.
  const int size = kpmap::test::world_size();
  const std::vector<std::string> names = host_names();
  const std::set<std::string> distinct(names.begin(), names.end());

  const kpmap::HostMonitor monitor(MPI_COMM_WORLD, 60.0);
  CHECK(monitor.hosts() == static_cast<int>(distinct.size()));
  // Watched exactly where the job spans hosts (the ring connected).
  CHECK(monitor.watching() == (distinct.size() > 1));
  // The first host is rank 0's: the ranks that share its name, listed one by
  // one here ("0, 1, 2"), in ranges by the monitor ("0-2").
  std::vector<int> first;
  for (int r = 0; r < size; ++r) {
    if (names[static_cast<std::size_t>(r)] == names[0]) first.push_back(r);
  }
  const bool consecutive = first.back() - first.front() + 1 == static_cast<int>(first.size());
  std::string ranks = std::to_string(first.front());
  if (first.size() > 1 && consecutive) {
    ranks += "-" + std::to_string(first.back());
  } else {
    for (std::size_t i = 1; i < first.size(); ++i) ranks += ", " + std::to_string(first[i]);
  }
  if (first.size() == 1 || consecutive) {
    CHECK(monitor.describe(0) ==
          "host " + names[0] + " (rank" + (first.size() > 1 ? "s " : " ") + ranks + ")");
  }
  // Off: the hosts are still known, nothing is watched.
  const kpmap::HostMonitor off(MPI_COMM_WORLD, 0.0);
  CHECK(off.hosts() == monitor.hosts());
  CHECK_FALSE(off.watching());
}

TEST_CASE("KPMAP_FAULT_INJECT values are parsed or refused by name", "[fault]") {
  const auto in = kpmap::fault::parse("2:17:nan");
  CHECK(in.rank == 2);
  CHECK(in.step == 17);
  CHECK(in.kind == kpmap::fault::Kind::nan);
  CHECK(kpmap::fault::parse("0:1").kind == kpmap::fault::Kind::error);
  CHECK(kpmap::fault::parse("3:4:signal").kind == kpmap::fault::Kind::signal);
  for (const char* bad : {"", "1", "1:", ":3", "a:3", "1:0", "1:3:crash", "-1:3", "1:3:"}) {
    INFO(bad);
    CHECK_THROWS_AS(kpmap::fault::parse(bad), kpmap::InputError);
  }
  CHECK_THROWS_WITH(kpmap::fault::parse("1:3:crash"),
                    ContainsSubstring("KPMAP_FAULT_INJECT='1:3:crash': unknown KIND 'crash'"));
  // No variable in the test environment: nothing is planned, nothing happens.
  CHECK_FALSE(kpmap::fault::planned().has_value());
  CHECK_FALSE(kpmap::fault::at_step(1, kpmap::test::world_rank()));
}

TEST_CASE("Memory budgets: sizes read and written, estimates refused by all ranks", "[memory]") {
  CHECK(kpmap::parse_bytes("4096", "x") == 4096.0);
  CHECK(kpmap::parse_bytes("512K", "x") == 512.0 * 1024);
  CHECK(kpmap::parse_bytes("1.5G", "x") == 1.5 * 1024 * 1024 * 1024);
  CHECK(kpmap::parse_bytes("2TiB", "x") == 2.0 * 1024 * 1024 * 1024 * 1024);
  for (const char* bad : {"", "G", "-1M", "0", "12Q", "3 M", "1Gx", "nan"}) {
    INFO(bad);
    CHECK_THROWS_AS(kpmap::parse_bytes(bad, "KPMAP_MEMORY_LIMIT"), kpmap::InputError);
  }
  CHECK(kpmap::format_bytes(512) == "512 B");
  CHECK(kpmap::format_bytes(1536) == "1.5 KiB");
  CHECK(kpmap::format_bytes(3.0 * 1024 * 1024 * 1024) == "3 GiB");

  // On Linux hosts the budget is known: a share of MemAvailable or the cgroup's room.
  const auto budget = kpmap::memory_budget(MPI_COMM_WORLD);
  INFO(budget.source);
  CHECK(budget.bytes > 0);
  CHECK_FALSE(budget.source.empty());
  // An estimate far over it on one rank is refused on every rank, naming that rank.
  const int me = kpmap::test::world_rank();
  const int last = kpmap::test::world_size() - 1;
  const double need = me == last ? 1e6 * budget.bytes : 1.0;
  CHECK_THROWS_WITH(kpmap::require_memory(need, "the test", "everything", MPI_COMM_WORLD),
                    ContainsSubstring("the test needs about") &&
                        ContainsSubstring("on rank " + std::to_string(last) + " (everything)"));
  CHECK_NOTHROW(kpmap::require_memory(1.0, "the test", "one byte", MPI_COMM_WORLD));
}

namespace {

using kpmap::detail::BlasKernels;
using kpmap::detail::CpuFeatures;

// A CPU from its vendor, family, model and flags as /proc/cpuinfo names
// them ("pni" is SSE3).
CpuFeatures cpu_with(const std::string& vendor, int family, int model, const std::string& flags) {
  CpuFeatures c;
  c.vendor = vendor;
  c.family = family;
  c.model = model;
  std::istringstream in(flags);
  for (std::string f; in >> f;) {
    c.sse3 |= f == "pni" || f == "sse3";
    c.ssse3 |= f == "ssse3";
    c.sse41 |= f == "sse4_1";
    c.sse42 |= f == "sse4_2";
    c.avx |= f == "avx";
    c.fma |= f == "fma";
    c.avx2 |= f == "avx2";
    c.avx512f |= f == "avx512f";
    c.avx512cd |= f == "avx512cd";
    c.avx512bw |= f == "avx512bw";
    c.avx512dq |= f == "avx512dq";
    c.avx512vl |= f == "avx512vl";
    c.avx512_vnni |= f == "avx512_vnni";
    c.avx512_bf16 |= f == "avx512_bf16";
    c.avx512_fp16 |= f == "avx512_fp16";
    c.amx_bf16 |= f == "amx_bf16";
    c.amx_tile |= f == "amx_tile";
  }
  return c;
}

const std::string sse = "pni ssse3 sse4_1 sse4_2 ";
const std::string avx2 = sse + "avx fma avx2 ";
const std::string avx512 = avx2 + "avx512f avx512cd avx512bw avx512dq avx512vl avx512_vnni ";

// The kernel sets Debian's OpenBLAS 0.3.21 holds (its gotoblas_* tables, from
// nm -D), and a newer OpenBLAS's with Sapphire Rapids' added (0.3.22 on).
const std::vector<std::string> held_0_3_21 = {
    "Prescott",   "Core2",       "Penryn",    "Dunnington", "Nehalem", "Sandybridge", "Haswell",
    "SkylakeX",   "Cooperlake",  "Zen",       "Atom",       "Nano",    "Bobcat",      "Bulldozer",
    "Piledriver", "Steamroller", "Excavator", "Barcelona",  "Opteron", "OpteronSSE3"};
std::vector<std::string> held_newer() {
  auto h = held_0_3_21;
  h.emplace_back("SapphireRapids");
  return h;
}

}  // namespace

TEST_CASE("The BLAS's kernels: the widest a processor and the BLAS have", "[blas]") {
  struct Processor {
    const char* name;
    CpuFeatures cpu;
    const char* widest_0_3_21;  // in Debian's OpenBLAS
    const char* widest_newer;   // in one that holds SapphireRapids
  };
  const std::vector<Processor> processors = {
      {"Cascade Lake (Xeon Gold 6248)", cpu_with("GenuineIntel", 6, 85, avx512), "SkylakeX",
       "SkylakeX"},
      {"Sapphire Rapids (Xeon 8480+)",
       cpu_with("GenuineIntel", 6, 143, avx512 + "avx512_bf16 avx512_fp16 amx_bf16 amx_tile"),
       "Cooperlake", "SapphireRapids"},
      {"Emerald Rapids (family 6 model 207)",
       cpu_with("GenuineIntel", 6, 207, avx512 + "avx512_bf16 avx512_fp16 amx_bf16 amx_tile"),
       "Cooperlake", "SapphireRapids"},
      {"Zen 4 (EPYC 9654)", cpu_with("AuthenticAMD", 25, 17, avx512 + "avx512_bf16"), "Cooperlake",
       "Cooperlake"},
      {"Zen 2 (EPYC 7742)", cpu_with("AuthenticAMD", 23, 49, avx2), "Zen", "Zen"},
      {"Haswell (Xeon E5-2680 v3), AVX2 only", cpu_with("GenuineIntel", 6, 63, avx2), "Haswell",
       "Haswell"},
      {"Sandy Bridge, AVX without AVX2", cpu_with("GenuineIntel", 6, 45, sse + "avx"),
       "Sandybridge", "Sandybridge"},
  };
  for (const auto& p : processors) {
    INFO(p.name);
    CHECK(kpmap::detail::decide_blas_kernels(p.cpu, "Prescott", held_0_3_21, "", true).core ==
          p.widest_0_3_21);
    CHECK(kpmap::detail::decide_blas_kernels(p.cpu, "Prescott", held_newer(), "", true).core ==
          p.widest_newer);
    // A pick as wide as the widest (the same float and double kernels) stays.
    const auto kept =
        kpmap::detail::decide_blas_kernels(p.cpu, p.widest_0_3_21, held_newer(), "", true);
    CHECK(kept.core == p.widest_0_3_21);
    CHECK(kept.chooser == BlasKernels::Chooser::blas);
    CHECK(kept.note.empty());
  }
  // A plain x86-64 (SSE2, as the first Opterons): no set above SSE2 to take.
  const auto plain = cpu_with("AuthenticAMD", 15, 5, "");
  CHECK(kpmap::detail::openblas_cores_for(plain).empty());
  const auto k8 = kpmap::detail::decide_blas_kernels(plain, "Opteron", held_0_3_21, "", true);
  CHECK(k8.core == "Opteron");
  CHECK(k8.chooser == BlasKernels::Chooser::blas);
  CHECK(k8.note.empty());
  // An AMD gets the AVX2 kernels blocked for its caches, an Intel Haswell's.
  CHECK(kpmap::detail::openblas_cores_for(cpu_with("AuthenticAMD", 23, 49, avx2)).front() == "Zen");
  CHECK(kpmap::detail::openblas_cores_for(cpu_with("GenuineIntel", 6, 63, avx2)).front() ==
        "Haswell");
}

TEST_CASE("The BLAS's kernels: who chose them, and the line for a slower run", "[blas]") {
  const auto model_207 =
      cpu_with("GenuineIntel", 6, 207, avx512 + "avx512_bf16 avx512_fp16 amx_bf16 amx_tile");
  // What Debian's 0.3.21 does on model 207: Prescott; kpmap takes Cooperlake.
  const auto chosen =
      kpmap::detail::decide_blas_kernels(model_207, "Prescott", held_0_3_21, "", true);
  CHECK(chosen.chooser == BlasKernels::Chooser::kpmap);
  CHECK(chosen.picked == "Prescott");
  CHECK(chosen.core == "Cooperlake");
  CHECK(chosen.note.empty());
  CHECK_THAT(kpmap::detail::describe(chosen),
             ContainsSubstring("kernels Cooperlake (chosen by kpmap: the BLAS picked Prescott"));
  // A BLAS that cannot be switched: the one line says what to set.
  const auto fixed =
      kpmap::detail::decide_blas_kernels(model_207, "Prescott", held_0_3_21, "", false);
  CHECK(fixed.core == "Prescott");
  CHECK_THAT(fixed.note, ContainsSubstring("set OPENBLAS_CORETYPE=Cooperlake"));
  // The user's OPENBLAS_CORETYPE wins, narrower or not, and is named.
  const auto user =
      kpmap::detail::decide_blas_kernels(model_207, "Prescott", held_0_3_21, "Prescott", true);
  CHECK(user.chooser == BlasKernels::Chooser::user);
  CHECK(user.core == "Prescott");
  CHECK_THAT(user.note, ContainsSubstring("OPENBLAS_CORETYPE=Prescott runs narrower kernels"));
  CHECK_THAT(kpmap::detail::describe(user), ContainsSubstring("(OPENBLAS_CORETYPE, yours)"));
  const auto haswell = cpu_with("GenuineIntel", 6, 63, avx2);
  const auto too_wide =
      kpmap::detail::decide_blas_kernels(haswell, "SkylakeX", held_0_3_21, "SkylakeX", true);
  CHECK(too_wide.core == "SkylakeX");
  CHECK_THAT(too_wide.note, ContainsSubstring("instructions this CPU lacks"));
  // A set kpmap does not know may be newer than it: never replaced.
  const auto newer =
      kpmap::detail::decide_blas_kernels(model_207, "GraniteRapids", held_newer(), "", true);
  CHECK(newer.core == "GraniteRapids");
  CHECK(newer.note.empty());
  CHECK(kpmap::detail::openblas_core_rank("skylakex") ==
        kpmap::detail::openblas_core_rank("SkylakeX"));
}

TEST_CASE("This CPU's vector features are the kernel's", "[blas]") {
  const auto cpu = kpmap::detail::cpu_features();
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line) && line.rfind("flags", 0) != 0) {
  }
  if (line.empty() || cpu.vendor.empty()) SKIP("no x86-64 /proc/cpuinfo flags line");
  // Linux lists a feature only where it saves its registers too.
  const auto seen = cpu_with(cpu.vendor, cpu.family, cpu.model, line.substr(line.find(':') + 1));
  CHECK(cpu.sse3 == seen.sse3);
  CHECK(cpu.ssse3 == seen.ssse3);
  CHECK(cpu.sse42 == seen.sse42);
  CHECK(cpu.avx == seen.avx);
  CHECK(cpu.fma == seen.fma);
  CHECK(cpu.avx2 == seen.avx2);
  CHECK(cpu.avx512f == seen.avx512f);
  CHECK(cpu.avx512bw == seen.avx512bw);
  CHECK(cpu.avx512vl == seen.avx512vl);
  CHECK(cpu.avx512_bf16 == seen.avx512_bf16);
  CHECK(cpu.avx512_fp16 == seen.avx512_fp16);
  CHECK(cpu.amx_tile == seen.amx_tile);
  CHECK_THAT(kpmap::detail::describe(cpu),
             ContainsSubstring("family " + std::to_string(cpu.family) + " model "));
}

TEST_CASE("An OpenBLAS on narrower kernels is switched to the widest", "[blas]") {
  const auto& rt = kpmap::Runtime::current();
  if (rt.blas_kernels().chooser == BlasKernels::Chooser::none) SKIP("the BLAS is not OpenBLAS");
  using Name = char* (*)();
  using Call = void (*)();
  auto name = reinterpret_cast<Name>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  auto quit = reinterpret_cast<Call>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Call>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (quit == nullptr || init == nullptr) SKIP("OpenBLAS built for one kernel set");
  const std::string before = name();
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const std::string users = user != nullptr ? user : "";
  // As an OpenBLAS older than the processor would: its Prescott kernels.
  ::setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  quit();
  init();
  ::unsetenv("OPENBLAS_CORETYPE");
  REQUIRE(std::string(name()) == "Prescott");
  const auto k = kpmap::detail::choose_blas_kernels();
  const auto widest = kpmap::detail::openblas_cores_for(kpmap::detail::cpu_features());
  if (!widest.empty() && widest.front() != "Prescott") {
    CHECK(k.chooser == BlasKernels::Chooser::kpmap);
    CHECK(k.picked == "Prescott");
    CHECK(std::string(name()) == k.core);
    CHECK(kpmap::detail::openblas_core_rank(k.core) >
          kpmap::detail::openblas_core_rank("Prescott"));
  }
  CHECK(std::getenv("OPENBLAS_CORETYPE") == nullptr);
  // Back to what the run had, for the tests after this one.
  ::setenv("OPENBLAS_CORETYPE", before.c_str(), 1);
  quit();
  init();
  if (users.empty())
    ::unsetenv("OPENBLAS_CORETYPE");
  else
    ::setenv("OPENBLAS_CORETYPE", users.c_str(), 1);
  CHECK(std::string(name()) == before);
}
