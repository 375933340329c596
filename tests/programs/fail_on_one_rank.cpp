// SPDX-License-Identifier: BSD-3-Clause
// Test program: one rank throws while every other rank waits in a collective.
// Without kpmap's job-wide abort the waiting ranks would hang forever.
//
//   fail_on_one_rank <failing-rank> [uncaught | checkpoint | early]
//
// With "uncaught" the exception escapes main with no kpmap::run around it, so
// the terminate handler installed by kpmap::Runtime must end the job. With
// "checkpoint" the failing rank throws while a checkpoint Writer is open and
// the other ranks are inside its collective commit. With "early" the rank
// throws nothing: it returns from the program while the others wait in a
// psum it never calls, and the Runtime's end-of-program wait (KPMAP_WATCHDOG)
// must end the job naming the ranks that never arrived.

#include <kpmap/collectives/collectives.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/runtime/runtime.hpp>

#include <Kokkos_Core.hpp>

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

int early_body(const kpmap::Runtime& rt, int leaving_rank) {
  if (rt.rank() == leaving_rank) return 0;
  return static_cast<int>(kpmap::psum(1.0, "devices"));  // never completes
}

int checkpoint_body(const kpmap::Runtime& rt, int failing_rank) {
  Kokkos::View<double*, Kokkos::HostSpace> x("x", 4);
  kpmap::checkpoint::Metadata meta;
  meta.app = "fail_on_one_rank";
  kpmap::checkpoint::Writer w("fail_on_one_rank_" + std::to_string(rt.size()) + ".h5", rt.comm(),
                              meta);
  w.write("x", x, kpmap::checkpoint::row_block({4ul * rt.size()}, 4ul * rt.rank(), 4));
  if (rt.rank() == failing_rank) {
    throw std::runtime_error("injected failure on rank " + std::to_string(failing_rank));
  }
  w.commit();  // never completes: the failing rank does not arrive
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int failing_rank = argc > 1 ? std::atoi(argv[1]) : 1;
  const bool uncaught = argc > 2 && std::string(argv[2]) == "uncaught";
  const bool checkpoint = argc > 2 && std::string(argv[2]) == "checkpoint";
  const bool early = argc > 2 && std::string(argv[2]) == "early";
  if (early) {
    return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) { return early_body(rt, failing_rank); });
  }
  if (checkpoint) {
    return kpmap::run(argc, argv,
                      [&](kpmap::Runtime& rt) { return checkpoint_body(rt, failing_rank); });
  }
  if (uncaught) {
    kpmap::Runtime rt(argc, argv);
    return body(rt, failing_rank);
  }
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) { return body(rt, failing_rank); });
}
