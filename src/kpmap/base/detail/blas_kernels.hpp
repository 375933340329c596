// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Which kernels the host BLAS runs, and the widest the CPU has.
///
/// A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernel set when it loads, from
/// a table of the processors it knows. A processor newer than the table gets
/// an older set: Debian's 0.3.21 runs its Prescott (SSE3) kernels on an Intel
/// Xeon of family 6 model 207, where its SkylakeX (AVX-512) kernels run a
/// 1024^3 sgemm five times as fast (docs/portability.md). kpmap::Runtime reads the CPU's vector
/// features itself (CPUID and the state the OS saves), and where the BLAS picked less than the CPU
/// and the BLAS can do, it makes the BLAS take the widest set it holds, before any matrix product
/// runs. An OPENBLAS_CORETYPE the user set always wins.
///
/// Internal: kpmap-info and the apps' start lines print the result.

#include <string>
#include <string_view>
#include <vector>

namespace kpmap::detail {

/// \brief A CPU's identity and the vector instructions it may run: each flag
/// is set only where the CPU has the instructions and the OS saves their
/// registers (XCR0), as a program may use them only then.
struct CpuFeatures {
  std::string vendor;  ///< "GenuineIntel", "AuthenticAMD", ...; empty off x86-64
  int family = 0;      ///< display family (base + extended)
  int model = 0;       ///< display model (base + extended)
  bool sse3 = false, ssse3 = false, sse41 = false, sse42 = false;
  bool avx = false, fma = false, avx2 = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false;
  bool amx_bf16 = false, amx_tile = false;

  /// The AVX-512 subsets every AVX-512 kernel of a BLAS assumes (F CD BW DQ VL).
  bool avx512_core() const noexcept {
    return avx512f && avx512cd && avx512bw && avx512dq && avx512vl;
  }
};

/// \brief This machine's CPU (CPUID leaves 0, 1, 7.0, 7.1 and XGETBV).
CpuFeatures cpu_features();

/// \brief "AMD family 26 model 2; vectors: AVX-512 (F CD BW DQ VL VNNI BF16),
/// AVX2, FMA, AVX, SSE4.2".
std::string describe(const CpuFeatures& cpu);

/// \brief OpenBLAS's kernel sets (its OPENBLAS_CORETYPE names) that `cpu`
/// can run, widest first; empty when it can run none of the x86-64 sets
/// above plain SSE2.
std::vector<std::string> openblas_cores_for(const CpuFeatures& cpu);

/// \brief How wide an OpenBLAS kernel set's float and double products are
/// (SSE3 2, ... AVX 5, AVX2 6, AVX-512 7: Cooperlake's and SapphireRapids'
/// are SkylakeX's, with bfloat16 products added); -1 for a name kpmap does
/// not know, which it never replaces. Case-insensitive, as OpenBLAS reads
/// OPENBLAS_CORETYPE.
int openblas_core_rank(std::string_view core);

/// \brief The kernel set the BLAS runs, who chose it, and what the user
/// should know.
struct BlasKernels {
  enum class Chooser {
    none,   ///< no BLAS that kpmap can read (Kokkos Kernels' own, or another)
    blas,   ///< the BLAS's own pick, the widest the CPU and the BLAS have
    user,   ///< OPENBLAS_CORETYPE, set by the user
    kpmap,  ///< kpmap's: the BLAS had picked a narrower set
  };
  std::string library;  ///< "OpenBLAS 0.3.21"; empty when not OpenBLAS
  std::string path;     ///< the shared library it was found in
  std::string picked;   ///< the set the BLAS picked itself when it loaded
  std::string core;     ///< the set it runs now
  std::string widest;   ///< the widest set the CPU and the BLAS have (empty: unknown)
  Chooser chooser = Chooser::none;
  /// One line for a run slower than it need be: the set kpmap could not
  /// choose and what to set, or the user's narrower choice. Empty otherwise.
  std::string note;
  std::string cpu;  ///< describe(cpu_features())
};

/// \brief Pure decision. `picked` is the set the BLAS runs now, `held` the
/// sets it was built with, `user` the user's OPENBLAS_CORETYPE (empty:
/// none), `can_switch` whether the BLAS can be made to take another set.
/// Fills picked, core, widest, chooser and note (library, path and cpu are
/// the caller's).
BlasKernels decide_blas_kernels(const CpuFeatures& cpu, const std::string& picked,
                                const std::vector<std::string>& held, const std::string& user,
                                bool can_switch);

/// \brief Reads the loaded BLAS, decides with decide_blas_kernels, and
/// where kpmap chooses, re-initialises OpenBLAS's kernel table with the
/// chosen set. Call before any BLAS call and while one thread runs: the
/// Runtime does, once, before Kokkos starts.
BlasKernels choose_blas_kernels();

/// \brief One line for banners: "OpenBLAS 0.3.21, kernels Cooperlake (chosen
/// by kpmap: OpenBLAS picked Haswell) [/usr/lib/.../libopenblas.so.0]".
std::string describe(const BlasKernels& blas);

}  // namespace kpmap::detail
