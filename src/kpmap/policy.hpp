#pragma once
/// \file
/// \brief The multi-dimensional range every kpmap kernel over a box or a
/// matrix runs, with its iteration order stated rather than left to the
/// backend.
///
/// kpmap's fields and matrices are LayoutRight: the last index is the
/// contiguous one. `Iterate::Right` for the order of the tiles and for the
/// order within a tile makes the last index the fastest-moving one on every
/// backend, so that neighbouring GPU threads touch neighbouring addresses
/// (CUDA and HIP default to `Iterate::Left`, whose fastest index would walk
/// the slowest stride). On host backends Right is already the default for
/// LayoutRight: saying it changes nothing there.
///
///   Kokkos::parallel_for("fill", kpmap::RowMajorRange<3, Exec>(exec, {k0, j0, i0}, {k1, j1, i1}),
///                        KOKKOS_LAMBDA(long k, long j, long i) { u(k, j, i) = 0; });

#include <Kokkos_Core.hpp>

namespace kpmap {

/// \brief `Kokkos::MDRangePolicy` of rank `N` on `Exec`, last index fastest
/// (`Iterate::Right` outside and inside the tiles); `Traits` are further
/// policy traits (`Kokkos::IndexType<std::int64_t>`, say).
template <unsigned N, class Exec = Kokkos::DefaultExecutionSpace, class... Traits>
using RowMajorRange =
    Kokkos::MDRangePolicy<Exec, Kokkos::Rank<N, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                          Traits...>;

}  // namespace kpmap
