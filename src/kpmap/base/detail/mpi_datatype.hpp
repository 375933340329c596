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

inline MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
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
