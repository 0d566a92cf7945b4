// The CPU path: which of the instruction sets trident's CPU kernels were compiled for runs on
// this processor. The default build targets a baseline (x86-64-v3: AVX2, FMA, F16C; aarch64:
// NEON) and carries a second copy of the kernels for a wider one (x86: AVX-512; aarch64: SVE
// with bf16), chosen here at run time from CPUID/XGETBV (x86) or the kernel's HWCAPs (aarch64).
// The levels above the compiled paths only tell oneDNN how far it may go (AVX-512 BF16 dot
// products, AMX tiles). TRIDENT_CPU_ISA=<name> forces a lower level than the processor's best,
// to reproduce another node's behaviour.
#pragma once
#include <string>

namespace trident {

// Lowest first within each architecture; a path includes everything below it.
enum class CpuPath {
  kAvx2,        // x86-64-v3: AVX2, FMA, F16C, BMI1/2 (the baseline build)
  kAvx512,      // + AVX-512 F, BW, CD, DQ, VL (x86-64-v4)
  kAvx512Bf16,  // + AVX-512 BF16 (fp32 -> bf16 in one instruction; oneDNN's bf16 dot products)
  kAmx,         // + AMX tiles with bf16 (oneDNN's GEMMs only), the OS permitting their state
  kNeon,        // aarch64 Advanced SIMD (the baseline build)
  kSve,         // + SVE and BF16 (Grace: Neoverse V2, 128-bit SVE2)
};

// Its name as TRIDENT_CPU_ISA and the banner spell it: avx2, avx512, avx512_bf16,
// avx512_bf16+amx, neon, sve.
std::string cpu_path_name(CpuPath path);

// The best level this processor (and the OS: XCR0 state, the AMX permission) supports.
CpuPath detected_cpu_path();

// The level trident runs at: detected_cpu_path(), or the lower one TRIDENT_CPU_ISA names.
// Decided once per process. Throws ConfigError (exit 2) when TRIDENT_CPU_ISA names no level of
// this architecture or one above the processor's.
CpuPath selected_cpu_path();

// True when the selected level has the AVX-512 BF16 instructions (x86) or BF16 (aarch64).
bool cpu_path_has_bf16();

// One banner line: "avx512_bf16+amx", with "(TRIDENT_CPU_ISA; this CPU has ...)" when forced.
std::string cpu_path_banner();

}  // namespace trident
