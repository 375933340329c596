// SPDX-License-Identifier: BSD-3-Clause
// Parallel HDF5 checkpoints: exact round trips of distributed Views, restart
// on another rank count, atomic writes, and every corruption a clear error.

#include "support/mpi_test.hpp"

#include <kpmap/base/policy.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/spmd/pmap.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <hdf5.h>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using kpmap::test::world_rank;
using kpmap::test::world_size;
namespace ck = kpmap::checkpoint;
namespace fs = std::filesystem;

namespace {

using Exec = Kokkos::DefaultExecutionSpace;

// Every test works in its own directory, per rank count (ctest runs them in parallel).
std::string dir() {
  const std::string d = "checkpoint_test_np" + std::to_string(world_size());
  if (world_rank() == 0) fs::create_directories(d);
  MPI_Barrier(MPI_COMM_WORLD);
  return d;
}

KOKKOS_INLINE_FUNCTION double value(std::size_t i, std::size_t j = 0, std::size_t k = 0) {
  return 1e6 * i + 1e3 * j + k + 0.25;
}

ck::Metadata meta(long long step = 7) {
  ck::Metadata m;
  m.app = "kpmap-test";
  m.step = step;
  m.time = 0.125 * step;
  m.deck = "[model]\nkind = \"mlp\"\n";
  m.decomposition = std::to_string(world_size()) + " ranks, rows in blocks";
  m.rng_state = "philox:42:1000";
  // int64 extremes and a value beyond 32 bits survive as typed attributes.
  m.integers = {{"epoch", 3}, {"optimizer_steps", (1LL << 40) + 7}, {"low", INT64_MIN}};
  return m;
}

// Rows [b, e) of a (rows x 3) array, filled from global indices.
Kokkos::View<double**, Exec> rows(std::size_t b, std::size_t e) {
  Kokkos::View<double**, Exec> v("rows", e - b, 3);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = b; i < e; ++i)
    for (std::size_t j = 0; j < 3; ++j) h(i - b, j) = value(i, j);
  Kokkos::deep_copy(v, h);
  return v;
}

bool rows_match(const Kokkos::View<double**, Exec>& v, std::size_t b) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < 3; ++j)
      if (h(i, j) != value(b + i, j)) return false;
  return true;
}

// Writes a 10 x 3 array in row blocks with `fill` added to every value.
void write_rows(const std::string& path, double fill = 0.0, bool commit = true) {
  const kpmap::BlockPartition part(10, world_size());
  auto v = rows(part.begin(world_rank()), part.end(world_rank()));
  if (fill != 0.0) {
    Kokkos::parallel_for(
        "add",
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {static_cast<long>(v.extent(0)), 3}),
        KOKKOS_LAMBDA(int i, int j) { v(i, j) += fill; });
    Exec().fence();
  }
  ck::Writer w(path, MPI_COMM_WORLD, meta());
  w.write("field", v, ck::row_block({10, 3}, part.begin(world_rank()), v.extent(0)));
  if (commit) w.commit();
}

// Flips the bits `mask` of byte `at` of dataset `name`'s data in the file.
void flip_bits(const std::string& path, const char* name, std::size_t at, char mask) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  const haddr_t offset = H5Dget_offset(ds);
  H5Dclose(ds);
  H5Fclose(f);
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(offset + at));
  char byte = 0;
  io.read(&byte, 1);
  byte = static_cast<char>(byte ^ mask);
  io.seekp(static_cast<std::streamoff>(offset + at));
  io.write(&byte, 1);
}

void expect_input_error(const std::function<void()>& f, const std::string& text) {
  try {
    f();
    FAIL_CHECK("no error; expected: " << text);
  } catch (const kpmap::Error& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring(text));
    CHECK(e.code() == kpmap::exit_code::bad_input);
    CHECK(e.all_ranks());
  }
}

}  // namespace

TEST_CASE("distributed 1-D, 2-D and 3-D Views round-trip exactly", "[checkpoint]") {
  const std::string path = dir() + "/roundtrip.h5";
  const int P = world_size();
  const int me = world_rank();
  // 1-D and 2-D: rows in blocks. 3-D: blocks along the middle dimension.
  const kpmap::BlockPartition p1(13, P), p3(7, P);
  Kokkos::View<double*, Exec> a("a", p1.count(me));
  Kokkos::View<float***, Kokkos::LayoutLeft, Exec> c("c", 2, p3.count(me), 4);
  auto b = rows(kpmap::BlockPartition(10, P).begin(me), kpmap::BlockPartition(10, P).end(me));
  {
    auto ha = Kokkos::create_mirror_view(a);
    for (std::size_t i = 0; i < ha.extent(0); ++i) ha(i) = value(p1.begin(me) + i);
    Kokkos::deep_copy(a, ha);
    auto hc = Kokkos::create_mirror_view(c);
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < hc.extent(1); ++j)
        for (std::size_t k = 0; k < 4; ++k)
          hc(i, j, k) = static_cast<float>(100 * i + 10 * (p3.begin(me) + j) + k);
    Kokkos::deep_copy(c, hc);
  }
  Kokkos::View<std::int64_t*, Exec> params("params", 5);
  Kokkos::deep_copy(params, 42);
  {
    ck::Writer w(path, MPI_COMM_WORLD, meta());
    w.write("a", a, ck::row_block({13}, p1.begin(me), a.extent(0)));
    w.write("group_b", b,
            ck::row_block({10, 3}, kpmap::BlockPartition(10, P).begin(me), b.extent(0)));
    w.write("c", c, ck::Block{{2, 7, 4}, {0, p3.begin(me), 0}, {2, p3.count(me), 4}});
    w.write_replicated("params", params);
    w.commit();
  }
  REQUIRE(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".tmp"));

  ck::Reader r(path, MPI_COMM_WORLD, "kpmap-test");
  CHECK(r.metadata().step == 7);
  CHECK(r.metadata().time == 0.875);
  CHECK(r.metadata().ranks == P);
  CHECK(r.metadata().deck == meta().deck);
  CHECK(r.metadata().rng_state == "philox:42:1000");
  CHECK(r.integer("epoch") == std::optional<std::int64_t>(3));
  CHECK(r.integer("optimizer_steps") == std::optional<std::int64_t>((1LL << 40) + 7));
  CHECK(r.integer("low") == std::optional<std::int64_t>(INT64_MIN));
  CHECK_FALSE(r.integer("batch").has_value());
  // A root attribute that is no integer (here the time, a float64) is an input error.
  CHECK_THROWS_AS(r.integer("time"), kpmap::InputError);
  CHECK(r.shape("c") == std::vector<std::size_t>{2, 7, 4});

  Kokkos::View<double*, Exec> a2("a2", a.extent(0));
  r.read("a", a2, ck::row_block({13}, p1.begin(me), a.extent(0)));
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a2);
  for (std::size_t i = 0; i < ha.extent(0); ++i) CHECK(ha(i) == value(p1.begin(me) + i));

  Kokkos::View<float***, Kokkos::LayoutRight, Exec> c2("c2", 2, p3.count(me), 4);
  r.read("c", c2, ck::Block{{2, 7, 4}, {0, p3.begin(me), 0}, {2, p3.count(me), 4}});
  auto hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c2);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < hc.extent(1); ++j)
      for (std::size_t k = 0; k < 4; ++k)
        CHECK(hc(i, j, k) == static_cast<float>(100 * i + 10 * (p3.begin(me) + j) + k));

  Kokkos::View<std::int64_t*, Exec> params2("params2", 5);
  r.read_replicated("params", params2);
  auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), params2);
  for (int i = 0; i < 5; ++i) CHECK(hp(i) == 42);
}

TEST_CASE("flat ranges of any shape round-trip and cross with boxes", "[checkpoint]") {
  // A 4 x 5 x 3 array cut in row-major order at points that fall inside rows
  // (7 is element (0, 2, 1), 41 is (2, 3, 2)), with an empty range at 3 and
  // 4 ranks: how a sharded optimizer state falls on its arrays.
  const std::string path = dir() + "/flat.h5";
  const int P = world_size();
  const int me = world_rank();
  const std::vector<std::size_t> shape{4, 5, 3};
  const std::size_t n = 60;
  const auto cut = [&](int r) -> std::size_t {
    if (r == P) return n;
    const std::size_t cuts[] = {0, 7, 7, 41};
    return cuts[r];
  };
  const std::size_t b = cut(me), e = cut(me + 1);
  Kokkos::View<double*, Exec> mine("mine", e - b);
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<Exec>(0, e - b),
      KOKKOS_LAMBDA(std::size_t i) { mine(i) = 0.5 + static_cast<double>(b + i); });
  Kokkos::View<double***, Exec> box("box", 4, 5, 3);
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(std::size_t i) {
        box(i / 15, i / 3 % 5, i % 3) = 0.5 + static_cast<double>(i);
      });
  // A scalar dataset held by the last rank alone.
  Kokkos::View<double*, Exec> scalar("scalar", me == P - 1 ? 1 : 0);
  Kokkos::deep_copy(scalar, 2.5);
  {
    ck::Writer w(path, MPI_COMM_WORLD, meta());
    w.write("flat", mine, ck::flat_range(shape, b, e - b));
    w.write_replicated("box", box);
    w.write("scalar", scalar, ck::flat_range({}, 0, scalar.extent(0)));
    w.commit();
  }
  ck::Reader r(path, MPI_COMM_WORLD, "kpmap-test");
  CHECK(r.shape("flat") == shape);
  CHECK(r.shape("scalar").empty());
  // Ranges written make the array whole; a box written reads back in ranges,
  // here an even split that cuts elsewhere.
  Kokkos::View<double***, Exec> whole("whole", 4, 5, 3);
  r.read_replicated("flat", whole);
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole);
  for (std::size_t i = 0; i < n; ++i) CHECK(hw(i / 15, i / 3 % 5, i % 3) == 0.5 + double(i));
  const kpmap::BlockPartition even(n, P);
  for (const char* name : {"flat", "box"}) {
    Kokkos::View<double*, Exec> part("part", even.count(me));
    r.read(name, part, ck::flat_range(shape, even.begin(me), even.count(me)));
    auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
    for (std::size_t i = 0; i < hp.extent(0); ++i) CHECK(hp(i) == 0.5 + double(even.begin(me) + i));
  }
  Kokkos::View<double, Exec> s0("s0");
  r.read_replicated("scalar", s0);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s0);
  CHECK(hs() == 2.5);
  // Read by the first rank alone, the others reading nothing of it.
  Kokkos::View<double*, Exec> s1("s1", me == 0 ? 1 : 0);
  r.read("scalar", s1, ck::flat_range({}, 0, s1.extent(0)));
  auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s1);
  if (me == 0) CHECK(h1(0) == 2.5);
  // A range past the array's end, or read into a View of rank 2, is refused.
  Kokkos::View<double*, Exec> over("over", 2);
  CHECK_THROWS_WITH(r.read("flat", over, ck::flat_range(shape, 59, 2)),
                    ContainsSubstring("overruns the array"));
  Kokkos::View<double**, Exec> two("two", 1, 2);
  CHECK_THROWS_WITH(r.read("flat", two, ck::flat_range(shape, 0, 2)),
                    ContainsSubstring("View of rank 1"));
}

TEST_CASE("flat ranges of a box and copies round-trip and cross with the whole array",
          "[checkpoint]") {
  // A 6 x 7 array on a mesh of D (data) x M (model) ranks, as a layer split
  // by columns over "model" keeps it: this rank's box is its block of
  // columns (4 and 3 wide when M = 2), and its part of the sharded state is a
  // range of that box's row-major order, cut inside rows, over "data". The
  // ranks of a data index hold the same range of an array that is not split
  // ("rep"): only the first writes it, and all read it.
  const std::string path = dir() + "/boxes.h5";
  const int P = world_size();
  const int me = world_rank();
  const int M = P % 2 == 0 ? 2 : P, D = P / M;
  const int m = me % M, d = me / M;
  const std::vector<std::size_t> shape{6, 7};
  const kpmap::BlockPartition cols(7, M);
  ck::Block box{shape, {0, cols.begin(m)}, {6, cols.count(m)}};
  const kpmap::BlockPartition in_box(6 * cols.count(m), D);
  const std::size_t c0 = cols.begin(m), w = cols.count(m), b = in_box.begin(d);
  const std::size_t cut_count = in_box.count(d);
  Kokkos::View<double*, Exec> mine("mine", cut_count);
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<Exec>(0, cut_count), KOKKOS_LAMBDA(std::size_t i) {
        const std::size_t k = b + i;  // in the box's row-major order
        mine(i) = value(k / w, c0 + k % w);
      });
  const kpmap::BlockPartition all(42, D);
  Kokkos::View<double*, Exec> rep("rep", all.count(d));
  const std::size_t r0 = all.begin(d);
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<Exec>(0, all.count(d)),
      KOKKOS_LAMBDA(std::size_t i) { rep(i) = value((r0 + i) / 7, (r0 + i) % 7); });
  ck::Block rep_block = ck::flat_range(shape, r0, all.count(d));
  rep_block.copy = m != 0;
  Kokkos::View<double**, Exec> full("full", 6, 7);
  Kokkos::parallel_for(
      "fill", kpmap::row_major_range<2>(Exec(), {0, 0}, {6, 7}),
      KOKKOS_LAMBDA(long i, long j) { full(i, j) = value(std::size_t(i), std::size_t(j)); });
  {
    ck::Writer w(path, MPI_COMM_WORLD, meta());
    w.write("boxed", mine, ck::flat_range_in(box, b, cut_count));
    w.write("rep", rep, rep_block);
    w.write_replicated("full", full);
    w.commit();
  }
  ck::Reader r(path, MPI_COMM_WORLD, "kpmap-test");
  // Each written array reads back whole, its checksum that of the whole
  // array: the parts met once each.
  for (const char* name : {"boxed", "rep", "full"}) {
    Kokkos::View<double**, Exec> whole("whole", 6, 7);
    r.read_replicated(name, whole);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole);
    for (std::size_t i = 0; i < 6; ++i) {
      for (std::size_t j = 0; j < 7; ++j) CHECK(h(i, j) == value(i, j));
    }
  }
  // The whole array read as ranges of boxes, the ranks' copies of "rep" read as copies.
  for (const char* name : {"boxed", "full"}) {
    Kokkos::View<double*, Exec> part("part", cut_count);
    r.read(name, part, ck::flat_range_in(box, b, cut_count));
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
    for (std::size_t i = 0; i < cut_count; ++i) {
      CHECK(h(i) == value((b + i) / w, c0 + (b + i) % w));
    }
  }
  Kokkos::View<double*, Exec> again("again", all.count(d));
  r.read("full", again, rep_block);
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), again);
  for (std::size_t i = 0; i < ha.extent(0); ++i) {
    CHECK(ha(i) == value((r0 + i) / 7, (r0 + i) % 7));
  }
  // Read as though no rank had a copy, each rank's range is still checked.
  ck::Block counted = rep_block;
  counted.copy = false;
  r.read("full", again, counted);
  // Written as though no rank had a copy, the ranges would be written twice:
  // the write refuses it (every element is written once).
  if (M > 1 && D > 1) {
    ck::Writer twice(dir() + "/twice.h5", MPI_COMM_WORLD, meta());
    CHECK_THROWS_WITH(twice.write("rep", rep, counted),
                      ContainsSubstring("the blocks written of 'rep' hold " +
                                        std::to_string(42 * M) + " elements of its 42"));
  }
  // A box that leaves the array is refused.
  ck::Block outside{shape, {0, 5}, {6, 3}};
  Kokkos::View<double*, Exec> three("three", 3);
  CHECK_THROWS_WITH(r.read("full", three, ck::flat_range_in(outside, 0, 3)),
                    ContainsSubstring("is not inside the array"));
}

namespace {
// Fences of every instance (Kokkos 4's device id; kpmap passes the same under
// 3.4), seen by in-process Kokkos Tools callbacks while `call` runs.
// A failed count lists the fences by name and device id (shown with the
// next failed CHECK).
int global_fences_seen = 0;
std::vector<std::string> global_fence_names;
void count_global_fence(const char* name, std::uint32_t device_id, std::uint64_t* handle) {
  if ((device_id & 0x00ffffffu) == 0) {
    ++global_fences_seen;
    global_fence_names.push_back(std::string(name) + " (device id " + std::to_string(device_id) +
                                 ")");
  }
  *handle = 0;
}
void end_fence(std::uint64_t) {}
template <class F>
int global_fences(F&& call) {
  global_fences_seen = 0;
  global_fence_names.clear();
  Kokkos::Tools::Experimental::set_begin_fence_callback(count_global_fence);
  Kokkos::Tools::Experimental::set_end_fence_callback(end_fence);
  call();
  Kokkos::Tools::Experimental::set_begin_fence_callback(nullptr);
  Kokkos::Tools::Experimental::set_end_fence_callback(nullptr);
  for (const std::string& n : global_fence_names) UNSCOPED_INFO("fence: " << n);
  return global_fences_seen;
}
}  // namespace

TEST_CASE("a checkpoint written and read on an instance fences only it", "[checkpoint]") {
  // The data is written on an instance of its own (a stream of its own on a
  // GPU; the same instance under Kokkos 3.4): named, the write and the read
  // wait for it alone; unnamed, they wait for every instance.
  const std::string path = dir() + "/instances.h5";
  const Exec writer = kpmap::detail::independent_instance(Exec());
  const kpmap::BlockPartition part(10, world_size());
  const std::size_t b = part.begin(world_rank());
  const auto block = ck::row_block({10, 3}, b, part.count(world_rank()));
  Kokkos::View<double**, Exec> v("v", part.count(world_rank()), 3);
  Kokkos::parallel_for(
      "kpmap::test::fill", kpmap::row_major_range<2>(writer, {0, 0}, {long(v.extent(0)), 3}),
      KOKKOS_LAMBDA(long i, long j) { v(i, j) = value(b + std::size_t(i), std::size_t(j)); });
  CHECK(global_fences([&] {
          ck::Writer w(path, MPI_COMM_WORLD, meta());
          w.write(writer, "field", v, block);
          w.write_replicated(Kokkos::DefaultHostExecutionSpace(), "params",
                             Kokkos::View<int*, Kokkos::HostSpace>("params", 3));
          w.commit();
        }) == 0);
  Kokkos::View<double**, Exec> back("back", v.extent(0), 3);
  ck::Reader r(path, MPI_COMM_WORLD, "kpmap-test");
  CHECK(global_fences([&] { r.read(writer, "field", back, block); }) == 0);
  CHECK(rows_match(back, b));
  // Without an instance: one fence of every instance each.
  Kokkos::View<double**, Exec> again("again", v.extent(0), 3);
  CHECK(global_fences([&] { r.read("field", again, block); }) == 1);
  CHECK(rows_match(again, b));
}

namespace {
// Kokkos allocations (any memory space) seen while `call` runs.
int allocations_seen = 0;
void count_allocation(Kokkos::Tools::SpaceHandle, const char*, const void*, std::uint64_t) {
  ++allocations_seen;
}
template <class F>
int allocations(F&& call) {
  allocations_seen = 0;
  Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
  call();
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  return allocations_seen;
}

// v(i, j) = value(b + i, j) for v's (rows x 3) cells, on `exec`.
template <class V>
void fill_rows(const Exec& exec, const V& v, std::size_t b) {
  Kokkos::parallel_for(
      "kpmap::test::fill", kpmap::row_major_range<2>(exec, {0, 0}, {long(v.extent(0)), 3}),
      KOKKOS_LAMBDA(long i, long j) { v(i, j) = value(b + std::size_t(i), std::size_t(j)); });
}
// Whether v holds rows b, b + 1, ... of the 3 columns inside a ring `pad`
// cells wide that holds `ring`.
template <class V>
bool rows_hold(const V& v, std::size_t b, double ring = 0.0, std::size_t pad = 0) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < h.extent(1); ++j) {
      const bool inside = i >= pad && i < h.extent(0) - pad && j >= pad && j < pad + 3;
      if (h(i, j) != (inside ? value(b + i - pad, j - pad) : ring)) return false;
    }
  return true;
}
}  // namespace

TEST_CASE("a second checkpoint allocates nothing and fences only its instance", "[checkpoint]") {
  // Blocks that are staged on every build: column-major, and the interior of
  // a padded field (a strided subview, as the heat app writes and restarts
  // its fields); and a row-major block, staged where its memory is not the
  // host's (device paths, a GPU). The first checkpoint fills the staging
  // pool; the second allocates nothing and frees nothing, so no host memory
  // freed fences every instance under Kokkos 4 with CUDA.
  const Exec exec = kpmap::detail::independent_instance(Exec());
  const kpmap::BlockPartition part(11, world_size());
  const std::size_t b = part.begin(world_rank()), n = part.count(world_rank());
  const auto block = ck::row_block({11, 3}, b, n);
  const auto interior = [n](const auto& padded) {
    return Kokkos::subview(padded, std::make_pair(std::size_t(1), n + 1),
                           std::make_pair(std::size_t(1), std::size_t(4)));
  };
  Kokkos::View<double**, Kokkos::LayoutLeft, Exec> left("left", n, 3), left_back("left_back", n, 3);
  Kokkos::View<double**, Exec> padded("padded", n + 2, 5), padded_back("padded_back", n + 2, 5);
  Kokkos::View<double**, Exec> right("right", n, 3), right_back("right_back", n, 3);
  fill_rows(exec, left, b);
  fill_rows(exec, interior(padded), b);
  fill_rows(exec, right, b);
  const auto checkpoint = [&](const std::string& path) {
    ck::Writer w(path, MPI_COMM_WORLD, meta());
    w.write(exec, "left", left, block);
    w.write(exec, "interior", interior(padded), block);
    w.write(exec, "right", right, block);
    w.commit();
    ck::Reader r(path, MPI_COMM_WORLD, "kpmap-test");
    r.read(exec, "left", left_back, block);
    r.read(exec, "interior", interior(padded_back), block);
    r.read(exec, "right", right_back, block);
  };
  checkpoint(dir() + "/staged_first.h5");
  Kokkos::deep_copy(left_back, -1.0);
  Kokkos::deep_copy(right_back, -1.0);
  Kokkos::deep_copy(padded_back, -1.0);
  int allocated = 0;
  CHECK(global_fences([&] {
          allocated = allocations([&] { checkpoint(dir() + "/staged_second.h5"); });
        }) == 0);
  CHECK(allocated == 0);
  CHECK(rows_hold(left_back, b));
  CHECK(rows_hold(right_back, b));
  CHECK(rows_hold(padded_back, b, -1.0, 1));  // the ring is not written
}

TEST_CASE("a checkpoint restarts on a different rank count", "[checkpoint]") {
  const std::string path = dir() + "/restart.h5";
  write_rows(path);
  // Read back on fewer ranks: the first q ranks form the "new job".
  for (int q : {std::max(1, world_size() - 1), 1}) {
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank() < q ? 0 : MPI_UNDEFINED, world_rank(), &sub);
    if (sub != MPI_COMM_NULL) {
      const kpmap::BlockPartition part(10, q);
      ck::Reader r(path, sub, "kpmap-test");
      CHECK(r.metadata().ranks == world_size());
      Kokkos::View<double**, Exec> v("v", part.count(world_rank()), 3);
      r.read("field", v, ck::row_block({10, 3}, part.begin(world_rank()), v.extent(0)));
      CHECK(rows_match(v, part.begin(world_rank())));
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST_CASE("a block is read in parts that tile it and add up to its checksum", "[checkpoint]") {
  namespace d = ck::detail;
  // A box of 7 rows of 3 x 4 and a flat range, cut into parts of 100 bytes
  // of doubles: 1 row (12 elements, 96 bytes) a part; 12 elements a part.
  ck::Block box{{9, 3, 4}, {2, 0, 0}, {7, 3, 4}};
  const ck::Block flat = ck::flat_range({9, 3, 4}, 5, 50);
  std::vector<double> data(100);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.5 * double(i * i) - 3.0;
  const Kokkos::DefaultHostExecutionSpace host;
  for (const ck::Block& b : {box, flat}) {
    const auto parts = d::slabs(b, sizeof(double), 100);
    CHECK(parts.size() == (b.flat ? 5u : 7u));  // 12 x 4 + 2 elements; 7 rows
    std::size_t next = 0;
    std::uint64_t sum = 0;
    for (const d::Slab& p : parts) {
      CHECK(p.at == next);  // in order, nothing skipped or taken twice
      std::size_t n = 1;
      for (std::size_t c : p.block.count) n *= c;
      next += n;
      sum += d::checksum_of(host, data.data() + p.at, p.block);
    }
    CHECK(next == (b.flat ? 50u : 84u));
    CHECK(sum == d::checksum_of(host, data.data(), b));
  }
  // A row larger than a part is a part; a scalar is one part.
  CHECK(d::slabs(box, sizeof(double), 8).size() == 7);
  CHECK(d::slabs(ck::whole({}), sizeof(double), 8).size() == 1);
}

TEST_CASE("an array of several read parts round-trips and names a bad element in any part",
          "[checkpoint]") {
  // 9 MiB of doubles in row blocks: 3 parts of at most 4 MiB at 1 rank,
  // and as many reads on every rank as the rank with the most parts.
  const std::string path = dir() + "/parts.h5";
  const std::size_t R = 1152, C = 1024;
  const kpmap::BlockPartition part(R, world_size());
  const std::size_t b = part.begin(world_rank());
  const auto fill = [&](Kokkos::View<double**, Exec> v, std::size_t bad_row) {
    Kokkos::parallel_for(
        "fill", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {long(v.extent(0)), long(C)}),
        KOKKOS_LAMBDA(long i, long j) {
          const std::size_t g = b + std::size_t(i);
          v(i, j) = g == bad_row && j == 5 ? -1.0 : value(g, std::size_t(j));
        });
    Exec().fence();
  };
  Kokkos::View<double**, Exec> v("v", part.count(world_rank()), C);
  for (std::size_t bad_row : {R, R - 3}) {  // none; one in the last part
    fill(v, bad_row);
    {
      ck::Writer w(path, MPI_COMM_WORLD, meta());
      w.write("field", v, ck::row_block({R, C}, b, v.extent(0)));
      w.commit();
    }
    ck::Reader r(path, MPI_COMM_WORLD, "kpmap-test");
    Kokkos::View<double**, Exec> back("back", v.extent(0), C);
    const auto read = [&] {
      r.read("field", back, ck::row_block({R, C}, b, v.extent(0)), ck::Reader::Values::positive);
    };
    if (bad_row == R) {
      read();
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), back);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < h.extent(0); ++i)
        for (std::size_t j = 0; j < C; ++j) wrong += h(i, j) != value(b + i, j);
      CHECK(wrong == 0);
    } else {
      expect_input_error(read, "element [" + std::to_string(R - 3) + ", 5] is -1");
    }
  }
}

namespace {
// Every dataset of an HDF5 file, by name.
std::vector<std::string> datasets(const std::string& path) {
  std::vector<std::string> out;
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  H5Ovisit(
      f, H5_INDEX_NAME, H5_ITER_INC,
      [](hid_t, const char* name, const H5O_info_t* info, void* list) -> herr_t {
        if (info->type == H5O_TYPE_DATASET)
          static_cast<std::vector<std::string>*>(list)->push_back(name);
        return 0;
      },
      &out);
  H5Fclose(f);
  return out;
}

// The whole of a dataset of doubles, read by plain HDF5 (no checksum).
std::vector<double> plain_read(const std::string& path, const std::string& name) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  hid_t space = H5Dget_space(ds);
  std::vector<double> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Sclose(space);
  H5Dclose(ds);
  H5Fclose(f);
  return v;
}
}  // namespace

TEST_CASE("checkpoints of earlier versions (one splitmix64 sum a dataset) still verify",
          "[checkpoint]") {
  // Written by kpmap-heat at 3 ranks (boxes of a 2-D mesh) and kpmap-train
  // at 1 rank, read here in an even split of each array's row-major order
  // at this run's rank count: what another decomposition reads.
  const std::string data = std::string(KPMAP_SOURCE_DIR) + "/tests/data/";
  const int P = world_size(), me = world_rank();
  for (const auto& [file, app] :
       {std::pair<std::string, std::string>{"heat2d_ci_np3_splitmix_checksum.h5", "kpmap-heat"},
        {"train_sgd_ci_position_as_text.h5", "kpmap-train"}}) {
    const std::string path = data + file;
    const auto names = datasets(path);
    CHECK(names.size() >= 4);
    ck::Reader r(path, MPI_COMM_WORLD, app);
    for (const std::string& name : names) {
      const auto shape = r.shape(name);
      const std::vector<double> all = plain_read(path, name);
      const kpmap::BlockPartition even(all.size(), P);
      Kokkos::View<double*, Exec> mine("mine", even.count(me));
      r.read(name, mine, ck::flat_range(shape, even.begin(me), even.count(me)),
             ck::Reader::Values::any);
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), mine);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < h.extent(0); ++i) wrong += h(i) != all[even.begin(me) + i];
      CHECK(wrong == 0);
    }
  }
  // One bit of the energy field changed: the old checksum still catches it.
  const std::string flipped = dir() + "/old_flipped.h5";
  if (me == 0) {
    fs::copy_file(data + "heat2d_ci_np3_splitmix_checksum.h5", flipped,
                  fs::copy_options::overwrite_existing);
    flip_bits(flipped, "fields/energy", 301, 0x04);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_input_error(
      [&] {
        ck::Reader r(flipped, MPI_COMM_WORLD, "kpmap-heat");
        Kokkos::View<double**, Exec> e("e", 24, 32);
        r.read_replicated("fields/energy", e, ck::Reader::Values::any);
      },
      "dataset 'fields/energy': checksum mismatch");
}

TEST_CASE("an interrupted write leaves the previous checkpoint intact", "[checkpoint]") {
  const std::string path = dir() + "/atomic.h5";
  write_rows(path);
  // A second write that never commits (an error or a kill before commit()).
  write_rows(path, 1000.0, /*commit=*/false);
  CHECK_FALSE(fs::exists(path + ".tmp"));  // the abandoned temporary is removed
  MPI_Barrier(MPI_COMM_WORLD);             // every rank looked before the next step
  // A temporary left behind by a crash does not disturb the checkpoint either.
  if (world_rank() == 0) std::ofstream(path + ".tmp") << "partial garbage";
  MPI_Barrier(MPI_COMM_WORLD);
  const kpmap::BlockPartition part(10, world_size());
  {
    ck::Reader r(path, MPI_COMM_WORLD, "kpmap-test");
    Kokkos::View<double**, Exec> v("v", part.count(world_rank()), 3);
    r.read("field", v, ck::row_block({10, 3}, part.begin(world_rank()), v.extent(0)));
    CHECK(rows_match(v, part.begin(world_rank())));
  }
  // And the next committed write replaces both.
  write_rows(path, 1000.0);
  CHECK_FALSE(fs::exists(path + ".tmp"));
}

// A checkpoint is never written that a restart would refuse: a NaN or an Inf
// in any rank's block (Reader::Values::finite) stops every rank together with
// exit code 3, naming the dataset and the element in the array's indices, and
// the previous checkpoint stays as it was.
TEST_CASE("a value a restart would refuse is never written, on any rank", "[checkpoint]") {
  const std::string path = dir() + "/finite.h5";
  write_rows(path);
  const int last = world_size() - 1;
  const kpmap::BlockPartition part(10, world_size());
  const auto expect_refused = [&](const std::function<void(ck::Writer&)>& write,
                                  const std::string& text) {
    try {
      ck::Writer w(path, MPI_COMM_WORLD, meta(8));
      write(w);
      w.commit();
      FAIL_CHECK("written; expected: " << text);
    } catch (const kpmap::Error& e) {
      CHECK_THAT(std::string(e.what()), ContainsSubstring(text));
      CHECK(e.code() == kpmap::exit_code::diverged);
      CHECK(e.all_ranks());
    }
    CHECK_FALSE(fs::exists(path + ".tmp"));
    MPI_Barrier(MPI_COMM_WORLD);
  };
  // The last rank's block ends with row 9: its element (9, 1) is a NaN.
  auto v = rows(part.begin(world_rank()), part.end(world_rank()));
  if (world_rank() == last) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    h(h.extent(0) - 1, 1) = std::numeric_limits<double>::quiet_NaN();
    Kokkos::deep_copy(v, h);
  }
  expect_refused(
      [&](ck::Writer& w) {
        w.write("field", v, ck::row_block({10, 3}, part.begin(world_rank()), v.extent(0)));
      },
      "will not write checkpoint " + path +
          ": dataset 'field': element [9, 1] is nan (a checkpoint holds finite numbers only), "
          "and a restart from it would be refused");
  // Replicated float data (written by rank 0 alone): an Inf.
  Kokkos::View<float*, Exec> f("f", 4);
  Kokkos::deep_copy(f, 1.0f);
  Kokkos::deep_copy(Kokkos::subview(f, 2), -std::numeric_limits<float>::infinity());
  expect_refused([&](ck::Writer& w) { w.write_replicated("params", f); },
                 "dataset 'params': element [2] is -inf");
  // The checkpoint written before is untouched.
  ck::Reader r(path, MPI_COMM_WORLD, "kpmap-test");
  CHECK(r.metadata().step == 7);
  Kokkos::View<double**, Exec> back("back", part.count(world_rank()), 3);
  r.read("field", back, ck::row_block({10, 3}, part.begin(world_rank()), back.extent(0)));
  CHECK(rows_match(back, part.begin(world_rank())));
}

TEST_CASE("every kind of bad restart file is a clear error on every rank", "[checkpoint]") {
  const std::string d = dir();
  const std::string good = d + "/good.h5";
  write_rows(good);
  if (world_rank() == 0) {
    std::ofstream(d + "/text.h5") << "this is not HDF5\n";
    // A truncated copy: the first half of the file.
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(d + "/truncated.h5", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    // A copy with one byte of the field's data flipped.
    fs::copy_file(good, d + "/flipped.h5", fs::copy_options::overwrite_existing);
    flip_bits(d + "/flipped.h5", "field", 17, 0x40);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const kpmap::BlockPartition part(10, world_size());
  auto read_field = [&](const std::string& file, std::vector<std::size_t> global) {
    ck::Reader r(file, MPI_COMM_WORLD, "kpmap-test");
    Kokkos::View<double**, Exec> v(
        "v", kpmap::BlockPartition(global[0], world_size()).count(world_rank()), global[1]);
    r.read("field", v,
           ck::row_block(global, kpmap::BlockPartition(global[0], world_size()).begin(world_rank()),
                         v.extent(0)));
  };
  expect_input_error(
      [&] {
        read_field(d + "/missing.h5", {10, 3});
      },
      "restart file " + d + "/missing.h5 does not exist");
  expect_input_error(
      [&] {
        read_field(d + "/text.h5", {10, 3});
      },
      "restart file " + d + "/text.h5 is not an HDF5 file");
  expect_input_error([&] { read_field(d + "/truncated.h5", {10, 3}); }, d + "/truncated.h5");
  expect_input_error(
      [&] {
        read_field(d + "/flipped.h5", {10, 3});
      },
      "dataset 'field': checksum mismatch");
  expect_input_error([&] { ck::Reader(good, MPI_COMM_WORLD, "kpmap-heat"); },
                     "was written by 'kpmap-test', not by kpmap-heat");
  expect_input_error(
      [&] {
        read_field(good, {12, 3});
      },
      "its shape is (10, 3) but this run needs (12, 3) (does the deck match the run that wrote "
      "it?)");
  expect_input_error(
      [&] {
        ck::Reader r(good, MPI_COMM_WORLD, "kpmap-test");
        r.shape("velocity");
      },
      "has no dataset 'velocity'");
  expect_input_error(
      [&] {
        ck::Reader r(good, MPI_COMM_WORLD, "kpmap-test");
        Kokkos::View<float**, Exec> v("v", part.count(world_rank()), 3);
        r.read("field", v, ck::row_block({10, 3}, part.begin(world_rank()), v.extent(0)));
      },
      "stored with another element type than float32");
}

TEST_CASE("a shape error of a file written without a deck does not speak of a deck",
          "[checkpoint]") {
  const std::string file = dir() + "/own_arrays.h5";
  const kpmap::BlockPartition part(10, world_size());
  {
    auto v = rows(part.begin(world_rank()), part.end(world_rank()));
    ck::Metadata m = meta();
    m.deck.clear();  // a program's own checkpoint, as a user's tree is saved
    ck::Writer w(file, MPI_COMM_WORLD, m);
    w.write("field", v, ck::row_block({10, 3}, part.begin(world_rank()), v.extent(0)));
    w.commit();
  }
  try {
    ck::Reader r(file, MPI_COMM_WORLD, "kpmap-test");
    Kokkos::View<double**, Exec> v("v", part.count(world_rank()), 4);
    r.read("field", v, ck::row_block({10, 4}, part.begin(world_rank()), v.extent(0)));
    FAIL_CHECK("a read of another shape was accepted");
  } catch (const kpmap::Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, ContainsSubstring("its shape is (10, 3) but this run needs (10, 4) (read it "
                                       "with the global shape it was written with)"));
    CHECK_THAT(what, !ContainsSubstring("deck"));
    CHECK(e.all_ranks());
  }
}

TEST_CASE("an integer named like a built-in attribute, twice, or with a space is refused",
          "[checkpoint]") {
  const std::string file = dir() + "/integers.h5";
  const std::pair<std::string, std::string> cases[] = {
      {"step", "'step', a built-in attribute of every checkpoint (Metadata::step holds it)"},
      {"ranks", "'ranks', a built-in attribute"},
      {"epoch", "'epoch' twice"},
      {"my step", "1 to 64 printable ASCII characters without spaces"},
  };
  for (const auto& [name, expect] : cases) {
    ck::Metadata m = meta(2);
    m.integers = {{"epoch", 1}, {name, 9}};
    try {
      ck::Writer w(file, MPI_COMM_WORLD, m);
      FAIL_CHECK("Metadata::integers named '" << name << "' was accepted");
    } catch (const kpmap::Error& e) {
      CHECK_THAT(std::string(e.what()), ContainsSubstring("will not write checkpoint " + file));
      CHECK_THAT(std::string(e.what()), ContainsSubstring(expect));
      CHECK(e.all_ranks());
    }
    CHECK_FALSE(fs::exists(file));
    CHECK_FALSE(fs::exists(file + ".tmp"));
  }
}

TEST_CASE("an unwritable directory is refused before anything is written", "[checkpoint]") {
  try {
    ck::Writer w("/nonexistent-dir/x.h5", MPI_COMM_WORLD, meta());
    FAIL_CHECK("accepted a missing directory");
  } catch (const kpmap::Error& e) {
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("directory /nonexistent-dir does not exist"));
    CHECK(e.all_ranks());
  }
}

TEST_CASE("keep_last keeps the newest checkpoints and their sidecars", "[checkpoint]") {
  const std::string d = dir() + "/keep";
  if (world_rank() == 0) {
    fs::create_directories(d);
    for (int s : {3, 10, 7, 1, 12}) {
      std::ofstream(d + "/run_" + std::to_string(s) + ".h5") << "x";
      std::ofstream(d + "/run_" + std::to_string(s) + ".xmf") << "x";
    }
    std::ofstream(d + "/other_1.h5") << "x";
    ck::keep_last(d, "run", 2);
    CHECK(fs::exists(d + "/run_12.h5"));
    CHECK(fs::exists(d + "/run_10.h5"));
    CHECK(fs::exists(d + "/run_10.xmf"));
    CHECK_FALSE(fs::exists(d + "/run_7.h5"));
    CHECK_FALSE(fs::exists(d + "/run_7.xmf"));
    CHECK_FALSE(fs::exists(d + "/run_1.h5"));
    CHECK(fs::exists(d + "/other_1.h5"));
    // A rerun in the same folder has just written step 4; steps 10 and 12
    // are an earlier run's and stay, as does step 4 itself.
    for (int s : {2, 3, 4}) std::ofstream(d + "/run_" + std::to_string(s) + ".h5") << "x";
    ck::keep_last(d, "run", 2, 4);
    CHECK(fs::exists(d + "/run_4.h5"));
    CHECK(fs::exists(d + "/run_3.h5"));
    CHECK_FALSE(fs::exists(d + "/run_2.h5"));
    CHECK(fs::exists(d + "/run_12.h5"));
    CHECK(fs::exists(d + "/run_10.h5"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("column blocks through a Cartesian communicator round-trip exactly", "[checkpoint]") {
  // Open MPI's OMPIO mis-groups I/O over communicators with a Cartesian
  // topology (open-mpi/ompi#12718): before the Writer and Reader dropped the
  // topology, a 3-rank run corrupted most of these files.
  MPI_Comm cart;
  int dims[2] = {world_size(), 1};
  int periods[2] = {0, 0};
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  const kpmap::BlockPartition part(14, world_size());
  const std::size_t c0 = part.begin(world_rank());
  const std::size_t nc = part.count(world_rank());
  Kokkos::View<double**, Exec> v("cols", 14, nc);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < 14; ++i)
    for (std::size_t j = 0; j < nc; ++j) h(i, j) = value(i, c0 + j);
  Kokkos::deep_copy(v, h);
  const ck::Block block{{14, 14}, {0, c0}, {14, nc}};
  const std::string path = dir() + "/cartesian.h5";
  int bad = 0;
  for (int round = 0; round < 20; ++round) {
    {
      ck::Writer w(path, cart, meta());
      w.write("field", v, block);
      w.commit();
    }
    Kokkos::View<double**, Exec> back("back", 14, nc);
    ck::Reader r(path, cart, "kpmap-test");
    r.read("field", back, block);  // throws on a checksum mismatch
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), back);
    for (std::size_t i = 0; i < 14; ++i)
      for (std::size_t j = 0; j < nc; ++j) bad += hb(i, j) != h(i, j);
  }
  CHECK(kpmap::test::all_ranks(bad == 0));
  MPI_Comm_free(&cart);
}
