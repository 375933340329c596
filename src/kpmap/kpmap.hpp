#pragma once
/// \file
/// \brief Umbrella header: everything a kpmap program needs.

#include <kpmap/error.hpp>
#include <kpmap/runtime.hpp>
#include <kpmap/version.hpp>
