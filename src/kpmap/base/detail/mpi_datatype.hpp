// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The MPI datatype and reduction operation for a C++ element type.

#include <mpi.h>
#include <Kokkos_Complex.hpp>

#include <complex>
#include <cstdint>
#include <type_traits>

namespace kpmap::detail {

template <class T>
inline constexpr bool is_mpi_element_v =
    std::is_arithmetic_v<T> || std::is_same_v<T, std::complex<float>> ||
    std::is_same_v<T, std::complex<double>> || std::is_same_v<T, Kokkos::complex<float>> ||
    std::is_same_v<T, Kokkos::complex<double>>;

/// \brief The predefined MPI datatype whose values are laid out like `T`.
template <class T>
MPI_Datatype mpi_datatype() {
  using U = std::remove_cv_t<T>;
  static_assert(is_mpi_element_v<U>, "kpmap collectives move arithmetic or complex elements only");
  if constexpr (std::is_same_v<U, bool>) {
    return MPI_CXX_BOOL;
  } else if constexpr (std::is_same_v<U, float>) {
    return MPI_FLOAT;
  } else if constexpr (std::is_same_v<U, double>) {
    return MPI_DOUBLE;
  } else if constexpr (std::is_same_v<U, long double>) {
    return MPI_LONG_DOUBLE;
  } else if constexpr (std::is_same_v<U, std::complex<float>> ||
                       std::is_same_v<U, Kokkos::complex<float>>) {
    return MPI_CXX_FLOAT_COMPLEX;
  } else if constexpr (std::is_same_v<U, std::complex<double>> ||
                       std::is_same_v<U, Kokkos::complex<double>>) {
    return MPI_CXX_DOUBLE_COMPLEX;
  } else if constexpr (std::is_same_v<U, char>) {
    return MPI_CHAR;
  } else if constexpr (std::is_signed_v<U>) {
    if constexpr (sizeof(U) == 1) return MPI_INT8_T;
    if constexpr (sizeof(U) == 2) return MPI_INT16_T;
    if constexpr (sizeof(U) == 4) return MPI_INT32_T;
    if constexpr (sizeof(U) == 8) return MPI_INT64_T;
  } else {
    if constexpr (sizeof(U) == 1) return MPI_UINT8_T;
    if constexpr (sizeof(U) == 2) return MPI_UINT16_T;
    if constexpr (sizeof(U) == 4) return MPI_UINT32_T;
    if constexpr (sizeof(U) == 8) return MPI_UINT64_T;
  }
}

/// \brief Reductions the collectives know.
enum class ReduceOp { sum, max, min };

/// \brief Whether `op` on T is kpmap's own MPI operation rather than one of
/// MPI's: max and min of floating-point numbers, where a NaN on any rank must
/// give NaN (as JAX's and NumPy's maximum do) and MPI_MAX, `a > b ? a : b`,
/// would keep whichever number came first. MPI runs these on the host: their
/// buffers go to MPI through host memory (transport::must_stage_for).
template <class T>
constexpr bool own_mpi_op(ReduceOp op) {
  return std::is_floating_point_v<std::remove_cv_t<T>> && op != ReduceOp::sum;
}

/// inout[i] = max (Max) or min of in[i] and inout[i], NaN where either is.
template <class T, bool Max>
void nan_propagating_extremum(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  const int n = *len;
  for (int i = 0; i < n; ++i) {
    const T x = a[i];
    const T y = b[i];
    const bool x_wins = x != x || (y == y && (Max ? x > y : x < y));
    b[i] = x_wins ? x : y;
  }
}

/// The MPI operation created once for nan_propagating_extremum<T, Max>
/// (commutative), kept for the life of the process.
template <class T, bool Max>
MPI_Op nan_propagating_op() {
  static const MPI_Op op = [] {
    MPI_Op o = MPI_OP_NULL;
    MPI_Op_create(&nan_propagating_extremum<T, Max>, 1, &o);
    return o;
  }();
  return op;
}

/// \brief The MPI operation of `op` on elements of type T: MPI's own (for
/// bools max is "any", MPI_LOR, and min "all", MPI_LAND), or for max and
/// min of floating point kpmap's, which propagates NaN.
template <class T>
MPI_Op mpi_op(ReduceOp op) {
  using U = std::remove_cv_t<T>;
  switch (op) {
    case ReduceOp::max:
      if constexpr (std::is_floating_point_v<U>) return nan_propagating_op<U, true>();
      if constexpr (std::is_same_v<U, bool>) return MPI_LOR;  // any
      return MPI_MAX;
    case ReduceOp::min:
      if constexpr (std::is_floating_point_v<U>) return nan_propagating_op<U, false>();
      if constexpr (std::is_same_v<U, bool>) return MPI_LAND;  // all
      return MPI_MIN;
    case ReduceOp::sum:
      break;
  }
  return MPI_SUM;
}

inline const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return "pmax";
    case ReduceOp::min:
      return "pmin";
    case ReduceOp::sum:
      break;
  }
  return "psum";
}

}  // namespace kpmap::detail
