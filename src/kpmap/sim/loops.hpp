// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Loops over boxes of cells for the heat-conduction kernels, and
/// sums of several values in one reduction.
///
/// Kernels are functors called as `f(k, j, i)` (or `f(k, j, i, acc)` for a
/// reduction) with local indices, z slowest and x fastest. Every loop runs
/// on the execution space instance it is given (a CUDA stream, say), so that
/// a solver on one instance overlaps work on another. On host backends
/// a box runs as one parallel iteration per row (k, j) with a plain inner
/// loop over i that the compiler vectorises; on GPUs, and on every backend in
/// a KPMAP_DEVICE_PATHS build (kpmap/base/detail/backend.hpp), as a 3-D
/// MDRangePolicy, and a reduction as one flat range over the box's cells
/// (kpmap::reduce_flat: Kokkos' CUDA MDRange reduction does not fill a GPU).
/// Reductions are deterministic for a given backend, thread count and box.

#include <kpmap/base/detail/backend.hpp>
#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/spaces.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace kpmap::sim {

/// \brief N sums carried through one reduction (value type of reduce_cells).
template <int N>
struct Sums {
  double v[N];
  KOKKOS_INLINE_FUNCTION Sums() {
    for (int n = 0; n < N; ++n) v[n] = 0.0;
  }
  KOKKOS_INLINE_FUNCTION Sums& operator+=(const Sums& o) {
    for (int n = 0; n < N; ++n) v[n] += o.v[n];
    return *this;
  }
  // Kokkos 3.x joins through volatile references.
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile Sums& o) volatile {
    for (int n = 0; n < N; ++n) v[n] += o.v[n];
  }
};

namespace detail {

// The fields a kernel writes never overlap the ones it reads at other cells
// (each kernel writes only its own cell), which the compiler cannot prove
// through Views: this lets it vectorise the row loops on the host.
#define KPMAP_SIM_INDEPENDENT_ITERATIONS KPMAP_INDEPENDENT_ITERATIONS

// A sum over a row kept in vector lanes: OpenMP's simd directive lets the
// compiler hold one partial sum per lane. Without it the sum must be formed
// in order, one dependent add per cell, and a fused kernel's dot product costs
// more than the rest of the kernel (a reduction is then latency-bound, not
// bandwidth-bound). kpmap's own build compiles with -fopenmp-simd and defines
// KPMAP_OPENMP_SIMD; the sum's rounding then depends on the vector width the
// build targets, and stays the same from run to run. Not in OpenMP builds
// (-fopenmp): there GCC 12 turned the same loops into gathers and scatters, 4x
// slower than the in-order sum (docs/performance.md).
#if defined(KPMAP_OPENMP_SIMD) && !defined(_OPENMP) && !defined(__CUDA_ARCH__) && \
    !defined(__HIP_DEVICE_COMPILE__)
#define KPMAP_SIM_SUM_ITERATIONS _Pragma("omp simd reduction(+ : sum)")
#else
#define KPMAP_SIM_SUM_ITERATIONS KPMAP_SIM_INDEPENDENT_ITERATIONS
#endif

/// One row (k, j) of a box per parallel iteration.
template <class F>
struct RowFor {
  F f;
  long lo_i, hi_i, lo_j, nj, lo_k;
  KOKKOS_INLINE_FUNCTION void operator()(const long row) const {
    const long k = lo_k + row / nj;
    const long j = lo_j + row % nj;
    KPMAP_SIM_INDEPENDENT_ITERATIONS
    for (long i = lo_i; i < hi_i; ++i) f(k, j, i);
  }
};

/// One row (k, j) per parallel iteration, summed in order.
template <class F, class V>
struct RowReduce {
  F f;
  long lo_i, hi_i, lo_j, nj, lo_k;
  KOKKOS_INLINE_FUNCTION void operator()(const long row, V& acc) const {
    const long k = lo_k + row / nj;
    const long j = lo_j + row % nj;
    if constexpr (std::is_same_v<V, double>) {
      double sum = 0.0;
      KPMAP_SIM_SUM_ITERATIONS
      for (long i = lo_i; i < hi_i; ++i) f(k, j, i, sum);
      acc += sum;
    } else {
      V sum{};
      KPMAP_SIM_INDEPENDENT_ITERATIONS
      for (long i = lo_i; i < hi_i; ++i) f(k, j, i, sum);
      acc += sum;
    }
  }
};

// What a GPU runs for a loop over a box: an MDRange, with the light-weight
// hint (kpmap::light_weight: the closure goes as a kernel parameter, never
// through constant memory, which waits on the host).
template <class Exec>
auto box_policy(const Exec& exec, const Box& b) {
  return light_weight(
      row_major_range<3>(exec, {b.lo[2], b.lo[1], b.lo[0]}, {b.hi[2], b.hi[1], b.hi[0]}));
}

// The two shapes of every loop: rows (the host shortcut) and the GPU's (an
// MDRange over the box for a loop, one flat range over its cells for a
// reduction: kpmap::reduce_flat). for_cells and reduce_cells choose one;
// tests call both, so that each compiles in every build and gives the other's
// answers.

template <class Exec, class F>
void for_rows(const Exec& exec, const char* label, const Box& b, const F& f) {
  const long nj = b.hi[1] - b.lo[1];
  const long rows = nj * (b.hi[2] - b.lo[2]);
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec>(exec, 0, rows),
                       RowFor<F>{f, b.lo[0], b.hi[0], b.lo[1], nj, b.lo[2]});
}

template <class Exec, class F>
void for_box(const Exec& exec, const char* label, const Box& b, const F& f) {
  static_assert(sizeof(F) <= light_weight_functor_bytes,
                "kpmap::sim: the kernel's functor is too large to go to a GPU as a parameter");
  Kokkos::parallel_for(label, box_policy(exec, b), f);
}

template <class V, class Exec, class F>
V reduce_rows(const Exec& exec, const char* label, const Box& b, const F& f) {
  V result{};
  const long nj = b.hi[1] - b.lo[1];
  const long rows = nj * (b.hi[2] - b.lo[2]);
  Kokkos::parallel_reduce(label, Kokkos::RangePolicy<Exec>(exec, 0, rows),
                          RowReduce<F, V>{f, b.lo[0], b.hi[0], b.lo[1], nj, b.lo[2]}, result);
  return result;
}

// The box's cells (k, j, i), i fastest, as reduce_flat's corners.
inline Kokkos::Array<std::int64_t, 3> box_lo(const Box& b) { return {b.lo[2], b.lo[1], b.lo[0]}; }
inline Kokkos::Array<std::int64_t, 3> box_hi(const Box& b) { return {b.hi[2], b.hi[1], b.hi[0]}; }

template <class V, class Exec, class F>
V reduce_box(const Exec& exec, const char* label, const Box& b, const F& f) {
  V result{};
  // The reducer names V: Kokkos 3.4 cannot deduce it from a functor that also
  // has a three-index operator() (UpdateR, DiagPrecond).
  reduce_flat<3>(label, exec, box_lo(b), box_hi(b), f, Kokkos::Sum<V>(result));
  return result;
}

/// A reduction's result in memory space M, where the kernel leaves it
/// without waiting.
template <class V, class M>
using DeviceValue = Kokkos::View<V, M>;

/// Where a local sum the host reads lands: memory that kernels on Exec write
/// and the host reads in place, so that reading it takes a fence and no copy
/// (pinned host memory under CUDA and HIP; Exec's own memory on a host
/// backend, device paths or not).
template <class Exec>
using SumSpace = std::conditional_t<
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible,
    typename Exec::memory_space, ::kpmap::detail::PinnedHostSpace>;

template <class Exec, class M>
constexpr void require_reachable_result() {
  static_assert(Kokkos::SpaceAccessibility<Exec, M>::accessible,
                "kpmap::sim: a reduction's result must lie where its kernels can write it");
}

template <class V, class M, class Exec, class F>
void reduce_rows_into(const Exec& exec, const char* label, const Box& b, const F& f,
                      const DeviceValue<V, M>& result) {
  require_reachable_result<Exec, M>();
  const long nj = b.hi[1] - b.lo[1];
  const long rows = nj * (b.hi[2] - b.lo[2]);
  Kokkos::parallel_reduce(label, Kokkos::RangePolicy<Exec>(exec, 0, rows),
                          RowReduce<F, V>{f, b.lo[0], b.hi[0], b.lo[1], nj, b.lo[2]},
                          Kokkos::Sum<V, M>(result));
}

template <class V, class M, class Exec, class F>
void reduce_box_into(const Exec& exec, const char* label, const Box& b, const F& f,
                     const DeviceValue<V, M>& result) {
  require_reachable_result<Exec, M>();
  reduce_flat<3>(label, exec, box_lo(b), box_hi(b), f, Kokkos::Sum<V, M>(result));
}

}  // namespace detail

/// \brief Enqueues `f(k, j, i)` for every cell of `b` on `exec`.
template <class Exec, class F>
void for_cells(const Exec& exec, const char* label, const Box& b, const F& f) {
  if (b.empty()) return;
  if constexpr (::kpmap::detail::host_shortcut_v<Exec>) {
    detail::for_rows(exec, label, b, f);
  } else {
    detail::for_box(exec, label, b, f);
  }
}

/// \brief Sum over the cells of `b` of what `f(k, j, i, acc)` adds to acc
/// (V is double or Sums<N>), run on `exec`. Waits for `exec` (only) until
/// the result is known.
template <class V, class Exec, class F>
V reduce_cells(const Exec& exec, const char* label, const Box& b, const F& f) {
  if (b.empty()) return V{};
  ::kpmap::detail::report_host_sync("kpmap::sim: reduction into a host value");
  if constexpr (::kpmap::detail::host_shortcut_v<Exec>) {
    return detail::reduce_rows<V>(exec, label, b, f);
  } else {
    return detail::reduce_box<V>(exec, label, b, f);
  }
}

/// \brief Enqueues on `exec` the sum over the cells of `b` of what `f(k, j, i,
/// acc)` adds to acc into `result` (a value in Exec's memory), without
/// waiting: what a non-blocking global sum starts from. An empty box leaves
/// `result` as it was.
template <class V, class Exec, class F, class R>
void reduce_cells_into(const Exec& exec, const char* label, const Box& b, const F& f,
                       const R& result) {
  using M = typename R::memory_space;
  static_assert(R::rank == 0, "kpmap::sim::reduce_cells_into: the result is one value");
  if (b.empty()) return;
  if constexpr (::kpmap::detail::host_shortcut_v<Exec>) {
    detail::reduce_rows_into<V, M>(exec, label, b, f, result);
  } else {
    detail::reduce_box_into<V, M>(exec, label, b, f, result);
  }
}

/// \brief Local sums of one global sum, reduced part by part without waiting
/// into memory the host reads in place (detail::SumSpace: pinned host memory
/// on a GPU), and read by the host at once: one host synchronisation, a
/// fence and no copy, however many parts (an overlapped kernel's inner box
/// and faces) make the sum. The parts are added in the order they were
/// enqueued, so the result is the one reduce_cells would give summing the
/// same parts. Every kernel runs on an instance of Exec.
template <class V = double, class Exec = Kokkos::DefaultExecutionSpace>
class DeviceSums {
 public:
  /// \brief The most parts one sum has: an inner box and 6 faces.
  static constexpr int capacity = 7;

  /// \brief Allocates the parts.
  explicit DeviceSums(const std::string& label) : parts_(label, capacity) {}

  /// \brief Enqueues on `exec` the sum over the cells of `b` of what `f(k, j, i,
  /// acc)` adds to acc as the next part; an empty box adds nothing.
  template <class F>
  void add(const Exec& exec, const char* label, const Box& b, const F& f) {
    if (b.empty()) return;
    if (used_ == capacity) throw Error("kpmap::sim::DeviceSums: more than 7 parts");
    reduce_cells_into<V>(exec, label, b, f, Kokkos::subview(parts_, used_++));
  }

  /// \brief Waits for `exec` (one host synchronisation: a fence) and returns
  /// the parts' sum; the next add() starts a new sum.
  V fetch(const Exec& exec) {
    const int n = used_;
    used_ = 0;
    if (n == 0) return V{};
    ::kpmap::detail::fence(exec, "kpmap::sim: local sums to the host");
    V total = parts_(0);
    for (int i = 1; i < n; ++i) total += parts_(i);
    return total;
  }

 private:
  Kokkos::View<V*, detail::SumSpace<Exec>> parts_;
  int used_ = 0;
};

/// \brief The cells of `b` one layer in from the faces that `peel` names
/// (peel[d][0] the low side along d, peel[d][1] the high side), and that
/// layer as at most 6 disjoint boxes: together exactly the cells of b.
/// A stencil kernel split this way reads ghosts only in the faces, so the
/// inner box can run while the halo exchange fills them. Only faces with a
/// neighbour need peeling: a face on the global boundary reads ghosts no
/// exchange writes, and each peeled face costs a kernel launch and, along x,
/// a second pass over one cache line of every row.
struct Shell {
  Box inner;
  Box faces[6];
  int count = 0;
};

inline Shell shell_of(const Box& b, const bool (&peel)[3][2]) {
  Shell s;
  s.inner = b;
  if (b.empty()) return s;
  for (int d = 0; d < 3; ++d) {
    if (peel[d][0]) s.inner.lo[d] = b.lo[d] + 1;
    if (peel[d][1]) s.inner.hi[d] = b.hi[d] - 1;
    if (s.inner.hi[d] < s.inner.lo[d]) s.inner.hi[d] = s.inner.lo[d];  // too thin: empty
  }
  for (int d = 0; d < 3; ++d) {
    // Dimensions before d are already covered at their faces.
    Box lo_face = b;
    Box hi_face = b;
    for (int e = 0; e < d; ++e) {
      lo_face.lo[e] = hi_face.lo[e] = s.inner.lo[e];
      lo_face.hi[e] = hi_face.hi[e] = s.inner.hi[e];
    }
    lo_face.hi[d] = s.inner.lo[d];
    hi_face.lo[d] = s.inner.hi[d];
    if (!lo_face.empty()) s.faces[s.count++] = lo_face;
    if (!hi_face.empty()) s.faces[s.count++] = hi_face;
  }
  return s;
}

}  // namespace kpmap::sim

namespace Kokkos {
/// Sums<N> reduces with Kokkos' default Sum reducer.
template <int N>
struct reduction_identity<kpmap::sim::Sums<N>> {
  KOKKOS_FORCEINLINE_FUNCTION static kpmap::sim::Sums<N> sum() { return kpmap::sim::Sums<N>(); }
};
}  // namespace Kokkos
