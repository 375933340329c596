// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief `vmap`: a per-example function mapped over a batch axis inside one
/// device, as one Kokkos kernel with one work item per example (JAX's
/// `jax.vmap`; `kpmap::per_team` gives each example a team instead).
///
/// The per-example function is a `KOKKOS_FUNCTION` functor with a templated
/// `operator()` over subviews: example `b` of each batched argument (the
/// batch axis removed) and each broadcast argument as it is, inputs first,
/// then the outputs it writes; it must not allocate. docs/pmap.md, "vmap",
/// has the example, `returns` (outputs allocated and returned, what `pmap`
/// needs), nesting and the errors.

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/spmd/detail/vmap_impl.hpp>
#include <kpmap/spmd/pmap.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kpmap {

/// \brief vmap in_axes / out_axes marker: the batch runs along dimension A of
/// the argument (JAX's integer in_axes).
template <int A>
struct BatchAxis {
  static_assert(A >= 0, "kpmap::vmap: a batch axis is a dimension index, 0 or more");
  static constexpr int axis = A;
};
/// \brief The batch is the leading dimension (JAX's `in_axes=0`).
inline constexpr BatchAxis<0> batched{};
/// \brief The batch is dimension A (JAX's `in_axes=A`).
template <int A>
inline constexpr BatchAxis<A> batched_at{};
/// \brief The argument is the same for every example (JAX's `in_axes=None`).
struct Broadcast {};
inline constexpr Broadcast broadcast{};

/// \brief vmap's first argument for per-example work that is itself parallel:
/// the function takes a Kokkos team member first, one team per example.
struct PerTeam {};
inline constexpr PerTeam per_team{};

/// \brief An output that vmap allocates: `DataType` is one example's
/// (`double*` for a vector per example, `double` for a number), and `shape`,
/// called on the host with the inputs as given, returns one example's extents
/// as a `std::array<std::size_t, rank>`. Every call allocates its outputs: in a
/// loop that must not allocate (a training step, a solver iteration), pass
/// outputs made once instead.
template <class DataType, class ShapeFn>
struct Returns {
  using data_type = DataType;
  ShapeFn shape;
};
template <class DataType, class ShapeFn>
Returns<DataType, ShapeFn> returns(ShapeFn shape) {
  return {std::move(shape)};
}
namespace detail {
/// The shape of a kpmap::returns<T>() output comes from the function's
/// `shape(examples...)` member.
struct ShapeFromFunction {};
}  // namespace detail

/// \brief An output whose shape the per-example function gives: one number
/// per example when `DataType` is a number (`returns<double>()`), else the
/// extents the function's member `shape(inputs...)` returns, called on the
/// host with example 0 of each input (what operator() gets, without the
/// outputs), as a `std::array<std::size_t, rank>` (a std::tuple of them, one
/// per output, when there are several).
template <class DataType>
auto returns() {
  if constexpr (detail::rank_v<Kokkos::View<DataType>> == 0) {
    return returns<DataType>([](const auto&...) { return std::array<std::size_t, 0>{}; });
  } else {
    return Returns<DataType, detail::ShapeFromFunction>{};
  }
}

/// \brief A function mapped over a batch axis; see kpmap::vmap.
template <class F, class InSpecs, class OutSpecs, class Exec, class Rets, bool Team>
class Vmapped {
  static constexpr std::size_t n_in = std::tuple_size_v<InSpecs>;
  static constexpr std::size_t n_out = std::tuple_size_v<OutSpecs>;
  using Specs = decltype(std::tuple_cat(std::declval<InSpecs>(), std::declval<OutSpecs>()));
  template <std::size_t I>
  using spec_t = std::tuple_element_t<I, Specs>;
  static constexpr bool nested = detail::is_vmapped<F>::value;

 public:
  using execution_space = Exec;
  using returns_type = Rets;

  /// \brief Levels of nesting: 1, or 1 + the inner vmap's.
  static constexpr int depth = 1 + detail::depth_of<F>();

  /// \brief What a kernel holds and runs on the device (no host-only part
  /// of the map, such as the kpmap::returns shape functions, is in its type).
  using Body = detail::VmapBody<typename detail::body_of<F, nested>::type, Specs, nested, depth>;

  Vmapped(F fn, Rets rets, std::string label)
      : fn_(std::move(fn)), rets_(std::move(rets)), label_(std::move(label)) {}

  /// \brief The same map, its kernel run on `exec` (an execution space instance).
  Vmapped on(const Exec& exec) const {
    Vmapped v = *this;
    v.exec_ = exec;
    return v;
  }
  /// \brief The same map, its kernel labelled `label` for profiling tools.
  Vmapped named(std::string label) const {
    Vmapped v = *this;
    v.label_ = std::move(label);
    return v;
  }

  /// \brief Runs the function on every example, as one kernel in the
  /// execution space (asynchronously, as any Kokkos kernel: a fence, a
  /// deep_copy to the host or a kpmap collective waits for it). Called with
  /// the inputs and outputs, it writes the outputs; called with the inputs
  /// only (vmap given kpmap::returns), it returns the outputs: one View, or a
  /// std::tuple of them.
  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr (sizeof...(Args) == n_in + n_out) {
      launch(args...);
    } else {
      static_assert(sizeof...(Args) == n_in,
                    "kpmap::vmap: call it with one argument per in_axes marker, followed by "
                    "one output per out_axes marker unless vmap was given kpmap::returns");
      static_assert(std::tuple_size_v<Rets> == n_out,
                    "kpmap::vmap: to return its outputs, vmap needs one kpmap::returns<...> per "
                    "out_axes marker");
      const std::size_t batch =
          detail::common_batch<InSpecs>(n_in, std::index_sequence_for<Args...>{}, args...);
      auto outs = allocate(batch, std::make_index_sequence<n_out>{}, args...);
      std::apply([&](const auto&... o) { launch(args..., o...); }, outs);
      if constexpr (n_out == 1) {
        return std::get<0>(outs);
      } else {
        return outs;
      }
    }
  }

  /// \brief Total examples per level of nesting, outermost first; checks
  /// that the batched arguments agree (host).
  template <class... Args>
  void batch_sizes(std::size_t* out, const Args&... args) const {
    out[0] = detail::common_batch<Specs>(n_in, std::index_sequence_for<Args...>{}, args...);
    if constexpr (nested) {
      if (out[0] == 0) {
        for (int d = 1; d < depth; ++d) out[d] = 0;
      } else {
        inner_sizes(out + 1, std::index_sequence_for<Args...>{}, args...);
      }
    }
  }

  const F& function() const noexcept { return fn_; }
  Body body() const {
    if constexpr (nested) {
      return Body{fn_.body()};
    } else {
      return Body{fn_};
    }
  }

 private:
  template <std::size_t... I, class... Args>
  void inner_sizes(std::size_t* out, std::index_sequence<I...>, const Args&... args) const {
    fn_.batch_sizes(out, detail::example_of<spec_t<I>>(args, 0)...);
  }

  template <std::size_t... J, class... Args>
  auto allocate(std::size_t batch, std::index_sequence<J...>, const Args&... args) const {
    return std::make_tuple(allocate_one<J>(batch, args...)...);
  }
  template <std::size_t J, class... Args>
  auto allocate_one(std::size_t batch, const Args&... args) const {
    using Ret = std::tuple_element_t<J, Rets>;
    using Spec = std::tuple_element_t<J, OutSpecs>;
    static_assert(detail::is_batch_axis<Spec>::value, "kpmap::vmap: an output must be batched");
    const auto& ret = std::get<J>(rets_);
    using Example = Kokkos::View<typename Ret::data_type>;
    constexpr int R = detail::rank_v<Example>;
    std::array<std::size_t, static_cast<std::size_t>(R)> shape{};  // no examples: no shape
    if constexpr (std::is_same_v<std::decay_t<decltype(ret.shape)>, detail::ShapeFromFunction>) {
      using Given = decltype(shape_from_function<J>(std::index_sequence_for<Args...>{}, args...));
      static_assert(std::tuple_size_v<std::decay_t<Given>> == R,
                    "kpmap::vmap: the function's shape() returns one extent per dimension of "
                    "one example");
      if (batch > 0) shape = shape_from_function<J>(std::index_sequence_for<Args...>{}, args...);
    } else {
      static_assert(std::tuple_size_v<std::decay_t<decltype(ret.shape(args...))>> == R,
                    "kpmap::returns: the shape function returns one extent per dimension of "
                    "one example");
      shape = ret.shape(args...);
    }
    static_assert(Spec::axis <= R, "kpmap::vmap: an output's batch axis is beyond its rank");
    detail::Extents e;
    for (int d = 0, s = 0; d < detail::max_view_rank; ++d) {
      e[d] = d == Spec::axis ? batch : (s < R ? shape[s++] : 1);
    }
    using Out = detail::owning_view_t<typename Example::non_const_value_type, R + 1,
                                      Kokkos::LayoutRight, typename Exec::memory_space>;
    return detail::allocate<Out>(label_ + " output " + std::to_string(J + 1), e);
  }

  template <std::size_t J, std::size_t... I, class... Args>
  auto shape_from_function(std::index_sequence<I...>, const Args&... args) const {
    static_assert(detail::has_shape_member<F, decltype(detail::example_of<spec_t<I>>(args, 0))...>,
                  "kpmap::returns<T>() of an array per example needs the function's member "
                  "shape(inputs...) giving one example's extents; or give returns<T>(shape)");
    auto s = fn_.shape(detail::example_of<spec_t<I>>(args, 0)...);
    if constexpr (detail::is_tuple<decltype(s)>::value) {
      return std::get<J>(s);
    } else {
      static_assert(n_out == 1,
                    "kpmap::vmap: with several outputs, shape() returns a std::tuple "
                    "of one example's extents per output");
      return s;
    }
  }

  template <class... Args>
  void launch(const Args&... args) const {
    check(std::index_sequence_for<Args...>{}, static_cast<const Args*>(nullptr)...);
    auto pack = detail::make_pack(std::index_sequence_for<Args...>{}, args...);
    using ArgPack = decltype(pack);
    if constexpr (Team) {
      static_assert(!nested, "kpmap::vmap: a per_team map cannot hold another vmap");
      const std::size_t batch =
          detail::common_batch<Specs>(n_in, std::index_sequence_for<Args...>{}, args...);
      if (batch == 0) return;
      using Policy = Kokkos::TeamPolicy<Exec>;
      using Member = typename Policy::member_type;
      Kokkos::parallel_for(
          label_, Policy(exec_, static_cast<int>(batch), Kokkos::AUTO),
          detail::VmapTeamKernel<Vmapped::Body, ArgPack, sizeof...(Args), Member>{body(), pack});
    } else {
      Kokkos::Array<std::size_t, depth> sizes;
      batch_sizes(sizes.data(), args...);
      std::size_t total = 1;
      for (int d = 0; d < depth; ++d) total *= sizes[d];
      if (total == 0) return;
      Kokkos::parallel_for(
          label_, Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::size_t>>(exec_, 0, total),
          detail::VmapKernel<Vmapped::Body, ArgPack, sizeof...(Args), depth>{body(), pack, sizes});
    }
  }

  template <std::size_t... I, class... Args>
  static void check(std::index_sequence<I...>, const Args*...) {
    static_assert(std::tuple_size_v<Specs> == sizeof...(Args));
    static_assert((detail::check_argument<I, spec_t<I>, Args, Exec, (I >= n_in)>() && ... && true));
    static_assert(((detail::is_batch_axis<spec_t<I>>::value) || ...),
                  "kpmap::vmap: at least one argument must be batched (as in JAX)");
  }

  F fn_;
  Rets rets_;
  std::string label_;
  Exec exec_{};

  template <class, class, class, class, class, bool>
  friend class Vmapped;
};

/// \brief JAX's `jax.vmap(fn, in_axes, out_axes)`: `fn` mapped over the
/// batch axis of the arguments marked batched, inside one device, as one
/// kernel in `Exec` (the default execution space unless given). `fn` is a
/// device function of one example of each argument (subviews without the
/// batch axis; broadcast arguments as given), inputs first, then outputs.
/// Give one `kpmap::returns<DataType>(shape)` per output to have the call
/// allocate and return the outputs. `fn` may itself be a vmap: one kernel
/// then runs over both batch axes. See this file's documentation.
template <class Exec = Kokkos::DefaultExecutionSpace, class F, class... In, class... Out,
          class... Rets>
auto vmap(F fn, std::tuple<In...>, std::tuple<Out...>, Rets... rets) {
  static_assert((detail::is_returns<Rets>::value && ... && true),
                "kpmap::vmap: after in_axes and out_axes come kpmap::returns<...>(shape) only");
  if constexpr (detail::is_vmapped<F>::value) {
    static_assert(std::tuple_size_v<typename F::returns_type> == 0,
                  "kpmap::vmap: an inner vmap writes its outputs in place (no kpmap::returns)");
  }
  using V = Vmapped<F, std::tuple<In...>, std::tuple<Out...>, Exec, std::tuple<Rets...>, false>;
  return V(std::move(fn), std::tuple<Rets...>(std::move(rets)...), "kpmap::vmap");
}

/// \brief vmap with JAX's default out_axes=0: every output, one
/// kpmap::returns per output, batched along its leading dimension.
/// `kpmap::vmap(f, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
/// kpmap::returns<double*>())(x, w)` is JAX's `jax.vmap(f, in_axes=(0, None))(x, w)`.
template <class Exec = Kokkos::DefaultExecutionSpace, class F, class... In, class D, class S,
          class... Rets>
auto vmap(F fn, std::tuple<In...> in, Returns<D, S> first, Rets... rest) {
  return vmap<Exec>(std::move(fn), in,
                    detail::batched_outputs(std::make_index_sequence<1 + sizeof...(Rets)>{}),
                    std::move(first), std::move(rest)...);
}

/// \brief vmap with one Kokkos team per example, for per-example work that is
/// itself parallel: `fn(team, examples...)` spreads its loops over the team
/// (`Kokkos::TeamThreadRange`, `TeamVectorRange`). Cannot be nested.
template <class Exec = Kokkos::DefaultExecutionSpace, class F, class... In, class... Out,
          class... Rets>
auto vmap(PerTeam, F fn, std::tuple<In...>, std::tuple<Out...>, Rets... rets) {
  static_assert((detail::is_returns<Rets>::value && ... && true),
                "kpmap::vmap: after in_axes and out_axes come kpmap::returns<...>(shape) only");
  static_assert(!detail::is_vmapped<F>::value,
                "kpmap::vmap: a per_team map cannot hold another vmap");
  using V = Vmapped<F, std::tuple<In...>, std::tuple<Out...>, Exec, std::tuple<Rets...>, true>;
  return V(std::move(fn), std::tuple<Rets...>(std::move(rets)...), "kpmap::vmap");
}

}  // namespace kpmap
