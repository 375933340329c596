// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief psum, pmean, pmax and pmin: on scalars, on Views (in place or into
/// a new View) and on trees of Views (fused), blocking or not.
///
/// Every function here is **collective over its axis**: every rank of the
/// axis calls it, in the same order, with the same element type and shape
/// (checked mode verifies this). The overloads without an execution space
/// run on the one that owns the data's memory.

#include <kpmap/base/detail/mpi_datatype.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/collectives/buffers.hpp>
#include <kpmap/collectives/checked.hpp>
#include <kpmap/collectives/fusion.hpp>
#include <kpmap/collectives/request.hpp>
#include <kpmap/collectives/tree.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>
#include <utility>

namespace kpmap {

/// \brief This rank's weight in a pmean over uneven shards: the number of
/// samples behind its local value. pmean(x, axis, Weight{n}) returns
/// sum_r(n_r * x_r) / sum_r(n_r), the mean over all samples.
struct Weight {
  double value;
};

namespace detail {

/// Where a leaf sits in a tree, for a reduction's compile-time refusal: the
/// compiler prints it among the template arguments of the rule's check.
template <std::size_t I>
struct tuple_element_number {};
struct vector_element {};
struct for_each_view_leaf {};

/// The real type of a floating-point or complex T.
template <class T, class = void>
struct real_of {
  using type = T;
};
template <class T>
struct real_of<T, std::void_t<typename T::value_type>> {
  using type = typename T::value_type;
};

template <class T>
inline constexpr bool is_complex_v =
    is_std_complex_v<T> || std::is_same_v<T, Kokkos::complex<float>> ||
    std::is_same_v<T, Kokkos::complex<double>>;

/// pmean divides: an integer leaf's mean would be truncated (1 of 3 ranks
/// holding 1 gives 0), so it is refused at compile time, as JAX would give a
/// floating result that kpmap cannot put in the caller's integer View.
template <class Where, class Leaf>
constexpr bool mean_leaf_check() {
  static_assert(!std::is_integral_v<value_t<std::decay_t<Leaf>>>,
                "kpmap::pmean needs floating-point or complex leaves: this leaf (Where and Leaf "
                "in 'mean_leaf_check<Where, Leaf>' above) has an integer element type, whose "
                "mean would be truncated; reduce it with psum and divide in floating point");
  return true;
}
struct MeanRule {
  template <class Where, class Leaf>
  static constexpr bool check() {
    return mean_leaf_check<Where, Leaf>();
  }
};

/// psum adds: a bool cannot hold a count (JAX's psum of booleans gives
/// integers), and MPI has no sum of booleans, so it is refused.
template <class Where, class Leaf>
constexpr bool sum_leaf_check() {
  static_assert(!std::is_same_v<value_t<std::decay_t<Leaf>>, bool>,
                "kpmap::psum needs numbers: this leaf (Where and Leaf in 'sum_leaf_check<Where, "
                "Leaf>' above) holds bool, which cannot hold a count; psum a View<int> of 0 and "
                "1 to count, or pmax (any) and pmin (all) the bools");
  return true;
}
struct SumRule {
  template <class Where, class Leaf>
  static constexpr bool check() {
    return sum_leaf_check<Where, Leaf>();
  }
};

/// pmax and pmin compare: complex numbers have no order (jnp.max of a
/// complex array orders them lexicographically, which MPI cannot do), so
/// they are refused.
template <class Where, class Leaf>
constexpr bool order_leaf_check() {
  static_assert(!is_complex_v<value_t<std::decay_t<Leaf>>>,
                "kpmap::pmax and pmin need ordered elements: this leaf (Where and Leaf in "
                "'order_leaf_check<Where, Leaf>' above) is complex, which has no order; reduce "
                "its real part or magnitude instead");
  return true;
}
struct OrderRule {
  template <class Where, class Leaf>
  static constexpr bool check() {
    return order_leaf_check<Where, Leaf>();
  }
};

template <class Rule, class X, std::size_t... I>
constexpr void require_leaves_tuple(std::index_sequence<I...>);

/// The leaf types of a tree whose types say them all (a View, or std::tuple
/// and std::vector of them): each must pass Rule at compile time.
template <class Rule, class Where, class X>
constexpr void require_leaves_static() {
  using U = std::decay_t<X>;
  if constexpr (is_view_v<U>) {
    Rule::template check<Where, U>();
  } else if constexpr (is_tuple<U>::value) {
    require_leaves_tuple<Rule, U>(std::make_index_sequence<std::tuple_size_v<U>>{});
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    require_leaves_static<Rule, vector_element, typename U::value_type>();
  }
}
template <class Rule, class X, std::size_t... I>
constexpr void require_leaves_tuple(std::index_sequence<I...>) {
  (require_leaves_static<Rule, tuple_element_number<I>, std::tuple_element_t<I, X>>(), ...);
}

template <class X, std::size_t... I>
constexpr bool holds_struct_in(std::index_sequence<I...>);

/// Whether a tree holds a type with for_each_view, whose leaves' types only
/// a visit shows.
template <class X>
constexpr bool holds_struct() {
  using U = std::decay_t<X>;
  if constexpr (is_view_v<U>) {
    return false;
  } else if constexpr (is_tuple<U>::value) {
    return holds_struct_in<U>(std::make_index_sequence<std::tuple_size_v<U>>{});
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    return holds_struct<typename U::value_type>();
  } else {
    return true;
  }
}

template <class X, std::size_t... I>
constexpr bool holds_struct_in(std::index_sequence<I...>) {
  return (holds_struct<std::tuple_element_t<I, X>>() || ... || false);
}

/// Every leaf of `x`, a View or any tree, must pass Rule (compile time). A
/// type with for_each_view is visited to see its leaves' types; nothing
/// runs but the visit.
template <class Rule, class X>
void require_leaves(X& x) {
  require_leaves_static<Rule, tuple_element_number<0>, X>();
  if constexpr (holds_struct<X>()) {
    auto check = [](auto& leaf) { Rule::template check<for_each_view_leaf, decltype(leaf)>(); };
    for_each_leaf(x, check);
  }
}

/// The rule of a reduction's leaves: sum, max or min.
template <ReduceOp Op>
using rule_of_t = std::conditional_t<Op == ReduceOp::sum, SumRule, OrderRule>;

/// The rule of a reduction's scalar.
template <class Rule, class T>
constexpr bool require_scalar() {
  return Rule::template check<tuple_element_number<0>, Kokkos::View<T>>();
}

/// The local (before, after) scale factors of a pmean, weighted or not.
/// Weighted: one extra allreduce of the weights (blocking).
inline std::pair<double, double> mean_factors(const Axis& axis, const Weight* w) {
  if (w == nullptr) return {1.0, 1.0 / axis.size()};
  double total = w->value;
  transport::allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, axis.comm(), nullptr);
  if (!(total > 0)) {
    throw Error("kpmap::pmean: the weights over axis '" + axis.name() + "' sum to " +
                    std::to_string(total) + "; at least one rank needs a positive weight",
                exit_code::failure, ErrorScope::all_ranks);
  }
  return {w->value, 1.0 / total};
}

}  // namespace detail

namespace detail {

// What a trace shows of a reduction's data: a View's or number's bytes and
// path, or a tree's bytes and its number of arrays.
template <class X>
trace::Args trace_tree_args(X& x) {
  if constexpr (is_view_v<X>) {
    return trace_args(x);
  } else {
    std::size_t arrays = 0, bytes = 0;
    auto count = [&](const auto& v) {
      ++arrays;
      bytes += v.size() * sizeof(typename std::decay_t<decltype(v)>::value_type);
    };
    for_each_leaf(x, count);
    trace::Args a;
    a.bytes = static_cast<long long>(bytes);
    a.arrays = static_cast<long long>(arrays);
    return a;
  }
}

// The Kokkos Tools region of a reduction: kpmap::psum, pmax, pmin, pmean
// (a scaled sum), or their non-blocking starts kpmap::ipsum, ...
inline const char* region_name(ReduceOp op, bool mean, bool start) {
  if (mean) return start ? "kpmap::ipmean" : "kpmap::pmean";
  switch (op) {
    case ReduceOp::max:
      return start ? "kpmap::ipmax" : "kpmap::pmax";
    case ReduceOp::min:
      return start ? "kpmap::ipmin" : "kpmap::pmin";
    case ReduceOp::sum:
      break;
  }
  return start ? "kpmap::ipsum" : "kpmap::psum";
}

template <class T>
T reduce_scalar(T x, const Axis& axis, ReduceOp op) {
  ProfilingRegion region(region_name(op, false, false), axis.name());
  if (region.traced()) region.note(trace_args(x));
  if (checked_mode()) {
    Signature s;
    s.op = op_name(op);
    s.arg = "scalar";
    s.type = type_name<T>();
    verify_signature(axis, s);
  }
  transport::allreduce(MPI_IN_PLACE, &x, 1, mpi_datatype<T>(), mpi_op<T>(op), axis.comm(), nullptr);
  return x;
}

// The reduction over `axis` of `count` host numbers in place, started
// (`start`: kpmap::ipsum's region) or to be waited for at once (psum's):
// the one path of host numbers over an axis.
template <class T>
Request reduce_host_start(T* values, int count, const Axis& axis, ReduceOp op, bool start) {
  const char* who = region_name(op, false, start);
  check_host_numbers(who, values, count, sizeof(T));
  ProfilingRegion region(who, axis.name());
  if (region.traced()) {
    trace::Args args;
    args.bytes = static_cast<long long>(sizeof(T)) * count;
    args.path = "host";
    region.note(args);
  }
  if (checked_mode()) {
    Signature s;
    s.op = op_name(op);
    s.arg = "host values";
    s.type = type_name<T>();
    s.rank = 1;
    s.extents[0] = count;
    verify_signature(axis, s);
  }
  if (count == 0) return Request();
  begin_host_sum(who, values, sizeof(T) * static_cast<std::size_t>(count));
  transport::Pending pending;
  if (axis.size() > 1) {
    try {
      transport::allreduce(MPI_IN_PLACE, values, static_cast<std::size_t>(count), mpi_datatype<T>(),
                           mpi_op<T>(op), axis.comm(), &pending);
    } catch (...) {
      end_host_sum(values);
      throw;
    }
  }
  return Request(std::move(pending), [values] { end_host_sum(values); });
}

// `fenced`: every instance was fenced just before (a collective called
// without an execution space, unnamed_instance), so the fast path goes to MPI
// without a second fence.
template <class Exec, class V>
void reduce_view_inplace(const Exec& exec, const V& x, const Axis& axis, ReduceOp op, double before,
                         double after, bool fenced) {
  ProfilingRegion region(region_name(op, before != 1.0 || after != 1.0, false), axis.name());
  if (region.traced()) region.note(trace_args(x));
  using M = typename V::memory_space;
  if (before == 1.0 && axis.size() > 1 && !checked_mode() && is_contiguous(x) &&
      !transport::must_stage_for<M>(own_mpi_op<value_t<V>>(op))) {
    // The common case, with nothing between the caller and MPI: a
    // contiguous View that MPI can read where it is.
    if (!fenced) fence_before_mpi(exec);
    transport::allreduce(MPI_IN_PLACE, x.data(), x.size(), mpi_datatype<value_t<V>>(),
                         mpi_op<value_t<V>>(op), axis.comm(), nullptr);
    if (after != 1.0) scale(exec, x, after);
    return;
  }
  start_reduce_view(exec, x, axis, op, before, after, nullptr)();
}

template <class Exec, class V>
Request reduce_view_start(const Exec& exec, const V& x, const Axis& axis, ReduceOp op,
                          double before, double after) {
  ProfilingRegion region(region_name(op, before != 1.0 || after != 1.0, true), axis.name());
  if (region.traced()) region.note(trace_args(x));
  transport::Pending pending;
  auto finish = start_reduce_view(exec, x, axis, op, before, after, &pending);
  return make_request(std::move(pending), std::move(finish));
}

// Views of the compiled kinds (fusion.hpp, compiled_leaf) are reduced by the
// functions that kpmap::core compiled once; other Views and trees here.
template <class Exec, class X>
void reduce_inplace(const Exec& exec, X& x, const Axis& axis, ReduceOp op, double before,
                    double after, bool fenced = false) {
  if constexpr (is_view_v<X>) {
    reduce_view_inplace(exec, as_leaf<Exec>(x), axis, op, before, after, fenced);
  } else {
    ProfilingRegion region(region_name(op, before != 1.0 || after != 1.0, false), axis.name());
    if (region.traced()) region.note(trace_tree_args(x));
    start_fused(exec, x, axis, op, op_name(op), before, after, nullptr)();
  }
}

template <class Exec, class X>
Request reduce_start(const Exec& exec, X& x, const Axis& axis, ReduceOp op, double before,
                     double after) {
  if constexpr (is_view_v<X>) {
    return reduce_view_start(exec, as_leaf<Exec>(x), axis, op, before, after);
  } else {
    ProfilingRegion region(region_name(op, before != 1.0 || after != 1.0, true), axis.name());
    if (region.traced()) region.note(trace_tree_args(x));
    transport::Pending pending;
    auto finish = start_fused(exec, x, axis, op, op_name(op), before, after, &pending);
    return make_request(std::move(pending), std::move(finish));
  }
}

// The reductions of the compiled leaves (fusion.hpp, compiled_leaf),
// compiled once in kpmap::core (collectives/leaves_float.cpp,
// leaves_double.cpp).
#define KPMAP_REDUCTION_LEAF(PREFIX, T, R)                                               \
  KPMAP_FUSION_LEAF(PREFIX, T, R)                                                        \
  PREFIX template void reduce_view_inplace(const LeafExec&, const CompiledLeaf<T, R>&,   \
                                           const Axis&, ReduceOp, double, double, bool); \
  PREFIX template Request reduce_view_start(const LeafExec&, const CompiledLeaf<T, R>&,  \
                                            const Axis&, ReduceOp, double, double);
#define KPMAP_REDUCTION_LEAVES(PREFIX, T) \
  KPMAP_REDUCTION_LEAF(PREFIX, T, 1)      \
  KPMAP_REDUCTION_LEAF(PREFIX, T, 2)      \
  KPMAP_REDUCTION_LEAF(PREFIX, T, 3)      \
  KPMAP_REDUCTION_LEAF(PREFIX, T, 4)
KPMAP_REDUCTION_LEAVES(extern, float)
KPMAP_REDUCTION_LEAVES(extern, double)

/// A reduced copy of x (out-of-place psum/pmax/pmin, or pmean when `mean`).
template <class Exec, class V>
owning_like_t<V> reduced_copy(const Exec& exec, const V& x, const Axis& axis, ReduceOp op,
                              bool mean) {
  auto y = copy_of(exec, x, mean ? "kpmap::pmean" : op_name(op));
  reduce_inplace(exec, y, axis, op, 1.0, mean ? 1.0 / axis.size() : 1.0);
  return y;
}

}  // namespace detail

// -- scalars: return the reduction over the axis --------------------------------

/// \brief Sum of `x` over `axis`: a number or a complex number (not a
/// bool, refused at compile time). Collective over the axis.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
T psum(T x, AxisRef axis) {
  detail::sum_leaf_check<detail::tuple_element_number<0>, Kokkos::View<T>>();
  return detail::reduce_scalar(x, *axis, detail::ReduceOp::sum);
}
/// \brief Maximum of `x` over `axis`: NaN where any rank's x is NaN; for
/// bools, true where any is (complex numbers are refused at compile time).
/// Collective over the axis.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
T pmax(T x, AxisRef axis) {
  detail::order_leaf_check<detail::tuple_element_number<0>, Kokkos::View<T>>();
  return detail::reduce_scalar(x, *axis, detail::ReduceOp::max);
}
/// \brief Minimum of `x` over `axis`: NaN where any rank's x is NaN; for
/// bools, true where all are. Collective over the axis.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
T pmin(T x, AxisRef axis) {
  detail::order_leaf_check<detail::tuple_element_number<0>, Kokkos::View<T>>();
  return detail::reduce_scalar(x, *axis, detail::ReduceOp::min);
}
/// \brief Mean of `x` (floating point or complex) over the ranks of `axis`.
/// Collective over the axis.
template <class T,
          std::enable_if_t<std::is_floating_point_v<T> || detail::is_complex_v<T>, int> = 0>
T pmean(T x, AxisRef axis) {
  using Real = typename detail::real_of<T>::type;
  return detail::reduce_scalar(x, *axis, detail::ReduceOp::sum) / static_cast<Real>(axis->size());
}
/// \brief Weighted mean sum(w_r x_r) / sum(w_r) over `axis`: the global mean
/// when x_r is a mean over w_r local samples (uneven shards). One message.
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
T pmean(T x, AxisRef axis, Weight w) {
  ProfilingRegion region("kpmap::pmean", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  double pair[2] = {static_cast<double>(x) * w.value, w.value};
  if (checked_mode()) {
    detail::Signature s;
    s.op = "pmean";
    s.arg = "weighted scalar";
    s.type = detail::type_name<T>();
    detail::verify_signature(*axis, s);
  }
  transport::allreduce(MPI_IN_PLACE, pair, 2, MPI_DOUBLE, MPI_SUM, axis->comm(), nullptr);
  if (!(pair[1] > 0)) {
    throw Error("kpmap::pmean: the weights over axis '" + axis->name() + "' sum to " +
                    std::to_string(pair[1]) + "; at least one rank needs a positive weight",
                exit_code::failure, ErrorScope::all_ranks);
  }
  return static_cast<T>(pair[0] / pair[1]);
}

/// \brief Starts the sum over `axis` of the `count` numbers at `values`, in
/// place: host memory that MPI reads and writes where it is (no View, no
/// staging, no fence), such as a solver's local dot products already
/// copied to the host. The sums are there once the Request completes; the
/// numbers must stay put, and no other sum may be started over any of them,
/// until then. Collective (every rank starts it in the same order, with the
/// same count). \throws kpmap::InputError for a negative count, a null
/// pointer with numbers to sum, numbers that are not all this process's
/// memory (a count larger than the array, checked above a MiB and in checked
/// mode), or numbers a sum still in flight also sums; in checked mode
/// (KPMAP_CHECK=1), on every rank where the ranks start sums of different
/// counts or types at this call (started in another order).
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
Request ipsum(T* values, int count, AxisRef axis) {
  return detail::reduce_host_start(values, count, *axis, detail::ReduceOp::sum, true);
}

/// \brief The `count` numbers at `values` (host memory) become their sum over
/// `axis`, in place: ipsum waited for at once, the one way to sum host
/// numbers over an axis (a solver's dot products, a step's counts). Checked
/// as ipsum is. Collective.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
void psum(T* values, int count, AxisRef axis) {
  detail::sum_leaf_check<detail::tuple_element_number<0>, Kokkos::View<T>>();
  detail::reduce_host_start(values, count, *axis, detail::ReduceOp::sum, false).wait();
}
/// \brief As psum(values, count, axis), the maximum over `axis` of each.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
void pmax(T* values, int count, AxisRef axis) {
  detail::order_leaf_check<detail::tuple_element_number<0>, Kokkos::View<T>>();
  detail::reduce_host_start(values, count, *axis, detail::ReduceOp::max, false).wait();
}
/// \brief As psum(values, count, axis), the minimum over `axis` of each.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
void pmin(T* values, int count, AxisRef axis) {
  detail::order_leaf_check<detail::tuple_element_number<0>, Kokkos::View<T>>();
  detail::reduce_host_start(values, count, *axis, detail::ReduceOp::min, false).wait();
}

// -- Views and trees, in place ----------------------------------------------------

/// \brief Replaces every element of `x` (a View or a tree of Views) by its sum
/// over `axis`. A tree's leaves travel fused in few messages. Collective.
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void psum_inplace(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_leaves<detail::SumRule>(x);
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::sum, 1.0, 1.0);
}
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void pmax_inplace(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_leaves<detail::OrderRule>(x);
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::max, 1.0, 1.0);
}
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void pmin_inplace(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_leaves<detail::OrderRule>(x);
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::min, 1.0, 1.0);
}
/// \brief Replaces `x` by its mean over the ranks of `axis` (floating point).
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void pmean_inplace(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_leaves<detail::MeanRule>(x);
  const auto [before, after] = detail::mean_factors(*axis, nullptr);
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::sum, before, after);
}
/// \brief Replaces `x` by sum_r(w_r x_r) / sum_r(w_r): the mean over all
/// samples when x_r is the mean of w_r local samples (uneven shards).
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void pmean_inplace(const Exec& exec, X&& x, AxisRef axis, Weight w) {
  detail::require_leaves<detail::MeanRule>(x);
  const auto [before, after] = detail::mean_factors(*axis, &w);
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::sum, before, after);
}

// Without an execution space: every instance is fenced first, then a default
// instance of the data's space runs the collective (see unnamed_instance).
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void psum_inplace(X&& x, AxisRef axis) {
  detail::require_leaves<detail::SumRule>(x);
  detail::reduce_inplace(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, *axis,
                         detail::ReduceOp::sum, 1.0, 1.0, /*fenced=*/true);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void pmax_inplace(X&& x, AxisRef axis) {
  detail::require_leaves<detail::OrderRule>(x);
  detail::reduce_inplace(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, *axis,
                         detail::ReduceOp::max, 1.0, 1.0, /*fenced=*/true);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void pmin_inplace(X&& x, AxisRef axis) {
  detail::require_leaves<detail::OrderRule>(x);
  detail::reduce_inplace(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, *axis,
                         detail::ReduceOp::min, 1.0, 1.0, /*fenced=*/true);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void pmean_inplace(X&& x, AxisRef axis) {
  detail::require_leaves<detail::MeanRule>(x);
  const auto [before, after] = detail::mean_factors(*axis, nullptr);
  detail::reduce_inplace(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, *axis,
                         detail::ReduceOp::sum, before, after, /*fenced=*/true);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void pmean_inplace(X&& x, AxisRef axis, Weight w) {
  detail::require_leaves<detail::MeanRule>(x);
  const auto [before, after] = detail::mean_factors(*axis, &w);
  detail::reduce_inplace(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, *axis,
                         detail::ReduceOp::sum, before, after, /*fenced=*/true);
}

// -- Views, out of place: a new View holds the result -----------------------------

/// \brief A new View holding the sum of `x` over `axis`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto psum(const Exec& exec, const V& x, AxisRef axis) {
  detail::require_leaves<detail::SumRule>(x);
  return detail::reduced_copy(exec, x, *axis, detail::ReduceOp::sum, false);
}
/// \brief A new View holding the maximum of `x` over `axis`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto pmax(const Exec& exec, const V& x, AxisRef axis) {
  detail::require_leaves<detail::OrderRule>(x);
  return detail::reduced_copy(exec, x, *axis, detail::ReduceOp::max, false);
}
/// \brief A new View holding the minimum of `x` over `axis`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto pmin(const Exec& exec, const V& x, AxisRef axis) {
  detail::require_leaves<detail::OrderRule>(x);
  return detail::reduced_copy(exec, x, *axis, detail::ReduceOp::min, false);
}
/// \brief A new View holding the mean of `x` over the ranks of `axis`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto pmean(const Exec& exec, const V& x, AxisRef axis) {
  detail::require_leaves_static<detail::MeanRule, detail::tuple_element_number<0>, V>();
  return detail::reduced_copy(exec, x, *axis, detail::ReduceOp::sum, true);
}
// Without an execution space: every instance is fenced first, then a default
// instance of the data's space runs the collective (see unnamed_instance).
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto psum(const V& x, AxisRef axis) {
  return psum(detail::unnamed_instance<typename V::execution_space>(), x, axis);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto pmax(const V& x, AxisRef axis) {
  return pmax(detail::unnamed_instance<typename V::execution_space>(), x, axis);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto pmin(const V& x, AxisRef axis) {
  return pmin(detail::unnamed_instance<typename V::execution_space>(), x, axis);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto pmean(const V& x, AxisRef axis) {
  return pmean(detail::unnamed_instance<typename V::execution_space>(), x, axis);
}

// -- trees, out of place: a new tree holds the result -------------------------------

/// \brief A new tree like `x` (a std::tuple or std::vector of Views or
/// trees, or a type with for_each_view) whose leaves hold the sums of x's
/// over `axis`, as JAX's psum of a pytree: a tuple in, a tuple of new Views
/// out; a struct in, a copy of it with new Views out. `x` is unchanged; the
/// leaves travel fused as in psum_inplace. Collective.
template <class Exec, class X,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_tree_v<std::decay_t<X>>, int> = 0>
auto psum(const Exec& exec, const X& x, AxisRef axis) {
  auto y = detail::tree_copy(exec, x, "kpmap::psum");
  detail::require_leaves<detail::SumRule>(y);
  detail::reduce_inplace(exec, y, *axis, detail::ReduceOp::sum, 1.0, 1.0);
  return y;
}
/// \brief A new tree holding the maxima of x's leaves over `axis`. Collective.
template <class Exec, class X,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_tree_v<std::decay_t<X>>, int> = 0>
auto pmax(const Exec& exec, const X& x, AxisRef axis) {
  auto y = detail::tree_copy(exec, x, "kpmap::pmax");
  detail::require_leaves<detail::OrderRule>(y);
  detail::reduce_inplace(exec, y, *axis, detail::ReduceOp::max, 1.0, 1.0);
  return y;
}
/// \brief A new tree holding the minima of x's leaves over `axis`. Collective.
template <class Exec, class X,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_tree_v<std::decay_t<X>>, int> = 0>
auto pmin(const Exec& exec, const X& x, AxisRef axis) {
  auto y = detail::tree_copy(exec, x, "kpmap::pmin");
  detail::require_leaves<detail::OrderRule>(y);
  detail::reduce_inplace(exec, y, *axis, detail::ReduceOp::min, 1.0, 1.0);
  return y;
}
/// \brief A new tree holding the means of x's leaves over the ranks of
/// `axis` (floating point). Collective.
template <class Exec, class X,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_tree_v<std::decay_t<X>>, int> = 0>
auto pmean(const Exec& exec, const X& x, AxisRef axis) {
  auto y = detail::tree_copy(exec, x, "kpmap::pmean");
  pmean_inplace(exec, y, axis);
  return y;
}
/// \brief A new View or tree holding sum_r(w_r x_r) / sum_r(w_r) over
/// `axis` (see pmean_inplace with a Weight). Collective.
template <class Exec, class X,
          std::enable_if_t<detail::is_exec_v<Exec> &&
                               (detail::is_tree_v<std::decay_t<X>> || detail::is_view_v<X>),
                           int> = 0>
auto pmean(const Exec& exec, const X& x, AxisRef axis, Weight w) {
  auto y = detail::tree_copy(exec, x, "kpmap::pmean");
  pmean_inplace(exec, y, axis, w);
  return y;
}
// Without an execution space: every instance is fenced first, then a default
// instance of the data's space runs the collective (see unnamed_instance).
template <class X, std::enable_if_t<detail::is_tree_v<std::decay_t<X>>, int> = 0>
auto psum(const X& x, AxisRef axis) {
  return psum(detail::unnamed_instance<detail::exec_of_t<X>>(), x, axis);
}
template <class X, std::enable_if_t<detail::is_tree_v<std::decay_t<X>>, int> = 0>
auto pmax(const X& x, AxisRef axis) {
  return pmax(detail::unnamed_instance<detail::exec_of_t<X>>(), x, axis);
}
template <class X, std::enable_if_t<detail::is_tree_v<std::decay_t<X>>, int> = 0>
auto pmin(const X& x, AxisRef axis) {
  return pmin(detail::unnamed_instance<detail::exec_of_t<X>>(), x, axis);
}
template <class X, std::enable_if_t<detail::is_tree_v<std::decay_t<X>>, int> = 0>
auto pmean(const X& x, AxisRef axis) {
  return pmean(detail::unnamed_instance<detail::exec_of_t<X>>(), x, axis);
}
template <class X,
          std::enable_if_t<detail::is_tree_v<std::decay_t<X>> || detail::is_view_v<X>, int> = 0>
auto pmean(const X& x, AxisRef axis, Weight w) {
  return pmean(detail::unnamed_instance<detail::exec_of_t<X>>(), x, axis, w);
}

// -- non-blocking, in place ---------------------------------------------------------

/// \brief Starts psum_inplace on `exec`; the result is in `x` once the
/// Request completes (wait() fences `exec` only). A tree object must outlive
/// the Request. Collective (every rank starts it in the same order).
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
Request ipsum(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_leaves<detail::SumRule>(x);
  return detail::reduce_start(exec, x, *axis, detail::ReduceOp::sum, 1.0, 1.0);
}
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
Request ipmax(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_leaves<detail::OrderRule>(x);
  return detail::reduce_start(exec, x, *axis, detail::ReduceOp::max, 1.0, 1.0);
}
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
Request ipmin(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_leaves<detail::OrderRule>(x);
  return detail::reduce_start(exec, x, *axis, detail::ReduceOp::min, 1.0, 1.0);
}
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
Request ipmean(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_leaves<detail::MeanRule>(x);
  const auto [before, after] = detail::mean_factors(*axis, nullptr);
  return detail::reduce_start(exec, x, *axis, detail::ReduceOp::sum, before, after);
}
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
Request ipmean(const Exec& exec, X&& x, AxisRef axis, Weight w) {
  detail::require_leaves<detail::MeanRule>(x);
  const auto [before, after] = detail::mean_factors(*axis, &w);
  return detail::reduce_start(exec, x, *axis, detail::ReduceOp::sum, before, after);
}
// Without an execution space: every instance is fenced first, then a default
// instance of the data's space runs the collective (see unnamed_instance).
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
Request ipsum(X&& x, AxisRef axis) {
  return ipsum(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, axis);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
Request ipmax(X&& x, AxisRef axis) {
  return ipmax(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, axis);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
Request ipmin(X&& x, AxisRef axis) {
  return ipmin(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, axis);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
Request ipmean(X&& x, AxisRef axis) {
  return ipmean(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, axis);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
Request ipmean(X&& x, AxisRef axis, Weight w) {
  return ipmean(detail::unnamed_instance<detail::exec_of_t<std::decay_t<X>>>(), x, axis, w);
}

}  // namespace kpmap
