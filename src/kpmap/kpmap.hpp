// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Umbrella header: everything a kpmap program needs.

#include <kpmap/base/error.hpp>
#include <kpmap/base/fault.hpp>
#include <kpmap/base/files.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/base/version.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/grid/halo.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/run/control.hpp>
#include <kpmap/run/host_monitor.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/run/phases.hpp>
#include <kpmap/run/stop.hpp>
#include <kpmap/run/watchdog.hpp>
#include <kpmap/runtime/memory.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/spmd/ops.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/spmd/shard_map.hpp>
#include <kpmap/spmd/tree_checkpoint.hpp>
#include <kpmap/spmd/vmap.hpp>
#include <kpmap/tools/profiling.hpp>
