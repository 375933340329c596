// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Checked mode: collectives verify that every rank of the axis called
/// the same operation with the same element type and shape, and that values
/// declared replicated really are identical. On in Debug builds and with
/// KPMAP_CHECK=1; off with KPMAP_CHECK=0.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/runtime/mesh.hpp>

#include <Kokkos_Core.hpp>

#include <complex>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace kpmap {

/// \brief Whether checked mode is on (KPMAP_CHECK, else on in Debug builds).
bool checked_mode();
/// \brief Turns checked mode on or off for this process (all ranks must agree).
void set_checked_mode(bool on);

namespace detail {

/// \brief What one rank passed to a collective, compared across the axis.
struct Signature {
  std::string op;       ///< "psum", "all_gather", ...
  std::string arg;      ///< which argument ("x", "tree leaf 3", ...)
  std::string type;     ///< element type name
  int rank = 0;         ///< View rank (0 for scalars)
  Extents extents{};    ///< shape (padded with 1)
  long long param = 0;  ///< op-specific (root, split axis, ...)
};

/// \brief Collective over `axis`: throws kpmap::Error (on every rank) when
/// ranks disagree, naming the axis, the argument, two disagreeing ranks and
/// what each passed. For a tree (`leaves`: one line a leaf, "leaf 3 'b2'
/// float64" then its shape after a tab; `mine.arg` "tree of N leaves",
/// `mine.param` a hash of the lines) it names the first leaf that differs
/// and what each of the two ranks has there.
void verify_signature(const Axis& axis, const Signature& mine,
                      const std::vector<std::string>* leaves = nullptr);

/// \brief Collective over `axis`: throws kpmap::Error (on every rank) when the
/// `bytes` differ between ranks, naming `what`, two ranks, the first differing
/// element and its two values (formatted by `format`).
void verify_identical(const Axis& axis, const std::string& what, const void* bytes,
                      std::size_t nbytes, std::size_t elem_size,
                      std::string (*format)(const void* element));

/// \brief The checks of the host numbers kpmap::ipsum, psum, pmax or pmin
/// (`who`, the message's first word) is given, on this rank: `count` >= 0, `values` not null where
/// there are any, and all of them this process's memory (checked where they span more than a MiB,
/// or in checked mode: one system call). \throws kpmap::InputError naming the argument.
void check_host_numbers(const char* who, const void* values, long long count,
                        std::size_t element_size);

/// \brief Registers `bytes` at `values` as the numbers of a sum in flight.
/// \throws kpmap::InputError where they overlap those of another sum still in
/// flight in this process (it would read what the other is writing).
void begin_host_sum(const char* who, const void* values, std::size_t bytes);
/// \brief The sum over the numbers at `values` completed.
void end_host_sum(const void* values) noexcept;

template <class T>
std::string type_name() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, double>)
    return "double";
  else if constexpr (std::is_same_v<U, float>)
    return "float";
  else if constexpr (std::is_same_v<U, bool>)
    return "bool";
  else if constexpr (std::is_integral_v<U>)
    return std::string(std::is_signed_v<U> ? "int" : "uint") + std::to_string(8 * sizeof(U));
  else if constexpr (std::is_floating_point_v<U>)
    return "float" + std::to_string(8 * sizeof(U));
  else
    return "complex" + std::to_string(8 * sizeof(U));
}

template <class T>
std::string format_element(const void* p) {
  std::ostringstream s;
  s.precision(17);
  const T& v = *static_cast<const T*>(p);
  if constexpr (std::is_arithmetic_v<T>) {
    s << +v;
  } else {
    s << "(" << v.real() << ", " << v.imag() << ")";
  }
  return s.str();
}

template <class V>
Signature signature_of(const char* op, const char* arg, const V& v, long long param = 0) {
  Signature s;
  s.op = op;
  s.arg = arg;
  s.type = type_name<typename V::non_const_value_type>();
  s.rank = rank_v<V>;
  s.extents = extents_of(v);
  s.param = param;
  return s;
}

/// \brief Checked mode: `v` (declared replicated) must be identical on every
/// rank of `axis`. Collective over `axis`.
template <class V>
void verify_replicated(const Axis& axis, const std::string& what, const V& v) {
  using T = typename V::non_const_value_type;
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  Kokkos::View<T*, Kokkos::HostSpace> flat("kpmap::verify_replicated", host.size());
  pack(Kokkos::DefaultHostExecutionSpace(), host, flat);
  fence(Kokkos::DefaultHostExecutionSpace(), "kpmap::verify_replicated: packed");
  verify_identical(axis, what, flat.data(), flat.size() * sizeof(T), sizeof(T), &format_element<T>);
}

}  // namespace detail
}  // namespace kpmap
