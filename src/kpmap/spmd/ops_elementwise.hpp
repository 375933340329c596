// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Elementwise array operations for pmap and shard_map bodies, as
/// jax.numpy names them: `a + b` (add), `a - b` (subtract), `a * b`
/// (multiply), `a / b` (divide), jnp.maximum and jnp.minimum, `alpha * a`
/// (scale), jnp.exp, log, tanh, sqrt, abs, jax.nn.relu, jnp.where,
/// zeros_like, ones_like, full_like and `a.T` (transpose).
///
/// Each takes Views of rank 1 to 3 (transpose: 2) in one memory space, any
/// layout, subviews too, and returns a new LayoutRight View there, as JAX
/// returns a new array. It runs one kernel on the Views' execution space, or
/// on the instance given first, with one thread per element of the result,
/// the last index fastest (neighbouring GPU threads write neighbouring
/// addresses). \throws Error naming both shapes where two differ.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/spmd/detail/ops_common.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpmap {

namespace detail {

// The operations, on one element (or two).
struct AddOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T y) const {
    return x + y;
  }
};
struct SubtractOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T y) const {
    return x - y;
  }
};
struct MultiplyOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T y) const {
    return x * y;
  }
};
struct DivideOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T y) const {
    return x / y;
  }
};
/// jnp.maximum and minimum: a NaN in either operand gives NaN.
struct MaximumOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T y) const {
    return (x > y || x != x) ? x : y;
  }
};
struct MinimumOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T y) const {
    return (x < y || x != x) ? x : y;
  }
};
template <class T>
struct ScaleOp {
  T alpha;
  KOKKOS_INLINE_FUNCTION T operator()(T x) const { return alpha * x; }
};
struct ExpOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x) const {
    return math::exp(x);
  }
};
struct LogOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x) const {
    return math::log(x);
  }
};
struct TanhOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x) const {
    return math::tanh(x);
  }
};
struct SqrtOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x) const {
    return math::sqrt(x);
  }
};
struct AbsOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x) const {
    return x < T(0) ? -x : x;
  }
};
struct ReluOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x) const {
    return x > T(0) ? x : T(0);
  }
};

/// out = op(a, b) at every element.
template <class Op, class Out, class A, class B>
struct Binary {
  Out out;
  A a;
  B b;
  Op op;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const { out(i) = op(a(i), b(i)); }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j) const {
    out(i, j) = op(a(i, j), b(i, j));
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j, std::int64_t k) const {
    out(i, j, k) = op(a(i, j, k), b(i, j, k));
  }
};

/// out = op(a) at every element.
template <class Op, class Out, class A>
struct Unary {
  Out out;
  A a;
  Op op;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const { out(i) = op(a(i)); }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j) const {
    out(i, j) = op(a(i, j));
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j, std::int64_t k) const {
    out(i, j, k) = op(a(i, j, k));
  }
};

/// out = c ? a : b at every element (c nonzero: true).
template <class Out, class C, class A, class B>
struct Where {
  Out out;
  C c;
  A a;
  B b;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const { out(i) = c(i) ? a(i) : b(i); }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j) const {
    out(i, j) = c(i, j) ? a(i, j) : b(i, j);
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j, std::int64_t k) const {
    out(i, j, k) = c(i, j, k) ? a(i, j, k) : b(i, j, k);
  }
};

/// out = value at every element.
template <class Out>
struct Fill {
  Out out;
  typename Out::value_type value;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const { out(i) = value; }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j) const {
    out(i, j) = value;
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j, std::int64_t k) const {
    out(i, j, k) = value;
  }
};

/// out(j, i) = a(i, j): a thread per element of out, its last index fastest.
template <class Out, class A>
struct Transpose {
  Out out;
  A a;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t j, std::int64_t i) const {
    out(j, i) = a(i, j);
  }
};

template <class Op, class Exec, class A, class B>
auto binary(const Exec& exec, const char* name, const A& a, const B& b) {
  require_ops_view<Exec, A>();
  require_ops_view<Exec, B>();
  require_ops_pair<A, B>();
  require_same_shape(name, a, b);
  auto out = empty_like(a, name);
  for_each_element(name, exec, out, Binary<Op, decltype(out), A, B>{out, a, b, Op{}});
  return out;
}

template <class Op, class Exec, class A>
auto unary(const Exec& exec, const char* name, const A& a, Op op = Op{}) {
  require_ops_view<Exec, A>();
  auto out = empty_like(a, name);
  for_each_element(name, exec, out, Unary<Op, decltype(out), A>{out, a, op});
  return out;
}

template <class Exec, class A>
auto filled_like(const Exec& exec, const char* name, const A& a, ops_value_t<A> value) {
  require_ops_view<Exec, A>();
  auto out = empty_like(a, name);
  for_each_element(name, exec, out, Fill<decltype(out)>{out, value});
  return out;
}

}  // namespace detail

// Each operation twice: on the instance given first, and on a default
// instance of the Views' own execution space.
#define KPMAP_OPS_BINARY(NAME, OP)                                                            \
  template <class Exec, class A, class B, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0> \
  auto NAME(const Exec& exec, const A& a, const B& b) {                                       \
    return detail::binary<detail::OP>(exec, "kpmap::" #NAME, a, b);                           \
  }                                                                                           \
  template <class A, class B, std::enable_if_t<detail::is_view_v<A>, int> = 0>                \
  auto NAME(const A& a, const B& b) {                                                         \
    return NAME(typename A::execution_space(), a, b);                                         \
  }
#define KPMAP_OPS_UNARY(NAME, OP)                                                    \
  template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0> \
  auto NAME(const Exec& exec, const A& a) {                                          \
    return detail::unary<detail::OP>(exec, "kpmap::" #NAME, a);                      \
  }                                                                                  \
  template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>                \
  auto NAME(const A& a) {                                                            \
    return NAME(typename A::execution_space(), a);                                   \
  }

/// \brief `a + b` into a new View.
KPMAP_OPS_BINARY(add, AddOp)
/// \brief `a - b` into a new View.
KPMAP_OPS_BINARY(subtract, SubtractOp)
/// \brief `a * b`, elementwise, into a new View.
KPMAP_OPS_BINARY(multiply, MultiplyOp)
/// \brief `a / b`, elementwise, into a new View (integers: C++'s division).
KPMAP_OPS_BINARY(divide, DivideOp)
/// \brief jnp.maximum(a, b): the larger of each pair (NaN if either is).
KPMAP_OPS_BINARY(maximum, MaximumOp)
/// \brief jnp.minimum(a, b): the smaller of each pair (NaN if either is).
KPMAP_OPS_BINARY(minimum, MinimumOp)
/// \brief jnp.exp(a).
KPMAP_OPS_UNARY(exp, ExpOp)
/// \brief jnp.log(a): the natural logarithm.
KPMAP_OPS_UNARY(log, LogOp)
/// \brief jnp.tanh(a).
KPMAP_OPS_UNARY(tanh, TanhOp)
/// \brief jnp.sqrt(a).
KPMAP_OPS_UNARY(sqrt, SqrtOp)
/// \brief jnp.abs(a).
KPMAP_OPS_UNARY(abs, AbsOp)
/// \brief jax.nn.relu(a): max(a, 0).
KPMAP_OPS_UNARY(relu, ReluOp)

#undef KPMAP_OPS_BINARY
#undef KPMAP_OPS_UNARY

/// \brief `alpha * a` into a new View.
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto scale(const Exec& exec, detail::ops_value_t<A> alpha, const A& a) {
  return detail::unary(exec, "kpmap::scale", a, detail::ScaleOp<detail::ops_value_t<A>>{alpha});
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto scale(detail::ops_value_t<A> alpha, const A& a) {
  return scale(typename A::execution_space(), alpha, a);
}

/// \brief jnp.where(c, a, b): a's element where c's is nonzero (true), else
/// b's, into a new View. `c` may be of any element type (bool, int, a
/// comparison's mask) in the same memory space.
template <class Exec, class C, class A, class B, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto where(const Exec& exec, const C& c, const A& a, const B& b) {
  detail::require_ops_view<Exec, C>();
  detail::require_ops_view<Exec, A>();
  detail::require_ops_view<Exec, B>();
  detail::require_ops_pair<A, B>();
  static_assert(std::is_same_v<detail::ops_memory_t<C>, detail::ops_memory_t<A>>,
                "kpmap::where: the condition lives in the operands' memory space");
  detail::require_same_shape("kpmap::where", c, a);
  detail::require_same_shape("kpmap::where", a, b);
  auto out = detail::empty_like(a, "kpmap::where");
  detail::for_each_element("kpmap::where", exec, out,
                           detail::Where<decltype(out), C, A, B>{out, c, a, b});
  return out;
}
template <class C, class A, class B, std::enable_if_t<detail::is_view_v<C>, int> = 0>
auto where(const C& c, const A& a, const B& b) {
  return where(typename A::execution_space(), c, a, b);
}

/// \brief jnp.full_like(a, value): a new View of a's shape, every element `value`.
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto full_like(const Exec& exec, const A& a, detail::ops_value_t<A> value) {
  return detail::filled_like(exec, "kpmap::full_like", a, value);
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto full_like(const A& a, detail::ops_value_t<A> value) {
  return full_like(typename A::execution_space(), a, value);
}
/// \brief jnp.zeros_like(a).
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto zeros_like(const Exec& exec, const A& a) {
  return detail::filled_like(exec, "kpmap::zeros_like", a, 0);
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto zeros_like(const A& a) {
  return zeros_like(typename A::execution_space(), a);
}
/// \brief jnp.ones_like(a).
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto ones_like(const Exec& exec, const A& a) {
  return detail::filled_like(exec, "kpmap::ones_like", a, 1);
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto ones_like(const A& a) {
  return ones_like(typename A::execution_space(), a);
}

/// \brief `a.T` (jnp.transpose) of a matrix: a new View, out(j, i) = a(i, j).
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto transpose(const Exec& exec, const A& a) {
  detail::require_ops_view<Exec, A>();
  static_assert(A::rank == 2, "kpmap::transpose takes a matrix (rank 2)");
  using Out = detail::ops_result_t<detail::ops_value_t<A>, 2, detail::ops_memory_t<A>>;
  Out out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::transpose"), a.extent(1),
          a.extent(0));
  detail::for_each_element("kpmap::transpose", exec, out, detail::Transpose<Out, A>{out, a});
  return out;
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto transpose(const A& a) {
  return transpose(typename A::execution_space(), a);
}

}  // namespace kpmap
