// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The linear model y ~ X w + b with the mean squared error as
/// functions: its parameters, and its data-parallel loss and gradient in one
/// pass over the local rows (X is read once, in chunks that teams reduce)
/// and one fused psum of (grad w, grad b, loss). train/linear.hpp wraps them
/// in the interface a Trainer drives.

#include <kpmap/base/detail/blas.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/losses/loss.hpp>
#include <kpmap/train/model.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kpmap::train {

namespace detail {

/// Rows whose products a column sum adds as one balanced tree before adding
/// them to its running sum: eight independent products a step instead of one
/// chain of dependent additions. Also the rows per chunk of a small batch.
inline constexpr std::size_t linear_group_rows = 8;

/// Lanes of partial sums of a row's dot product in the host form of
/// LinearPartials (a 512-bit register of doubles); the sum adds them as a
/// tree of eight.
inline constexpr std::size_t linear_dot_lanes = 8;

/// Features from which the host form of LinearPartials forms a row's dot
/// product in linear_dot_lanes lanes (below: in feature order, where the
/// lanes' final sum would cost more than the chain it saves).
inline constexpr std::size_t linear_lane_dot_features = 32;

/// Rows per chunk of the deterministic reduction: each chunk sums its rows in
/// a fixed order into its own partial sums, then the chunks are added by one
/// gemv, so the result depends neither on the thread count nor on the team
/// shape. Chunks are short, so a large shard gives a GPU tens of thousands of
/// them; a batch of at most this many rows is cut into chunks of
/// linear_group_rows instead, so that its rows are spread over threads too.
inline constexpr std::size_t linear_chunk_rows = 64;

/// Rows per chunk of a batch of `rows` rows (a function of `rows` alone).
inline std::size_t chunk_rows(std::size_t rows) {
  return rows <= linear_chunk_rows ? linear_group_rows : linear_chunk_rows;
}

inline std::size_t reduction_chunks(std::size_t rows) {
  const std::size_t chunk = chunk_rows(rows);
  const std::size_t chunks = (rows + chunk - 1) / chunk;
  return chunks < 1 ? 1 : chunks;
}

/// Chunks the workspace of a batch of up to `max_rows` rows holds.
inline std::size_t most_chunks(std::size_t max_rows) {
  const std::size_t small = linear_chunk_rows / linear_group_rows;  // a full small batch
  const std::size_t large = reduction_chunks(max_rows);
  return max_rows <= linear_chunk_rows || large < small ? small : large;
}

/// Features up to which a host thread keeps a chunk's sums and w in local
/// arrays (see LinearPartials' fused form).
inline constexpr std::size_t linear_local_features = 64;

/// Vector lanes per row of the linear model's kernel on a GPU: the smallest
/// power of two that covers the features, at most a warp. One on a host
/// backend, whose vector lanes are the compiler's.
template <class Exec>
int linear_vector_lanes(std::size_t features) {
  if (!kpmap::detail::gpu_space_v<Exec>) return 1;
  int lanes = 1;
  while (lanes < 32 && static_cast<std::size_t>(lanes) < features) lanes *= 2;
  return lanes;
}

/// partial(c, j) = sum of r x_j (j < F), partial(c, F) = sum of r,
/// partial(c, F+1) = sum of r^2 over the rows of chunk c, r = x.w + b - y.
///
/// Two forms, one per kind of backend, each deterministic:
/// - The team form (GPUs; host backends beyond linear_local_features
///   features): a team per chunk. (1) The chunk's residuals, a row per thread,
///   the row's dot product across the thread's vector lanes, into team
///   scratch. (2) The F + 2 column sums, a column per thread or lane (across a
///   GPU warp, neighbouring lanes read neighbouring elements of a row), each
///   over the chunk's rows in order, eight rows a step. Each sum is formed in
///   one order whatever the team's size.
/// - The fused form (host backends): a thread per chunk, one pass over it,
///   the chunks spread over the threads.
/// Which form runs depends on the backend and the feature count only, and the
/// chunks on the row count only, never on the thread count. X is read once from
/// memory either way (the team form's step 2 reads its chunk again from cache).
template <class T, class Exec>
struct LinearPartials {
  using M = typename Exec::memory_space;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = Kokkos::View<T*, typename Exec::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  Kokkos::View<const T**, Kokkos::LayoutRight, M> x;
  Kokkos::View<const T*, M> y;
  Kokkos::View<const T*, M> w;
  Kokkos::View<const T, M> b;
  Kokkos::View<const std::uint32_t*, M> order;  // local rows of the batch; empty: [first, last)
  Kokkos::View<T**, Kokkos::LayoutRight, M> partial;
  std::size_t first, last, chunk;

  /// Team scratch: the residuals of one chunk.
  static std::size_t scratch_bytes() { return Scratch::shmem_size(linear_chunk_rows); }

  KOKKOS_INLINE_FUNCTION std::size_t row(std::size_t k) const {
    return order.extent(0) ? order(k) : k;
  }

  // The team form.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& m) const {
    const std::size_t f = x.extent(1);
    const std::size_t c = static_cast<std::size_t>(m.league_rank());
    const std::size_t s = first + c * chunk;
    const std::size_t n = s + chunk < last ? chunk : last - s;
    const Scratch r(m.team_scratch(0), linear_chunk_rows);
    const T bias = b();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n), [&](std::size_t k) {
      const std::size_t i = row(s + k);
      T dot = T(0);
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(m, f), [&](std::size_t j, T& d) { d += x(i, j) * w(j); }, dot);
      Kokkos::single(Kokkos::PerThread(m), [&] { r(k) = dot + (bias - y(i)); });
    });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(m, f + 2), [&](std::size_t j) {
      partial(c, j) = j < f    ? column_sum(r, s, n, j)
                      : j == f ? residual_sum(r, n, false)
                               : residual_sum(r, n, true);
    });
  }

  // The fused form: both steps by one host thread, for up to
  // linear_local_features features. The sums and w live in local arrays (no
  // aliasing with X), and eight rows go at a time, so that their dot products
  // are eight independent chains rather than one: the pass runs at memory
  // speed rather than at the latency of a chain of FMAs.
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t c) const {
    const std::size_t s = first + c * chunk;
    const std::size_t e = s + chunk < last ? s + chunk : last;
    const std::size_t f = x.extent(1);
    constexpr std::size_t F = linear_local_features;
    constexpr std::size_t G = linear_group_rows;
    T acc[F + 2];
    T wl[F + linear_dot_lanes];  // zero past f: the last lanes' weights
    for (std::size_t j = 0; j < f + 2; ++j) acc[j] = T(0);
    for (std::size_t j = 0; j < f; ++j) wl[j] = w(j);
    for (std::size_t j = f; j < f + linear_dot_lanes; ++j) wl[j] = T(0);
    const T bias = b();
    const T* xp = x.data();
    std::size_t k = s;
    for (; k + G <= e; k += G) {
      const T* xr[G];
      T r[G];
      for (std::size_t g = 0; g < G; ++g) {
        const std::size_t i = row(k + g);
        xr[g] = xp + i * f;
        r[g] = bias - y(i);
      }
      if (f < linear_lane_dot_features) {
        // Few features: each row's products in feature order, the eight rows'
        // chains of additions side by side.
        for (std::size_t j = 0; j < f; ++j) {
          for (std::size_t g = 0; g < G; ++g) r[g] += xr[g][j] * wl[j];
        }
      } else {
        // Each row's dot product in D lanes of partial sums (lane l: the
        // features j = l mod D), then the lanes added as a balanced tree:
        // vector multiply-adds, where sums in feature order are a chain of
        // f scalar additions that no compiler may reorder (3 cycles each).
        constexpr std::size_t D = linear_dot_lanes;
        for (std::size_t g = 0; g < G; ++g) {  // rows apart: independent chains
          const T* xg = xr[g];
          T d[D] = {};
          std::size_t j = 0;
          for (; j + D <= f; j += D) {
            KPMAP_VECTOR_LANES
            for (std::size_t l = 0; l < D; ++l) d[l] += xg[j + l] * wl[j + l];
          }
          if (j < f) {  // the last f mod D features, in lanes 0 to f - j - 1
            KPMAP_VECTOR_LANES
            for (std::size_t l = 0; l < D; ++l) {
              d[l] += (j + l < f ? xg[j + l] : T(0)) * wl[j + l];
            }
          }
          r[g] += ((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]));
        }
      }
      // Element-wise over j (a fixed pairing of the rows): vectorises.
      const T *x0 = xr[0], *x1 = xr[1], *x2 = xr[2], *x3 = xr[3];
      const T *x4 = xr[4], *x5 = xr[5], *x6 = xr[6], *x7 = xr[7];
      const T r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
      const T r4 = r[4], r5 = r[5], r6 = r[6], r7 = r[7];
      for (std::size_t j = 0; j < f; ++j) {
        acc[j] += ((r0 * x0[j] + r1 * x1[j]) + (r2 * x2[j] + r3 * x3[j])) +
                  ((r4 * x4[j] + r5 * x5[j]) + (r6 * x6[j] + r7 * x7[j]));
      }
      T sr = T(0), sr2 = T(0);
      for (std::size_t g = 0; g < G; ++g) {
        sr += r[g];
        sr2 += r[g] * r[g];
      }
      acc[f] += sr;
      acc[f + 1] += sr2;
    }
    for (; k < e; ++k) {
      const std::size_t i = row(k);
      const T* xi = xp + i * f;
      T r = bias - y(i);
      for (std::size_t j = 0; j < f; ++j) r += xi[j] * wl[j];
      for (std::size_t j = 0; j < f; ++j) acc[j] += r * xi[j];
      acc[f] += r;
      acc[f + 1] += r * r;
    }
    for (std::size_t j = 0; j < f + 2; ++j) partial(c, j) = acc[j];
  }

  // Sum over the chunk's rows of r x_j, eight rows a step (a balanced tree).
  KOKKOS_INLINE_FUNCTION T column_sum(const Scratch& r, std::size_t s, std::size_t n,
                                      std::size_t j) const {
    T acc = T(0);
    std::size_t k = 0;
    for (; k + linear_group_rows <= n; k += linear_group_rows) {
      T p[linear_group_rows];
      for (std::size_t g = 0; g < linear_group_rows; ++g) p[g] = r(k + g) * x(row(s + k + g), j);
      acc += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    }
    for (; k < n; ++k) acc += r(k) * x(row(s + k), j);
    return acc;
  }

  // Sum over the chunk's rows of r (or r^2), in the same order as column_sum.
  KOKKOS_INLINE_FUNCTION T residual_sum(const Scratch& r, std::size_t n, bool squares) const {
    T acc = T(0);
    std::size_t k = 0;
    for (; k + linear_group_rows <= n; k += linear_group_rows) {
      T p[linear_group_rows];
      for (std::size_t g = 0; g < linear_group_rows; ++g) {
        p[g] = squares ? r(k + g) * r(k + g) : r(k + g);
      }
      acc += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    }
    for (; k < n; ++k) acc += squares ? r(k) * r(k) : r(k);
    return acc;
  }
};

/// Launches LinearPartials over `chunks` chunks on `exec` in the form of
/// its backend (see LinearPartials).
template <class Exec, class T>
void launch_partials(const Exec& exec, const LinearPartials<T, Exec>& partials,
                     std::size_t chunks) {
  const std::size_t f = partials.x.extent(1);
  if (!kpmap::detail::gpu_space_v<Exec> && f <= linear_local_features) {
    Kokkos::parallel_for("kpmap::train::linear::partials",
                         Kokkos::RangePolicy<Exec>(exec, 0, chunks), partials);
    return;
  }
  Kokkos::TeamPolicy<Exec> teams(exec, static_cast<int>(chunks), Kokkos::AUTO,
                                 linear_vector_lanes<Exec>(f));
  teams.set_scratch_size(0, Kokkos::PerTeam(LinearPartials<T, Exec>::scratch_bytes()));
  Kokkos::parallel_for("kpmap::train::linear::partials", teams, partials);
}

/// Chunks up to which LinearFinish adds the chunks' sums itself (a batch of up
/// to 512 rows on the rank: one gemv launch, and under Kokkos Kernels 3.4 its
/// two fences, fewer a step); more are added by one gemv first.
inline constexpr std::size_t linear_finish_adds = linear_chunk_rows / linear_group_rows;

/// Scatters the column sums of the chunks into grad w, grad b and the loss:
/// `sums` (the gemv's), or with `partial` given (at most linear_finish_adds
/// chunks), its columns added here in chunk order.
template <class T, class M>
struct LinearFinish {
  Kokkos::View<const T*, M> sums;
  Kokkos::View<const T**, Kokkos::LayoutRight, M> partial;
  Kokkos::View<T*, M> gw;
  Kokkos::View<T, M> gb;
  Kokkos::View<T, M> loss;
  T scale;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t j) const {
    T s = T(0);
    if (partial.extent(0) > 0) {
      for (std::size_t c = 0; c < partial.extent(0); ++c) s += partial(c, j);
    } else {
      s = sums(j);
    }
    const std::size_t f = gw.extent(0);
    if (j < f) {
      gw(j) = 2 * scale * s;
    } else if (j == f) {
      gb() = 2 * scale * s;
    } else {
      loss() = scale * s;
    }
  }
};

}  // namespace detail

/// \brief Work arrays of the linear model's gradient for up to `max_rows`
/// local rows, sized once so that a training step allocates nothing.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
struct LinearWorkspace {
  Kokkos::View<T**, Kokkos::LayoutRight, M> partial;  ///< chunks x (features + 2)
  Kokkos::View<T*, M> ones;                           ///< one per chunk
  Kokkos::View<T*, M> sums;                           ///< column sums of partial
  typename Kokkos::View<T, M>::HostMirror loss_host;  ///< the reduced loss, for the host

  LinearWorkspace() = default;
  LinearWorkspace(std::size_t max_rows, std::size_t features)
      : partial(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::linear::partial"),
                detail::most_chunks(max_rows), features + 2),
        ones("kpmap::train::linear::ones", detail::most_chunks(max_rows)),
        sums("kpmap::train::linear::sums", features + 2),
        loss_host("kpmap::train::linear::loss_host") {
    Kokkos::deep_copy(ones, T(1));
  }
  std::size_t max_rows() const { return partial.extent(0) * detail::linear_chunk_rows; }
};

/// \brief This rank's share of the loss and gradient of one global batch,
/// in place of `grad` and `loss` (no communication).
///
/// The local rows of the batch are `order[first, last)` of the shard (or the
/// rows [first, last) themselves when `order` is empty); `global_batch` is the
/// number of samples of the batch over all ranks. The sums are scaled by
/// 1 / global_batch, so their psum over the ranks is the batch mean, exact
/// however unevenly the batch falls on the ranks. The kernels go to `exec`
/// (an instance of M's execution space) and are not waited for.
template <class Exec, class T, class M>
void linear_local_gradient(const Exec& exec, const Shard<T, M>& data,
                           const Kokkos::View<std::uint32_t*, M>& order, std::size_t first,
                           std::size_t last, std::size_t global_batch, const LinearParams<T, M>& p,
                           const LinearParams<T, M>& grad, const Kokkos::View<T, M>& loss,
                           const LinearWorkspace<T, M>& ws) {
  kpmap::detail::require_kernel_ready<Exec, M>();
  const std::size_t f = data.x.extent(1);
  const std::size_t rows = last - first;
  if (rows > ws.max_rows() || ws.sums.extent(0) != f + 2) {
    throw Error("kpmap::train::linear_local_gradient: the workspace holds " +
                std::to_string(ws.max_rows()) + " rows of " +
                std::to_string(ws.sums.extent(0) - 2) + " features; this batch has " +
                std::to_string(rows) + " rows of " + std::to_string(f));
  }
  const std::size_t chunks = detail::reduction_chunks(rows);
  const Kokkos::View<T**, Kokkos::LayoutRight, M> partial =
      Kokkos::subview(ws.partial, Kokkos::make_pair(std::size_t(0), chunks), Kokkos::ALL());
  detail::launch_partials(exec,
                          detail::LinearPartials<T, Exec>{data.x, data.y, p.w, p.b, order, partial,
                                                          first, last, detail::chunk_rows(rows)},
                          chunks);
  // Column sums over the chunks: partial^T 1, one gemv that fills the device;
  // a small batch's few chunks are added by the finishing kernel instead.
  const bool few = chunks <= detail::linear_finish_adds;
  if (!few) {
    kpmap::detail::gemv(exec, "T", T(1), partial,
                        Kokkos::subview(ws.ones, Kokkos::make_pair(std::size_t(0), chunks)), T(0),
                        ws.sums);
  }
  // Typed and named before the launch: nvcc's front end garbles a braced
  // functor built from a conditional inside the call's arguments.
  const Kokkos::View<const T**, Kokkos::LayoutRight, M> added =
      few ? partial : Kokkos::View<T**, Kokkos::LayoutRight, M>();
  const detail::LinearFinish<T, M> finish{ws.sums, added, grad.w,
                                          grad.b,  loss,  T(1) / static_cast<T>(global_batch)};
  Kokkos::parallel_for("kpmap::train::linear::finish", Kokkos::RangePolicy<Exec>(exec, 0, f + 2),
                       finish);
}

/// \brief Loss and gradient of one global batch (see linear_local_gradient),
/// reduced over the axis by one fused psum of (grad w, grad b, loss): one
/// message per step. Returns the batch's mean squared error. Runs on `exec`
/// and fences only it. Collective over `axis`.
template <class Exec, class T, class M>
T linear_loss_and_gradient(const Exec& exec, const Shard<T, M>& data,
                           const Kokkos::View<std::uint32_t*, M>& order, std::size_t first,
                           std::size_t last, std::size_t global_batch, const LinearParams<T, M>& p,
                           const LinearParams<T, M>& grad, const Kokkos::View<T, M>& loss,
                           const LinearWorkspace<T, M>& ws, AxisRef axis) {
  linear_local_gradient(exec, data, order, first, last, global_batch, p, grad, loss, ws);
  psum_inplace(exec, std::make_tuple(grad.w, grad.b, loss), axis);
  Kokkos::deep_copy(exec, ws.loss_host, loss);
  kpmap::detail::fence(exec, "kpmap::train: batch loss on the host");
  return ws.loss_host();
}

/// \brief Mean squared error of the model on all rows of every rank's shard
/// (evaluation: no gradient kept), with work arrays sized once per call, on
/// `exec`. Collective over `axis`.
template <class Exec, class T, class M>
T linear_loss(const Exec& exec, const Shard<T, M>& data, const LinearParams<T, M>& p,
              AxisRef axis) {
  if (data.global_rows == 0) return T(0);
  LinearParams<T, M> scratch("kpmap::train::linear::eval", data.x.extent(1));
  Kokkos::View<T, M> loss("kpmap::train::linear::loss");
  const LinearWorkspace<T, M> ws(data.rows(), data.x.extent(1));
  return linear_loss_and_gradient(exec, data, Kokkos::View<std::uint32_t*, M>(), 0, data.rows(),
                                  data.global_rows, p, scratch, loss, ws, axis);
}

}  // namespace kpmap::train
