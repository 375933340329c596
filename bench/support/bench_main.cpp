// SPDX-License-Identifier: BSD-3-Clause
// main() for kpmap's MPI benchmarks: MPI and Kokkos up once, rank 0 reports,
// every other rank runs the same benchmarks silently.

#include <kpmap/runtime/runtime.hpp>

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

namespace {
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
}  // namespace

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) {
    // Only rank 0 writes --benchmark_out files.
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
      if (rt.rank() != 0 && std::strncmp(argv[i], "--benchmark_out", 15) == 0) continue;
      args.push_back(argv[i]);
    }
    int n = static_cast<int>(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&n, args.data());
    if (benchmark::ReportUnrecognizedArguments(n, args.data())) return kpmap::exit_code::bad_input;
    benchmark::AddCustomContext("ranks", std::to_string(rt.size()));
    benchmark::AddCustomContext("staging", rt.gpu_awareness().staging_always ? "always" : "auto");
    if (rt.rank() == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      SilentReporter silent;
      benchmark::RunSpecifiedBenchmarks(&silent);
    }
    benchmark::Shutdown();
    return 0;
  });
}
