// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The kernels of Conv2D (conv2d.hpp): where a convolution's windows
/// sit (ConvAxis), im2col and col2im, the small-patch product made in the
/// thread that makes the patch (Im2colProduct), that product with the max
/// pooling after it (Im2colProductMaxPool) and its weight gradient
/// (PooledWeightGradient), and the bias's join and split around the gemms.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/policy.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace kpmap::train {

/// \brief Where a convolution's windows sit on one image axis.
struct ConvAxis {
  std::size_t in = 0, out = 0, pad = 0;  ///< input and output length; padding before

  /// \brief TensorFlow's rule: "valid" uses whole windows only; "same" gives
  /// ceil(in / stride) outputs, padding split evenly (the extra one after).
  static ConvAxis make(std::size_t in, std::size_t kernel, std::size_t stride, bool same) {
    ConvAxis a;
    a.in = in;
    if (same) {
      a.out = (in + stride - 1) / stride;
      const std::size_t need = (a.out - 1) * stride + kernel;
      a.pad = need > in ? (need - in) / 2 : 0;
    } else {
      a.out = in >= kernel ? (in - kernel) / stride + 1 : 0;
    }
    return a;
  }
};

namespace detail {

/// Patches of at most this many columns (with the bias's) are multiplied by
/// the thread that makes them (Im2colProduct), not by gemm.
inline constexpr std::size_t direct_patch_limit = 32;

/// Where the k k Cin values of a small patch lie from its window's first
/// value: in the image (`image`: k rows of k Cin, a row of the image apart)
/// or written out (`flat`: one after another).
struct PatchOffsets {
  std::uint32_t image[direct_patch_limit] = {}, flat[direct_patch_limit] = {};
  PatchOffsets() = default;
  PatchOffsets(std::size_t k, std::size_t cin, std::size_t image_row) {
    const std::size_t span = k * cin;
    for (std::size_t j = 0; j < k * span && j < direct_patch_limit; ++j) {
      image[j] = static_cast<std::uint32_t>(j / span * image_row + j % span);
      flat[j] = static_cast<std::uint32_t>(j);
    }
  }
};

/// A small patch as the multiplying kernels read it: value j at x[off[j]].
template <class T>
struct Window {
  const T* x;
  const std::uint32_t* off;
  KOKKOS_FORCEINLINE_FUNCTION T operator[](std::size_t j) const { return x[off[j]]; }
};

/// A patch written out, read as it lies (no offsets to load).
template <class T>
struct Patch {
  const T* x;
  KOKKOS_FORCEINLINE_FUNCTION T operator[](std::size_t j) const { return x[j]; }
};

/// cols(r, c): row r = (sample, oy, ox), column c = (ky, kx, ci) below
/// k k Cin, zero where the window hangs over the padding; the last column is
/// 1, so that the gemm with [W | b] adds the bias and the one with D^T sums
/// it. One thread per row (output pixel (s, oy, ox), a 3-D range: no
/// division to find them), which writes its row's k k Cin + 1 contiguous
/// values: a kernel row's k Cin at once where the window is inside the image.
template <class T, class M>
struct Im2col {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> in;  // samples x (H W Cin)
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> cols;
  ConvAxis ay, ax;
  std::size_t k, stride, cin;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t s, std::int64_t oy, std::int64_t ox) const {
    row(static_cast<std::size_t>(s), static_cast<std::size_t>(oy), static_cast<std::size_t>(ox));
  }
  /// Writes row (s, oy, ox) of cols and returns it.
  KOKKOS_INLINE_FUNCTION T* row(std::size_t s, std::size_t oy, std::size_t ox) const {
    T* const first = &cols((s * ay.out + oy) * ax.out + ox, 0);
    write(first, s, oy, ox);
    return first;
  }
  /// The patch of output pixel (s, oy, ox): read in the image where its
  /// window lies wholly inside; else written to `buffer` (k k Cin + 1 values).
  KOKKOS_FORCEINLINE_FUNCTION Window<T> window(T* buffer, const PatchOffsets& offsets,
                                               std::size_t s, std::size_t oy,
                                               std::size_t ox) const {
    const long long y0 = static_cast<long long>(oy * stride) - static_cast<long long>(ay.pad);
    const long long x0 = static_cast<long long>(ox * stride) - static_cast<long long>(ax.pad);
    const auto kk = static_cast<long long>(k);
    if (y0 >= 0 && x0 >= 0 && y0 + kk <= static_cast<long long>(ay.in) &&
        x0 + kk <= static_cast<long long>(ax.in)) {
      return {&in(s, (static_cast<std::size_t>(y0) * ax.in + static_cast<std::size_t>(x0)) * cin),
              offsets.image};
    }
    write(buffer, s, oy, ox);
    return {buffer, offsets.flat};
  }
  /// Writes the patch of output pixel (s, oy, ox) and its 1 to `out`.
  KOKKOS_FORCEINLINE_FUNCTION void write(T* out, std::size_t s, std::size_t oy,
                                         std::size_t ox) const {
    const std::size_t span = k * cin;  // one kernel row of the window
    // Signed arithmetic: the window may start inside the padding.
    const long long x0 = static_cast<long long>(ox * stride) - static_cast<long long>(ax.pad);
    const bool cols_in = x0 >= 0 && x0 + static_cast<long long>(k) <= static_cast<long long>(ax.in);
    for (std::size_t ky = 0; ky < k; ++ky, out += span) {
      const long long y = static_cast<long long>(oy * stride + ky) - static_cast<long long>(ay.pad);
      if (y < 0 || y >= static_cast<long long>(ay.in)) {
        for (std::size_t j = 0; j < span; ++j) out[j] = T(0);
        continue;
      }
      const T* src = &in(s, static_cast<std::size_t>(y) * ax.in * cin);
      if (cols_in) {  // inside the image: k Cin contiguous values
        src += static_cast<std::size_t>(x0) * cin;
        for (std::size_t j = 0; j < span; ++j) out[j] = src[j];
        continue;
      }
      for (std::size_t kx = 0; kx < k; ++kx) {
        const long long x = x0 + static_cast<long long>(kx);
        const bool x_in = x >= 0 && x < static_cast<long long>(ax.in);
        for (std::size_t ci = 0; ci < cin; ++ci) {
          out[kx * cin + ci] = x_in ? src[static_cast<std::size_t>(x) * cin + ci] : T(0);
        }
      }
    }
    *out = T(1);
  }
};

/// Channels of the output a thread of Im2colProduct computes together: a
/// fixed-length inner loop the compiler keeps in vector registers.
inline constexpr std::size_t conv_lanes = 16;

/// Window positions of a pooling whose gradients PooledWeightGradient adds
/// together before it adds them to its sums (a 2 x 2 pooling's all).
inline constexpr std::size_t window_group = 4;

/// A patch p (and its 1) times [W | b]^T, wbt ((patch + 1) x filters): the
/// outputs of one pixel, 2 L channels at a time (lanes) or one (one).
template <class T, class M>
struct PatchProduct {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> wbt;
  PatchOffsets offsets;
  static constexpr std::size_t L = conv_lanes;
  KOKKOS_INLINE_FUNCTION std::size_t filters() const { return wbt.extent(1); }
  /// o[l] = sum_j p[j] wbt(j, f0 + l) for l < 2 L, and the bias (the last
  /// row of wbt); even and odd columns apart: four independent chains of
  /// multiply-adds instead of one waiting on the last. The same sums in the
  /// same order wherever the patch lies.
  template <class P>  // Window or Patch
  KOKKOS_FORCEINLINE_FUNCTION void lanes(const P& p, std::size_t f0, T* o) const {
    const std::size_t n = wbt.extent(0) - 1;
    T a0[L] = {}, a1[L] = {}, b0[L] = {}, b1[L] = {};
    std::size_t j = 0;
    for (; j + 1 < n; j += 2) {
      const T x0 = p[j], x1 = p[j + 1];
      const T* w0 = &wbt(j, f0);
      const T* w1 = &wbt(j + 1, f0);
      for (std::size_t l = 0; l < L; ++l) {
        a0[l] = kpmap::detail::multiply_add(x0, w0[l], a0[l]);
        b0[l] = kpmap::detail::multiply_add(x0, w0[L + l], b0[l]);
        a1[l] = kpmap::detail::multiply_add(x1, w1[l], a1[l]);
        b1[l] = kpmap::detail::multiply_add(x1, w1[L + l], b1[l]);
      }
    }
    if (j < n) {
      const T x0 = p[j];
      const T* w0 = &wbt(j, f0);
      for (std::size_t l = 0; l < L; ++l) {
        a0[l] = kpmap::detail::multiply_add(x0, w0[l], a0[l]);
        b0[l] = kpmap::detail::multiply_add(x0, w0[L + l], b0[l]);
      }
    }
    const T* bias = &wbt(n, f0);
    for (std::size_t l = 0; l < L; ++l) {
      a0[l] = (a0[l] + a1[l]) + bias[l];
      b0[l] = (b0[l] + b1[l]) + bias[L + l];
    }
    for (std::size_t l = 0; l < L; ++l) {  // stored apart: o may alias nothing read here
      o[l] = a0[l];
      o[L + l] = b0[l];
    }
  }
  /// Channel f alone (those after the last whole 2 L).
  template <class P>
  KOKKOS_FORCEINLINE_FUNCTION T one(const P& p, std::size_t f) const {
    const std::size_t n = wbt.extent(0) - 1;
    T acc = T(0);
    for (std::size_t j = 0; j < n; ++j) acc = kpmap::detail::multiply_add(p[j], wbt(j, f), acc);
    return acc + wbt(n, f);
  }
};

/// Im2col's row, then at once that row's outputs out(r, f) = sum_j cols(r, j)
/// wbt(j, f) (bias included): for a small patch (few input channels), where
/// a gemm of so few columns would spend more time clearing and rewriting its
/// output than multiplying.
template <class T, class M>
struct Im2colProduct {
  Im2col<T, M> patches;
  PatchProduct<T, M> product;
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> out;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t s_, std::int64_t oy_,
                                         std::int64_t ox_) const {
    const auto s = static_cast<std::size_t>(s_), oy = static_cast<std::size_t>(oy_),
               ox = static_cast<std::size_t>(ox_);
    const Patch<T> p{patches.row(s, oy, ox)};
    T* o = &out((s * patches.ay.out + oy) * patches.ax.out + ox, 0);
    const std::size_t filters = product.filters();
    std::size_t f0 = 0;
    for (; f0 + 2 * conv_lanes <= filters; f0 += 2 * conv_lanes) product.lanes(p, f0, o + f0);
    for (; f0 < filters; ++f0) o[f0] = product.one(p, f0);
  }
};

/// Im2colProduct and the max pooling after it (and a ReLU between) at once:
/// one thread per pooled pixel (s, py, px) multiplies each pixel of its
/// window's patch as it lies in the image (written out only at the border)
/// and keeps each channel's largest output and its window position (dy size
/// + dx; strictly greater: a tie keeps the first, as MaxPoolForward does
/// with the same values, which Im2colProduct's sums equal bit for bit). The
/// convolution's output is never stored, nor its patches: the backward pass
/// reads them from the image again.
template <class T, class M>
struct Im2colProductMaxPool {
  Im2col<T, M> patches;  // its cols are not used
  PatchProduct<T, M> product;
  Kokkos::View<T**, Kokkos::LayoutRight, M> out;  // samples x (oh ow filters)
  Kokkos::View<std::uint16_t*, M> where;
  std::size_t oh, ow, size;
  bool relu;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t s_, std::int64_t py_,
                                         std::int64_t px_) const {
    const auto s = static_cast<std::size_t>(s_), py = static_cast<std::size_t>(py_),
               px = static_cast<std::size_t>(px_);
    constexpr std::size_t L2 = 2 * conv_lanes;
    // As in MaxPoolForward: the position as wide as T (compare and select
    // vectorise together), float for a 16-bit T.
    using Position = std::conditional_t<(sizeof(T) >= sizeof(float)), T, float>;
    const std::size_t filters = product.filters(), op = (s * oh + py) * ow + px;
    T* o = out.data() + op * filters;
    std::uint16_t* at = where.data() + op * filters;
    T buffer[direct_patch_limit];
    std::size_t f0 = 0;
    for (; f0 + L2 <= filters; f0 += L2) {
      T best[L2] = {}, v[L2];  // best and pos: set at q = 0
      Position pos[L2] = {};
      for (std::size_t q = 0; q < size * size; ++q) {
        product.lanes(
            patches.window(buffer, product.offsets, s, py * size + q / size, px * size + q % size),
            f0, v);
        const auto here = static_cast<Position>(q);  // < 2^16: exact
        KPMAP_VECTOR_LANES
        for (std::size_t l = 0; l < L2; ++l) {
          const bool take = q == 0 || v[l] > best[l];
          best[l] = take ? v[l] : best[l];
          pos[l] = take ? here : pos[l];
        }
      }
      for (std::size_t l = 0; l < L2; ++l) {
        o[f0 + l] = relu && !(best[l] > T(0)) ? T(0) : best[l];
        at[f0 + l] = static_cast<std::uint16_t>(pos[l]);
      }
    }
    for (; f0 < filters; ++f0) {  // the rest, one channel at a time
      T best = T(0);
      std::size_t pos = 0;
      for (std::size_t q = 0; q < size * size; ++q) {
        const T v = product.one(
            patches.window(buffer, product.offsets, s, py * size + q / size, px * size + q % size),
            f0);
        if (q == 0 || v > best) {
          best = v;
          pos = q;
        }
      }
      o[f0] = relu && !(best > T(0)) ? T(0) : best;
      at[f0] = static_cast<std::uint16_t>(pos);
    }
  }
};

/// The weight and bias gradient of Im2colProductMaxPool, transposed:
/// sum(j filters + f) = sum over pooled outputs (s, py, px, f) of their
/// gradient (zero where the ReLU cut the maximum) times column j of the
/// patch of the window pixel that held the maximum. One iteration per
/// pooled image row (s, py), which reads each window pixel's patch from the
/// image again (written out at the border) and adds it times the gradients
/// of the channels it held the maximum of (zero for the others: dense in the
/// channels, vectorised), window_group positions together, into its
/// thread's own sum (parallel_reduce's array): no two threads add to the
/// same place. A (16-bit T) sums in float.
template <class T, class M, class A>
struct PooledWeightGradient {
  using value_type = A[];
  unsigned value_count;  // (patch + 1) filters
  Im2col<T, M> patches;  // its cols are not used
  PatchOffsets offsets;
  Kokkos::View<const T**, Kokkos::LayoutRight, M> dout, out;  // pooled
  Kokkos::View<const std::uint16_t*, M> where;
  std::size_t oh, ow, size, filters;
  bool relu;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t r, A* sum) const {
    constexpr std::size_t L = conv_lanes;
    constexpr std::size_t Q = window_group;
    const std::size_t s = r / oh, py = r % oh, positions = size * size;
    const std::size_t n = value_count / filters - 1;  // the patch's columns
    T buffer[Q][direct_patch_limit];
    Window<T> w[Q];
    for (std::size_t px = 0; px < ow; ++px) {
      const std::size_t op = (s * oh + py) * ow + px;
      const T* d = dout.data() + op * filters;
      const T* y = out.data() + op * filters;
      const std::uint16_t* at = where.data() + op * filters;
      for (std::size_t q0 = 0; q0 < positions; q0 += Q) {
        const std::size_t nq = positions - q0 < Q ? positions - q0 : Q;
        for (std::size_t i = 0; i < Q; ++i) {
          const std::size_t q = q0 + i;
          if (i < nq) {
            w[i] =
                patches.window(buffer[i], offsets, s, py * size + q / size, px * size + q % size);
          } else {  // no such position: zeros (times a zero gradient)
            for (std::size_t j = 0; j < direct_patch_limit; ++j) buffer[i][j] = T(0);
            w[i] = Window<T>{buffer[i], offsets.flat};
          }
        }
        std::size_t f0 = 0;
        for (; f0 + L <= filters; f0 += L) {
          A g[Q][L];
          for (std::size_t i = 0; i < Q; ++i) {
            const auto here = static_cast<std::uint16_t>(q0 + i);
            KPMAP_VECTOR_LANES
            for (std::size_t l = 0; l < L; ++l) {  // selects, not branches: vectorised
              const std::size_t f = f0 + l;
              const bool held = (i < nq) & (at[f] == here) & (!relu | (y[f] > T(0)));
              g[i][l] = held ? static_cast<A>(d[f]) : A(0);
            }
          }
          for (std::size_t j = 0; j <= n; ++j) {  // the patch's columns, then the bias's 1
            A v[Q];
            for (std::size_t i = 0; i < Q; ++i) v[i] = j < n ? static_cast<A>(w[i][j]) : A(1);
            A* to = sum + j * filters + f0;
            KPMAP_VECTOR_LANES
            for (std::size_t l = 0; l < L; ++l) {
              A add = v[0] * g[0][l];
              for (std::size_t i = 1; i < Q; ++i) add += v[i] * g[i][l];
              to[l] += add;
            }
          }
        }
        for (; f0 < filters; ++f0) {  // the rest, one channel at a time
          for (std::size_t i = 0; i < nq; ++i) {
            if (at[f0] != q0 + i || (relu && !(y[f0] > T(0)))) continue;
            const A g = static_cast<A>(d[f0]);
            for (std::size_t j = 0; j < n; ++j)
              sum[j * filters + f0] += static_cast<A>(w[i][j]) * g;
            sum[n * filters + f0] += g;
          }
        }
      }
    }
  }
};

/// f(s, y, x) along one image row r = (s, y): the host's form of a loop
/// over pixels (Conv2D::for_pixels).
template <class F>
struct ImageRows {
  F f;
  std::size_t h, w;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t r) const {
    const auto s = static_cast<std::int64_t>(r / h), y = static_cast<std::int64_t>(r % h);
    for (std::int64_t x = 0; x < static_cast<std::int64_t>(w); ++x) f(s, y, x);
  }
};

/// wb = [W | b] (outputs x (fan-in + 1)): the forward gemm's right-hand
/// side; or, `transposed`, its transpose (Im2colProduct's).
template <class T, class M>
struct JoinBias {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> w;
  Kokkos::View<const T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> b;
  Kokkos::View<T*, M> wb;
  bool transposed;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const std::size_t width = w.extent(1) + 1, outputs = w.extent(0);
    const std::size_t o = i / width, j = i % width;
    wb(transposed ? j * outputs + o : i) = j + 1 < width ? w(o, j) : b(o);
  }
};

/// [dW | db] (+)= g: the weight-gradient gemm's result split back into the
/// layer's two gradient arrays (added to them when accumulating); or,
/// `transposed`, g's transpose (PooledWeightGradient's, in type G).
template <class T, class M, class G = T>
struct SplitBias {
  Kokkos::View<const G**, Kokkos::LayoutRight, M> g;
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dw;
  Kokkos::View<T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> db;
  bool add;
  bool transposed = false;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const std::size_t width = dw.extent(1) + 1;
    const std::size_t o = i / width, j = i % width;
    const T v = static_cast<T>(transposed ? g(j, o) : g(o, j));
    T& to = j + 1 < width ? dw(o, j) : db(o);
    to = add ? to + v : v;
  }
};

/// The adjoint of Im2col: din(s, y, x, ci) = sum of the cols entries that
/// copied it. One thread per input pixel (s, y, x), a 3-D range, gathers
/// the (at most k*k) window positions that saw it, each Cin contiguous
/// values, so no two threads write the same place and the sum's order is
/// fixed.
template <class T, class M>
struct Col2im {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> cols;
  Kokkos::View<T**, Kokkos::LayoutRight, M> din;  // samples x (H W Cin)
  ConvAxis ay, ax;
  std::size_t k, stride, cin;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t s_, std::int64_t y_, std::int64_t x_) const {
    const auto s = static_cast<std::size_t>(s_), y = static_cast<std::size_t>(y_),
               x = static_cast<std::size_t>(x_);
    T* out = din.data() + ((s * ay.in + y) * ax.in + x) * cin;
    for (std::size_t ci = 0; ci < cin; ++ci) out[ci] = T(0);
    const std::size_t py = y + ay.pad;  // oy * stride + ky == py
    const std::size_t px = x + ax.pad;
    const bool unit = stride == 1;  // no division in the common case
    for (std::size_t ky = 0; ky < k && ky <= py; ++ky) {
      if (!unit && (py - ky) % stride != 0) continue;
      const std::size_t oy = unit ? py - ky : (py - ky) / stride;
      if (oy >= ay.out) continue;
      for (std::size_t kx = 0; kx < k && kx <= px; ++kx) {
        if (!unit && (px - kx) % stride != 0) continue;
        const std::size_t ox = unit ? px - kx : (px - kx) / stride;
        if (ox >= ax.out) continue;
        const T* src = &cols((s * ay.out + oy) * ax.out + ox, (ky * k + kx) * cin);
        for (std::size_t ci = 0; ci < cin; ++ci) out[ci] += src[ci];
      }
    }
  }
};

}  // namespace detail

}  // namespace kpmap::train
