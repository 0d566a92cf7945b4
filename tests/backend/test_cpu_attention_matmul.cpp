// bf16 attention through oneDNN matmuls (CpuOps at bf16 matmul precision) against the fp32 flash
// kernel (itself checked against a naive reference) on the same bf16 inputs: GQA, one token,
// sequences across several query blocks, document masking. Where bf16 GEMMs are not faster than
// fp32 the path is not used and the test skips.
//
// Tolerance (normalised max error, see max_err): P, dS and dout are rounded to bf16 (u = 2^-8)
// before their products, so each product term carries up to ~u of relative error; over a row
// they partly cancel. Measured here: out <= 4.2e-3 (itself a bf16 output), lse <= 1e-7, dv <=
// 2.6e-3, dq and dk <= 9e-3 (T = 300: the longest rows). The bounds: 8e-3 (2 u) for out and dv,
// 1.6e-2 (4 u) for dq and dk, 1e-6 for lse (fp32 scores); a wrong block or head is off by O(1).
#include "test_cpu_half_util.hpp"

namespace trident::test {
namespace {

struct Case {
  int64_t B, T, NH, NKV, HS;
  bool documents;
};

// Documents shorter than a tile, and one spanning two tiles of 128.
const int kDocLengths[] = {5, 1, 150, 31, 2, 64, 17};

TEST(CpuAttentionMatmul, MatchesTheFp32FlashKernelOnBf16Inputs) {
  std::unique_ptr<Ops> bf16_ops = make_cpu_ops(0), f32_ops = make_cpu_ops(0);
  if (bf16_ops->set_matmul_precision(DType::kBF16) != DType::kBF16)
    GTEST_SKIP() << "bf16 GEMMs are not faster than fp32 here (" << bf16_ops->matmul_precision_note()
                 << "): attention stays on the fp32 flash kernel";
  Ops& ops = *bf16_ops;
  const Case cases[] = {{1, 1, 2, 2, 8, false},   {2, 7, 4, 2, 16, false},  {1, 130, 4, 1, 64, false},
                        {2, 200, 6, 3, 32, true}, {1, 300, 2, 2, 64, false}, {1, 257, 4, 4, 64, true},
                        // more than one chunk of work (kChunkBytes): sequences split (8 + 1), then kv heads (7 + 1)
                        {9, 300, 4, 2, 32, true}, {1, 1300, 8, 8, 16, false}};
  uint64_t seed = 900;
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "B=" << c.B << " T=" << c.T << " NH=" << c.NH << " NKV=" << c.NKV
                                    << " HS=" << c.HS << (c.documents ? " documents" : ""));
    const Shape q_shape{c.B, c.T, c.NH * c.HS}, kv_shape{c.B, c.T, c.NKV * c.HS}, lse_shape{c.B, c.NH, c.T};
    const Pair q = random_pair(ops, q_shape, seed++, DType::kBF16, 1.5), k = random_pair(ops, kv_shape, seed++, DType::kBF16, 1.5),
               v = random_pair(ops, kv_shape, seed++, DType::kBF16);
    const Tensor dout = randn<float>(q_shape, seed++);
    const Tensor positions = c.documents ? i32_tensor(document_positions(c.B, c.T, kDocLengths)) : Tensor();
    // Reference: the fp32 flash kernel on the widened values.
    Tensor want_out = ops.zeros(q_shape, DType::kF32), want_lse = ops.zeros(lse_shape, DType::kF32);
    Tensor want_dq = ops.zeros(q_shape, DType::kF32), want_dk = ops.zeros(kv_shape, DType::kF32),
           want_dv = ops.zeros(kv_shape, DType::kF32);
    f32_ops->attention_forward(q.f32, k.f32, v.f32, int(c.NH), int(c.NKV), positions, want_out, want_lse);
    f32_ops->attention_backward(q.f32, k.f32, v.f32, want_out, want_lse, dout, int(c.NH), int(c.NKV), positions,
                                want_dq, want_dk, want_dv);
    // The matmul path: bf16 q, k, v, out; fp32 lse and gradients (as the model stores them).
    Tensor out = ops.zeros(q_shape, DType::kBF16), lse = ops.zeros(lse_shape, DType::kF32);
    Tensor dq = randn<float>(q_shape, seed++), dk = randn<float>(kv_shape, seed++), dv = randn<float>(kv_shape, seed++);
    ops.attention_forward(q.half, k.half, v.half, int(c.NH), int(c.NKV), positions, out, lse);
    ops.attention_backward(q.half, k.half, v.half, out, lse, dout, int(c.NH), int(c.NKV), positions, dq, dk, dv);
    EXPECT_LE(max_err(values(ops, out), to_vec(want_out)), 8e-3) << "out";
    EXPECT_LE(max_err(to_vec(lse), to_vec(want_lse)), 1e-6) << "lse";
    // The floor: with one token dq and dk are exactly 0.
    EXPECT_LE(max_err(to_vec(dq), to_vec(want_dq), 1.0), 1.6e-2) << "dq";
    EXPECT_LE(max_err(to_vec(dk), to_vec(want_dk), 1.0), 1.6e-2) << "dk";
    EXPECT_LE(max_err(to_vec(dv), to_vec(want_dv)), 8e-3) << "dv";
  }
}

}  // namespace
}  // namespace trident::test
