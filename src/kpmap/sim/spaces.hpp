// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The execution spaces the simulation is compiled for.
///
/// Every class of the simulation (sim::Simulation, sim::TimeLoop,
/// sim::HeatOperator, the solvers) is a template over the execution space its
/// caller runs it on; its fields live in that space's memory. The library
/// compiles them, once, for each space of this Kokkos build that a caller can
/// name: the default execution space, the default host execution space where
/// it is another (a GPU build), and Kokkos::Serial beside a parallel host
/// backend (an OpenMP build). Naming any other space is a compile error that
/// says so.

#include <kpmap/grid/halo.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>

// A device backend makes the default host space a second space.
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL) || \
    defined(KOKKOS_ENABLE_OPENMPTARGET)
#define KPMAP_SIM_HOST_SPACE_(X) X(Kokkos::DefaultHostExecutionSpace)
#else
#define KPMAP_SIM_HOST_SPACE_(X)
#endif
// A parallel host backend leaves Serial as a space of its own.
#if defined(KOKKOS_ENABLE_SERIAL) &&                                    \
    (defined(KOKKOS_ENABLE_OPENMP) || defined(KOKKOS_ENABLE_THREADS) || \
     defined(KOKKOS_ENABLE_HPX))
#define KPMAP_SIM_SERIAL_SPACE_(X) X(Kokkos::Serial)
#else
#define KPMAP_SIM_SERIAL_SPACE_(X)
#endif

/// \brief Expands X(Space) once for every space the simulation is compiled
/// for: the explicit instantiations in the library's sources.
#define KPMAP_SIM_FOR_EACH_SPACE(X) \
  X(Kokkos::DefaultExecutionSpace)  \
  KPMAP_SIM_HOST_SPACE_(X)          \
  KPMAP_SIM_SERIAL_SPACE_(X)

namespace kpmap::sim {

namespace detail {
template <class... S>
struct SpaceList {
  template <class E>
  static constexpr bool contains = (std::is_same_v<E, S> || ...);
};
#define KPMAP_SIM_LIST_ENTRY_(S) S,
using CompiledSpaces = SpaceList<KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_LIST_ENTRY_) void>;
#undef KPMAP_SIM_LIST_ENTRY_
}  // namespace detail

/// \brief True when the simulation is compiled for execution space E.
template <class E>
inline constexpr bool compiled_space_v = !std::is_void_v<E> && detail::CompiledSpaces::contains<E>;

/// \brief A cell-centred field with ghosts in memory space M.
template <class M>
using CellField = kpmap::Field<double, M>;

}  // namespace kpmap::sim

/// \brief In a simulation class template over Exec: a clear compile error
/// for a space the library is not compiled for.
#define KPMAP_SIM_REQUIRE_COMPILED_SPACE(Exec)                                           \
  static_assert(::kpmap::sim::compiled_space_v<Exec>,                                    \
                "kpmap::sim is compiled for Kokkos::DefaultExecutionSpace, the default " \
                "host execution space and Kokkos::Serial (where each is enabled): "      \
                "see kpmap/sim/spaces.hpp")
