#pragma once
/// \file
/// \brief Kokkos Kernels' gemm, gemv, dot and axpy on one execution space
/// instance.
///
/// Kokkos Kernels takes an instance from 4.1 on. Older releases (Debian's
/// 3.4) run on the default instance of the Views' space; there the call is
/// fenced on both sides, so that it still sits in order between the work the
/// caller enqueued on `exec` before and after it.

#include <kpmap/base/detail/kokkos_compat.hpp>

#include <KokkosKernels_config.h>
#include <KokkosBlas1_axpby.hpp>
#include <KokkosBlas1_dot.hpp>
#include <KokkosBlas2_gemv.hpp>
#include <KokkosBlas3_gemm.hpp>

#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
#define KPMAP_BLAS_TAKES_INSTANCE 1
#else
#define KPMAP_BLAS_TAKES_INSTANCE 0
#endif

namespace kpmap::detail {

/// \brief C = alpha op(A) op(B) + beta C on `exec`.
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

/// \brief y = alpha op(A) x + beta y on `exec`.
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

/// \brief The dot product of x and y, computed on `exec`; the host waits for it.
template <class Exec, class X, class Y>
auto dot(const Exec& exec, const X& x, const Y& y) {
#if KPMAP_BLAS_TAKES_INSTANCE
  return KokkosBlas::dot(exec, x, y);
#else
  fence(exec, "kpmap::detail::dot: inputs ready");
  return KokkosBlas::dot(x, y);
#endif
}

/// \brief y = y + alpha x on `exec`.
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

}  // namespace kpmap::detail
