// Vectorised fp32 <-> bf16/fp16 conversion of contiguous runs, the building block of every CPU
// kernel that stores activations in 16 bits and computes in fp32.
// bf16: fp32 -> bf16 with vcvtne2ps2bf16 (AVX-512 BF16, round to nearest even); bf16 -> fp32 is
// a 16-bit shift. fp16: vcvtps2ph / vcvtph2ps (AVX-512F), round to nearest even.
// Tails use masked loads and stores, so every element of a run goes through the same
// instruction. The AVX-512 path takes vcvtne2ps2bf16 where the CPU level has it
// (cpu_path_has_bf16, decided at run time) and the bit arithmetic of core/dtype.hpp otherwise;
// paths without AVX-512 use the scalar conversions of core/dtype.hpp (vectorised by the
// compiler). The one difference: vcvtne2ps2bf16 flushes fp32 subnormals (|x| < 2^-126) to signed
// zero, where the scalar conversion rounds them; normal numbers, inf and NaN (kept quiet)
// convert alike.
#pragma once
#include <cstdint>

#include "trident/backend/cpu_path.hpp"
#include "trident/core/dtype.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

// True for the dtypes a kernel widens to fp32 on load and rounds back to on store.
constexpr bool is_half(DType t) { return t == DType::kBF16 || t == DType::kF16; }

// dst[0:n] = fp32 values of the 16-bit src[0:n] (dtype kBF16 or kF16).
inline void half_to_f32(const uint16_t* src, DType dtype, float* dst, int64_t n) {
  int64_t i = 0;
#if TRIDENT_CPU_AVX512
  if (dtype == DType::kBF16) {
    for (; i < n; i += 16) {
      const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
      const __m256i h = _mm256_maskz_loadu_epi16(m, src + i);
      _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
    }
  } else {
    for (; i < n; i += 16) {
      const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
      const __m256i h = _mm256_maskz_loadu_epi16(m, src + i);
      _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(h));
    }
  }
#else
  if (dtype == DType::kBF16) {
#pragma omp simd
    for (int64_t j = i; j < n; ++j) dst[j] = bf16_bits_to_fp32(src[j]);
  } else {
    for (; i < n; ++i) dst[i] = fp16_bits_to_fp32(src[i]);
  }
#endif
}

#if TRIDENT_CPU_AVX512
// fp32 -> bf16 by vcvtne2ps2bf16: the AVX-512 path's own ISA plus BF16, so it is called (not
// inlined) from code that checked cpu_path_has_bf16(). A -march=native build has it inline.
#if defined(__AVX512BF16__)
inline void f32_to_bf16_instructions(const float* src, uint16_t* dst, int64_t n) {
#else
__attribute__((target("avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512bf16,prefer-vector-width=512")))
inline void f32_to_bf16_instructions(const float* src, uint16_t* dst, int64_t n) {
#endif
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // two zmm of fp32 -> one zmm of bf16
    const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
    _mm512_storeu_si512(dst + i, reinterpret_cast<__m512i>(h));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i));
    _mm256_mask_storeu_epi16(dst + i, m, reinterpret_cast<__m256i>(h));
  }
}
#endif

// dst[0:n] = src[0:n] rounded to the 16-bit dtype (kBF16 or kF16), nearest even.
inline void f32_to_half(const float* src, DType dtype, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if TRIDENT_CPU_AVX512
#if defined(__AVX512BF16__)
  constexpr bool bf16_instructions = true;
#else
  static const bool bf16_instructions = cpu_path_has_bf16();
#endif
  if (dtype == DType::kBF16 && bf16_instructions) return f32_to_bf16_instructions(src, dst, n);
  if (dtype == DType::kF16) {
    for (; i < n; i += 16) {
      const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
      const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_mask_storeu_epi16(dst + i, m, h);
    }
    return;
  }
#endif
  if (dtype == DType::kBF16) {
#pragma omp simd
    for (int64_t j = i; j < n; ++j) dst[j] = fp32_to_bf16_bits(src[j]);
  } else {
    for (; i < n; ++i) dst[i] = fp32_to_fp16_bits(src[i]);
  }
}

// Short-hands over a tensor's raw storage at element offset `at`.
inline void load_f32(const void* base, DType dtype, int64_t at, float* dst, int64_t n) {
  half_to_f32(static_cast<const uint16_t*>(base) + at, dtype, dst, n);
}
inline void store_f32(const float* src, DType dtype, void* base, int64_t at, int64_t n) {
  f32_to_half(src, dtype, static_cast<uint16_t*>(base) + at, n);
}

}  // namespace trident::cpu
