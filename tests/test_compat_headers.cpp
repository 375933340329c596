// SPDX-License-Identifier: BSD-3-Clause
// A program written before the library's subject folders includes the headers'
// old paths (src/compat/kpmap/): they must still build, and name the same
// library as the new paths. Only old paths are included here.
#include <kpmap/checkpoint.hpp>
#include <kpmap/collectives.hpp>
#include <kpmap/config.hpp>
#include <kpmap/deck.hpp>
#include <kpmap/error.hpp>
#include <kpmap/fault.hpp>
#include <kpmap/files.hpp>
#include <kpmap/halo.hpp>
#include <kpmap/memory.hpp>
#include <kpmap/mesh.hpp>
#include <kpmap/pmap.hpp>
#include <kpmap/policy.hpp>
#include <kpmap/profiling.hpp>
#include <kpmap/runtime.hpp>
#include <kpmap/shard_map.hpp>
#include <kpmap/trace.hpp>
#include <kpmap/train/loss.hpp>
#include <kpmap/train/optimizer.hpp>
#include <kpmap/version.hpp>
#include <kpmap/vmap.hpp>

#include <catch2/catch_test_macros.hpp>

#include <string>

TEST_CASE("the headers' old paths still reach the library", "[compat]") {
  CHECK(std::string(kpmap::version_string) == KPMAP_VERSION_STRING);
  CHECK(kpmap::exit_code::bad_input == 2);
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CHECK(kpmap::Mesh::world().axis_size("devices") == ranks);
  CHECK(kpmap::train::loss_info("mse").outputs == 1);
  CHECK(kpmap::train::find_optimizer("adam") != nullptr);
}
