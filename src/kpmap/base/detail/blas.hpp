// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Kokkos Kernels' gemm, gemv, dot and axpy on one execution space
/// instance, compiled once.
///
/// Kokkos Kernels takes an instance from 4.1 on. Older releases (Debian's
/// 3.4) run on the default instance of the Views' space; there the call is
/// fenced on both sides, so that it still sits in order between the work the
/// caller enqueued on `exec` before and after it.
///
/// Each call on the default execution space, in float or double, on
/// contiguous Views of that space (LayoutLeft or LayoutRight) is compiled
/// once, in kpmap::core (blas_float.cpp, blas_double.cpp): a gemv
/// instantiates 50 to 250 kB of Kokkos Kernels code, which every file that
/// called it compiled again. The call
/// passes the same Views, unmanaged (which Kokkos Kernels makes of them
/// first), so it runs the same code, with the same results. Other Views
/// (strided, another space or scalar) compile the call where it is made.

#include <kpmap/base/detail/kokkos_compat.hpp>

#include <KokkosKernels_config.h>
#include <KokkosBlas1_axpby.hpp>
#include <KokkosBlas1_dot.hpp>
#include <KokkosBlas2_gemv.hpp>
#include <KokkosBlas3_gemm.hpp>

#include <type_traits>

#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
#define KPMAP_BLAS_TAKES_INSTANCE 1
#else
#define KPMAP_BLAS_TAKES_INSTANCE 0
#endif

namespace kpmap::detail {

namespace blas {

/// The calls themselves, for any Views Kokkos Kernels takes.
template <class Exec, class A, class B, class C>
void gemm(const Exec& exec, const char* trans_a, const char* trans_b,
          typename A::const_value_type& alpha, const A& a, const B& b,
          typename C::const_value_type& beta, const C& c) {
#if KPMAP_BLAS_TAKES_INSTANCE
  KokkosBlas::gemm(exec, trans_a, trans_b, alpha, a, b, beta, c);
#else
  fence(exec, "kpmap::detail::gemm: inputs ready");
  KokkosBlas::gemm(trans_a, trans_b, alpha, a, b, beta, c);
  fence(typename C::execution_space(), "kpmap::detail::gemm: done");
#endif
}

template <class Exec, class A, class X, class Y>
void gemv(const Exec& exec, const char* trans, typename A::const_value_type& alpha, const A& a,
          const X& x, typename Y::const_value_type& beta, const Y& y) {
#if KPMAP_BLAS_TAKES_INSTANCE
  KokkosBlas::gemv(exec, trans, alpha, a, x, beta, y);
#else
  fence(exec, "kpmap::detail::gemv: inputs ready");
  KokkosBlas::gemv(trans, alpha, a, x, beta, y);
  fence(typename Y::execution_space(), "kpmap::detail::gemv: done");
#endif
}

// The return type spelled out (not `auto`): an `extern template` of a
// function whose type is deduced would still be compiled where it is called.
template <class Exec, class X, class Y>
decltype(KokkosBlas::dot(std::declval<X>(), std::declval<Y>()))  //
dot([[maybe_unused]] const Exec& exec, const X& x, const Y& y) {
#if KPMAP_BLAS_TAKES_INSTANCE
  return KokkosBlas::dot(exec, x, y);
#else
  fence(exec, "kpmap::detail::dot: inputs ready");
  return KokkosBlas::dot(x, y);
#endif
}

template <class Exec, class X, class Y>
void axpy(const Exec& exec, typename X::const_value_type& alpha, const X& x, const Y& y) {
#if KPMAP_BLAS_TAKES_INSTANCE
  KokkosBlas::axpy(exec, alpha, x, y);
#else
  fence(exec, "kpmap::detail::axpy: inputs ready");
  KokkosBlas::axpy(alpha, x, y);
  fence(typename Y::execution_space(), "kpmap::detail::axpy: done");
#endif
}

/// The Views the compiled calls take: unmanaged, on the default execution
/// space's device; a vector is LayoutLeft (a contiguous LayoutRight vector
/// is the same memory).
using Exec = Kokkos::DefaultExecutionSpace;
using Device = Kokkos::Device<Exec, Exec::memory_space>;
using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
template <class S, class Layout>
using Matrix = Kokkos::View<S**, Layout, Device, Unmanaged>;
template <class S>
using Vector = Kokkos::View<S*, Kokkos::LayoutLeft, Device, Unmanaged>;

/// Whether V is a contiguous View of rank `Rank` whose elements are S (const
/// S where `Const`) on the default device: the Views a compiled call takes.
template <class V, class S, int Rank, bool Const>
constexpr bool compiled_view() {
  using L = typename V::array_layout;
  return int(V::rank) == Rank && std::is_same_v<typename V::device_type, Device> &&
         std::is_same_v<typename V::non_const_value_type, S> &&
         (Const || !std::is_const_v<typename V::value_type>)&&(
             std::is_same_v<L, Kokkos::LayoutLeft> || std::is_same_v<L, Kokkos::LayoutRight>);
}
template <class S>
constexpr bool compiled_scalar = std::is_same_v<S, float> || std::is_same_v<S, double>;

// Compiled once in kpmap::core (blas_float.cpp, blas_double.cpp), for S
// float and double and the matrices in LayoutLeft and LayoutRight.
#define KPMAP_BLAS_INSTANCES(PREFIX, S, L)                                                   \
  PREFIX template void gemm<Exec, Matrix<const S, L>, Matrix<const S, L>, Matrix<S, L>>(     \
      const Exec&, const char*, const char*, const S&, const Matrix<const S, L>&,            \
      const Matrix<const S, L>&, const S&, const Matrix<S, L>&);                             \
  PREFIX template void gemv<Exec, Matrix<const S, L>, Vector<const S>, Vector<S>>(           \
      const Exec&, const char*, const S&, const Matrix<const S, L>&, const Vector<const S>&, \
      const S&, const Vector<S>&);
#define KPMAP_BLAS_VECTOR_INSTANCES(PREFIX, S)                                     \
  PREFIX template decltype(KokkosBlas::dot(std::declval<Vector<const S>>(),        \
                                           std::declval<Vector<const S>>()))       \
  dot<Exec, Vector<const S>, Vector<const S>>(const Exec&, const Vector<const S>&, \
                                              const Vector<const S>&);             \
  PREFIX template void axpy<Exec, Vector<const S>, Vector<S>>(                     \
      const Exec&, const S&, const Vector<const S>&, const Vector<S>&);
KPMAP_BLAS_INSTANCES(extern, float, Kokkos::LayoutLeft)
KPMAP_BLAS_INSTANCES(extern, float, Kokkos::LayoutRight)
KPMAP_BLAS_INSTANCES(extern, double, Kokkos::LayoutLeft)
KPMAP_BLAS_INSTANCES(extern, double, Kokkos::LayoutRight)
KPMAP_BLAS_VECTOR_INSTANCES(extern, float)
KPMAP_BLAS_VECTOR_INSTANCES(extern, double)

}  // namespace blas

/// \brief C = alpha op(A) op(B) + beta C on `exec`.
template <class Exec, class A, class B, class C>
void gemm(const Exec& exec, const char* trans_a, const char* trans_b,
          typename A::const_value_type& alpha, const A& a, const B& b,
          typename C::const_value_type& beta, const C& c) {
  using S = typename C::non_const_value_type;
  using L = typename C::array_layout;
  if constexpr (std::is_same_v<Exec, blas::Exec> && blas::compiled_scalar<S> &&
                blas::compiled_view<A, S, 2, true>() && blas::compiled_view<B, S, 2, true>() &&
                blas::compiled_view<C, S, 2, false>() &&
                std::is_same_v<typename A::array_layout, L> &&
                std::is_same_v<typename B::array_layout, L>) {
    blas::gemm(exec, trans_a, trans_b, alpha, blas::Matrix<const S, L>(a),
               blas::Matrix<const S, L>(b), beta, blas::Matrix<S, L>(c));
  } else {
    blas::gemm(exec, trans_a, trans_b, alpha, a, b, beta, c);
  }
}

/// \brief y = alpha op(A) x + beta y on `exec`.
template <class Exec, class A, class X, class Y>
void gemv(const Exec& exec, const char* trans, typename A::const_value_type& alpha, const A& a,
          const X& x, typename Y::const_value_type& beta, const Y& y) {
  using S = typename Y::non_const_value_type;
  if constexpr (std::is_same_v<Exec, blas::Exec> && blas::compiled_scalar<S> &&
                blas::compiled_view<A, S, 2, true>() && blas::compiled_view<X, S, 1, true>() &&
                blas::compiled_view<Y, S, 1, false>()) {
    using L = typename A::array_layout;
    blas::gemv(exec, trans, alpha, blas::Matrix<const S, L>(a), blas::Vector<const S>(x), beta,
               blas::Vector<S>(y));
  } else {
    blas::gemv(exec, trans, alpha, a, x, beta, y);
  }
}

/// \brief The dot product of x and y, computed on `exec`; the host waits for it.
template <class Exec, class X, class Y>
auto dot(const Exec& exec, const X& x, const Y& y) {
  using S = typename X::non_const_value_type;
  if constexpr (std::is_same_v<Exec, blas::Exec> && blas::compiled_scalar<S> &&
                blas::compiled_view<X, S, 1, true>() && blas::compiled_view<Y, S, 1, true>()) {
    return blas::dot(exec, blas::Vector<const S>(x), blas::Vector<const S>(y));
  } else {
    return blas::dot(exec, x, y);
  }
}

/// \brief y = y + alpha x on `exec`.
template <class Exec, class X, class Y>
void axpy(const Exec& exec, typename X::const_value_type& alpha, const X& x, const Y& y) {
  using S = typename Y::non_const_value_type;
  if constexpr (std::is_same_v<Exec, blas::Exec> && blas::compiled_scalar<S> &&
                blas::compiled_view<X, S, 1, true>() && blas::compiled_view<Y, S, 1, false>()) {
    blas::axpy(exec, alpha, blas::Vector<const S>(x), blas::Vector<S>(y));
  } else {
    blas::axpy(exec, alpha, x, y);
  }
}

}  // namespace kpmap::detail
