// Test program: one rank throws while every other rank waits in a collective.
// Without kpmap's job-wide abort the waiting ranks would hang forever.
//
//   fail_on_one_rank <failing-rank> [uncaught]
//
// With "uncaught" the exception escapes main with no kpmap::run around it, so
// the terminate handler installed by kpmap::Runtime must end the job.

#include <kpmap/runtime.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

int body(const kpmap::Runtime& rt, int failing_rank) {
  if (rt.rank() == failing_rank) {
    throw std::runtime_error("injected failure on rank " + std::to_string(failing_rank));
  }
  MPI_Barrier(rt.world());  // never completes: the failing rank does not arrive
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int failing_rank = argc > 1 ? std::atoi(argv[1]) : 1;
  const bool uncaught = argc > 2 && std::string(argv[2]) == "uncaught";
  if (uncaught) {
    kpmap::Runtime rt(argc, argv);
    return body(rt, failing_rank);
  }
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) { return body(rt, failing_rank); });
}
