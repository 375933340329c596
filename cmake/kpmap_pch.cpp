// SPDX-License-Identifier: BSD-3-Clause
// The source of the kpmap_pch target (cmake/KpmapPrecompiled.cmake): empty;
// the target exists to build the precompiled header every other target reuses.
