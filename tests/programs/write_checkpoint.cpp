// SPDX-License-Identifier: BSD-3-Clause
// Writes a checkpoint with a distributed 2-D field, a replicated vector and an
// XDMF sidecar, for tests/scripts/check_checkpoint.py to read with h5py.
//
//   mpiexec -n 3 write_checkpoint OUT.h5
//
// field(i, j) = 1000 i + j on a 7 x 5 grid, split in row blocks over the ranks.

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <filesystem>

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) {
    if (argc < 2)
      throw kpmap::InputError("usage: write_checkpoint OUT.h5", kpmap::ErrorScope::all_ranks);
    const std::string out = argv[1];
    const kpmap::BlockPartition part(7, rt.size());
    const std::size_t first = part.begin(rt.rank());
    auto field = kpmap::shard_generate<double, 2>(
        "field", {7, 5}, "devices",
        KOKKOS_LAMBDA(std::size_t i, std::size_t j) { return 1000.0 * i + j; });
    Kokkos::View<double*> params("params", 3);
    Kokkos::deep_copy(params, 0.5);

    kpmap::checkpoint::Metadata meta;
    meta.app = "write_checkpoint";
    meta.step = 3;
    meta.time = 1.5;
    meta.deck = "[grid]\nnx = 5\n";
    meta.decomposition = std::to_string(rt.size()) + " ranks, rows in blocks";
    kpmap::checkpoint::Writer w(out, rt.comm(), meta);
    w.write("fields/temperature", field,
            kpmap::checkpoint::row_block({7, 5}, first, field.extent(0)));
    w.write_replicated("params", params);
    w.commit();
    if (rt.rank() == 0) {
      const std::string name = std::filesystem::path(out).filename().string();
      kpmap::checkpoint::write_xdmf(out.substr(0, out.size() - 3) + ".xmf", name, {7, 5},
                                    {0.0, 0.0}, {0.5, 0.25},
                                    {{"fields/temperature", "temperature"}}, meta.time);
    }
    return 0;
  });
}
