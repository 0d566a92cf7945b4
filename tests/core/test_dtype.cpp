// bf16 / fp16 conversions: round-to-nearest-even at the halfway points, NaN, infinities,
// overflow and subnormals, checked against values worked out by hand (IEEE 754).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "trident/core/dtype.hpp"
#include "trident/core/error.hpp"

namespace trident {
namespace {

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(fp32_to_bf16_bits(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 (even) and 1 + 2^-7: ties to even -> 1.0.
  EXPECT_EQ(fp32_to_bf16_bits(from_bits(0x3f808000u)), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd mantissa) and 1 + 2^-6: ties to even -> up.
  EXPECT_EQ(fp32_to_bf16_bits(from_bits(0x3f818000u)), 0x3f82);
  // Just above halfway rounds up, just below rounds down.
  EXPECT_EQ(fp32_to_bf16_bits(from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(fp32_to_bf16_bits(from_bits(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(fp32_to_bf16_bits(-2.0f), 0xc000);
}

TEST(BFloat16, SpecialValues) {
  EXPECT_EQ(fp32_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(fp32_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  const uint16_t nan = fp32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16_bits_to_fp32(nan)));
  // A NaN whose payload sits only in the dropped bits must stay NaN, not become inf.
  EXPECT_TRUE(std::isnan(bf16_bits_to_fp32(fp32_to_bf16_bits(from_bits(0x7f800001u)))));
  // The largest float rounds up to inf in bf16.
  EXPECT_EQ(fp32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(bf16_bits_to_fp32(0x3f80), 1.0f);
}

TEST(Float16, RoundsToNearestEven) {
  EXPECT_EQ(fp32_to_fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16_bits(-2.5f), 0xc100);
  EXPECT_EQ(fp32_to_fp16_bits(65504.0f), 0x7bff);  // largest finite half
  // 1 + 2^-11 is halfway between 1.0 (even) and 1 + 2^-10: ties to even -> 1.0.
  EXPECT_EQ(fp32_to_fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9: -> up.
  EXPECT_EQ(fp32_to_fp16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // 65520 is halfway between 65504 and 65536 (overflow): ties to even -> inf.
  EXPECT_EQ(fp32_to_fp16_bits(65520.0f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16_bits(65519.0f), 0x7bff);
}

TEST(Float16, SubnormalsAndSpecials) {
  EXPECT_EQ(fp32_to_fp16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16_bits(std::ldexp(1.0f, -25)), 0x0000);  // halfway to 0: ties to even
  EXPECT_EQ(fp32_to_fp16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp -> 2 (even)
  EXPECT_EQ(fp32_to_fp16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(fp32_to_fp16_bits(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(fp16_bits_to_fp32(fp32_to_fp16_bits(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(fp16_bits_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_bits_to_fp32(0x7c00), std::numeric_limits<float>::infinity());
}

TEST(Float16, EveryHalfRoundTripsExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_bits_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(fp32_to_fp16_bits(f), h) << std::hex << h;
  }
}

TEST(DType, NamesRoundTripAndUnknownIsAConfigError) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI32})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_THROW(dtype_from_name("fp8"), ConfigError);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
}

}  // namespace
}  // namespace trident
