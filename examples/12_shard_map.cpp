// SPDX-License-Identifier: BSD-3-Clause
// 12 shard_map on a 2-D mesh: a matrix-vector product split both ways.
//
//   mesh = Mesh(devices, ("data", "model"))
//   @partial(shard_map, mesh=mesh, in_specs=(P("data", "model"), P("model")),
//            out_specs=P("data"))
//   def matvec(a_block, x_block):
//       return lax.psum(a_block @ x_block, "model")
//
// Each device gets the block of A at its (data, model) coordinates and the
// matching block of x; its product is a partial sum of its rows, which a psum
// over "model" completes. The result is split over "data" and replicated over
// "model", as out_specs says (checked mode verifies it), and stays sharded
// until kpmap::gather reassembles it. Nothing has to divide evenly.
//
//   mpiexec -n 4 ./12_shard_map

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

// One device's product of its blocks, `a_block @ x_block` (Kokkos Kernels'
// gemv on the blocks' device), completed over "model".
struct MatVec {
  template <class ABlock, class XBlock>
  Kokkos::View<double*> operator()(const ABlock& a, const XBlock& x) const {
    Kokkos::View<double*> y = kpmap::matmul(a, x);
    kpmap::psum_inplace(y, "model");  // inside shard_map, names are the mesh's axes
    return y;
  }
};

int matvec(kpmap::Runtime&) {
  const int n = kpmap::axis_size("devices");
  // "model" is 2 where the rank count is even; "data" takes the rest.
  kpmap::Mesh mesh({{"data", 0}, {"model", n % 2 == 0 ? 2 : 1}});

  // A(i, j) = i + j and x(j) = 1, made on the device by kernels.
  const std::size_t rows = 9, cols = 7;
  Kokkos::View<double**> a("a", rows, cols);
  Kokkos::View<double*> x("x", cols);
  Kokkos::parallel_for(
      "12_shard_map::a", kpmap::row_major_range<2>({0, 0}, {rows, cols}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t j) { a(i, j) = double(i + j); });
  Kokkos::deep_copy(x, 1.0);

  using kpmap::P;
  auto f = kpmap::shard_map(mesh, {P("data", "model"), P("model")}, {P("data")}, MatVec{});
  const auto y_block = f(a, x);                            // this device's rows of y
  const auto y = kpmap::gather(mesh, P("data"), y_block);  // the whole y, on every device

  // Checked against the closed form y(i) = cols i + cols (cols - 1) / 2.
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  int wrong = h.extent(0) != rows;
  for (std::size_t i = 0; i < h.extent(0); ++i) wrong += h(i) != cols * i + cols * (cols - 1) / 2.0;
  const int me = kpmap::axis_index("devices");
  std::printf("device %d at (data %d, model %d) holds %zu rows of y\n", me, mesh.axis_index("data"),
              mesh.axis_index("model"), y_block.extent(0));
  std::fflush(stdout);
  if (me == 0) {
    std::printf("mesh %d x %d: y = [", mesh.axis_size("data"), mesh.axis_size("model"));
    for (std::size_t i = 0; i < h.extent(0); ++i) std::printf("%s%g", i ? ", " : "", h(i));
    std::printf("] %s 7 i + 21\n", wrong ? "differs from" : "equals");
  }
  return kpmap::psum(wrong, "devices") == 0 ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, matvec); }
