// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What every collective does to its Views around the MPI call: the
/// send-side image of a View (packed when it is not contiguous), the
/// receive-side copy back, and the fence before MPI touches a buffer.
///
/// Internal (namespace kpmap::detail). Whether a buffer goes to MPI straight
/// or staged is the transport's decision (kpmap/transport/buffer.hpp).

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/mpi_datatype.hpp>
#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/tools/trace.hpp>
#include <kpmap/transport/buffer.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace kpmap::detail {

template <class T>
inline constexpr bool is_view_v = Kokkos::is_view<std::decay_t<T>>::value;

template <class E>
inline constexpr bool is_exec_v = Kokkos::is_execution_space<std::decay_t<E>>::value;

template <class V>
using value_t = typename V::non_const_value_type;

/// \brief Can MPI use v's memory as is? (Contiguous; in row-major order when
/// element order matters, as in gathers.)
template <class V>
bool usable_in_place(const V& v, bool order_matters) {
  return order_matters ? is_canonical(v) : is_contiguous(v);
}

/// \brief The MPI-ready image of v's elements (send side); `host_op`: the
/// MPI operation that will reduce them runs on the host (own_mpi_op).
template <class Exec, class V>
transport::MpiBuffer<value_t<V>, typename V::memory_space> load(const Exec& exec, const V& v,
                                                                bool order_matters,
                                                                bool host_op = false) {
  using T = value_t<V>;
  const bool direct = usable_in_place(v, order_matters);
  auto b = transport::make_buffer<T, typename V::memory_space>(
      direct ? const_cast<T*>(v.data()) : nullptr, v.size(), host_op);
  if (!direct) pack(exec, v, b.dev);
  transport::to_mpi(exec, b);
  return b;
}

/// \brief After MPI wrote `b`, moves its elements into v (receive side).
template <class Exec, class B, class V>
void store(const Exec& exec, B& b, const V& v, bool direct) {
  transport::from_mpi(exec, b);
  if (!direct) unpack(exec, b.dev, v);
  // Pooled buffers return to their pools when b dies: the copies must be done.
  if (b.staged() || !direct) fence(exec, "kpmap: staged result copied back");
}

/// \brief The instance a collective runs on when its caller names none: a
/// default instance of `Exec`, once every instance has finished (a global
/// fence). The caller's data may have been written on any instance, and MPI
/// must not read it before that work is done; fencing a default instance
/// alone would not wait for another stream's kernels on a GPU.
template <class Exec>
Exec unnamed_instance() {
  fence_all("kpmap: a collective without an execution space waits for every instance");
  return Exec();
}

/// \brief Fence before MPI touches buffers written by kernels on `exec`.
template <class Exec>
void fence_before_mpi(const Exec& exec) {
  fence(exec, "kpmap: fence before MPI reads the buffers");
}

/// Copies the staged result back, unpacks when needed, and fences before the
/// buffers (and their pooled leases) are released.
template <class Exec, class B, class Unpack>
void complete_receive(const Exec& exec, B& recv, Unpack&& unpack_fn) {
  transport::from_mpi(exec, recv);
  unpack_fn();
  fence(exec, "kpmap: collective result in place");
}

template <class Exec, class V>
owning_like_t<V> copy_of(const Exec& exec, const V& x, const char* label) {
  auto y = allocate<owning_like_t<V>>(label, extents_of(x));
  Kokkos::deep_copy(exec, y, x);
  return y;
}

/// What a trace shows of a collective's data: its bytes and whether MPI
/// takes the buffer where it lives ("direct") or through pinned host memory
/// ("staged"), for a View or a number.
template <class X>
trace::Args trace_args(const X& x) {
  trace::Args a;
  if constexpr (is_view_v<X>) {
    using M = typename std::decay_t<X>::memory_space;
    a.bytes = static_cast<long long>(x.size() * sizeof(typename std::decay_t<X>::value_type));
    a.path = transport::must_stage<M>() ? "staged" : "direct";
  } else {
    static_assert(is_mpi_element_v<X>, "trace_args: a View or a number");
    a.bytes = static_cast<long long>(sizeof(X));
    a.path = "host";
  }
  return a;
}

}  // namespace kpmap::detail
