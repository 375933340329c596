#pragma once
/// \file
/// \brief The multi-dimensional range every kpmap kernel over a box or a
/// matrix runs, with its iteration order and its tile stated rather than
/// left to the backend.
///
/// kpmap's fields and matrices are LayoutRight: the last index is the
/// contiguous one. `Iterate::Right` for the order of the tiles and for the
/// order within a tile makes the last index the fastest-moving one on every
/// backend, so that neighbouring GPU threads touch neighbouring addresses
/// (CUDA and HIP default to `Iterate::Left`, whose fastest index would walk
/// the slowest stride). On host backends Right is already the default for
/// LayoutRight: saying it changes nothing there.
///
/// The tile: on a GPU 32 threads along the last index (one warp's loads
/// coalesce into whole 128-byte lines) by 4 along the one before, 1 along any
/// other, so that a 2-D box stored as (1, ny, nx) leaves no thread of a block
/// idle (CUDA's default tile for rank 3, {16, 2, 2} under Iterate::Left, idles
/// 60 of its 64 threads there). On host backends, Kokkos' own: whole rows, a
/// few at a time, already in memory order.
///
///   Kokkos::parallel_for("fill", kpmap::row_major_range<3>(exec, {k0, j0, i0}, {k1, j1, i1}),
///                        KOKKOS_LAMBDA(long k, long j, long i) { u(k, j, i) = 0; });

#include <kpmap/base/detail/backend.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace kpmap {

/// \brief `Kokkos::MDRangePolicy` of rank `N` on `Exec`, last index fastest
/// (`Iterate::Right` outside and inside the tiles); `Traits` are further
/// policy traits (`Kokkos::IndexType<std::int64_t>`, say). Made with
/// row_major_range, which also states the tile.
template <unsigned N, class Exec = Kokkos::DefaultExecutionSpace, class... Traits>
using RowMajorRange =
    Kokkos::MDRangePolicy<Exec, Kokkos::Rank<N, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                          Traits...>;

namespace detail {

/// \brief The tile row_major_range states: {..., 1, 4, 32} for a GPU,
/// zeros (Kokkos' default) for a host backend.
template <unsigned N>
Kokkos::Array<std::int64_t, N> row_major_tile(bool gpu) {
  Kokkos::Array<std::int64_t, N> tile{};
  for (unsigned d = 0; d < N; ++d) tile[d] = gpu ? 1 : 0;
  if (gpu) {
    tile[N - 1] = 32;
    if constexpr (N > 1) tile[N - 2] = 4;
  }
  return tile;
}

/// \brief Whether `Exec` runs where the host's memory is not (a GPU).
template <class Exec>
inline constexpr bool gpu_space_v =
    !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;

}  // namespace detail

/// \brief The cells lo <= (i0, ..., iN-1) < hi on `exec`, last index fastest,
/// tile stated (see the file's comment).
template <unsigned N, class... Traits, class Exec>
RowMajorRange<N, Exec, Traits...> row_major_range(
    const Exec& exec, const typename RowMajorRange<N, Exec, Traits...>::point_type& lo,
    const typename RowMajorRange<N, Exec, Traits...>::point_type& hi) {
  return RowMajorRange<N, Exec, Traits...>(exec, lo, hi,
                                           detail::row_major_tile<N>(detail::gpu_space_v<Exec>));
}

/// \brief Marks a loop whose iterations touch disjoint elements, which the
/// compiler cannot prove through Views (their pointers might alias): it may
/// then vectorise the loop on the host. Nothing on a GPU.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define KPMAP_INDEPENDENT_ITERATIONS
#elif defined(__clang__)
#define KPMAP_INDEPENDENT_ITERATIONS _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define KPMAP_INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#else
#define KPMAP_INDEPENDENT_ITERATIONS
#endif

/// \brief Marks a short fixed-length loop over contiguous lanes (a pixel's
/// channels) whose body selects (a maximum and where it was): OpenMP's simd
/// directive makes the compiler keep it in vector registers, where it would
/// otherwise unroll it into scalar selects. Needs -fopenmp-simd (kpmap's own
/// build: KPMAP_OPENMP_SIMD) or OpenMP; nothing on a GPU.
#if (defined(KPMAP_OPENMP_SIMD) || defined(_OPENMP)) && !defined(__CUDA_ARCH__) && \
    !defined(__HIP_DEVICE_COMPILE__)
#define KPMAP_VECTOR_LANES _Pragma("omp simd")
#else
#define KPMAP_VECTOR_LANES
#endif

/// \brief Consecutive elements one parallel iteration of parallel_for_elements
/// takes on the host.
inline constexpr std::size_t host_element_block = 2048;

namespace detail {
/// f(i) for the elements of block b, in a loop the compiler may vectorise.
template <class F>
struct ElementBlocks {
  F f;
  std::size_t n;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t b) const {
    const F g = f;  // a local copy: its members need not be reloaded after each store
    const std::size_t lo = b * host_element_block;
    const std::size_t hi = n - lo < host_element_block ? n : lo + host_element_block;
    KPMAP_INDEPENDENT_ITERATIONS
    for (std::size_t i = lo; i < hi; ++i) g(i);
  }
};
}  // namespace detail

/// \brief f(i) for i in [0, n) on `exec`, where f(i) reads and writes only
/// element i of its arrays (an elementwise update: an optimizer's step). A GPU
/// (and a KPMAP_DEVICE_PATHS build) runs one thread per element; a host backend
/// one parallel iteration per block of host_element_block elements, whose
/// inner loop is vectorised (docs/performance.md: Adam's step 5x faster).
template <class Exec, class F>
void parallel_for_elements(const std::string& label, const Exec& exec, std::size_t n, const F& f) {
  if constexpr (detail::host_shortcut_v<Exec>) {
    Kokkos::parallel_for(
        label,
        Kokkos::RangePolicy<Exec>(exec, 0, (n + host_element_block - 1) / host_element_block),
        detail::ElementBlocks<F>{f, n});
  } else {
    Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec>(exec, 0, n), f);
  }
}

/// \brief As above, on a default instance of Kokkos' default execution space.
template <unsigned N, class... Traits>
RowMajorRange<N, Kokkos::DefaultExecutionSpace, Traits...> row_major_range(
    const typename RowMajorRange<N, Kokkos::DefaultExecutionSpace, Traits...>::point_type& lo,
    const typename RowMajorRange<N, Kokkos::DefaultExecutionSpace, Traits...>::point_type& hi) {
  return row_major_range<N, Traits...>(Kokkos::DefaultExecutionSpace(), lo, hi);
}

/// \brief As above, with corners of any integral types, as they come:
/// `row_major_range<2>(exec, {0, 0}, {a.extent(0), a.extent(1)})`.
template <unsigned N, class... Traits, class Exec, class I, class J,
          std::enable_if_t<Kokkos::is_execution_space<Exec>::value && std::is_integral_v<I> &&
                               std::is_integral_v<J>,
                           int> = 0>
RowMajorRange<N, Exec, Traits...> row_major_range(const Exec& exec, const I (&lo)[N],
                                                  const J (&hi)[N]) {
  using Point = typename RowMajorRange<N, Exec, Traits...>::point_type;
  Point l{}, h{};
  for (unsigned d = 0; d < N; ++d) {
    l[d] = static_cast<typename Point::value_type>(lo[d]);
    h[d] = static_cast<typename Point::value_type>(hi[d]);
  }
  return row_major_range<N, Traits...>(exec, l, h);
}
/// \brief As above, on a default instance of Kokkos' default execution space.
template <unsigned N, class... Traits, class I, class J,
          std::enable_if_t<std::is_integral_v<I> && std::is_integral_v<J>, int> = 0>
RowMajorRange<N, Kokkos::DefaultExecutionSpace, Traits...> row_major_range(const I (&lo)[N],
                                                                           const J (&hi)[N]) {
  return row_major_range<N, Traits...>(Kokkos::DefaultExecutionSpace(), lo, hi);
}

}  // namespace kpmap
