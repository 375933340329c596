// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What kpmap::vmap (spmd/vmap.hpp) is built from: the traits of its
/// axis markers, the views of one example, the argument packs a kernel carries
/// and the bodies of its flat and per-team kernels.

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/spmd/pmap.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kpmap {

template <int A>
struct BatchAxis;
struct Broadcast;
template <class DataType, class ShapeFn>
struct Returns;
template <class F, class InSpecs, class OutSpecs, class Exec, class Rets, bool Team>
class Vmapped;

namespace detail {

template <class T>
struct is_batch_axis : std::false_type {};
template <int A>
struct is_batch_axis<BatchAxis<A>> : std::true_type {};

template <class F, class... Examples>
using shape_member_t = decltype(std::declval<const F&>().shape(std::declval<const Examples&>()...));
template <class Void, class F, class... Examples>
inline constexpr bool has_shape_member_impl = false;
template <class F, class... Examples>
inline constexpr bool
    has_shape_member_impl<std::void_t<shape_member_t<F, Examples...>>, F, Examples...> = true;
template <class F, class... Examples>
inline constexpr bool has_shape_member = has_shape_member_impl<void, F, Examples...>;

// Axis 0 for every output (A is a parameter so that BatchAxis, declared
// here and defined in vmap.hpp, is complete where this is instantiated).
template <int A = 0, std::size_t... J>
auto batched_outputs(std::index_sequence<J...>) {
  return std::make_tuple(((void)J, BatchAxis<A>{})...);
}

template <class T>
struct is_vmapped : std::false_type {};
template <class F, class I, class O, class E, class R, bool T>
struct is_vmapped<Vmapped<F, I, O, E, R, T>> : std::true_type {};

template <class T>
struct is_returns : std::false_type {};
template <class D, class S>
struct is_returns<Returns<D, S>> : std::true_type {};

// What a kernel of an outer vmap runs for an inner one: the inner's Body.
template <class F, bool Nested>
struct body_of {
  using type = F;
};
template <class F>
struct body_of<F, true> {
  using type = typename F::Body;
};

template <class F>
constexpr int depth_of() {
  if constexpr (is_vmapped<F>::value) {
    return F::depth;
  } else {
    return 0;
  }
}

// A tuple that kernels can hold and read on any device (std::tuple's
// accessors are host functions under CUDA without relaxed constexpr).
template <std::size_t I, class T>
struct PackLeaf {
  T value;
};
template <class Seq, class... Ts>
struct PackImpl;
template <std::size_t... I, class... Ts>
struct PackImpl<std::index_sequence<I...>, Ts...> : PackLeaf<I, Ts>... {};
template <class... Ts>
using Pack = PackImpl<std::index_sequence_for<Ts...>, Ts...>;
template <std::size_t I, class T>
KOKKOS_INLINE_FUNCTION const T& pack_get(const PackLeaf<I, T>& p) {
  return p.value;
}
template <class... Ts, std::size_t... I>
Pack<Ts...> make_pack(std::index_sequence<I...>, const Ts&... values) {
  return Pack<Ts...>{PackLeaf<I, Ts>{values}...};
}

using all_t = std::remove_const_t<decltype(Kokkos::ALL)>;
template <bool Here>
KOKKOS_INLINE_FUNCTION auto index_or_all(std::size_t b) {
  if constexpr (Here) {
    return b;
  } else {
    (void)b;
    return all_t{};
  }
}
template <int A, class V, std::size_t... D>
KOKKOS_FORCEINLINE_FUNCTION auto slice_at(const V& v, std::size_t b, std::index_sequence<D...>) {
  return Kokkos::subview(v, index_or_all<static_cast<int>(D) == A>(b)...);
}

// Example b of an argument: a subview without the batch axis, or the
// argument itself when it is broadcast.
template <class Spec, class T, std::enable_if_t<is_batch_axis<Spec>::value, int> = 0>
KOKKOS_FORCEINLINE_FUNCTION auto example_of(const T& arg, std::size_t b) {
  return slice_at<Spec::axis>(arg, b, std::make_index_sequence<T::rank>{});
}
template <class Spec, class T, std::enable_if_t<!is_batch_axis<Spec>::value, int> = 0>
KOKKOS_FORCEINLINE_FUNCTION T example_of(const T& arg, std::size_t) {
  return arg;
}

// Argument I (from 0) against its marker, at compile time: a failed
// assertion's instantiation names I, the axis and the rank.
template <std::size_t I, int Axis, int Rank>
constexpr bool check_batch_axis() {
  static_assert(Axis < Rank,
                "kpmap::vmap: a batch axis is beyond its argument's rank (this instantiation "
                "names the argument I, from 0, its Axis and its Rank)");
  return Axis < Rank;
}
template <std::size_t I, class Spec, class T, class Exec, bool Output>
constexpr bool check_argument() {
  if constexpr (is_batch_axis<Spec>::value) {
    static_assert(is_view_v<T>, "kpmap::vmap: a batched argument must be a Kokkos::View");
    if constexpr (is_view_v<T>) static_assert(check_batch_axis<I, Spec::axis, rank_v<T>>());
  } else {
    static_assert(std::is_same_v<Spec, Broadcast>,
                  "kpmap::vmap: in_axes/out_axes markers are kpmap::batched, "
                  "kpmap::batched_at<A> or kpmap::broadcast");
    static_assert(!Output,
                  "kpmap::vmap: an output must be batched (every example writes its own "
                  "part; a broadcast output would be written by all of them at once)");
  }
  if constexpr (is_view_v<T>) {
    static_assert(
        Kokkos::SpaceAccessibility<Exec, typename T::memory_space>::accessible,
        "kpmap::vmap: a View argument lives in a memory space its kernel's execution space "
        "cannot reach (copy it to the device first, e.g. create_mirror_view_and_copy)");
    require_kernel_ready<Exec, T>();
  }
  return true;
}

inline std::string argument_name(std::size_t i, std::size_t inputs) {
  return "argument " + std::to_string(i + 1) + (i >= inputs ? " (an output)" : "");
}

// The batch size of the batched arguments, which must agree.
template <class Specs, std::size_t... I, class... Args>
std::size_t common_batch(std::size_t inputs, std::index_sequence<I...>, const Args&... args) {
  std::size_t size = 0;
  std::size_t first = 0;
  bool seen = false;
  auto visit = [&](std::size_t i, auto spec, const auto& arg) {
    using Spec = decltype(spec);
    if constexpr (is_batch_axis<Spec>::value) {
      const std::size_t n = arg.extent(Spec::axis);
      if (!seen) {
        seen = true;
        size = n;
        first = i;
      } else if (n != size) {
        throw Error("kpmap::vmap: " + argument_name(i, inputs) + " has " + std::to_string(n) +
                    " examples along its batch axis " + std::to_string(Spec::axis) + ", but " +
                    argument_name(first, inputs) + " has " + std::to_string(size));
      }
    }
  };
  (visit(I, std::tuple_element_t<I, Specs>{}, args), ...);
  return size;
}

// What a kernel holds and runs on the device: the per-example function Fn
// (for a nested vmap, the inner map's VmapBody) and the argument markers.
template <class Fn, class Specs, bool Nested, int Depth>
struct VmapBody {
  Fn fn;

  // Flat index k of the product of the batch sizes (sizes[0] outermost).
  template <class... A>
  KOKKOS_FORCEINLINE_FUNCTION void run_flat(const std::size_t* sizes, std::size_t k,
                                            const A&... args) const {
    run_flat(std::index_sequence_for<A...>{}, sizes, k, args...);
  }
  template <std::size_t... I, class... A>
  KOKKOS_FORCEINLINE_FUNCTION void run_flat(std::index_sequence<I...>, const std::size_t* sizes,
                                            std::size_t k, const A&... args) const {
    if constexpr (Nested) {
      std::size_t inner = 1;
      for (int d = 1; d < Depth; ++d) inner *= sizes[d];
      fn.run_flat(sizes + 1, k % inner,
                  example_of<std::tuple_element_t<I, Specs>>(args, k / inner)...);
    } else {
      (void)sizes;
      fn(example_of<std::tuple_element_t<I, Specs>>(args, k)...);
    }
  }
  // One example per team: its league rank.
  template <class Member, class... A>
  KOKKOS_FORCEINLINE_FUNCTION void run_team(const Member& team, const A&... args) const {
    run_team(std::index_sequence_for<A...>{}, team, args...);
  }
  template <std::size_t... I, class Member, class... A>
  KOKKOS_FORCEINLINE_FUNCTION void run_team(std::index_sequence<I...>, const Member& team,
                                            const A&... args) const {
    const auto b = static_cast<std::size_t>(team.league_rank());
    fn(team, example_of<std::tuple_element_t<I, Specs>>(args, b)...);
  }
};

template <class Body, class ArgPack, std::size_t N, int Depth>
struct VmapKernel {
  Body body;
  ArgPack args;
  Kokkos::Array<std::size_t, Depth> sizes;
  template <std::size_t... I>
  KOKKOS_FORCEINLINE_FUNCTION void run(std::size_t k, std::index_sequence<I...>) const {
    body.run_flat(sizes.data(), k, pack_get<I>(args)...);
  }
  KOKKOS_FORCEINLINE_FUNCTION void operator()(std::size_t k) const {
    run(k, std::make_index_sequence<N>{});
  }
};

template <class Body, class ArgPack, std::size_t N, class Member>
struct VmapTeamKernel {
  Body body;
  ArgPack args;
  template <std::size_t... I>
  KOKKOS_FORCEINLINE_FUNCTION void run(const Member& team, std::index_sequence<I...>) const {
    body.run_team(team, pack_get<I>(args)...);
  }
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Member& team) const {
    run(team, std::make_index_sequence<N>{});
  }
};

}  // namespace detail

}  // namespace kpmap
