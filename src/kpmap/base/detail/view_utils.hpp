// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Shape helpers and the pack/unpack kernels that move any View (rank 0
/// to 8, any layout, contiguous or not) to and from a flat buffer in canonical
/// (row-major) order, the order in which collectives exchange elements.

#include <kpmap/base/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <complex>
#include <cstddef>
#include <string>
#include <type_traits>

namespace kpmap::detail {

inline constexpr int max_view_rank = 8;

template <class T>
inline constexpr bool is_std_complex_v = false;
template <class T>
inline constexpr bool is_std_complex_v<std::complex<T>> = true;

/// \brief Refuses, at compile time, a kernel on `Exec` over the data of `V`
/// (a View or a memory space) that no backend could run: one whose memory
/// the space cannot reach (a CUDA kernel over host memory, a host loop over
/// device memory), or whose elements are std::complex, whose operators are
/// host-only under CUDA and HIP. Every kpmap kernel over user data checks
/// this, so a program that builds on Serial also builds for a GPU.
template <class Exec, class V>
constexpr void require_kernel_ready() {
  static_assert(Kokkos::SpaceAccessibility<typename std::decay_t<Exec>::memory_space,
                                           typename std::decay_t<V>::memory_space>::accessible,
                "kpmap: this execution space cannot access the View's memory space; pass an "
                "execution space that can (the View's own: typename View::execution_space)");
  if constexpr (Kokkos::is_view<std::decay_t<V>>::value) {
    static_assert(!is_std_complex_v<typename std::decay_t<V>::non_const_value_type>,
                  "kpmap: std::complex cannot be used in Kokkos kernels (its operators are "
                  "host-only under CUDA and HIP); use Kokkos::complex<T>, which has the same "
                  "layout and works on every backend");
  }
}

template <class V>
inline constexpr int rank_v = static_cast<int>(V::rank);

/// \brief A 1-D unmanaged View over `n` elements at `ptr` in memory space M.
template <class T, class M>
using flat_view_t = Kokkos::View<T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// \brief Extents padded with 1 to 8 entries; copyable into kernels.
using Extents = Kokkos::Array<std::size_t, max_view_rank>;

template <class V>
Extents extents_of(const V& v) {
  Extents e;
  for (int i = 0; i < max_view_rank; ++i) {
    e[i] = i < rank_v<V> ? v.extent(i) : 1;
  }
  return e;
}

inline std::size_t product(const Extents& e, int rank) {
  std::size_t n = 1;
  for (int i = 0; i < rank; ++i) n *= e[i];
  return n;
}

inline std::string extents_string(const Extents& e, int rank) {
  std::string s = "(";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(e[i]);
  return s + ")";
}

/// \brief `T` with `R` pointers: the data type of a fully dynamic rank-R View.
template <class T, int R>
struct dynamic_data {
  using type = typename dynamic_data<T*, R - 1>::type;
};
template <class T>
struct dynamic_data<T, 0> {
  using type = T;
};

/// \brief An owning, fully dynamic View of rank R in memory space M. A strided
/// layout becomes LayoutRight (a result is always freshly allocated).
template <class T, int R, class Layout, class M>
using owning_view_t = Kokkos::View<
    typename dynamic_data<T, R>::type,
    std::conditional_t<std::is_same_v<Layout, Kokkos::LayoutStride>, Kokkos::LayoutRight, Layout>,
    M>;

/// \brief The owning counterpart of View V (same rank, layout, memory space).
template <class V>
using owning_like_t = owning_view_t<typename V::non_const_value_type, rank_v<V>,
                                    typename V::array_layout, typename V::memory_space>;

/// \brief Allocates a rank-R View of type Out with extents `e` (uninitialised).
template <class Out>
Out allocate(const std::string& label, const Extents& e) {
  constexpr int R = rank_v<Out>;
  auto ext = [&](int i) { return i < R ? e[i] : KOKKOS_INVALID_INDEX; };
  typename Out::array_layout layout(ext(0), ext(1), ext(2), ext(3), ext(4), ext(5), ext(6), ext(7));
  return Out(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), layout);
}

/// \brief Element access by an 8-entry index array, for any rank.
template <class V>
KOKKOS_INLINE_FUNCTION typename V::reference_type at(const V& v, const std::size_t* i) {
  constexpr int R = rank_v<V>;
  if constexpr (R == 0) {
    return v();
  } else if constexpr (R == 1) {
    return v(i[0]);
  } else if constexpr (R == 2) {
    return v(i[0], i[1]);
  } else if constexpr (R == 3) {
    return v(i[0], i[1], i[2]);
  } else if constexpr (R == 4) {
    return v(i[0], i[1], i[2], i[3]);
  } else if constexpr (R == 5) {
    return v(i[0], i[1], i[2], i[3], i[4]);
  } else if constexpr (R == 6) {
    return v(i[0], i[1], i[2], i[3], i[4], i[5]);
  } else if constexpr (R == 7) {
    return v(i[0], i[1], i[2], i[3], i[4], i[5], i[6]);
  } else {
    return v(i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7]);
  }
}

/// \brief Row-major multi-index of flat position `k` in a shape `e` of rank `rank`.
KOKKOS_INLINE_FUNCTION void unflatten(std::size_t k, const Extents& e, int rank, std::size_t* idx) {
  if (rank == 1) {
    idx[0] = k;
    for (int d = 1; d < max_view_rank; ++d) idx[d] = 0;
    return;
  }
  for (int d = rank - 1; d >= 0; --d) {
    idx[d] = k % e[d];
    k /= e[d];
  }
  for (int d = rank; d < max_view_rank; ++d) idx[d] = 0;
}

/// \brief Row-major flat position of multi-index `idx` in shape `e` of rank `rank`.
KOKKOS_INLINE_FUNCTION std::size_t flatten(const std::size_t* idx, const Extents& e, int rank) {
  std::size_t k = 0;
  for (int d = 0; d < rank; ++d) k = k * e[d] + idx[d];
  return k;
}

/// \brief True when V's elements occupy one contiguous span (any order).
template <class V>
bool is_contiguous(const V& v) {
  return v.span_is_contiguous() && v.span() == v.size();
}

/// \brief True when V's span holds its elements in row-major order, so the
/// raw data pointer can be exchanged as is where element order matters.
template <class V>
bool is_canonical(const V& v) {
  if (!is_contiguous(v)) return false;
  std::size_t expected = 1;
  for (int d = rank_v<V> - 1; d >= 0; --d) {
    if (v.extent(d) > 1 && static_cast<std::size_t>(v.stride(d)) != expected) return false;
    expected *= v.extent(d);
  }
  return true;
}

/// \brief flat(k) = v(row-major index k) for every element of v.
template <class Exec, class V, class Flat>
void pack(const Exec& exec, const V& v, const Flat& flat, std::size_t offset = 0) {
  require_kernel_ready<Exec, V>();
  const Extents e = extents_of(v);
  constexpr int R = rank_v<V>;
  Kokkos::parallel_for(
      "kpmap::pack", Kokkos::RangePolicy<Exec>(exec, 0, v.size()), KOKKOS_LAMBDA(std::size_t k) {
        std::size_t idx[max_view_rank];
        unflatten(k, e, R, idx);
        flat(offset + k) = at(v, idx);
      });
}

/// \brief v(row-major index k) = flat(k) for every element of v.
template <class Exec, class Flat, class V>
void unpack(const Exec& exec, const Flat& flat, const V& v, std::size_t offset = 0) {
  require_kernel_ready<Exec, V>();
  const Extents e = extents_of(v);
  constexpr int R = rank_v<V>;
  Kokkos::parallel_for(
      "kpmap::unpack", Kokkos::RangePolicy<Exec>(exec, 0, v.size()), KOKKOS_LAMBDA(std::size_t k) {
        std::size_t idx[max_view_rank];
        unflatten(k, e, R, idx);
        at(v, idx) = flat(offset + k);
      });
}

/// \brief Packs `x` as `p` blocks for an all-to-all or reduce-scatter: block j
/// is `x` restricted to indices [j*c, (j+1)*c) along dimension `split`, with
/// c = extent(split) / p; each block is in row-major order.
template <class Exec, class V, class Flat>
void pack_blocks(const Exec& exec, const V& x, int split, int p, const Flat& send) {
  require_kernel_ready<Exec, V>();
  constexpr int R = rank_v<V>;
  Extents chunk = extents_of(x);
  chunk[split] /= p;
  const std::size_t cn = product(chunk, R);
  Kokkos::parallel_for(
      "kpmap::pack_blocks", Kokkos::RangePolicy<Exec>(exec, 0, x.size()),
      KOKKOS_LAMBDA(std::size_t k) {
        std::size_t idx[max_view_rank];
        const std::size_t j = k / cn;
        unflatten(k % cn, chunk, R, idx);
        idx[split] += j * chunk[split];
        send(k) = at(x, idx);
      });
}

/// \brief Unpacks `p` row-major blocks of shape `chunk` (rank `chunk_rank`)
/// into `out`, concatenated along dimension `axis` of `out` (block r at
/// indices r chunk[axis] ... of it).
template <class Exec, class Flat, class V>
void unpack_blocks(const Exec& exec, const Flat& recv, const Extents& chunk, int chunk_rank,
                   int axis, const V& out) {
  require_kernel_ready<Exec, V>();
  constexpr int R = rank_v<V>;
  const Extents e = extents_of(out);
  const std::size_t cn = product(chunk, chunk_rank);
  Kokkos::parallel_for(
      "kpmap::unpack_blocks", Kokkos::RangePolicy<Exec>(exec, 0, out.size()),
      KOKKOS_LAMBDA(std::size_t k) {
        std::size_t idx[max_view_rank];
        unflatten(k, e, R, idx);
        std::size_t local[max_view_rank];
        for (int d = 0; d < max_view_rank; ++d) local[d] = idx[d];
        const std::size_t r = idx[axis] / chunk[axis];
        local[axis] = idx[axis] % chunk[axis];
        at(out, idx) = recv(r * cn + flatten(local, chunk, chunk_rank));
      });
}

/// \brief Multiplies every element of `v` by `factor`.
template <class Exec, class V>
void scale(const Exec& exec, const V& v, double factor) {
  require_kernel_ready<Exec, V>();
  using T = typename V::non_const_value_type;
  if (is_contiguous(v)) {
    // Order does not matter: run over the span, with no index arithmetic.
    flat_view_t<T, typename V::memory_space> flat(v.data(), v.size());
    Kokkos::parallel_for(
        "kpmap::scale", Kokkos::RangePolicy<Exec>(exec, 0, flat.extent(0)),
        KOKKOS_LAMBDA(std::size_t i) { flat(i) = static_cast<T>(flat(i) * factor); });
    return;
  }
  const Extents e = extents_of(v);
  constexpr int R = rank_v<V>;
  Kokkos::parallel_for(
      "kpmap::scale", Kokkos::RangePolicy<Exec>(exec, 0, v.size()), KOKKOS_LAMBDA(std::size_t k) {
        std::size_t idx[max_view_rank];
        unflatten(k, e, R, idx);
        at(v, idx) = static_cast<T>(at(v, idx) * factor);
      });
}

/// \brief dst(i) = factor * src(i) for flat Views (a plain copy when factor is 1).
template <class Exec, class Dst, class Src>
void copy_scaled(const Exec& exec, const Dst& dst, const Src& src, double factor) {
  require_kernel_ready<Exec, Dst>();
  require_kernel_ready<Exec, Src>();
  using T = typename Dst::non_const_value_type;
  if (factor == 1.0) {
    Kokkos::deep_copy(exec, dst, src);
    return;
  }
  Kokkos::parallel_for(
      "kpmap::copy_scaled", Kokkos::RangePolicy<Exec>(exec, 0, dst.extent(0)),
      KOKKOS_LAMBDA(std::size_t i) { dst(i) = static_cast<T>(src(i) * factor); });
}

}  // namespace kpmap::detail
