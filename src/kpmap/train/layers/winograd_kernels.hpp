// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Winograd's F(2x2, 3x3) for Conv2D (conv2d.hpp): a 3x3 convolution
/// of stride 1 cut into 2x2 output tiles, each read as a 4x4 input tile.
/// With the filters transformed (u = G g G^T) and each tile's input
/// (v = B^T d B), the convolution is 16 products v_e u_e, one for each of
/// the 16 points e of the transformed tile, of (tiles x input channels) by
/// (input channels x outputs), after which each tile's 2x2 outputs are
/// A^T m A. That is 16 multiplications a tile and channel pair where im2col's
/// one product has 36: 2.25 times fewer (Lavin and Gray, "Fast algorithms for
/// convolutional neural networks", CVPR 2016). The transforms are additions
/// (and halvings of the filters), each a kernel over tiles that runs the
/// channels in vector lanes.

#include <kpmap/base/policy.hpp>
#include <kpmap/train/layers/conv2d_kernels.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace kpmap::train::detail {

/// \brief A 3x3 convolution of stride 1 (its input, output and padding on
/// each axis, its channels) and its output's 2x2 tiles (the last row or
/// column of tiles half outside where the output's length is odd).
struct WinogradShape {
  ConvAxis ay, ax;
  std::size_t cin = 0, cout = 0;
  KOKKOS_INLINE_FUNCTION std::size_t tiles_y() const { return (ay.out + 1) / 2; }
  KOKKOS_INLINE_FUNCTION std::size_t tiles_x() const { return (ax.out + 1) / 2; }
  /// Tiles of one sample.
  KOKKOS_INLINE_FUNCTION std::size_t tiles() const { return tiles_y() * tiles_x(); }
  /// Tile t of a chunk: its sample and its row and column of tiles.
  struct Tile {
    std::size_t s, ty, tx;
  };
  KOKKOS_INLINE_FUNCTION Tile tile(std::size_t t) const {
    const std::size_t per = tiles();
    return {t / per, t % per / tiles_x(), t % per % tiles_x()};
  }
};

/// \brief u(e cin + c, f) = (G g G^T)(e / 4, e % 4), g the 3x3 kernel from
/// input channel c to output f: g(ky, kx) = w(f, (3 ky + kx) cin + c), w's
/// layout (outputs x (3 3 inputs)). Or, `adjoint`, the filters of the
/// convolution that gives w's input gradient from its output gradient (an
/// input of that one is an output of w): g(ky, kx) = w(c, (3 (2 - ky) + 2 -
/// kx) cout + f), w's taps reversed. One thread per (c, f).
template <class T, class M>
struct WinogradFilter {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> w;
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> u;
  std::size_t cin, cout;
  bool adjoint;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const std::size_t c = i / cout, f = i % cout;
    T g[3][3];
    for (std::size_t ky = 0; ky < 3; ++ky)
      for (std::size_t kx = 0; kx < 3; ++kx)
        g[ky][kx] =
            adjoint ? w(c, (3 * (2 - ky) + 2 - kx) * cout + f) : w(f, (3 * ky + kx) * cin + c);
    const T half = T(0.5);
    T a[4][3];  // G g
    for (std::size_t kx = 0; kx < 3; ++kx) {
      a[0][kx] = g[0][kx];
      a[1][kx] = half * (g[0][kx] + g[1][kx] + g[2][kx]);
      a[2][kx] = half * (g[0][kx] - g[1][kx] + g[2][kx]);
      a[3][kx] = g[2][kx];
    }
    for (std::size_t r = 0; r < 4; ++r) {  // (G g) G^T
      u((4 * r + 0) * cin + c, f) = a[r][0];
      u((4 * r + 1) * cin + c, f) = half * (a[r][0] + a[r][1] + a[r][2]);
      u((4 * r + 2) * cin + c, f) = half * (a[r][0] - a[r][1] + a[r][2]);
      u((4 * r + 3) * cin + c, f) = a[r][2];
    }
  }
};

/// \brief v(e n + t, c) = (B^T d B)(e / 4, e % 4), d the 4x4 input tile of
/// channel c under output tile t of the chunk's n tiles (zero where it hangs
/// over the padding: read from `zeros`); and 1 in a column cin where v has
/// one (the weight gradient's product then sums the bias's gradient). One thread per tile, its
/// channels in vector lanes.
template <class T, class M>
struct WinogradInput {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      in;  // the chunk's samples x (ay.in ax.in cin)
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v;
  Kokkos::View<const T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> zeros;  // cin of them
  WinogradShape shape;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t t) const {
    const std::size_t n = v.extent(0) / 16;
    const auto [s, ty, tx] = shape.tile(t);
    const long long y0 = static_cast<long long>(2 * ty) - static_cast<long long>(shape.ay.pad);
    const long long x0 = static_cast<long long>(2 * tx) - static_cast<long long>(shape.ax.pad);
    const T* p[16];
    T* o[16];
    for (std::size_t e = 0; e < 16; ++e) {
      const long long y = y0 + static_cast<long long>(e / 4),
                      x = x0 + static_cast<long long>(e % 4);
      const bool inside = y >= 0 && x >= 0 && y < static_cast<long long>(shape.ay.in) &&
                          x < static_cast<long long>(shape.ax.in);
      p[e] =
          inside
              ? &in(s, (static_cast<std::size_t>(y) * shape.ax.in + static_cast<std::size_t>(x)) *
                           shape.cin)
              : zeros.data();
      o[e] = &v(e * n + t, 0);
      if (v.extent(1) > shape.cin) o[e][shape.cin] = T(1);
    }
    KPMAP_INDEPENDENT_ITERATIONS
    for (std::size_t c = 0; c < shape.cin; ++c) {
      T b[16];  // B^T d, a row of four after another
      for (std::size_t j = 0; j < 4; ++j) {
        b[j] = p[j][c] - p[8 + j][c];
        b[4 + j] = p[4 + j][c] + p[8 + j][c];
        b[8 + j] = p[8 + j][c] - p[4 + j][c];
        b[12 + j] = p[4 + j][c] - p[12 + j][c];
      }
      for (std::size_t i = 0; i < 16; i += 4) {  // (B^T d) B
        o[i][c] = b[i] - b[i + 2];
        o[i + 1][c] = b[i + 1] + b[i + 2];
        o[i + 2][c] = b[i + 2] - b[i + 1];
        o[i + 3][c] = b[i + 1] - b[i + 3];
      }
    }
  }
};

/// \brief out = A^T m A + bias for each tile t of the chunk's n: m(e n + t,
/// f) the 16 products' results, out the chunk's samples x (ay.out ax.out
/// cout), a tile's outputs past the output's last row or column not
/// written. `bias` holds cout values (zeros where the convolution has none).
/// One thread per tile, its channels in vector lanes.
template <class T, class M>
struct WinogradOutput {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> m;
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> out;
  Kokkos::View<const T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> bias;
  WinogradShape shape;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t t) const {
    const std::size_t n = m.extent(0) / 16;
    const auto [s, ty, tx] = shape.tile(t);
    const T* q[16];
    for (std::size_t e = 0; e < 16; ++e) q[e] = &m(e * n + t, 0);
    T* o[4];  // the tile's four outputs, null where outside
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t y = 2 * ty + k / 2, x = 2 * tx + k % 2;
      o[k] = y < shape.ay.out && x < shape.ax.out ? &out(s, (y * shape.ax.out + x) * shape.cout)
                                                  : nullptr;
    }
    const T* b = bias.data();
    if (o[1] != nullptr && o[2] != nullptr && o[3] != nullptr) {  // the whole tile
      KPMAP_INDEPENDENT_ITERATIONS
      for (std::size_t f = 0; f < shape.cout; ++f) {
        T y[4];
        outputs(q, b, f, y);
        for (std::size_t k = 0; k < 4; ++k) o[k][f] = y[k];
      }
      return;
    }
    for (std::size_t f = 0; f < shape.cout; ++f) {
      T y[4];
      outputs(q, b, f, y);
      for (std::size_t k = 0; k < 4; ++k)
        if (o[k] != nullptr) o[k][f] = y[k];
    }
  }
  /// Channel f's 2x2 outputs, a row after the other.
  KOKKOS_FORCEINLINE_FUNCTION static void outputs(const T* const* q, const T* b, std::size_t f,
                                                  T* y) {
    T a[8];  // A^T m
    for (std::size_t j = 0; j < 4; ++j) {
      a[j] = q[j][f] + q[4 + j][f] + q[8 + j][f];
      a[4 + j] = q[4 + j][f] - q[8 + j][f] - q[12 + j][f];
    }
    for (std::size_t r = 0; r < 2; ++r) {  // (A^T m) A
      y[2 * r] = a[4 * r] + a[4 * r + 1] + a[4 * r + 2] + b[f];
      y[2 * r + 1] = a[4 * r + 1] - a[4 * r + 2] - a[4 * r + 3] + b[f];
    }
  }
};

/// \brief g(e n + t, f) = (A dy A^T)(e / 4, e % 4), dy the 2x2 output
/// gradient of channel f in tile t of the chunk's n (zero outside the
/// output: read from `zeros`): the gradient of the 16 products' results,
/// the adjoint of WinogradOutput. Its point e = 5 is the sum of the tile's
/// four. One thread per tile, its channels in vector lanes.
template <class T, class M>
struct WinogradOutputGradient {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      dout;  // the chunk's samples x (ay.out ax.out cout)
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> g;
  Kokkos::View<const T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> zeros;  // cout of them
  WinogradShape shape;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t t) const {
    const std::size_t n = g.extent(0) / 16;
    const auto [s, ty, tx] = shape.tile(t);
    const T* dy[4];
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t y = 2 * ty + k / 2, x = 2 * tx + k % 2;
      dy[k] = y < shape.ay.out && x < shape.ax.out ? &dout(s, (y * shape.ax.out + x) * shape.cout)
                                                   : zeros.data();
    }
    T* o[16];
    for (std::size_t e = 0; e < 16; ++e) o[e] = &g(e * n + t, 0);
    KPMAP_INDEPENDENT_ITERATIONS
    for (std::size_t f = 0; f < shape.cout; ++f) {
      T a[8];  // A dy, a row of two after another
      for (std::size_t j = 0; j < 2; ++j) {
        a[j] = dy[j][f];
        a[2 + j] = dy[j][f] + dy[2 + j][f];
        a[4 + j] = dy[j][f] - dy[2 + j][f];
        a[6 + j] = -dy[2 + j][f];
      }
      for (std::size_t r = 0; r < 4; ++r) {  // (A dy) A^T
        o[4 * r][f] = a[2 * r];
        o[4 * r + 1][f] = a[2 * r] + a[2 * r + 1];
        o[4 * r + 2][f] = a[2 * r] - a[2 * r + 1];
        o[4 * r + 3][f] = -a[2 * r + 1];
      }
    }
  }
};

/// \brief The weight and bias gradients from du ((16 (cin + 1)) x cout:
/// the products' sums over tiles of v^T g, WinogradInput's column of ones
/// last): dw(f, (3 ky + kx) cin + c) = (G^T du_c,f G)(ky, kx), the adjoint
/// of WinogradFilter, and db(f) = du's row of ones at point 5 (the sum of
/// the output gradients); set, or `add`ed to. One thread per (c, f), c up
/// to cin (the bias).
template <class T, class M>
struct WinogradWeightGradient {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> du;
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dw;
  Kokkos::View<T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> db;
  std::size_t cin, cout;
  bool add;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const std::size_t rows = cin + 1, c = i / cout, f = i % cout;
    if (c == cin) {
      const T v = du(5 * rows + cin, f);
      db(f) = add ? db(f) + v : v;
      return;
    }
    const T half = T(0.5);
    T a[3][4];  // G^T du
    for (std::size_t j = 0; j < 4; ++j) {
      const T u0 = du(j * rows + c, f), u1 = du((4 + j) * rows + c, f),
              u2 = du((8 + j) * rows + c, f), u3 = du((12 + j) * rows + c, f);
      a[0][j] = u0 + half * (u1 + u2);
      a[1][j] = half * (u1 - u2);
      a[2][j] = half * (u1 + u2) + u3;
    }
    for (std::size_t ky = 0; ky < 3; ++ky) {  // (G^T du) G
      const T g[3] = {a[ky][0] + half * (a[ky][1] + a[ky][2]), half * (a[ky][1] - a[ky][2]),
                      half * (a[ky][1] + a[ky][2]) + a[ky][3]};
      for (std::size_t kx = 0; kx < 3; ++kx) {
        T& to = dw(f, (3 * ky + kx) * cin + c);
        to = add ? to + g[kx] : g[kx];
      }
    }
  }
};

}  // namespace kpmap::train::detail
