// Element types and their conversions. bf16/fp16 <-> fp32 use round-to-nearest-even, with
// NaN kept quiet and overflow going to inf, bit-exact with PyTorch's conversions.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trident {

// kF64 exists for finite-difference gradient checks; kI32 for token ids and targets.
enum class DType : uint8_t { kF32, kBF16, kF16, kF64, kI32 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kF64: return 8;
    case DType::kI32: return 4;
  }
  return 0;
}

std::string_view dtype_name(DType t);
DType dtype_from_name(std::string_view name);  // "fp32", "bf16", "fp16", "fp64", "i32"

// Maps a C++ type to its DType.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };

inline uint16_t fp32_to_bf16_bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_bits_to_fp32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

uint16_t fp32_to_fp16_bits(float f);
float fp16_bits_to_fp32(uint16_t h);

}  // namespace trident
