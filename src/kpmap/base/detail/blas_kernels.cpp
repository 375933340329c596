// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/detail/blas_kernels.hpp>

#include <KokkosKernels_config.h>
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#include <KokkosBlas_Host_tpl.hpp>
#endif

#include <dlfcn.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace kpmap::detail {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// OpenBLAS's x86-64 kernel sets (its corename spellings) by the vector width
// of their float and double products, the ones kpmap calls: Cooperlake and
// SapphireRapids add bfloat16 products to SkylakeX's, not wider ones.
struct CoreRank {
  const char* name;
  int rank;
};
constexpr CoreRank core_ranks[] = {
    {"SapphireRapids", 7}, {"Cooperlake", 7},  {"SkylakeX", 7},
    {"Haswell", 6},        {"Zen", 6},         {"Dhyana", 6},
    {"Excavator", 5},      {"Steamroller", 5}, {"Piledriver", 5},
    {"Bulldozer", 5},      {"Sandybridge", 5}, {"Nehalem", 4},
    {"Dunnington", 3},     {"Penryn", 3},      {"Core2", 3},
    {"Prescott", 2},       {"Barcelona", 2},   {"OpteronSSE3", 2},
    {"Nano", 2},           {"Bobcat", 2},      {"Atom", 2},
    {"Opteron", 1},        {"Athlon", 1},      {"Northwood", 1},
    {"Banias", 0},         {"Coppermine", 0},  {"Katmai", 0},
};

#if defined(__x86_64__) || defined(__i386__)
unsigned long long xcr0() {
  unsigned int lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
#endif

template <class Fn>
Fn symbol(const char* name) {
  void* p = dlsym(RTLD_DEFAULT, name);
  Fn fn = nullptr;
  static_assert(sizeof(fn) == sizeof(p));
  std::memcpy(&fn, &p, sizeof(p));
  return fn;
}

// OpenBLAS's kernel table for a set (gotoblas_SKYLAKEX, ...): present with
// its parameters where the library was built with the set; a set left out
// of the build is an empty (zero) table, or no symbol at all.
bool openblas_holds(const std::string& core) {
  std::string name = "gotoblas_";
  for (char c : core) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name == "gotoblas_OPTERONSSE3") name = "gotoblas_OPTERON_SSE3";
  const void* table = dlsym(RTLD_DEFAULT, name.c_str());
  if (table == nullptr) return false;
  int dtb_entries = 0;  // the table's first member
  std::memcpy(&dtb_entries, table, sizeof(dtb_entries));
  return dtb_entries != 0;
}

template <class Fn>
std::string library_of(Fn fn) {
  void* address = nullptr;
  static_assert(sizeof(fn) == sizeof(address));
  std::memcpy(&address, &fn, sizeof(address));
  Dl_info info{};
  if (address != nullptr && dladdr(address, &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return {};
}

// Kokkos Kernels' host BLAS, held by every program that links kpmap. Where
// Kokkos Kernels is a static library, the linker keeps the BLAS only for a
// program that calls it (GCC links --as-needed on Debian): one that
// multiplies no matrices itself (kpmap-info, kpmap-heat) would run without the
// BLAS that kpmap-train's products call, and could neither name it nor choose
// its kernels. Reading the pointer (volatile) keeps the reference.
void hold_host_blas() {
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  static auto* volatile held = &KokkosBlas::Impl::HostBlas<float>::gemm;
  (void)held;
#endif
}

}  // namespace

CpuFeatures cpu_features() {
  CpuFeatures cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned int a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return cpu;
  const unsigned int max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  cpu.vendor = vendor;
  __get_cpuid(1, &a, &b, &c, &d);
  const int base_family = static_cast<int>((a >> 8) & 0xf);
  cpu.family = base_family == 0xf ? base_family + static_cast<int>((a >> 20) & 0xff) : base_family;
  cpu.model = static_cast<int>((a >> 4) & 0xf);
  if (base_family == 0x6 || base_family == 0xf) cpu.model += static_cast<int>((a >> 16) & 0xf) << 4;
  cpu.sse3 = (c & (1u << 0)) != 0;
  cpu.ssse3 = (c & (1u << 9)) != 0;
  cpu.sse41 = (c & (1u << 19)) != 0;
  cpu.sse42 = (c & (1u << 20)) != 0;
  const bool osxsave = (c & (1u << 27)) != 0;
  const unsigned long long os = osxsave ? xcr0() : 0;
  const bool os_ymm = (os & 0x6) == 0x6;              // SSE and AVX state
  const bool os_zmm = os_ymm && (os & 0xe0) == 0xe0;  // opmask, ZMM0-15 upper, ZMM16-31
  const bool os_amx = (os & 0x60000) == 0x60000;      // XTILECFG, XTILEDATA
  cpu.avx = os_ymm && (c & (1u << 28)) != 0;
  cpu.fma = cpu.avx && (c & (1u << 12)) != 0;
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &c, &d);
    const unsigned int subleaves = a;
    cpu.avx2 = cpu.avx && (b & (1u << 5)) != 0;
    cpu.avx512f = os_zmm && (b & (1u << 16)) != 0;
    cpu.avx512dq = os_zmm && (b & (1u << 17)) != 0;
    cpu.avx512cd = os_zmm && (b & (1u << 28)) != 0;
    cpu.avx512bw = os_zmm && (b & (1u << 30)) != 0;
    cpu.avx512vl = os_zmm && (b & (1u << 31)) != 0;
    cpu.avx512_vnni = os_zmm && (c & (1u << 11)) != 0;
    cpu.avx512_fp16 = os_zmm && (d & (1u << 23)) != 0;
    cpu.amx_bf16 = os_amx && (d & (1u << 22)) != 0;
    cpu.amx_tile = os_amx && (d & (1u << 24)) != 0;
    if (subleaves >= 1) {
      __get_cpuid_count(7, 1, &a, &b, &c, &d);
      cpu.avx512_bf16 = os_zmm && (a & (1u << 5)) != 0;
    }
  }
#endif
  return cpu;
}

std::string describe(const CpuFeatures& cpu) {
  if (cpu.vendor.empty()) return "not an x86-64 CPU";
  const std::string vendor = cpu.vendor == "GenuineIntel"   ? "Intel"
                             : cpu.vendor == "AuthenticAMD" ? "AMD"
                             : cpu.vendor == "HygonGenuine" ? "Hygon"
                                                            : cpu.vendor;
  std::string s = vendor + " family " + std::to_string(cpu.family) + " model " +
                  std::to_string(cpu.model) + "; vectors:";
  std::string sep = " ";
  auto add = [&](bool has, const std::string& what) {
    if (!has) return;
    s += sep + what;
    sep = ", ";
  };
  if (cpu.avx512f) {
    std::string parts;
    auto part = [&parts](bool has, const char* name) {
      if (has) parts += (parts.empty() ? "" : " ") + std::string(name);
    };
    part(cpu.avx512f, "F");
    part(cpu.avx512cd, "CD");
    part(cpu.avx512bw, "BW");
    part(cpu.avx512dq, "DQ");
    part(cpu.avx512vl, "VL");
    part(cpu.avx512_vnni, "VNNI");
    part(cpu.avx512_bf16, "BF16");
    part(cpu.avx512_fp16, "FP16");
    add(true, "AVX-512 (" + parts + ")");
  }
  add(cpu.amx_tile, std::string("AMX") + (cpu.amx_bf16 ? " (BF16)" : ""));
  add(cpu.avx2, "AVX2");
  add(cpu.fma, "FMA");
  add(cpu.avx, "AVX");
  add(cpu.sse42, "SSE4.2");
  add(!cpu.sse42 && cpu.sse41, "SSE4.1");
  add(!cpu.sse41 && cpu.ssse3, "SSSE3");
  add(!cpu.ssse3 && cpu.sse3, "SSE3");
  add(!cpu.sse3, "SSE2");
  return s;
}

std::vector<std::string> openblas_cores_for(const CpuFeatures& cpu) {
  std::vector<std::string> cores;
  if (cpu.vendor.empty()) return cores;
  const bool amd = cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine";
  if (cpu.avx512_core()) {
    if (cpu.avx512_bf16 && cpu.avx512_fp16 && cpu.amx_bf16 && cpu.amx_tile) {
      cores.emplace_back("SapphireRapids");
    }
    if (cpu.avx512_bf16) cores.emplace_back("Cooperlake");
    cores.emplace_back("SkylakeX");
  }
  if (cpu.avx2 && cpu.fma) {
    // The same AVX2 kernels, blocked for each vendor's caches.
    if (amd) cores.emplace_back("Zen");
    cores.emplace_back("Haswell");
    if (!amd) cores.emplace_back("Zen");
  }
  if (cpu.avx) cores.emplace_back("Sandybridge");
  if (cpu.sse42) cores.emplace_back("Nehalem");
  if (cpu.sse41) cores.emplace_back("Penryn");
  if (cpu.ssse3) cores.emplace_back("Core2");
  if (cpu.sse3) cores.emplace_back("Prescott");
  return cores;
}

int openblas_core_rank(std::string_view core) {
  const std::string want = lower(core);
  for (const auto& c : core_ranks) {
    if (lower(c.name) == want) return c.rank;
  }
  return -1;
}

BlasKernels decide_blas_kernels(const CpuFeatures& cpu, const std::string& picked,
                                const std::vector<std::string>& held, const std::string& user,
                                bool can_switch) {
  BlasKernels k;
  k.picked = picked;
  k.core = picked;
  k.chooser = user.empty() ? BlasKernels::Chooser::blas : BlasKernels::Chooser::user;
  for (const auto& core : openblas_cores_for(cpu)) {
    if (std::find(held.begin(), held.end(), core) != held.end()) {
      k.widest = core;
      break;
    }
  }
  const int have = openblas_core_rank(picked);
  if (!user.empty() && !k.widest.empty() && have > openblas_core_rank(k.widest)) {
    k.note = "OPENBLAS_CORETYPE=" + user + " runs instructions this CPU lacks (its widest " +
             "kernels here are " + k.widest + "); expect a crash: unset it";
    return k;
  }
  // An unknown pick may be a set newer than kpmap knows: never replaced.
  if (k.widest.empty() || have < 0 || have >= openblas_core_rank(k.widest)) return k;
  if (!user.empty()) {
    k.note = "OPENBLAS_CORETYPE=" + user + " runs narrower kernels than this CPU has in " +
             "this BLAS (" + k.widest + "); unset it for faster matrix products";
  } else if (can_switch) {
    k.core = k.widest;
    k.chooser = BlasKernels::Chooser::kpmap;
  } else {
    k.note = "the BLAS runs its " + picked + " kernels on this CPU, which runs its " + k.widest +
             " kernels: set OPENBLAS_CORETYPE=" + k.widest + " for faster matrix products";
  }
  return k;
}

BlasKernels choose_blas_kernels() {
  hold_host_blas();
  using Name = char* (*)();
  using Call = void (*)();
  const auto corename = symbol<Name>("openblas_get_corename");
  const auto config = symbol<Name>("openblas_get_config");
  const CpuFeatures cpu = cpu_features();
  if (corename == nullptr || config == nullptr || corename() == nullptr) {
    BlasKernels k;
    k.path = library_of(symbol<Call>("sgemm_"));
    k.cpu = describe(cpu);
    return k;
  }
  const std::string built = config() != nullptr ? config() : "";
  const auto quit = symbol<Call>("gotoblas_dynamic_quit");
  const auto init = symbol<Call>("gotoblas_dynamic_init");
  const bool dynamic =
      built.find("DYNAMIC_ARCH") != std::string::npos && quit != nullptr && init != nullptr;
  std::vector<std::string> held;
  for (const auto& core : openblas_cores_for(cpu)) {
    if (dynamic ? openblas_holds(core) : lower(core) == lower(corename())) held.push_back(core);
  }
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  BlasKernels k = decide_blas_kernels(cpu, corename(), held, user != nullptr ? user : "", dynamic);
  if (k.chooser == BlasKernels::Chooser::kpmap) {
    // OpenBLAS reads OPENBLAS_CORETYPE when it fills its kernel table; the
    // variable is gone again before anything else can read it.
    setenv("OPENBLAS_CORETYPE", k.core.c_str(), 1);
    quit();
    init();
    unsetenv("OPENBLAS_CORETYPE");
    if (lower(corename()) != lower(k.core)) {  // refused: the set as it stands
      k.note = "OpenBLAS would not take its " + k.core +
               " kernels: set OPENBLAS_CORETYPE=" + k.core + " for faster matrix products";
      k.core = corename();
      k.chooser = BlasKernels::Chooser::blas;
    }
  }
  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": its first two words.
  const auto first = built.find(' ');
  k.library = built.substr(0, first == std::string::npos ? first : built.find(' ', first + 1));
  k.path = library_of(corename);
  k.cpu = describe(cpu);
  return k;
}

std::string describe(const BlasKernels& blas) {
  const std::string where = blas.path.empty() ? "" : " [" + blas.path + "]";
  if (blas.chooser == BlasKernels::Chooser::none) {
    return blas.path.empty() ? "none kpmap can name (Kokkos Kernels' own kernels)"
                             : "not OpenBLAS, its kernels unnamed" + where;
  }
  std::string s = blas.library + ", kernels " + blas.core + " (";
  switch (blas.chooser) {
    case BlasKernels::Chooser::kpmap:
      s += "chosen by kpmap: the BLAS picked " + blas.picked + " for this CPU";
      break;
    case BlasKernels::Chooser::user:
      s += "OPENBLAS_CORETYPE, yours";
      break;
    default:
      s += blas.widest.empty() || !blas.note.empty()
               ? "the BLAS's own pick"
               : "the BLAS's own pick, the widest it has here";
  }
  return s + ")" + where;
}

}  // namespace kpmap::detail
