// SPDX-License-Identifier: BSD-3-Clause
// A minimal Kokkos Tools library for the tests: it records every region push
// and pop, kernel, fence, allocation and deep copy a program makes, with the
// region depth, and writes them at the end to $KPMAP_REGION_TOOL_OUT.<rank>,
// one line each:
//   push DEPTH NAME | pop DEPTH
//   kernel DEPTH NAME    (a parallel_for or parallel_scan)
//   reduce DEPTH NAME    (a parallel_reduce)
//   fence DEPTH NAME     (one execution space instance)
//   gfence DEPTH NAME    (every instance: Kokkos::fence, the device id's
//                         instance bits 0, as Kokkos 4 passes them)
//   alloc DEPTH SPACE LABEL
//   copy DEPTH DST_SPACE<-SRC_SPACE DST_LABEL
// Loaded with KOKKOS_TOOLS_LIBS (Kokkos 4) or KOKKOS_PROFILE_LIBRARY (3.4);
// tests/scripts/check_regions.py and check_counts.py read what it wrote.
// Kokkos before 3.6 reports no fence of its own on host backends; kpmap
// reports its fences and its reductions into host values there itself
// (kpmap::detail::report_host_sync).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::vector<std::string> events;
int depth = 0;

void record(const char* what, const char* name) {
  events.push_back(std::string(what) + " " + std::to_string(depth) + (name ? " " : "") +
                   (name ? name : ""));
}

}  // namespace

extern "C" {

void kokkosp_init_library(int, std::uint64_t, std::uint32_t, void*) { events.reserve(1 << 16); }

void kokkosp_finalize_library() {
  const char* out = std::getenv("KPMAP_REGION_TOOL_OUT");
  if (out == nullptr) return;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank == nullptr) rank = std::getenv("PMI_RANK");
  const std::string path = std::string(out) + "." + (rank ? rank : "0");
  if (std::FILE* f = std::fopen(path.c_str(), "w")) {
    for (const auto& e : events) std::fprintf(f, "%s\n", e.c_str());
    std::fclose(f);
  }
}

void kokkosp_push_profile_region(const char* name) {
  record("push", name);
  ++depth;
}

void kokkosp_pop_profile_region() {
  --depth;
  record("pop", nullptr);
}

void kokkosp_begin_parallel_for(const char* name, std::uint32_t, std::uint64_t* id) {
  record("kernel", name);
  *id = 0;
}
void kokkosp_end_parallel_for(std::uint64_t) {}
void kokkosp_begin_parallel_reduce(const char* name, std::uint32_t, std::uint64_t* id) {
  record("reduce", name);
  *id = 0;
}
void kokkosp_end_parallel_reduce(std::uint64_t) {}
void kokkosp_begin_parallel_scan(const char* name, std::uint32_t, std::uint64_t* id) {
  record("kernel", name);
  *id = 0;
}
void kokkosp_end_parallel_scan(std::uint64_t) {}
void kokkosp_begin_fence(const char* name, std::uint32_t device_id, std::uint64_t* id) {
  // Kokkos 4: the low 24 bits name the instance; 0 is "all instances".
  record((device_id & 0x00ffffffu) == 0 ? "gfence" : "fence", name);
  *id = 0;
}
void kokkosp_end_fence(std::uint64_t) {}

// The space handle as Kokkos 3.4 and 4.x pass it: a name in 64 chars.
struct SpaceHandle {
  char name[64];
};

void kokkosp_allocate_data(SpaceHandle space, const char* label, const void*, std::uint64_t) {
  record("alloc", (std::string(space.name) + " " + (label ? label : "")).c_str());
}
void kokkosp_deallocate_data(SpaceHandle, const char*, const void*, std::uint64_t) {}

void kokkosp_begin_deep_copy(SpaceHandle dst, const char* dst_label, const void*, SpaceHandle src,
                             const char*, const void*, std::uint64_t) {
  record("copy",
         (std::string(dst.name) + "<-" + src.name + " " + (dst_label ? dst_label : "")).c_str());
}
void kokkosp_end_deep_copy() {}

}  // extern "C"
