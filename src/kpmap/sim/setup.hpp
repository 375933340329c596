// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Initial density and energy from a deck's states, placed on the
/// cells as TeaLeaf places them.
///
/// State 1 fills the domain. Each later state, in order, overwrites the cells
/// its region selects:
/// - rectangle (cuboid): a cell whose upper face lies at least a hundredth of
///   a cell width above the region's lower bound, and whose lower face lies
///   more than a hundredth of a cell width below its upper bound, in every
///   dimension. (The hundredth keeps a bound that falls exactly on a cell face
///   from selecting the neighbouring cell through round-off.)
/// - circle (sphere): a cell whose centre is within `radius` of `centre`.
/// - point: the cell that contains `centre` (lower faces inclusive).
///
/// Positions come from global cell indices (face x_i = lower + i h), so the
/// result does not depend on the decomposition.

#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/loops.hpp>

namespace kpmap::sim {

/// \brief Writes every local cell of `density` and `energy`, ghosts included
/// (cells beyond the global boundary take state 1), on `exec`, a space of
/// sim/spaces.hpp. Not collective.
template <class Exec>
void generate_states(const Exec& exec, const CartesianLayout& layout, const HeatConfig& config,
                     const CellField<typename Exec::memory_space>& density,
                     const CellField<typename Exec::memory_space>& energy);

}  // namespace kpmap::sim
