// 16-bit storage on the CPU backend, part 2: every activation kernel with bf16/fp16
// activations against the same kernel in fp32 on the same values (tolerances in
// test_cpu_half_util.hpp), at odd sizes and above the parallel thresholds; mixed fp32/16-bit
// arguments, aliasing, and the errors for dtypes a kernel does not take.
#include "test_cpu_half_util.hpp"

namespace trident::test {
namespace {

class CpuHalfKernelTest : public CpuOpsTest {
 protected:
  Pair pair(Shape shape, uint64_t seed, DType dtype, double scale = 1.0) {
    return random_pair(*ops_, shape, seed, dtype, scale);
  }
  Tensor f32(Shape shape) { return ops_->zeros(shape, DType::kF32); }
};

TEST_F(CpuHalfKernelTest, AddScaleSumSquaresDropout) {
  const int64_t n = 100003;  // several chunks, parallel, odd tail
  for (DType dt : kHalfTypes) {
    Pair a = pair(Shape{n}, 1, dt), b = pair(Shape{n}, 2, dt);
    Tensor want = f32(Shape{n});
    ops_->add(a.f32, b.f32, want);
    Tensor got = ops_->zeros(Shape{n}, dt);
    ops_->add(a.half, b.half, got);
    EXPECT_HALF_CLOSE(*ops_, got, want, dt);
    // mixed: 16-bit branch output added into an fp32 residual, in place
    Tensor residual = randn<float>(Shape{n}, 3), want_res = as_dtype(*ops_, residual, DType::kF32);
    ops_->add(want_res, b.f32, want_res);
    ops_->add(residual, b.half, residual);
    EXPECT_HALF_CLOSE(*ops_, residual, want_res, dt);
    // out aliases a (16-bit)
    ops_->add(a.half, b.half, a.half);
    EXPECT_HALF_CLOSE(*ops_, a.half, want, dt);

    Pair s = pair(Shape{n}, 4, dt);
    ops_->scale(s.f32, -1.25);
    ops_->scale(s.half, -1.25);
    EXPECT_HALF_CLOSE(*ops_, s.half, s.f32, dt);
    Pair q = pair(Shape{n}, 5, dt);
    EXPECT_NEAR(ops_->sum_squares(q.half), ops_->sum_squares(q.f32), 1e-12 * ops_->sum_squares(q.f32));

    for (int64_t first : {0, 1, 7}) {
      Pair d = pair(Shape{n}, 6, dt);
      ops_->dropout(d.f32, 0.3, 11, 2, first);
      ops_->dropout(d.half, 0.3, 11, 2, first);
      EXPECT_HALF_CLOSE(*ops_, d.half, d.f32, dt);
      const Vec got_d = values(*ops_, d.half), want_d = values(*ops_, d.f32);
      for (size_t i = 0; i < got_d.size(); ++i) ASSERT_EQ(got_d[i] == 0, want_d[i] == 0) << i;  // same mask
    }
  }
}

TEST_F(CpuHalfKernelTest, BiasAddAndBackward) {
  for (DType dt : kHalfTypes)
    for (int64_t C : {1, 13, 67, 130}) {
      const int64_t N = 701;
      Pair y = pair(Shape{N, C}, 7, dt);
      Tensor bias = randn<float>(Shape{C}, 8), db_half = randn<float>(Shape{C}, 9),
             db_f32 = as_dtype(*ops_, db_half, DType::kF32);
      ops_->bias_backward(y.f32, db_f32);
      ops_->bias_backward(y.half, db_half);  // dbias stays fp32
      EXPECT_HALF_CLOSE(*ops_, db_half, db_f32, dt);
      ops_->add_bias(y.f32, bias);
      ops_->add_bias(y.half, bias);
      EXPECT_HALF_CLOSE(*ops_, y.half, y.f32, dt);
    }
}

TEST_F(CpuHalfKernelTest, GeluAndSwiglu) {
  const int64_t N = 37, F = 1111;
  for (DType dt : kHalfTypes) {
    Pair x = pair(Shape{N, F}, 10, dt, 2.0), up = pair(Shape{N, F}, 11, dt), dy = pair(Shape{N, F}, 12, dt);
    Tensor y = ops_->zeros(Shape{N, F}, dt), want = f32(Shape{N, F});
    ops_->gelu_forward(x.f32, want);
    ops_->gelu_forward(x.half, y);
    EXPECT_HALF_CLOSE(*ops_, y, want, dt);
    Tensor y32 = f32(Shape{N, F});  // 16-bit input, fp32 output
    ops_->gelu_forward(x.half, y32);
    EXPECT_HALF_CLOSE(*ops_, y32, want, dt);
    Pair dx = pair(Shape{N, F}, 12, dt);  // a copy of dy, overwritten in place (dx aliases dy)
    ops_->gelu_backward(x.f32, dy.f32, want);
    ops_->gelu_backward(x.half, dx.half, dx.half);
    EXPECT_HALF_CLOSE(*ops_, dx.half, want, dt);

    ops_->swiglu_forward(x.f32, up.f32, want);
    ops_->swiglu_forward(x.half, up.half, y);
    EXPECT_HALF_CLOSE(*ops_, y, want, dt);
    Tensor dgate = ops_->zeros(Shape{N, F}, dt), dup = ops_->zeros(Shape{N, F}, dt);
    Tensor want_dgate = f32(Shape{N, F}), want_dup = f32(Shape{N, F});
    ops_->swiglu_backward(x.f32, up.f32, dy.f32, want_dgate, want_dup);
    ops_->swiglu_backward(x.half, up.half, dy.half, dgate, dup);
    EXPECT_HALF_CLOSE(*ops_, dgate, want_dgate, dt);
    EXPECT_HALF_CLOSE(*ops_, dup, want_dup, dt);
  }
}

TEST_F(CpuHalfKernelTest, LayerNormAndRmsNorm) {
  constexpr double kEps = 1e-5;
  for (DType dt : kHalfTypes)
    for (int64_t C : {1, 13, 67, 200, 771}) {
      SCOPED_TRACE(testing::Message() << "C=" << C);
      const int64_t N = 45;
      Pair x = pair(Shape{5, 9, C}, 21, dt, 2.0), dy = pair(Shape{5, 9, C}, 24, dt);
      Pair dx = pair(Shape{5, 9, C}, 25, dt);  // "+=" onto 16-bit values
      const Tensor w = randn<float>(Shape{C}, 22), b = randn<float>(Shape{C}, 23);
      Tensor dw = randn<float>(Shape{C}, 26), db = randn<float>(Shape{C}, 27);
      Tensor dw32 = as_dtype(*ops_, dw, DType::kF32), db32 = as_dtype(*ops_, db, DType::kF32);
      Tensor y = ops_->zeros(x.half.shape(), dt), want_y = f32(x.half.shape());
      Tensor mean = f32(Shape{N}), rstd = f32(Shape{N}), mean32 = f32(Shape{N}), rstd32 = f32(Shape{N});
      ops_->layernorm_forward(x.f32, w, b, kEps, want_y, mean32, rstd32);
      ops_->layernorm_forward(x.half, w, b, kEps, y, mean, rstd);
      EXPECT_HALF_CLOSE(*ops_, y, want_y, dt);
      EXPECT_HALF_CLOSE(*ops_, mean, mean32, dt);
      EXPECT_HALF_CLOSE(*ops_, rstd, rstd32, dt);
      Tensor y_from_f32 = ops_->zeros(x.half.shape(), dt);  // fp32 residual in, 16-bit out
      ops_->layernorm_forward(x.f32, w, b, kEps, y_from_f32, mean, rstd);
      EXPECT_HALF_CLOSE(*ops_, y_from_f32, want_y, dt);
      ops_->layernorm_backward(dy.f32, x.f32, w, mean32, rstd32, dx.f32, dw32, db32);
      ops_->layernorm_backward(dy.half, x.half, w, mean, rstd, dx.half, dw, db);
      EXPECT_HALF_CLOSE(*ops_, dx.half, dx.f32, dt);
      EXPECT_HALF_CLOSE(*ops_, dw, dw32, dt);
      EXPECT_HALF_CLOSE(*ops_, db, db32, dt);

      ops_->rmsnorm_forward(x.f32, w, kEps, want_y, rstd32);
      ops_->rmsnorm_forward(x.half, w, kEps, y, rstd);
      EXPECT_HALF_CLOSE(*ops_, y, want_y, dt);
      EXPECT_HALF_CLOSE(*ops_, rstd, rstd32, dt);
      ops_->rmsnorm_backward(dy.f32, x.f32, w, rstd32, dx.f32, dw32);
      ops_->rmsnorm_backward(dy.half, x.half, w, rstd, dx.half, dw);
      EXPECT_HALF_CLOSE(*ops_, dx.half, dx.f32, dt);
      EXPECT_HALF_CLOSE(*ops_, dw, dw32, dt);
    }
}

TEST_F(CpuHalfKernelTest, RopeAndEmbedding) {
  const int64_t N = 23, HS = 10, H = 3, C = 77, V = 50, P = 40;
  std::vector<int32_t> pos_v, tok_v;
  for (int64_t n = 0; n < N; ++n) {
    pos_v.push_back(int32_t((n * 7) % P));
    tok_v.push_back(int32_t((n * 13) % (V + 20)));  // some outside the shard
  }
  const Tensor pos = i32_tensor(pos_v), tok = i32_tensor(tok_v);
  for (DType dt : kHalfTypes) {
    Pair x = pair(Shape{N, H * HS}, 30, dt);
    ops_->rope_forward(x.f32, pos, int(HS), RotaryFrequencies::plain(10000.0, int(HS)));
    ops_->rope_forward(x.half, pos, int(HS), RotaryFrequencies::plain(10000.0, int(HS)));
    EXPECT_HALF_CLOSE(*ops_, x.half, x.f32, dt);
    ops_->rope_backward(x.f32, pos, int(HS), RotaryFrequencies::plain(10000.0, int(HS)));
    ops_->rope_backward(x.half, pos, int(HS), RotaryFrequencies::plain(10000.0, int(HS)));
    EXPECT_HALF_CLOSE(*ops_, x.half, x.f32, dt);

    const Tensor wte = randn<float>(Shape{V, C}, 31), wpe = randn<float>(Shape{P, C}, 32);
    Tensor out = ops_->zeros(Shape{N, C}, dt), want = f32(Shape{N, C});
    for (const Tensor& pe : {wpe, Tensor()}) {
      ops_->embedding_forward(tok, pos, wte, pe, 10, want);
      ops_->embedding_forward(tok, pos, wte, pe, 10, out);
      EXPECT_HALF_CLOSE(*ops_, out, want, dt);
    }
    Pair dout = pair(Shape{N, C}, 33, dt);
    Tensor dwte = randn<float>(Shape{V, C}, 34), dwpe = randn<float>(Shape{P, C}, 35);
    Tensor dwte32 = as_dtype(*ops_, dwte, DType::kF32), dwpe32 = as_dtype(*ops_, dwpe, DType::kF32);
    ops_->embedding_backward(tok, pos, dout.f32, 10, dwte32, dwpe32);
    ops_->embedding_backward(tok, pos, dout.half, 10, dwte, dwpe);  // table grads stay fp32
    EXPECT_HALF_CLOSE(*ops_, dwte, dwte32, dt);
    EXPECT_HALF_CLOSE(*ops_, dwpe, dwpe32, dt);
  }
}

std::vector<int32_t> document_positions(int64_t B, int64_t T) {
  const int lengths[] = {5, 1, 70, 31, 2, 64, 17};
  std::vector<int32_t> pos;
  size_t next = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0, left = 0, p = 0; t < T; ++t, ++p, --left) {
      if (left == 0) left = lengths[next++ % std::size(lengths)], p = 0;
      pos.push_back(int32_t(p));
    }
  return pos;
}

TEST_F(CpuHalfKernelTest, AttentionWithAndWithoutDocumentMasking) {
  const int64_t B = 2, T = 131, NH = 4, NKV = 2, HS = 24;
  const Tensor positions = i32_tensor(document_positions(B, T));
  for (DType dt : kHalfTypes)
    for (const Tensor& pos : {Tensor(), positions}) {
      SCOPED_TRACE(testing::Message() << "document masking " << pos.defined());
      Pair q = pair(Shape{B, T, NH * HS}, 40, dt), k = pair(Shape{B, T, NKV * HS}, 41, dt),
           v = pair(Shape{B, T, NKV * HS}, 42, dt), dout = pair(Shape{B, T, NH * HS}, 43, dt);
      Tensor out = ops_->zeros(q.half.shape(), dt), out32 = f32(q.half.shape());
      Tensor lse = f32(Shape{B, NH, T}), lse32 = f32(Shape{B, NH, T});
      ops_->attention_forward(q.f32, k.f32, v.f32, int(NH), int(NKV), pos, out32, lse32);
      ops_->attention_forward(q.half, k.half, v.half, int(NH), int(NKV), pos, out, lse);
      EXPECT_HALF_CLOSE(*ops_, out, out32, dt);
      EXPECT_HALF_CLOSE(*ops_, lse, lse32, dt);
      // backward of the fp32 run uses the 16-bit run's out, as a model storing out in 16 bits would
      const Tensor out_values = as_dtype(*ops_, out, DType::kF32);
      Tensor dq = ops_->zeros(q.half.shape(), dt), dk = ops_->zeros(k.half.shape(), dt),
             dv = ops_->zeros(v.half.shape(), dt);
      Tensor dq32 = f32(q.half.shape()), dk32 = f32(k.half.shape()), dv32 = f32(v.half.shape());
      ops_->attention_backward(q.f32, k.f32, v.f32, out_values, lse, dout.f32, int(NH), int(NKV), pos, dq32, dk32,
                               dv32);
      ops_->attention_backward(q.half, k.half, v.half, out, lse, dout.half, int(NH), int(NKV), pos, dq, dk, dv);
      EXPECT_HALF_CLOSE(*ops_, dq, dq32, dt);
      EXPECT_HALF_CLOSE(*ops_, dk, dk32, dt);
      EXPECT_HALF_CLOSE(*ops_, dv, dv32, dt);
    }
}

// The mix a model with bf16 storage and fp32 GEMMs passes: q, k, v, out 16-bit (read in place,
// tile by tile), dout, dq, dk, dv fp32. Widening is exact and the arithmetic is the fp32 kernel's,
// so every result must be the fp32 kernel's bits on the same values (out: rounded once).
TEST_F(CpuHalfKernelTest, AttentionReads16BitTensorsInPlaceWithTheFp32KernelsBits) {
  const int64_t B = 2, T = 131, NH = 4, NKV = 2, HS = 24;
  const Tensor positions = i32_tensor(document_positions(B, T));
  auto expect_same_bits = [&](const Tensor& got, const Tensor& want) {
    const Vec g = values(*ops_, got), w = values(*ops_, want);
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], w[i]) << "element " << i;
  };
  for (DType dt : kHalfTypes)
    for (const Tensor& pos : {Tensor(), positions}) {
      SCOPED_TRACE(testing::Message() << dtype_name(dt) << ", document masking " << pos.defined());
      Pair q = pair(Shape{B, T, NH * HS}, 60, dt), k = pair(Shape{B, T, NKV * HS}, 61, dt),
           v = pair(Shape{B, T, NKV * HS}, 62, dt);
      const Tensor dout = randn<float>(Shape{B, T, NH * HS}, 63);
      Tensor out = ops_->zeros(q.half.shape(), dt), out32 = f32(q.half.shape());
      Tensor lse = f32(Shape{B, NH, T}), lse32 = f32(Shape{B, NH, T});
      ops_->attention_forward(q.f32, k.f32, v.f32, int(NH), int(NKV), pos, out32, lse32);
      ops_->attention_forward(q.half, k.half, v.half, int(NH), int(NKV), pos, out, lse);
      expect_same_bits(out, as_dtype(*ops_, out32, dt));
      expect_same_bits(lse, lse32);
      Tensor dq = f32(q.half.shape()), dk = f32(k.half.shape()), dv = f32(v.half.shape());
      Tensor dq32 = f32(q.half.shape()), dk32 = f32(k.half.shape()), dv32 = f32(v.half.shape());
      ops_->attention_backward(q.f32, k.f32, v.f32, as_dtype(*ops_, out, DType::kF32), lse, dout, int(NH), int(NKV),
                               pos, dq32, dk32, dv32);
      ops_->attention_backward(q.half, k.half, v.half, out, lse, dout, int(NH), int(NKV), pos, dq, dk, dv);
      expect_same_bits(dq, dq32);
      expect_same_bits(dk, dk32);
      expect_same_bits(dv, dv32);
    }
}

TEST_F(CpuHalfKernelTest, CrossEntropyFusedAndVocabParallel) {
  const int64_t N = 19, V = 2053;
  std::vector<int32_t> tgt_v;
  for (int64_t n = 0; n < N; ++n) tgt_v.push_back(n % 5 == 3 ? -1 : int32_t((n * 389) % V));
  const Tensor targets = i32_tensor(tgt_v);
  for (DType dt : kHalfTypes) {
    Pair logits = pair(Shape{N, V}, 50, dt, 3.0);
    Tensor losses = f32(Shape{N}), losses32 = f32(Shape{N}), dlogits32 = f32(Shape{N, V});
    ops_->cross_entropy_forward_backward(logits.f32, targets, 0.5, losses32, dlogits32);
    ops_->cross_entropy_forward_backward(logits.half, targets, 0.5, losses, logits.half);  // dlogits aliases logits
    EXPECT_HALF_CLOSE(*ops_, losses, losses32, dt);
    EXPECT_HALF_CLOSE(*ops_, logits.half, dlogits32, dt);

    // a shard of global ids [1000, 1000 + V) with 40 padding columns
    Pair shard = pair(Shape{N, V}, 51, dt, 3.0);
    const int64_t valid = V - 40, offset = 1000;
    Tensor mx = f32(Shape{N}), se = f32(Shape{N}), tl = f32(Shape{N});
    Tensor mx32 = f32(Shape{N}), se32 = f32(Shape{N}), tl32 = f32(Shape{N});
    ops_->cross_entropy_shard_stats(shard.f32, targets, offset, valid, mx32, se32, tl32);
    ops_->cross_entropy_shard_stats(shard.half, targets, offset, valid, mx, se, tl);
    EXPECT_HALF_CLOSE(*ops_, mx, mx32, dt);
    EXPECT_HALF_CLOSE(*ops_, se, se32, dt);
    EXPECT_HALF_CLOSE(*ops_, tl, tl32, dt);
    Tensor d = ops_->zeros(Shape{N, V}, dt), d32 = f32(Shape{N, V});
    ops_->cross_entropy_shard_backward(shard.f32, targets, offset, valid, mx32, se32, 0.5, d32);
    ops_->cross_entropy_shard_backward(shard.half, targets, offset, valid, mx, se, 0.5, d);
    EXPECT_HALF_CLOSE(*ops_, d, d32, dt);
  }
}

// Parameters, their gradients and saved statistics are fp32: a 16-bit one is a clear error, as
// is mixing fp64 with 16-bit activations.
TEST_F(CpuHalfKernelTest, RejectsUnsupportedDtypes) {
  const int64_t N = 4, C = 8;
  Tensor x = ops_->zeros(Shape{N, C}, DType::kBF16), y = ops_->zeros(Shape{N, C}, DType::kBF16);
  Tensor w = ops_->zeros(Shape{C}, DType::kF32), w16 = ops_->zeros(Shape{C}, DType::kBF16);
  Tensor stat = f32(Shape{N}), stat16 = ops_->zeros(Shape{N}, DType::kBF16);
  EXPECT_THROW(ops_->layernorm_forward(x, w16, w, 1e-5, y, stat, stat), Error);
  EXPECT_THROW(ops_->rmsnorm_forward(x, w, 1e-5, y, stat16), Error);
  EXPECT_THROW(ops_->add_bias(y, w16), Error);
  Tensor x64 = ops_->zeros(Shape{N, C}, DType::kF64), xi = ops_->zeros(Shape{N, C}, DType::kI32);
  EXPECT_THROW(ops_->gelu_forward(x64, y), Error);
  EXPECT_THROW(ops_->gelu_forward(xi, y), Error);
  EXPECT_THROW(ops_->add(x, x64, y), Error);
  Tensor losses16 = ops_->zeros(Shape{N}, DType::kBF16);
  EXPECT_THROW(ops_->cross_entropy_forward_backward(x, i32_tensor({0, 1, 2, 3}), 1.0, losses16, x), Error);
  try {
    ops_->rmsnorm_forward(x, w16, 1e-5, y, stat);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w is bf16, expected fp32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trident::test
