// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief ppermute and pbroadcast: moving a View between the ranks of an
/// axis unchanged in shape, blocking or not.
///
/// Every function here is **collective over its axis**: every rank of the
/// axis calls it, in the same order, with the same element type and shape
/// (checked mode verifies this).

#include <kpmap/base/detail/mpi_datatype.hpp>
#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/collectives/buffers.hpp>
#include <kpmap/collectives/checked.hpp>
#include <kpmap/collectives/request.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace kpmap {

/// \brief A (source, destination) pair of axis indices for ppermute.
using PermutePair = std::pair<int, int>;

namespace detail {

/// Validates ppermute pairs and returns (destination, source) for this rank,
/// MPI_PROC_NULL where there is none.
inline std::pair<int, int> permute_partners(const Axis& axis,
                                            const std::vector<PermutePair>& pairs) {
  const int p = axis.size();
  std::vector<int> seen_src(p, 0), seen_dst(p, 0);
  int dest = MPI_PROC_NULL;
  int source = MPI_PROC_NULL;
  for (const auto& [s, d] : pairs) {
    if (s < 0 || s >= p || d < 0 || d >= p) {
      throw Error("kpmap::ppermute: pair (" + std::to_string(s) + ", " + std::to_string(d) +
                  ") is outside axis '" + axis.name() + "' of size " + std::to_string(p));
    }
    if (seen_src[s]++ || seen_dst[d]++) {
      throw Error("kpmap::ppermute: axis index " + std::to_string(seen_src[s] > 1 ? s : d) +
                  " appears twice as a " + (seen_src[s] > 1 ? "source" : "destination") +
                  "; a permutation sends from and to each index at most once");
    }
    if (s == axis.index()) dest = d;
    if (d == axis.index()) source = s;
  }
  return {dest, source};
}

inline constexpr int ppermute_tag = 0x6b70;

template <class Exec, class V, class Out>
auto start_ppermute(const Exec& exec, const V& x, const Axis& axis,
                    const std::vector<PermutePair>& pairs, const Out& out,
                    transport::Pending* pending) {
  using T = value_t<V>;
  if (checked_mode()) {
    long long h = 0;
    for (const auto& [s, d] : pairs) h = h * 1000003LL + s * 1009LL + d + 1;
    verify_signature(axis, signature_of("ppermute", "x", x, h & 0x7fffffffffffLL));
  }
  const auto [dest, source] = permute_partners(axis, pairs);
  auto send = load(exec, x, true);
  const bool direct = is_canonical(out);
  auto recv = transport::make_buffer<T, typename V::memory_space>(direct ? out.data() : nullptr,
                                                                  out.size());
  fence_before_mpi(exec);
  transport::sendrecv(send.mpi, recv.mpi, x.size(), mpi_datatype<T>(), dest, source, ppermute_tag,
                      axis.comm(), pending);
  const bool receives = source != MPI_PROC_NULL;
  return [exec, out, send = std::move(send), recv = std::move(recv), direct, receives]() mutable {
    if (!receives) {
      // As in JAX: a rank that no pair sends to gets zeros.
      Kokkos::deep_copy(exec, out, T{});
      if (send.staged()) fence(exec, "kpmap: ppermute send complete");
      return;
    }
    complete_receive(exec, recv, [&] {
      if (!direct) unpack(exec, recv.dev, out);
    });
  };
}

template <class Exec, class V>
auto start_pbroadcast(const Exec& exec, const V& x, const Axis& axis, int root,
                      transport::Pending* pending) {
  using T = value_t<V>;
  if (root < 0 || root >= axis.size()) {
    throw Error("kpmap::pbroadcast: root " + std::to_string(root) + " is outside axis '" +
                axis.name() + "' of size " + std::to_string(axis.size()));
  }
  if (checked_mode()) verify_signature(axis, signature_of("pbroadcast", "x", x, root));
  const bool direct = usable_in_place(x, false);
  auto b = load(exec, x, false);
  fence_before_mpi(exec);
  transport::bcast(b.mpi, b.count, mpi_datatype<T>(), root, axis.comm(), pending);
  return [exec, x, b = std::move(b), direct]() mutable { store(exec, b, x, direct); };
}

}  // namespace detail

/// \brief Sends `x` from axis index `src` to `dst` for every (src, dst) pair;
/// a rank that no pair sends to receives zeros (as in JAX). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::owning_like_t<V> ppermute(const Exec& exec, const V& x, AxisRef axis,
                                  const std::vector<PermutePair>& pairs) {
  ProfilingRegion region("kpmap::ppermute", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::ppermute", detail::extents_of(x));
  detail::start_ppermute(exec, x, *axis, pairs, out, nullptr)();
  return out;
}

/// \brief Overwrites `x` on every rank of `axis` with its value on axis rank
/// `root`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
void pbroadcast_inplace(const Exec& exec, const V& x, AxisRef axis, int root = 0) {
  ProfilingRegion region("kpmap::pbroadcast", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  detail::start_pbroadcast(exec, x, *axis, root, nullptr)();
}

/// \brief A new View holding `x` of axis rank `root`, on every rank of
/// `axis` (JAX's pbroadcast(x, axis_name, source)); `x` is unchanged.
/// Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
[[nodiscard]] detail::owning_like_t<V> pbroadcast(const Exec& exec, const V& x, AxisRef axis,
                                                  int root = 0) {
  ProfilingRegion region("kpmap::pbroadcast", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  auto out = detail::copy_of(exec, x, "kpmap::pbroadcast");
  detail::start_pbroadcast(exec, out, *axis, root, nullptr)();
  return out;
}

/// \brief The value of `x` on axis rank `root`, on every rank. Collective.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
T pbroadcast(T x, AxisRef axis, int root = 0) {
  ProfilingRegion region("kpmap::pbroadcast", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  Kokkos::View<T, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(&x);
  detail::start_pbroadcast(Kokkos::DefaultHostExecutionSpace(), v, *axis, root, nullptr)();
  return x;
}

// Without an execution space: every instance is fenced first, then a default
// instance of the View's space runs the collective (see unnamed_instance).
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto ppermute(const V& x, AxisRef axis, const std::vector<PermutePair>& pairs) {
  return ppermute(detail::unnamed_instance<typename V::execution_space>(), x, axis, pairs);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
void pbroadcast_inplace(const V& x, AxisRef axis, int root = 0) {
  pbroadcast_inplace(detail::unnamed_instance<typename V::execution_space>(), x, axis, root);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
[[nodiscard]] auto pbroadcast(const V& x, AxisRef axis, int root = 0) {
  return pbroadcast(detail::unnamed_instance<typename V::execution_space>(), x, axis, root);
}

// -- non-blocking forms ---------------------------------------------------------

/// \brief Non-blocking ppermute on `exec`; wait() fences `exec` only.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
Async<detail::owning_like_t<V>> ippermute(const Exec& exec, const V& x, AxisRef axis,
                                          const std::vector<PermutePair>& pairs) {
  ProfilingRegion region("kpmap::ippermute", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::ppermute", detail::extents_of(x));
  transport::Pending pending;
  auto finish = detail::start_ppermute(exec, x, *axis, pairs, out, &pending);
  return {out, detail::make_request(std::move(pending), std::move(finish))};
}

/// \brief Non-blocking pbroadcast on `exec`; `x` holds root's value once the
/// Request completes.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
Request ipbroadcast(const Exec& exec, const V& x, AxisRef axis, int root = 0) {
  ProfilingRegion region("kpmap::ipbroadcast", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  transport::Pending pending;
  auto finish = detail::start_pbroadcast(exec, x, *axis, root, &pending);
  return detail::make_request(std::move(pending), std::move(finish));
}

// Without an execution space: every instance is fenced first (see
// unnamed_instance).
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::owning_like_t<V>> ippermute(const V& x, AxisRef axis,
                                          const std::vector<PermutePair>& pairs) {
  return ippermute(detail::unnamed_instance<typename V::execution_space>(), x, axis, pairs);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Request ipbroadcast(const V& x, AxisRef axis, int root = 0) {
  return ipbroadcast(detail::unnamed_instance<typename V::execution_space>(), x, axis, root);
}

}  // namespace kpmap
