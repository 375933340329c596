// SPDX-License-Identifier: BSD-3-Clause
// Test program: the mistakes a user of shard_map, Mesh and psum makes first,
// each of which must end the job with one kpmap line, printed once, and exit
// code 2, never a hang, a launcher banner per rank or a silently wrong answer.
//
//   user_mistakes spec | mesh | uneven | psum_shape
//
// spec:   a partition spec names an axis the mesh does not have;
// mesh:   a mesh whose axes do not fit the rank count;
// uneven: (checked mode) rank 0 passes 9 rows of a sharded argument, the
//         others 8;
// psum_shape: rank 0 psums 5 elements, the others 4: unchecked, MPI's
//         truncation becomes one kpmap line naming the collective; with
//         KPMAP_CHECK=1, kpmap names both shapes first.

#include <kpmap/collectives/checked.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/spmd/shard_map.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <string>

namespace {

struct Touch {
  template <class B>
  void operator()(const B&) const {}
};

struct RowCount {
  template <class B>
  double operator()(const B& block) const {
    return static_cast<double>(block.extent(0));
  }
};

int body(const kpmap::Runtime& rt, const std::string& mistake) {
  using Matrix = Kokkos::View<double**, Kokkos::HostSpace>;
  if (mistake == "spec") {
    const kpmap::Mesh mesh({{"data", 0}});
    const Matrix x("x", 8, 7);
    kpmap::shard_map(mesh, {kpmap::P("batch", kpmap::none)}, {kpmap::P()}, RowCount{})(x);
  } else if (mistake == "mesh") {
    const kpmap::Mesh mesh({{"data", rt.size() + 1}, {"model", 1}});
  } else if (mistake == "uneven") {
    kpmap::set_checked_mode(true);
    const kpmap::Mesh mesh({{"data", 0}});
    const Matrix x("x", rt.rank() == 0 ? 9 : 8, 7);
    kpmap::shard_map(mesh, {kpmap::P("data", kpmap::none)}, {}, Touch{})(x);
  } else if (mistake == "psum_shape") {
    Kokkos::View<double*, Kokkos::HostSpace> x("x", rt.rank() == 0 ? 5 : 4);
    kpmap::psum_inplace(x, "devices");
    // A real program goes on to its next collective. Without one, a rank
    // whose psum returned (rank 0 receives 4 elements into 5) would finalize
    // while another aborts, and Open MPI 4.1's mpiexec may then crash in its
    // own teardown (PMIx_server_finalize) instead of reporting the abort.
    Kokkos::View<double*, Kokkos::HostSpace> next("next", 1);
    kpmap::psum_inplace(next, "devices");
  }
  std::printf("rank %d: no error\n", rt.rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mistake = argc > 1 ? argv[1] : "";
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) { return body(rt, mistake); });
}
