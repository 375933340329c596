// SPDX-License-Identifier: BSD-3-Clause
// Counter-based random numbers: Philox4x32-10 against the published
// known-answer vectors, and data generated from global indices that is the
// same at every rank count.

#include "support/mpi_test.hpp"

#include <kpmap/spmd/pmap.hpp>
#include <kpmap/train/random.hpp>

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>

using kpmap::train::CounterRng;
using kpmap::train::Philox4x32;

TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors", "[random]") {
  struct Kat {
    Philox4x32::Block ctr;
    Philox4x32::Key key;
    Philox4x32::Block expected;
  };
  // Random123's kat_vectors, "philox4x32 10" lines: counter, key, output.
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const auto& k : kats) {
    const auto out = Philox4x32::generate(k.ctr, k.key);
    for (int i = 0; i < 4; ++i) CHECK(out[i] == k.expected[i]);
  }
}

TEST_CASE("normals generated from global indices: moments and rank independence", "[random]") {
  constexpr std::size_t N = 20000, F = 3;
  const CounterRng rng{12345};
  // Each rank generates only its rows; the whole array never exists until gathered.
  auto local = kpmap::shard_generate<double, 2>(
      "x", {N, F}, "devices",
      KOKKOS_LAMBDA(std::size_t i, std::size_t j) { return rng.normal(i * F + j, 7); });
  auto all = kpmap::gather(local, "devices");
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), all);
  // The same numbers as a host loop, whatever the rank count: the kernel runs
  // the same arithmetic, but a GPU's exp/log/cos may differ from the host's
  // libm in the last bits, so agreement is to a few ulps, not bitwise.
  bool same = true;
  double sum = 0, sq = 0;
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t j = 0; j < F; ++j) {
      const double v = rng.normal(i * F + j, 7);
      same = same && std::abs(h(i, j) - v) <= 1e-14 * std::max(1.0, std::abs(v));
      sum += v;
      sq += v * v;
    }
  }
  CHECK(same);
  // Mean 0 and variance 1 within 5 standard errors (60000 samples).
  const double n = N * F;
  const double mean = sum / n;
  const double var = sq / n - mean * mean;
  CHECK(std::abs(mean) < 5.0 / std::sqrt(n));
  CHECK(std::abs(var - 1.0) < 5.0 * std::sqrt(2.0 / n));
  // Streams and seeds give different numbers.
  CHECK(rng.normal(0, 7) != rng.normal(0, 8));
  CHECK(rng.normal(0, 7) != CounterRng{12346}.normal(0, 7));
}
