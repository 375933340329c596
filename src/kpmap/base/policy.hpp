// SPDX-License-Identifier: BSD-3-Clause
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
/// The tile: on a GPU 1 along every index but the last and 64 along it, so
/// that each warp runs 32 consecutive cells of one row and its loads coalesce
/// into whole 128-byte lines. Kokkos' CUDA MDRange loop (4.6,
/// Kokkos_Cuda_Parallel_MDRange.hpp and IterateTileGPU.hpp) launches a block of
/// (tile[0], tile[1], min(tile[2], 64)) threads for ranks 2 and 3, and
/// threadIdx.x walks the tile's *first* index whatever the iteration order: a
/// warp, 32 consecutive x + Dx (y + Dy z), lies along the last index only when
/// the tile is 1 along the others ({1, 4, 32} put 4 rows of 8 cells in a
/// warp). 64 is the most Kokkos takes along z (it clamps above). On host
/// backends, Kokkos' own tile: whole rows, a few at a time, already in memory
/// order. A reduction over a box does not take this loop on a GPU: see
/// reduce_flat.
///
///   Kokkos::parallel_for("fill", kpmap::row_major_range<3>(exec, {k0, j0, i0}, {k1, j1, i1}),
///                        KOKKOS_LAMBDA(long k, long j, long i) { u(k, j, i) = 0; });

#include <kpmap/base/detail/backend.hpp>
#include <kpmap/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <climits>
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

/// \brief The tile row_major_range states: {1, ..., 1, 64} for a GPU,
/// zeros (Kokkos' default) for a host backend.
template <unsigned N>
Kokkos::Array<std::int64_t, N> row_major_tile(bool gpu) {
  Kokkos::Array<std::int64_t, N> tile{};
  for (unsigned d = 0; d < N; ++d) tile[d] = gpu ? 1 : 0;
  if (gpu) tile[N - 1] = 64;
  return tile;
}

/// \brief The cell within its tile that thread `thread` of a block runs in
/// Kokkos 4.6's CUDA MDRange parallel_for of rank N (2 or 3), as
/// Kokkos_Cuda_Parallel_MDRange.hpp launches it: the block is (tile[0],
/// tile[1], min(tile[2], 64)), a thread's (x, y, z) is its id in that block,
/// x fastest, and x, y, z are the offsets along indices 0, 1, 2. What the test
/// of the tile holds it to (lanes 0-31 of a warp: one row, consecutive cells).
template <unsigned N>
Kokkos::Array<std::int64_t, N> cuda_mdrange_thread_cell(const Kokkos::Array<std::int64_t, N>& tile,
                                                        std::int64_t thread) {
  static_assert(N == 2 || N == 3, "Kokkos' CUDA MDRange folds ranks above 3 differently");
  const std::int64_t dx = tile[0], dy = tile[1];
  Kokkos::Array<std::int64_t, N> cell{};
  cell[0] = thread % dx;
  cell[1] = (thread / dx) % dy;
  if constexpr (N == 3) cell[2] = thread / (dx * dy);
  return cell;
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

/// \brief `policy` with Kokkos' light-weight hint: on CUDA its closure (the
/// functor and the policy) goes to the kernel as a parameter up to 4 KB.
/// Without it a closure of 512 bytes or more is copied to constant memory,
/// and that launch waits on the host for the last kernel that used it
/// (Kokkos 4.6, Kokkos_Cuda_KernelLaunch.hpp: DeduceCudaLaunchMechanism):
/// a solver's fused update, a dozen Views, is above 512 bytes. Nothing
/// changes on host backends.
template <class Policy>
auto light_weight(const Policy& policy) {
  return Kokkos::Experimental::require(policy,
                                       Kokkos::Experimental::WorkItemProperty::HintLightWeight);
}

/// \brief The most bytes a functor of a light-weight kernel may have: its
/// closure, functor and policy together, must stay under the 4 KB of a CUDA
/// kernel's parameters (above it Kokkos launches from global memory, with a
/// copy and a wait); the policy and the reducer take the rest.
inline constexpr std::size_t light_weight_functor_bytes = 3584;

namespace detail {

/// f(i0, ..., iN-1, acc) for the cell a flat index names, the last index
/// fastest. 32-bit arithmetic: the index is a 32-bit int (reduce_flat).
template <unsigned N, class V, class F>
struct FlatCells {
  static_assert(N == 2 || N == 3, "kpmap::reduce_flat: a box of rank 2 or 3");
  F f;
  Kokkos::Array<std::int64_t, N> lo;
  Kokkos::Array<int, N> extent;
  KOKKOS_INLINE_FUNCTION void operator()(const int flat, V& acc) const {
    const int last = flat % extent[N - 1];
    const int rest = flat / extent[N - 1];
    if constexpr (N == 2) {
      f(lo[0] + rest, lo[1] + last, acc);
    } else {
      f(lo[0] + rest / extent[1], lo[1] + rest % extent[1], lo[2] + last, acc);
    }
  }
};

}  // namespace detail

/// \brief The reduction into `reducer` of what f(i0, ..., iN-1, acc) adds to
/// acc over the cells lo <= (i0, ..., iN-1) < hi (N = 2 or 3), as one flat
/// RangePolicy over the cells, the last index fastest, on `exec`, with the
/// light-weight hint. What a GPU runs: Kokkos' CUDA RangePolicy reduction
/// launches as many blocks as the device holds threads
/// (Kokkos_Cuda_Parallel_Range.hpp: concurrency / block size), where its
/// MDRange reduction launches at most one block per thread of a block, with
/// only prod(tile) threads of each at work (Kokkos_Cuda_Parallel_MDRange.hpp):
/// 256 blocks of 128 working threads, an eighth of an H200, for a tile of 128.
/// The index is a 32-bit int (a 64-bit division costs a GPU several times a
/// 32-bit one): a box of more than 2^31 - 1 cells is refused, which no
/// device's memory holds at a dozen double fields a cell.
template <unsigned N, class Exec, class F, class Reducer>
void reduce_flat(const char* label, const Exec& exec, const Kokkos::Array<std::int64_t, N>& lo,
                 const Kokkos::Array<std::int64_t, N>& hi, const F& f, const Reducer& reducer) {
  static_assert(sizeof(F) <= light_weight_functor_bytes,
                "kpmap::reduce_flat: the functor is too large to go to a GPU kernel as a "
                "parameter");
  using V = typename Reducer::value_type;
  Kokkos::Array<int, N> extent{};
  std::int64_t cells = 1;
  for (unsigned d = 0; d < N; ++d) {
    const std::int64_t e = hi[d] > lo[d] ? hi[d] - lo[d] : 0;
    cells *= e;
    if (cells > INT_MAX) {
      throw Error(std::string(label) + ": a box of more than 2^31 - 1 cells on one rank");
    }
    extent[d] = static_cast<int>(e);
  }
  Kokkos::parallel_reduce(label,
                          light_weight(Kokkos::RangePolicy<Exec, Kokkos::IndexType<int>>(
                              exec, 0, static_cast<int>(cells))),
                          detail::FlatCells<N, V, F>{f, lo, extent}, reducer);
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
