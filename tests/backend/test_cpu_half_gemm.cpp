// 16-bit storage on the CPU backend, part 1: ops.copy conversions between fp32, bf16 and fp16
// (bitwise those of core/dtype.hpp, odd lengths for the vector tails) and GEMMs with every
// combination of fp32/bf16/fp16 operands, including beta = 1 accumulation into fp32.
#include "test_cpu_half_util.hpp"

namespace trident::test {
namespace {

class CpuHalfGemmTest : public CpuOpsTest {};

// Every 16-bit pattern widens to the value of the scalar conversion (NaN stays NaN).
TEST_F(CpuHalfGemmTest, WideningMatchesScalarForEveryPattern) {
  for (DType dtype : kHalfTypes) {
    Tensor h = ops_->zeros(Shape{65536}, dtype);
    uint16_t* bits = static_cast<uint16_t*>(h.raw());
    for (int i = 0; i < 65536; ++i) bits[i] = static_cast<uint16_t>(i);
    const Vec got = values(*ops_, h);
    for (int i = 0; i < 65536; ++i) {
      const float want = dtype == DType::kBF16 ? bf16_bits_to_fp32(uint16_t(i)) : fp16_bits_to_fp32(uint16_t(i));
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i])) << i;
      else EXPECT_EQ(got[i], double(want)) << dtype_name(dtype) << " pattern " << i;
    }
  }
}

// Rounding: random values, exact ties, overflow, inf, NaN, fp16 subnormals, at lengths that
// leave every tail size. bf16 flushes fp32 subnormals (vcvtne2ps2bf16), so none are tested.
TEST_F(CpuHalfGemmTest, RoundingMatchesScalarConversion) {
  std::vector<float> special = {0.0f, -0.0f, 1.0f, 1.00390625f /* bf16 tie */, 1.01171875f, 65504.0f, 65520.0f,
                                1e30f, -3e38f, INFINITY, -INFINITY, NAN, 6e-5f, 3e-7f, -1e-6f, 1.17549435e-38f,
                                1.0009765625f /* fp16 tie */, 1.00146484375f};
  for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 47, 4099}) {
    Tensor f = randn<float>(Shape{n}, 100 + uint64_t(n), 3.0);
    for (int64_t i = 0; i < n && i < int64_t(special.size()); ++i) f.data<float>()[i] = special[size_t(i)];
    for (DType dtype : kHalfTypes) {
      Tensor h = as_dtype(*ops_, f, dtype);
      const uint16_t* bits = static_cast<const uint16_t*>(h.raw());
      for (int64_t i = 0; i < n; ++i) {
        const float x = f.data<float>()[i];
        const uint16_t want = dtype == DType::kBF16 ? fp32_to_bf16_bits(x) : fp32_to_fp16_bits(x);
        if (std::isnan(x)) EXPECT_TRUE(std::isnan(values(*ops_, h)[size_t(i)]));
        else EXPECT_EQ(bits[i], want) << dtype_name(dtype) << " n=" << n << " x=" << x;
      }
      // bf16 <-> fp16 goes through fp32
      const DType other = dtype == DType::kBF16 ? DType::kF16 : DType::kBF16;
      Tensor o = as_dtype(*ops_, h, other);
      Tensor want = as_dtype(*ops_, as_dtype(*ops_, h, DType::kF32), other);
      EXPECT_EQ(std::memcmp(o.raw(), want.raw(), o.bytes()), 0);
    }
  }
}

TEST_F(CpuHalfGemmTest, CopyRejectsConversionsItDoesNotHave) {
  Tensor h = ops_->zeros(Shape{8}, DType::kBF16), d = ops_->zeros(Shape{8}, DType::kF64),
         i = ops_->zeros(Shape{8}, DType::kI32);
  EXPECT_THROW(ops_->copy(h, d), Error);
  EXPECT_THROW(ops_->copy(i, h), Error);
}

struct GemmShape {
  int64_t M, N, K;
};

// op(a) op(b) with each operand fp32/bf16/fp16, c fp32/bf16/fp16, against the fp32 GEMM of the
// same (16-bit) values. beta = 1 accumulates into c (the fp32 master-gradient case).
TEST_F(CpuHalfGemmTest, EveryDtypeCombinationMatchesFp32OnTheSameValues) {
  const DType kAll[] = {DType::kF32, DType::kBF16, DType::kF16};
  uint64_t seed = 300;
  for (GemmShape s : {GemmShape{37, 29, 61}, GemmShape{1, 7, 3}, GemmShape{64, 130, 257}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (DType da : kAll)
          for (DType db : kAll)
            for (DType dc : kAll)
              for (double beta : {0.0, 1.0}) {
                SCOPED_TRACE(testing::Message() << "M=" << s.M << " N=" << s.N << " K=" << s.K << " ta=" << ta
                                                << " tb=" << tb << " a " << dtype_name(da) << " b " << dtype_name(db)
                                                << " c " << dtype_name(dc) << " beta=" << beta);
                // inputs hold values exact in their dtype; the reference runs on those values in fp32
                const Tensor a = as_dtype(*ops_, randn<float>(ta ? Shape{s.K, s.M} : Shape{s.M, s.K}, ++seed), da);
                const Tensor b = as_dtype(*ops_, randn<float>(tb ? Shape{s.N, s.K} : Shape{s.K, s.N}, ++seed), db);
                Tensor c = as_dtype(*ops_, randn<float>(Shape{s.M, s.N}, ++seed), dc);
                Tensor want = as_dtype(*ops_, c, DType::kF32);
                ops_->gemm(ta, tb, 0.5, as_dtype(*ops_, a, DType::kF32), as_dtype(*ops_, b, DType::kF32), beta, want);
                ops_->gemm(ta, tb, 0.5, a, b, beta, c);
                // fp32 c: both results are fp32 sums of the same exact products, so they differ by
                // accumulation order only (K terms, relative 1e-5 of the largest is ample)
                EXPECT_HALF_CLOSE(*ops_, c, want, dc);
              }
}

// At bf16 matmul precision fp32 operands are rounded to bf16; a bf16 operand is used as it is.
TEST_F(CpuHalfGemmTest, Bf16PrecisionRoundsFp32OperandsOnly) {
  if (ops_->set_matmul_precision(DType::kBF16) != DType::kBF16)
    GTEST_SKIP() << "bf16 GEMMs run in fp32 here: " << ops_->matmul_precision_note();
  const int64_t M = 33, N = 17, K = 45;
  const Pair a = random_pair(*ops_, Shape{M, K}, 1, DType::kBF16);
  const Tensor b = randn<float>(Shape{N, K}, 2);  // not bf16-exact
  Tensor c = ops_->zeros(Shape{M, N}, DType::kF32), want = ops_->zeros(Shape{M, N}, DType::kF32);
  ops_->gemm(false, true, 1.0, a.half, b, 0.0, c);
  ASSERT_EQ(ops_->set_matmul_precision(DType::kF32), DType::kF32);
  ops_->gemm(false, true, 1.0, a.f32, as_dtype(*ops_, as_dtype(*ops_, b, DType::kBF16), DType::kF32), 0.0, want);
  EXPECT_LE(max_err(values(*ops_, c), values(*ops_, want)), 1e-5);
}

// gemm_parts widens an operand shared by every part once (the fused q/k/v and gate/up
// projections over bf16 activations when GEMMs compute in fp32); each part must still equal
// its own gemm bit for bit, at every precision, for a shared a or a shared b.
TEST_F(CpuHalfGemmTest, GemmPartsWithASharedHalfOperandEqualsEachPartAlone) {
  const int64_t M = 37, N = 21, K = 45;
  uint64_t seed = 700;
  for (DType precision : {DType::kF32, DType::kBF16, DType::kF16})
    for (DType shared : {DType::kBF16, DType::kF16, DType::kF32})
      for (DType part : {DType::kBF16, DType::kF32})
        for (DType out : {DType::kBF16, DType::kF32}) {
          SCOPED_TRACE(testing::Message() << "precision " << dtype_name(precision) << ", shared "
                                          << dtype_name(shared) << ", parts " << dtype_name(part) << ", c "
                                          << dtype_name(out));
          if (ops_->set_matmul_precision(precision) != precision) continue;  // no bf16 GEMMs here
          const Tensor x = as_dtype(*ops_, randn<float>(Shape{M, K}, ++seed), shared);
          std::vector<Tensor> w, c, want, dw, dw_want;
          for (int g = 0; g < 3; ++g) {
            w.push_back(as_dtype(*ops_, randn<float>(Shape{N, K}, ++seed), part));
            c.push_back(as_dtype(*ops_, randn<float>(Shape{M, N}, ++seed), out));
            want.push_back(as_dtype(*ops_, c.back(), out));
            ops_->gemm(false, true, 0.5, x, w.back(), 1.0, want.back());
            dw.push_back(ops_->zeros(Shape{N, K}, DType::kF32));
            dw_want.push_back(ops_->zeros(Shape{N, K}, DType::kF32));
          }
          ops_->gemm_parts(false, true, 0.5, {x}, w, 1.0, c);  // shared a: c[g] += 0.5 x w[g]^T
          for (int g = 0; g < 3; ++g) {
            EXPECT_EQ(values(*ops_, c[size_t(g)]), values(*ops_, want[size_t(g)])) << "part " << g;
            ops_->gemm(true, false, 1.0, c[size_t(g)], x, 0.0, dw_want[size_t(g)]);
          }
          ops_->gemm_parts(true, false, 1.0, c, {x}, 0.0, dw);  // shared b: dw[g] = c[g]^T x
          for (int g = 0; g < 3; ++g)
            EXPECT_EQ(values(*ops_, dw[size_t(g)]), values(*ops_, dw_want[size_t(g)])) << "part " << g;
        }
  ASSERT_EQ(ops_->set_matmul_precision(DType::kF32), DType::kF32);
}

TEST_F(CpuHalfGemmTest, RejectsMixingFp64AndIntegers) {
  Tensor a = ops_->zeros(Shape{4, 4}, DType::kBF16), d = ops_->zeros(Shape{4, 4}, DType::kF64),
         f = ops_->zeros(Shape{4, 4}, DType::kF32), i = ops_->zeros(Shape{4, 4}, DType::kI32);
  EXPECT_THROW(ops_->gemm(false, false, 1.0, a, d, 0.0, f), Error);
  EXPECT_THROW(ops_->gemm(false, false, 1.0, d, d, 0.0, f), Error);
  EXPECT_THROW(ops_->gemm(false, false, 1.0, a, i, 0.0, f), Error);
}

}  // namespace
}  // namespace trident::test
