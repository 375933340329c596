// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief JAX's collectives over a named mesh axis, on Kokkos Views, scalars
/// and trees of Views: psum, pmean, pmax, pmin, all_gather, all_to_all,
/// psum_scatter, ppermute, pbroadcast, with non-blocking forms.
///
/// Every function here is **collective over its axis**: every rank of the
/// axis must call it, in the same order, with the same element type and shape
/// (checked mode verifies this).
///
/// Every collective, blocking and non-blocking, takes an execution space
/// instance first: `psum_inplace(exec, x, axis)`, `iall_gather(exec, x,
/// axis)`. Its packing, unpacking and staging kernels go to that instance,
/// and it is the one instance fenced before MPI reads a buffer, so the
/// caller's kernels that wrote the data must have gone to it too. The forms
/// without one first wait for every instance (a global `Kokkos::fence`: the
/// data may have been written on any), then run on a default instance of the
/// data's execution space: always safe, but on a GPU they stall every
/// stream. Code on a stream of its own names it.
///
/// Views may have rank 0 to 8, any layout, and may be non-contiguous subviews
/// (packed and unpacked by Kokkos kernels). How the bytes reach MPI is decided
/// inside (straight, or staged through pinned host memory); the API is the same.
///
/// One header per family, under kpmap/collectives/: reductions.hpp (psum,
/// pmean, pmax, pmin), gathers.hpp (all_gather, all_to_all, psum_scatter),
/// permutes.hpp (ppermute, pbroadcast), fusion.hpp (trees of Views in few
/// messages), request.hpp (non-blocking handles). This umbrella includes them all.

#include <kpmap/collectives/fusion.hpp>
#include <kpmap/collectives/gathers.hpp>
#include <kpmap/collectives/permutes.hpp>
#include <kpmap/collectives/reductions.hpp>
#include <kpmap/collectives/request.hpp>
