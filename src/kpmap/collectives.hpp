#pragma once
/// \file
/// \brief JAX's collectives over a named mesh axis, on Kokkos Views, scalars
/// and trees of Views: psum, pmean, pmax, pmin, all_gather, all_to_all,
/// psum_scatter, ppermute, pbroadcast, with non-blocking forms.
///
/// Every function here is **collective over its axis**: every rank of the
/// axis must call it, in the same order, with the same element type and shape
/// (checked mode verifies this). Functions that take an execution space first
/// fence it before MPI reads a buffer; the overloads without one use the
/// View's default execution space instance.
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
