// SPDX-License-Identifier: BSD-3-Clause
// kpmap-heat as another build of kpmap would be: the same program, whose
// library says it was built from another commit. Defined here, the linker
// takes this build_commit() instead of the library's. A job that mixes it with
// the real kpmap-heat must end at once, naming the two commits
// (apps.kpmap-heat.differs_build, tests/reliability/reliability.cmake).

#include <kpmap/apps/heat.hpp>
#include <kpmap/base/version.hpp>

const char* kpmap::build_commit() noexcept { return "another-build"; }

int main(int argc, char** argv) { return kpmap::apps::heat_main(argc, argv); }
