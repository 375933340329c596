#pragma once
/// \file
/// \brief Umbrella header: everything a kpmap program needs.

#include <kpmap/checkpoint.hpp>
#include <kpmap/collectives.hpp>
#include <kpmap/deck.hpp>
#include <kpmap/error.hpp>
#include <kpmap/fault.hpp>
#include <kpmap/files.hpp>
#include <kpmap/halo.hpp>
#include <kpmap/memory.hpp>
#include <kpmap/mesh.hpp>
#include <kpmap/pmap.hpp>
#include <kpmap/policy.hpp>
#include <kpmap/profiling.hpp>
#include <kpmap/run/control.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/run/phases.hpp>
#include <kpmap/run/stop.hpp>
#include <kpmap/run/watchdog.hpp>
#include <kpmap/runtime.hpp>
#include <kpmap/shard_map.hpp>
#include <kpmap/version.hpp>
#include <kpmap/vmap.hpp>
