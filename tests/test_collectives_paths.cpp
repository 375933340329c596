// SPDX-License-Identifier: BSD-3-Clause
// The collectives' other paths (non-blocking forms, large counts, the staging
// pool, pooled fusion buffers, checked mode): exact expected values at any rank count. Elements are
// integer-valued doubles, so every sum is exact and results compare with ==.
// The same executable runs again with KPMAP_STAGING=always (see CMakeLists.txt).

#include "support/collective_checks.hpp"
#include "support/mpi_test.hpp"

#include <kpmap/base/detail/backend.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/transport/buffer.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

using Catch::Matchers::ContainsSubstring;
// Exec, fill, matches, p, r, tri (support/collective_checks.hpp), world_rank, world_size.
using namespace kpmap::test;

namespace {

// Fences a Kokkos Tools callback saw, by label (in-process callbacks, no library).
std::vector<std::string> fences_seen;
void on_begin_fence(const char* name, std::uint32_t, std::uint64_t* handle) {
  fences_seen.emplace_back(name);
  *handle = 0;
}
void on_end_fence(std::uint64_t) {}

// How many fences of every instance `call` makes (detail::unnamed_instance's).
template <class F>
int global_fences(F&& call) {
  fences_seen.clear();
  Kokkos::Tools::Experimental::set_begin_fence_callback(on_begin_fence);
  Kokkos::Tools::Experimental::set_end_fence_callback(on_end_fence);
  call();
  Kokkos::Tools::Experimental::set_begin_fence_callback(nullptr);
  Kokkos::Tools::Experimental::set_end_fence_callback(nullptr);
  return static_cast<int>(std::count(
      fences_seen.begin(), fences_seen.end(),
      std::string("kpmap: a collective without an execution space waits for every instance")));
}

// x(k) = (rank + 1)(k + 1), on an instance the collective is not told of.
struct WriteRank {
  Kokkos::View<double*, Exec> x;
  double me;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k) const { x(k) = me * (k + 1.0); }
};

}  // namespace

TEST_CASE("a collective without an execution space waits for every instance",
          "[collectives][instances]") {
  // The data is written on an instance of its own (a stream of its own on a
  // GPU; the same instance under Kokkos 3.4) and not waited for: a collective
  // that names no instance must wait for every one before MPI reads the data.
  const Exec writer = kpmap::detail::independent_instance(Exec());
  const std::size_t n = 6;
  const int P = world_size();
  const double me = r() + 1;
  Kokkos::View<double*, Exec> x("x", n);
  const auto write = [&] {
    Kokkos::parallel_for("test::write", Kokkos::RangePolicy<Exec>(writer, 0, n), WriteRank{x, me});
  };
  const auto times = [](double a) { return [a](std::size_t k) { return a * (k + 1.0); }; };
  write();
  CHECK(global_fences([&] { kpmap::psum_inplace(x, "devices"); }) == 1);
  CHECK(matches(x, times(tri())));
  write();
  CHECK(global_fences([&] { CHECK(matches(kpmap::pmax(x, "devices"), times(p()))); }) == 1);
  write();
  CHECK(global_fences([&] { kpmap::ipmean(x, "devices").wait(); }) == 1);
  CHECK(matches(x, times(tri() / p())));
  write();
  CHECK(global_fences([&] {
          auto g = kpmap::iall_gather(x, "devices").wait();
          for (int q = 0; q < P; ++q) {
            CHECK(matches(Kokkos::subview(g, q, Kokkos::ALL()), times(q + 1.0)));
          }
        }) == 1);
  write();
  std::vector<kpmap::PermutePair> ring;
  for (int i = 0; i < P; ++i) ring.emplace_back(i, (i + 1) % P);
  CHECK(global_fences([&] {
          auto y = kpmap::ippermute(x, "devices", ring).wait();
          CHECK(matches(y, times((world_rank() + P - 1) % P + 1.0)));
        }) == 1);
  write();
  CHECK(global_fences([&] { kpmap::ipbroadcast(x, "devices", P - 1).wait(); }) == 1);
  CHECK(matches(x, times(p())));
  write();
  CHECK(global_fences([&] {
          auto all = kpmap::gather(x, "devices");
          REQUIRE(all.extent(0) == n * P);
          for (int q = 0; q < P; ++q) {
            CHECK(
                matches(Kokkos::subview(all, std::make_pair(q * n, (q + 1) * n)), times(q + 1.0)));
          }
        }) == 1);
  // Named, the instance is the caller's promise: no global fence.
  write();
  CHECK(global_fences([&] { kpmap::psum_inplace(writer, x, "devices"); }) == 0);
  CHECK(matches(x, times(tri())));
  write();
  CHECK(global_fences([&] {
          auto g = kpmap::iall_gather(writer, x, "devices").wait();
          CHECK(matches(Kokkos::subview(g, P - 1, Kokkos::ALL()), times(p())));
        }) == 0);
}

TEST_CASE("non-blocking forms", "[collectives][nonblocking]") {
  const double me = r() + 1;
  const int P = world_size();
  Kokkos::View<double*, Exec> a("a", 1000);
  Kokkos::View<double*, Exec> a0("a0", 1000);
  Kokkos::View<double**, Exec> b("b", 3, 4);
  fill(a, [&](std::size_t k) { return me * k; });
  fill(a0, [&](std::size_t k) { return me * k; });
  fill(b, [&](std::size_t k) { return me + k; });
  auto ra = kpmap::ipsum(a, "devices");
  auto rb = kpmap::ipmean(std::tie(b), "devices");
  // Not `a`: MPI forbids reading a buffer a pending operation is reducing in
  // place (in checked mode the gather's signature check progresses the ipsum
  // first, and a gather of `a` saw the sums).
  auto rg = kpmap::iall_gather(a0, "devices");
  std::vector<kpmap::PermutePair> ring;
  for (int i = 0; i < P; ++i) ring.emplace_back(i, (i + 1) % P);
  auto rp = kpmap::ippermute(b, "devices", ring);
  while (!ra.test()) {
  }
  rb.wait();
  auto& g = rg.wait();
  auto& shifted = rp.wait();
  CHECK(ra.done());
  CHECK(matches(a, [&](std::size_t k) { return tri() * k; }));
  CHECK(matches(b, [&](std::size_t k) { return tri() / p() + k; }));
  CHECK(matches(g, [&](std::size_t k) { return (k / 1000 + 1.0) * (k % 1000); }));
  CHECK(matches(shifted, [&](std::size_t k) { return (world_rank() + P - 1) % P + 1.0 + k; }));
  Kokkos::View<double**, Exec> s("s", P, 2);
  fill(s, [&](std::size_t k) { return me * k; });
  auto rs = kpmap::ipsum_scatter(s, "devices");
  CHECK(matches(rs.wait(), [&](std::size_t j) { return tri() * (2 * world_rank() + j); }));
  Kokkos::View<int*, Exec> c("c", 3);
  fill(c, [&](std::size_t k) { return world_rank() * 10 + static_cast<int>(k); });
  kpmap::ipbroadcast(c, "devices", 0).wait();
  CHECK(matches(c, [&](std::size_t k) { return static_cast<int>(k); }));
  // Host numbers, in place: rank q holds (q + 1) (k + 1), the sums are
  // (k + 1) P (P + 1) / 2, exact in doubles; and a count of 0 completes.
  double host[3] = {me, 2 * me, 3 * me};
  auto rh = kpmap::ipsum(host, 3, "devices");
  rh.wait();
  for (int k = 0; k < 3; ++k) CHECK(host[k] == (k + 1) * tri());
  long none = 7;
  kpmap::ipsum(&none, 0, "devices").wait();
  CHECK(none == 7);
}

TEST_CASE("ipsum over host numbers refuses what it cannot sum", "[collectives][ipsum]") {
  // Every rank passes the same mistake, so every rank throws before MPI sees it.
  double host[4] = {1, 2, 3, 4};
  CHECK_THROWS_WITH(kpmap::ipsum(host, -1, "devices"),
                    ContainsSubstring("kpmap::ipsum: count -1 is negative"));
  CHECK_THROWS_WITH(kpmap::ipsum(static_cast<double*>(nullptr), 3, "devices"),
                    ContainsSubstring("kpmap::ipsum: values is a null pointer, with count 3"));
  // More numbers than there is memory behind the pointer (16 GiB from a
  // 32-byte array): refused, where MPI would read past the array and crash.
  CHECK_THROWS_WITH(kpmap::ipsum(host, std::numeric_limits<int>::max(), "devices"),
                    ContainsSubstring("kpmap::ipsum: values holds 2147483647 numbers") &&
                        ContainsSubstring("not all of it is this process's memory"));
  // Two sums in flight over the same numbers: the second would read what the
  // first is writing.
  auto first = kpmap::ipsum(host, 3, "devices");
  CHECK_THROWS_WITH(kpmap::ipsum(host + 2, 2, "devices"),
                    ContainsSubstring("kpmap::ipsum: its numbers overlap those of a sum still in "
                                      "flight") &&
                        ContainsSubstring("wait for that sum first"));
  first.wait();
  // Once it completed, the same numbers may be summed again: (k+1) P^2 after two sums.
  const double p = world_size();
  kpmap::ipsum(host + 2, 2, "devices").wait();
  CHECK(host[2] == 3 * p * p);
  CHECK(host[3] == 4 * p);
  // A null pointer with nothing to sum is nothing to sum.
  kpmap::ipsum(static_cast<double*>(nullptr), 0, "devices").wait();
}

TEST_CASE("psum, pmax and pmin of host numbers reduce them in place at once",
          "[collectives][ipsum]") {
  // Rank q holds q + 1, -(q + 1) and q (q + 1) / 2 + 0.5: the sums are
  // P (P + 1) / 2 and its negative, the maximum and minimum those of rank P - 1
  // and rank 0; every value exact in doubles and integers.
  const int p = world_size();
  const int q = world_rank();
  const double tri = p * (p + 1) / 2.0;
  double sums[2] = {q + 1.0, -(q + 1.0)};
  kpmap::psum(sums, 2, "devices");
  CHECK(sums[0] == tri);
  CHECK(sums[1] == -tri);
  std::uint64_t most[2] = {static_cast<std::uint64_t>(q) * 7, 100 - static_cast<std::uint64_t>(q)};
  kpmap::pmax(most, 2, "devices");
  CHECK(most[0] == static_cast<std::uint64_t>(p - 1) * 7);
  CHECK(most[1] == 100);
  double least[2] = {q * (q + 1) / 2.0 + 0.5, -q - 0.25};
  kpmap::pmin(least, 2, "devices");
  CHECK(least[0] == 0.5);
  CHECK(least[1] == -(p - 1) - 0.25);
  // The same checks as ipsum's, naming the call the numbers were given to.
  CHECK_THROWS_WITH(kpmap::psum(sums, -2, "devices"),
                    ContainsSubstring("kpmap::psum: count -2 is negative"));
  CHECK_THROWS_WITH(kpmap::pmax(static_cast<std::uint64_t*>(nullptr), 1, "devices"),
                    ContainsSubstring("kpmap::pmax: values is a null pointer, with count 1"));
  // A sum in flight over the numbers refuses a blocking one over them too.
  auto first = kpmap::ipsum(sums, 2, "devices");
  CHECK_THROWS_WITH(kpmap::pmin(sums + 1, 1, "devices"),
                    ContainsSubstring("kpmap::pmin: its numbers overlap those of a sum still"));
  first.wait();
  CHECK(sums[0] == tri * p);
}

TEST_CASE("checked mode names sums started in another order on another rank",
          "[collectives][ipsum][checked]") {
  if (world_size() < 2) SKIP("needs two ranks to disagree");
  kpmap::set_checked_mode(true);
  double a[2] = {1, 1};
  double b[3] = {1, 1, 1};
  // Rank 0 starts the sum of 2 numbers first, the others that of 3.
  const bool first = world_rank() == 0;
  CHECK_THROWS_WITH(first ? kpmap::ipsum(a, 2, "devices") : kpmap::ipsum(b, 3, "devices"),
                    ContainsSubstring("axis 'devices'") && ContainsSubstring("shape (2)") &&
                        ContainsSubstring("shape (3)"));
  kpmap::set_checked_mode(false);
}

TEST_CASE("counts above the MPI int limit take the large-count paths", "[collectives][large]") {
  // Lowering the per-call limit to 7 elements sends every buffer below through
  // the chunked and derived-datatype paths used above 2^31-1 elements.
  const std::size_t saved = kpmap::transport::max_count();
  kpmap::transport::set_max_count(7);
  const double me = r() + 1;
  const std::size_t P = world_size();
  Kokkos::View<double*, Exec> a("a", 100);
  fill(a, [&](std::size_t k) { return me * k; });
  kpmap::psum_inplace(a, "devices");
  CHECK(matches(a, [&](std::size_t k) { return tri() * k; }));
  Kokkos::View<double**, Exec> x("x", 2 * P, 9);
  fill(x, [&](std::size_t k) { return 1000.0 * world_rank() + k; });
  auto g = kpmap::all_gather(x, "devices");
  CHECK(matches(g, [&](std::size_t k) { return 1000.0 * (k / x.size()) + k % x.size(); }));
  auto t = kpmap::all_to_all(x, "devices", 0, 0, kpmap::tiled);
  CHECK(matches(t, [&](std::size_t k) {
    const std::size_t i = k / 9, j = k % 9;
    return 1000.0 * (i / 2) + (2 * world_rank() + i % 2) * 9 + j;
  }));
  Kokkos::View<double**, Exec> s("s", P, 11);
  fill(s, [&](std::size_t k) { return me * k; });
  auto sc = kpmap::psum_scatter(s, "devices");
  CHECK(matches(sc, [&](std::size_t j) { return tri() * (world_rank() * 11 + j); }));
  std::vector<kpmap::PermutePair> ring;
  for (std::size_t i = 0; i < P; ++i) ring.emplace_back(i, (i + 1) % P);
  auto pp = kpmap::ppermute(a, "devices", ring);
  CHECK(matches(pp, [&](std::size_t k) { return tri() * k; }));
  // Uneven gathers and scatters (13 rows of 3) through the block-by-block path.
  Kokkos::View<double**, Kokkos::HostSpace> global("global", 13, 3);
  for (std::size_t k = 0; k < global.size(); ++k) global.data()[k] = 0.5 * k;
  auto row_major = [&](std::size_t k) { return 0.5 * k; };
  auto mine = kpmap::shard_from_root(
      world_rank() == 0 ? global : Kokkos::View<double**, Kokkos::HostSpace>("none", 0, 0),
      "devices");
  const kpmap::BlockPartition part(13, world_size());
  CHECK(matches(mine, [&](std::size_t k) { return 0.5 * (part.begin(world_rank()) * 3 + k); }));
  CHECK(matches(kpmap::gather(mine, "devices"), row_major));
  auto at_last = kpmap::gather(mine, "devices", world_size() - 1);
  CHECK(at_last.extent(0) == (world_rank() == world_size() - 1 ? 13u : 0u));
  if (world_rank() == world_size() - 1) CHECK(matches(at_last, row_major));
  // In place, each block broadcast from where it already lies.
  std::vector<std::size_t> counts(P, 9);
  counts[0] = 16;
  Kokkos::View<double*, Exec> blocks("blocks", 16 + 9 * (P - 1));
  const std::size_t own = world_rank() == 0 ? 0 : 16 + 9 * (world_rank() - 1);
  const std::size_t own_end = own + counts[world_rank()];
  fill(blocks, [&](std::size_t k) { return k >= own && k < own_end ? 0.5 * k : -1.0; });
  kpmap::all_gather_inplace(blocks, counts, "devices");
  CHECK(matches(blocks, [](std::size_t k) { return 0.5 * k; }));
  // ... and reduced to their owners in int-sized pieces.
  std::vector<int> int_counts(counts.begin(), counts.end());
  fill(blocks, [&](std::size_t k) { return me * k; });
  Kokkos::View<double*, Exec> owned("owned", counts[world_rank()]);
  kpmap::ipsum_scatter_blocks(Exec(), blocks, int_counts, owned, "devices").wait();
  CHECK(matches(owned, [&](std::size_t k) { return tri() * (own + k); }));
  // ... and gathered in place without blocking, each block broadcast by its owner.
  std::vector<int> displs(P, 0);
  for (std::size_t j = 1; j < P; ++j) displs[j] = displs[j - 1] + int_counts[j - 1];
  fill(blocks, [&](std::size_t k) { return k >= own && k < own_end ? 0.25 * k : -1.0; });
  kpmap::iall_gather_inplace(Exec(), blocks, int_counts, displs, "devices").wait();
  CHECK(matches(blocks, [](std::size_t k) { return 0.25 * k; }));
  kpmap::transport::set_max_count(saved);
}

// A KPMAP_DEVICE_PATHS build stages host memory as a GPU build stages device
// memory without a GPU-aware MPI; any other build hands it to MPI in place
// unless KPMAP_STAGING=always.
TEST_CASE("host memory is staged exactly in a device-path build or when asked",
          "[collectives][staging]") {
  const bool asked = kpmap::transport::gpu_awareness().staging_always;
  CHECK(kpmap::transport::must_stage<Kokkos::HostSpace>() ==
        (kpmap::detail::device_paths || asked));
  // The same decision reaches the collectives' buffers.
  const auto b = kpmap::transport::make_buffer<double, Kokkos::HostSpace>(nullptr, 16);
  CHECK(b.staged() == (kpmap::detail::device_paths || asked));
}

TEST_CASE("the staging pool is reused, not regrown", "[collectives][staging]") {
  auto& pool = kpmap::transport::StagingPool::instance();
  // One rank reduces nothing, so only a multi-rank axis stages.
  const bool staged = kpmap::transport::must_stage<Exec::memory_space>() && world_size() > 1;
  Kokkos::View<double*, Exec> a("a", 4096);
  kpmap::psum_inplace(a, "devices");
  const auto after_first = pool.allocations();
  for (int i = 0; i < 20; ++i) kpmap::psum_inplace(a, "devices");
  CHECK(pool.allocations() == after_first);
  if (staged) {
    CHECK(after_first >= 1);
    // A buffer larger than every slab adds exactly one slab, rounded up to a
    // power of two, which later calls reuse.
    const auto capacity = pool.capacity_bytes();
    Kokkos::View<double*, Exec> big("big", capacity / sizeof(double) + 1);
    kpmap::psum_inplace(big, "devices");
    CHECK(pool.allocations() == after_first + 1);
    CHECK(pool.capacity_bytes() >= capacity + big.size() * sizeof(double));
    for (int i = 0; i < 5; ++i) kpmap::psum_inplace(big, "devices");
    kpmap::psum_inplace(a, "devices");
    CHECK(pool.allocations() == after_first + 1);
  } else if (!kpmap::transport::must_stage<Exec::memory_space>()) {
    CHECK(after_first == 0);  // nothing staged: buffers go straight to MPI
  }
}

TEST_CASE("fused reductions reuse pooled buffers step after step", "[collectives][fusion]") {
  if (world_size() < 2) SKIP("one rank reduces nothing");
  auto& pool = kpmap::transport::ScratchPool<Exec::memory_space>::instance();
  // Two small leaves fuse into one pooled buffer, as a layer's (w, b) does.
  Kokkos::View<double**, Exec> w("w", 16, 8), w2("w2", 16, 8);
  Kokkos::View<double*, Exec> b("b", 16), b2("b2", 4);
  auto step = [&] {
    Kokkos::deep_copy(w, 1.0);
    Kokkos::deep_copy(b, 2.0);
    Kokkos::deep_copy(w2, 3.0);
    Kokkos::deep_copy(b2, 4.0);
    std::vector<kpmap::Request> pending;
    pending.push_back(kpmap::ipsum(std::make_tuple(w, b), "devices"));
    pending.push_back(kpmap::ipsum(std::make_tuple(b2, w2), "devices"));
    for (auto& p : pending) p.wait();
  };
  step();
  const auto settled = pool.allocations();
  CHECK(settled >= 2);  // two reductions in flight hold two buffers
  for (int i = 0; i < 10; ++i) step();
  CHECK(pool.allocations() == settled);
  const double p = world_size();
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
  auto hb2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b2);
  CHECK(hw(3, 5) == p);
  CHECK(hb2(3) == 4 * p);
}

TEST_CASE("checked mode turns mistakes into errors on every rank", "[collectives][checked]") {
  if (world_size() < 2) SKIP("needs two ranks to disagree");
  kpmap::set_checked_mode(true);
  const int me = world_rank();
  SECTION("mismatched shapes") {
    Kokkos::View<double*, Exec> x("x", me == 1 ? 4 : 3);
    CHECK_THROWS_WITH(kpmap::psum_inplace(x, "devices"),
                      ContainsSubstring("axis 'devices'") && ContainsSubstring("axis rank 1") &&
                          ContainsSubstring("shape (4)") && ContainsSubstring("shape (3)"));
  }
  SECTION("a tree whose leaf differs in shape on one rank names the leaf") {
    // The last rank's second leaf has 7 rows where the others' have 6: the
    // message names that leaf by its place and label and both shapes, and no
    // fused size or internal hash.
    const int last = world_size() - 1;
    Kokkos::View<double**, Exec> w("w1", 2, 3);
    Kokkos::View<double*, Exec> b("b2", me == last ? 7 : 6);
    Kokkos::View<int*, Exec> n("count", 1);
    const auto said = [&](const std::string& text) {
      return ContainsSubstring(
                 "leaf 1 'b2' (double) has shape (6) on axis rank 0 but (7) on "
                 "axis rank " +
                 std::to_string(last))
                 .match(text) &&
             !ContainsSubstring("parameter").match(text) && !ContainsSubstring("(9)").match(text);
    };
    std::string text;
    try {
      kpmap::psum_inplace(std::tie(w, b, n), "devices");
    } catch (const kpmap::Error& e) {
      text = e.what();
    }
    CAPTURE(text);
    CHECK(said(text));
    // A leaf more on one rank: the first that only it passes.
    Kokkos::View<double*, Exec> extra("extra", 2);
    text.clear();
    try {
      if (me == last) {
        kpmap::pmean_inplace(std::tie(w, extra), "devices");
      } else {
        kpmap::pmean_inplace(std::tie(w), "devices");
      }
    } catch (const kpmap::Error& e) {
      text = e.what();
    }
    CAPTURE(text);
    CHECK_THAT(text, ContainsSubstring("axis rank 0 passes 1 leaf of this type") &&
                         ContainsSubstring("2; the first that only axis rank " +
                                           std::to_string(last) + " passes: leaf 1 'extra'"));
  }
  SECTION("different collectives on different ranks") {
    Kokkos::View<double*, Exec> x("x", 3);
    auto call = [&] {
      if (me == 0) {
        kpmap::psum_inplace(x, "devices");
      } else {
        kpmap::pmax_inplace(x, "devices");
      }
    };
    CHECK_THROWS_WITH(call(), ContainsSubstring("psum") && ContainsSubstring("pmax"));
  }
  SECTION("divergent replicas") {
    Kokkos::View<double*, Exec> w("w", 4);
    fill(w, [&](std::size_t k) { return k == 2 ? 1.0 + me : 1.0; });
    CHECK_THROWS_WITH(
        kpmap::detail::verify_replicated(kpmap::Mesh::world().axis("devices"), "parameter 'w'", w),
        ContainsSubstring("parameter 'w'") && ContainsSubstring("element 2") &&
            ContainsSubstring("is 1 on axis rank 0 (devices 0) but 2 on axis rank 1 (devices 1)"));
  }
  SECTION("divergent replicas on a mesh: the axis they differ over, and where the ranks are") {
    // On a mesh of (data, model) = (P / 2, 2), a value that differs over
    // "model" only, checked over both axes together.
    if (world_size() % 2 != 0) SKIP("a mesh with 2 ranks along model");
    const kpmap::Mesh mesh({{"data", 0}, {"model", 2}});
    Kokkos::View<double*, Exec> w("w", 3);
    const int model = mesh.axis_index("model");
    fill(w, [&](std::size_t) { return 1.0 + model; });
    const kpmap::Axis& both = mesh.axes({"data", "model"});
    CHECK(both.parts().size() == 2);
    CHECK(both.coordinates(both.size() - 1) ==
          "(data " + std::to_string(mesh.axis_size("data") - 1) + ", model 1)");
    CHECK_THROWS_WITH(kpmap::detail::verify_replicated(both, "parameter 'w'", w),
                      ContainsSubstring("over axis 'data,model' but differs over 'model'") &&
                          ContainsSubstring("is 1 on axis rank 0 (data 0, model 0) but 2 on axis "
                                            "rank 1 (data 0, model 1)"));
    // Over "data" alone the replicas agree.
    CHECK_NOTHROW(kpmap::detail::verify_replicated(mesh.axis("data"), "parameter 'w'", w));
  }
  kpmap::set_checked_mode(false);
}
