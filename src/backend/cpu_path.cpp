// Detects the processor's level (cpu_features.hpp), applies TRIDENT_CPU_ISA and names the result.
#include "trident/backend/cpu_path.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include "cpu_features.hpp"
#include "trident/core/error.hpp"

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace trident {
namespace {

// The levels of this architecture, lowest first.
std::vector<CpuPath> levels() {
#if defined(__aarch64__)
  return {CpuPath::kNeon, CpuPath::kSve};
#else
  return {CpuPath::kAvx2, CpuPath::kAvx512, CpuPath::kAvx512Bf16, CpuPath::kAmx};
#endif
}

#if defined(__x86_64__)
// Linux hands out the AMX tile data state (8 KiB per thread) only to a process that asks for
// it; without the permission the first tile instruction faults.
bool amx_permitted() {
#if defined(__linux__)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

CpuPath detect() {
  const auto cpu = cpu_features::read_features();
#if defined(__aarch64__)
  return cpu_features::has(cpu, "sve") && cpu_features::has(cpu, "bf16") ? CpuPath::kSve : CpuPath::kNeon;
#else
  using cpu_features::has;
  if (!(has(cpu, "avx512f") && has(cpu, "avx512bw") && has(cpu, "avx512cd") && has(cpu, "avx512dq") &&
        has(cpu, "avx512vl")))
    return CpuPath::kAvx2;
  if (!has(cpu, "avx512bf16")) return CpuPath::kAvx512;
  if (!(has(cpu, "amx_tile") && has(cpu, "amx_bf16") && amx_permitted())) return CpuPath::kAvx512Bf16;
  return CpuPath::kAmx;
#endif
}

std::string level_names() {
  std::string names;
  for (CpuPath p : levels()) names += (names.empty() ? "" : ", ") + cpu_path_name(p);
  return names;
}

// The level TRIDENT_CPU_ISA names, checked against the processor's best.
CpuPath forced(const std::string& name, CpuPath best) {
  for (CpuPath p : levels())
    if (cpu_path_name(p) == name) {
      TRIDENT_CONFIG_CHECK(p <= best, "TRIDENT_CPU_ISA=", name, " is above what this processor offers (",
                           cpu_path_name(best), "); it can only lower the CPU path");
      return p;
    }
  TRIDENT_CONFIG_CHECK(false, "TRIDENT_CPU_ISA=", name, " names no CPU path of this build (", level_names(), ")");
  return best;
}

}  // namespace

std::string cpu_path_name(CpuPath path) {
  switch (path) {
    case CpuPath::kAvx2: return "avx2";
    case CpuPath::kAvx512: return "avx512";
    case CpuPath::kAvx512Bf16: return "avx512_bf16";
    case CpuPath::kAmx: return "avx512_bf16+amx";
    case CpuPath::kNeon: return "neon";
    case CpuPath::kSve: return "sve";
  }
  return "?";
}

CpuPath detected_cpu_path() {
  static const CpuPath best = detect();
  return best;
}

CpuPath selected_cpu_path() {
  static const CpuPath chosen = [] {
    const char* env = std::getenv("TRIDENT_CPU_ISA");
    return env && *env ? forced(env, detected_cpu_path()) : detected_cpu_path();
  }();
  return chosen;
}

bool cpu_path_has_bf16() {
  const CpuPath p = selected_cpu_path();
  return p == CpuPath::kAvx512Bf16 || p == CpuPath::kAmx || p == CpuPath::kSve;
}

std::string cpu_path_banner() {
  std::string line = cpu_path_name(selected_cpu_path());
  if (selected_cpu_path() != detected_cpu_path())
    line += " (TRIDENT_CPU_ISA; this processor has " + cpu_path_name(detected_cpu_path()) + ")";
#if defined(TRIDENT_CPU_NATIVE)
  line += ", kernels built for the build machine (-march=native)";
#endif
  return line;
}

}  // namespace trident
