// The processor's features as the hardware and the OS report them: CPUID and XGETBV on x86,
// the kernel's HWCAP words on aarch64. Internal linkage on purpose: the start-up check
// (src/cpu_baseline_check.cpp) compiles this for the oldest processors of the architecture and
// must not share a copy of it with objects built for the baseline.
#pragma once
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace trident::cpu_features {
namespace {

// One feature by the name the compiler's predefined macro gives it (__AVX2__ -> "avx2"), so the
// build can list what it was compiled to need (TRIDENT_CPU_REQUIRES).
struct Feature {
  const char* name;
  bool present;
};

#if defined(__x86_64__)
struct CpuidRegs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};
CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d)) return CpuidRegs{};
  return r;
}
bool bit(unsigned word, int i) { return (word >> i) & 1u; }

// The register state the OS saves on a context switch (XCR0): vectors are usable only when
// it saves them. 0 where XGETBV is not enabled (no OSXSAVE).
unsigned long long os_saved_state() {
  if (!bit(cpuid(1, 0).c, 27)) return 0;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

struct X86 {
  static constexpr int kCount = 18;
  Feature features[kCount];
};

X86 read_features() {
  const CpuidRegs l1 = cpuid(1, 0), l7 = cpuid(7, 0), l7s1 = cpuid(7, 1), ext = cpuid(0x80000001u, 0);
  const unsigned long long xcr0 = os_saved_state();
  const bool ymm = (xcr0 & 0x6) == 0x6;               // SSE and AVX state
  const bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;      // opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles = (xcr0 & 0x60000) == 0x60000;     // XTILECFG, XTILEDATA
  return X86{{
      {"avx", ymm && bit(l1.c, 28)},        {"avx2", ymm && bit(l7.b, 5)},
      {"fma", ymm && bit(l1.c, 12)},        {"f16c", ymm && bit(l1.c, 29)},
      {"bmi", bit(l7.b, 3)},                {"bmi2", bit(l7.b, 8)},
      {"lzcnt", bit(ext.c, 5)},             {"movbe", bit(l1.c, 22)},
      {"avx512f", zmm && bit(l7.b, 16)},    {"avx512dq", zmm && bit(l7.b, 17)},
      {"avx512cd", zmm && bit(l7.b, 28)},   {"avx512bw", zmm && bit(l7.b, 30)},
      {"avx512vl", zmm && bit(l7.b, 31)},   {"avx512bf16", zmm && bit(l7s1.a, 5)},
      {"avx512fp16", zmm && bit(l7.d, 23)}, {"amx_tile", tiles && bit(l7.d, 24)},
      {"amx_bf16", tiles && bit(l7.d, 22)}, {"sse4_2", bit(l1.c, 20)},
  }};
}
#elif defined(__aarch64__)
struct Aarch64 {
  static constexpr int kCount = 5;
  Feature features[kCount];
};

Aarch64 read_features() {
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  return Aarch64{{
      {"neon", (hw & HWCAP_ASIMD) != 0},
      {"sve", (hw & HWCAP_SVE) != 0},
      {"sve2", (hw2 & HWCAP2_SVE2) != 0},
      {"bf16", (hw2 & HWCAP2_BF16) != 0},
      {"i8mm", (hw2 & HWCAP2_I8MM) != 0},
  }};
}
#endif

// The entry for `name`, or nullptr where this table does not know it.
template <typename Table>
const Feature* find(const Table& t, const char* name) {
  for (const Feature& f : t.features)
    if (!std::strcmp(f.name, name)) return &f;
  return nullptr;
}
template <typename Table>
bool has(const Table& t, const char* name) {
  const Feature* f = find(t, name);
  return f && f->present;
}

}  // namespace
}  // namespace trident::cpu_features
