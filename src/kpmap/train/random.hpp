// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Counter-based random numbers (Philox4x32-10): every value is a pure
/// function of (seed, stream, index), so a data set generated from global
/// sample indices is identical whatever the rank count, and any sample can be
/// regenerated on any device without a sequential state.

#include <kpmap/base/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpmap::train {

/// \brief Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers:
/// as easy as 1, 2, 3", SC11): maps a 128-bit counter and a 64-bit key to 128
/// random bits.
struct Philox4x32 {
  using Block = Kokkos::Array<std::uint32_t, 4>;
  using Key = Kokkos::Array<std::uint32_t, 2>;

  KOKKOS_INLINE_FUNCTION static Block generate(Block ctr, Key key) {
    ctr = round(ctr, key);
    for (int r = 1; r < 10; ++r) {
      key[0] += 0x9E3779B9u;  // Weyl sequence key schedule
      key[1] += 0xBB67AE85u;
      ctr = round(ctr, key);
    }
    return ctr;
  }

 private:
  KOKKOS_INLINE_FUNCTION static Block round(const Block& c, const Key& k) {
    const std::uint64_t p0 = std::uint64_t(0xD2511F53u) * c[0];
    const std::uint64_t p1 = std::uint64_t(0xCD9E8D57u) * c[2];
    const auto hi0 = static_cast<std::uint32_t>(p0 >> 32);
    const auto lo0 = static_cast<std::uint32_t>(p0);
    const auto hi1 = static_cast<std::uint32_t>(p1 >> 32);
    const auto lo1 = static_cast<std::uint32_t>(p1);
    Block out;
    out[0] = hi1 ^ c[1] ^ k[0];
    out[1] = lo1;
    out[2] = hi0 ^ c[3] ^ k[1];
    out[3] = lo0;
    return out;
  }
};

/// \brief Random numbers addressed by (stream, index) under one seed.
struct CounterRng {
  std::uint64_t seed = 0;

  /// \brief 128 random bits for counter (index, stream).
  KOKKOS_INLINE_FUNCTION Philox4x32::Block bits(std::uint64_t index, std::uint32_t stream) const {
    Philox4x32::Block ctr;
    ctr[0] = static_cast<std::uint32_t>(index);
    ctr[1] = static_cast<std::uint32_t>(index >> 32);
    ctr[2] = stream;
    ctr[3] = 0;
    Philox4x32::Key key;
    key[0] = static_cast<std::uint32_t>(seed);
    key[1] = static_cast<std::uint32_t>(seed >> 32);
    return Philox4x32::generate(ctr, key);
  }

  /// \brief A double uniform in [0, 1) with 53 random bits.
  KOKKOS_INLINE_FUNCTION static double to_unit(std::uint32_t hi, std::uint32_t lo) {
    const std::uint64_t m = ((std::uint64_t(hi) << 32) | lo) >> 11;
    return static_cast<double>(m) * (1.0 / 9007199254740992.0);  // 2^-53
  }

  /// \brief Uniform in [0, 1) for (index, stream).
  KOKKOS_INLINE_FUNCTION double uniform(std::uint64_t index, std::uint32_t stream) const {
    const auto b = bits(index, stream);
    return to_unit(b[0], b[1]);
  }

  /// \brief A standard normal N(0, 1) for (index, stream), by Box-Muller.
  KOKKOS_INLINE_FUNCTION double normal(std::uint64_t index, std::uint32_t stream) const {
    const auto b = bits(index, stream);
    const double u1 = 1.0 - to_unit(b[0], b[1]);  // (0, 1]: the log is finite
    const double u2 = to_unit(b[2], b[3]);
    using namespace kpmap::detail;
    return math::sqrt(-2.0 * math::log(u1)) * math::cos(6.283185307179586 * u2);
  }
};

/// \brief Streams of the counter-based generator, one per kind of number.
namespace stream {
inline constexpr std::uint32_t features = 0;
inline constexpr std::uint32_t truth = 1;
inline constexpr std::uint32_t noise = 2;
inline constexpr std::uint32_t class_truth = 3;
inline constexpr std::uint32_t shuffle = 4;
inline constexpr std::uint32_t init = 5;
inline constexpr std::uint32_t image_label = 6;
inline constexpr std::uint32_t image_phase = 7;
inline constexpr std::uint32_t image_noise = 8;
}  // namespace stream

}  // namespace kpmap::train
