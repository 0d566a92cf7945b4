// CUDA flash attention against the CPU backend on the same inputs: forward (out, lse), backward
// (dq, dk, dv, given the CPU forward's out and lse), and generation against a cache. fp32, bf16
// and fp16 activations (16-bit ones at head size 64 or 128 run on the tensor-core kernels), odd
// sequence lengths and head sizes, GQA, and packed documents.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cuda_ops.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/tensor.hpp"
#include "../backend/test_cpu_util.hpp"
#include "cuda_test_support.hpp"

namespace trident {
namespace {

Ops& cpu() {
  static std::unique_ptr<Ops> ops = make_cpu_ops(1);
  return *ops;
}

using cuda_test::to_device;
using cuda_test::to_host;

// Standard normal fp32 values keyed by seed, rounded to dtype on the host.
Tensor randn(Shape shape, uint64_t seed, DType dtype) { return cuda_test::host_randn(cpu(), shape, seed, dtype); }

std::vector<double> values(const Tensor& host) { return cuda_test::values(cpu(), host); }

// max|got - want| / max(max|want|, floor) (both host tensors); infinite when one has a NaN the
// other lacks. Gradients use floor 1 (the scale of the unit-normal inputs): where the true
// gradient is ~0 (dq, dk of a one-token softmax) both backends hold rounding noise only.
double rel_err(const Tensor& got, const Tensor& want, double floor = 1e-30) {
  return test::max_err(values(got), values(want), floor);
}

// fp32: summation order only. bf16: outputs may round to neighbouring bf16 values (2^-8).
double tolerance(DType dtype, bool gradient) {
  if (dtype == DType::kF32) return gradient ? 2e-5 : 1e-5;
  return 1e-2;
}

// Whether a case runs on the tensor-core kernels: every tensor bf16 or every one fp16, head
// size 64 or 128.
bool tensor_core_path(DType dtype, int64_t HS) {
  return (dtype == DType::kBF16 || dtype == DType::kF16) && (HS == 64 || HS == 128);
}

// The tensor-core kernels round P (and dS in the backward) to the 16-bit input dtype before
// their products, as FlashAttention-2 does: each term of a sum carries up to half a unit of that
// rounding, on top of the output's own. Three units of the rounding tolerance cover it (a CPU
// emulation of the kernels measured below 7.5e-3 for bf16 and 1e-3 for fp16 on these cases).
double tensor_core_tolerance(DType dtype) { return 3 * cuda_test::tol_for(dtype, 0); }

double case_tolerance(DType dtype, int64_t HS, bool gradient) {
  return tensor_core_path(dtype, HS) ? tensor_core_tolerance(dtype) : tolerance(dtype, gradient);
}

struct Case {
  int64_t B, T, NH, NKV, HS;
  bool packed;  // two documents per row (positions restart)
  DType dtype;
  std::string str() const {
    return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " NH=" + std::to_string(NH) +
           " NKV=" + std::to_string(NKV) + " HS=" + std::to_string(HS) + (packed ? " packed" : "") + " " +
           std::string(dtype_name(dtype));
  }
};

// Positions for two packed documents per row: the second starts at a row-dependent offset.
Tensor packed_positions(int64_t B, int64_t T) {
  Tensor p = Tensor::zeros(Shape{B * T}, DType::kI32);
  int32_t* pos = p.data<int32_t>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t cut = std::max<int64_t>(1, T / 3 + 7 * b);
    for (int64_t t = 0; t < T; ++t) pos[b * T + t] = static_cast<int32_t>(t < cut ? t : t - cut);
  }
  return p;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (int64_t T : {1, 33, 128, 200})
      for (int64_t HS : {64, 80, 128})
        for (auto [NH, NKV] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}})
          for (bool packed : {false, true}) out.push_back({2, T, NH, NKV, HS, packed, dtype});
  // Head sizes that are no multiple of 8 and small ones, through both head-size buckets.
  out.push_back({2, 65, 4, 2, 37, true, DType::kF32});
  out.push_back({1, 97, 2, 1, 8, false, DType::kF32});
  out.push_back({3, 70, 6, 3, 100, true, DType::kF32});
  return out;
}

// The tensor-core kernels (attention_tc_*.cu): bf16 and fp16, both head sizes, ragged lengths
// (T not a multiple of the 64-row tiles, and T = 1), GQA and packed documents.
std::vector<Case> tensor_core_cases() {
  std::vector<Case> out;
  for (DType dtype : {DType::kBF16, DType::kF16})
    for (int64_t T : {1, 37, 128, 200})
      for (int64_t HS : {64, 128})
        for (bool packed : {false, true}) out.push_back({2, T, 8, 2, HS, packed, dtype});
  out.push_back({3, 70, 4, 4, 64, true, DType::kF16});   // no GQA
  out.push_back({1, 131, 3, 1, 128, false, DType::kBF16});  // one kv head for three query heads
  return out;
}

struct Inputs {
  Tensor q, k, v, positions, dout;
};

Inputs make_inputs(const Case& c, uint64_t seed) {
  Inputs in;
  in.q = randn(Shape{c.B, c.T, c.NH * c.HS}, seed, c.dtype);
  in.k = randn(Shape{c.B, c.T, c.NKV * c.HS}, seed + 1, c.dtype);
  in.v = randn(Shape{c.B, c.T, c.NKV * c.HS}, seed + 2, c.dtype);
  in.dout = randn(Shape{c.B, c.T, c.NH * c.HS}, seed + 3, c.dtype);
  if (c.packed) in.positions = packed_positions(c.B, c.T);
  return in;
}

void forward_matches_cpu(const std::vector<Case>& all, uint64_t seed) {
  auto gpu = make_cuda_ops(0);
  for (const Case& c : all) {
    SCOPED_TRACE(c.str());
    const Inputs in = make_inputs(c, seed += 10);
    Tensor out = Tensor::zeros(in.q.shape(), c.dtype), lse = Tensor::zeros(Shape{c.B, c.NH, c.T}, DType::kF32);
    cpu().attention_forward(in.q, in.k, in.v, int(c.NH), int(c.NKV), in.positions, out, lse);

    Tensor d_out = gpu->zeros(in.q.shape(), c.dtype), d_lse = gpu->zeros(lse.shape(), DType::kF32);
    gpu->attention_forward(to_device(*gpu, in.q), to_device(*gpu, in.k), to_device(*gpu, in.v), int(c.NH),
                           int(c.NKV), to_device(*gpu, in.positions), d_out, d_lse);
    EXPECT_LE(rel_err(to_host(*gpu, d_out), out), case_tolerance(c.dtype, c.HS, false)) << "out";
    EXPECT_LE(rel_err(to_host(*gpu, d_lse), lse), 1e-5) << "lse";
  }
}

void backward_matches_cpu(const std::vector<Case>& all, uint64_t seed) {
  auto gpu = make_cuda_ops(0);
  for (const Case& c : all) {
    SCOPED_TRACE(c.str());
    const Inputs in = make_inputs(c, seed += 10);
    // Both backends get the CPU forward's out and lse.
    Tensor out = Tensor::zeros(in.q.shape(), c.dtype), lse = Tensor::zeros(Shape{c.B, c.NH, c.T}, DType::kF32);
    cpu().attention_forward(in.q, in.k, in.v, int(c.NH), int(c.NKV), in.positions, out, lse);
    Tensor dq = Tensor::zeros(in.q.shape(), c.dtype), dk = Tensor::zeros(in.k.shape(), c.dtype),
           dv = Tensor::zeros(in.v.shape(), c.dtype);
    cpu().attention_backward(in.q, in.k, in.v, out, lse, in.dout, int(c.NH), int(c.NKV), in.positions, dq, dk, dv);

    // Garbage in the device outputs: they must be overwritten, not accumulated into.
    Tensor d_dq = to_device(*gpu, randn(dq.shape(), 1, c.dtype)), d_dk = to_device(*gpu, randn(dk.shape(), 2, c.dtype)),
           d_dv = to_device(*gpu, randn(dv.shape(), 3, c.dtype));
    gpu->attention_backward(to_device(*gpu, in.q), to_device(*gpu, in.k), to_device(*gpu, in.v), to_device(*gpu, out),
                            to_device(*gpu, lse), to_device(*gpu, in.dout), int(c.NH), int(c.NKV),
                            to_device(*gpu, in.positions), d_dq, d_dk, d_dv);
    const double tol = case_tolerance(c.dtype, c.HS, true);
    EXPECT_LE(rel_err(to_host(*gpu, d_dq), dq, 1.0), tol) << "dq";
    EXPECT_LE(rel_err(to_host(*gpu, d_dk), dk, 1.0), tol) << "dk";
    EXPECT_LE(rel_err(to_host(*gpu, d_dv), dv, 1.0), tol) << "dv";
  }
}

TEST(CudaAttention, ForwardMatchesCpu) {
  SKIP_WITHOUT_GPU();
  forward_matches_cpu(cases(), 100);
}

TEST(CudaAttention, BackwardMatchesCpu) {
  SKIP_WITHOUT_GPU();
  backward_matches_cpu(cases(), 5000);
}

TEST(CudaAttention, TensorCoreForwardMatchesCpu) {
  SKIP_WITHOUT_GPU();
  forward_matches_cpu(tensor_core_cases(), 300);
}

TEST(CudaAttention, TensorCoreBackwardMatchesCpu) {
  SKIP_WITHOUT_GPU();
  backward_matches_cpu(tensor_core_cases(), 7000);
}

// No atomics anywhere: two runs give the same bits (fp32 kernels and tensor-core kernels).
TEST(CudaAttention, BackwardIsDeterministic) {
  SKIP_WITHOUT_GPU();
  auto gpu = make_cuda_ops(0);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Case c{2, 200, 8, 2, 128, true, dtype};
    const Inputs in = make_inputs(c, 77);
    Tensor q = to_device(*gpu, in.q), k = to_device(*gpu, in.k), v = to_device(*gpu, in.v);
    Tensor pos = to_device(*gpu, in.positions), dout = to_device(*gpu, in.dout);
    Tensor out = gpu->zeros(q.shape(), dtype), lse = gpu->zeros(Shape{c.B, c.NH, c.T}, DType::kF32);
    gpu->attention_forward(q, k, v, int(c.NH), int(c.NKV), pos, out, lse);
    std::vector<double> first;
    for (int run = 0; run < 2; ++run) {
      Tensor dq = gpu->zeros(q.shape(), dtype), dk = gpu->zeros(k.shape(), dtype), dv = gpu->zeros(v.shape(), dtype);
      gpu->attention_backward(q, k, v, out, lse, dout, int(c.NH), int(c.NKV), pos, dq, dk, dv);
      std::vector<double> all;
      for (const Tensor* t : {&dq, &dk, &dv}) {
        const std::vector<double> f = values(to_host(*gpu, *t));
        all.insert(all.end(), f.begin(), f.end());
      }
      if (run == 0)
        first = all;
      else
        EXPECT_EQ(std::memcmp(first.data(), all.data(), all.size() * sizeof(double)), 0);
    }
  }
}

// q fp32, k bf16, v fp16, out bf16: each activation argument in its own dtype.
TEST(CudaAttention, MixedDtypes) {
  SKIP_WITHOUT_GPU();
  auto gpu = make_cuda_ops(0);
  const int64_t B = 2, T = 45, NH = 4, NKV = 2, HS = 64;
  Tensor q = randn(Shape{B, T, NH * HS}, 11, DType::kF32), k = randn(Shape{B, T, NKV * HS}, 12, DType::kBF16),
         v = randn(Shape{B, T, NKV * HS}, 13, DType::kF16), dout = randn(Shape{B, T, NH * HS}, 14, DType::kF16);
  Tensor out = Tensor::zeros(q.shape(), DType::kBF16), lse = Tensor::zeros(Shape{B, NH, T}, DType::kF32);
  cpu().attention_forward(q, k, v, int(NH), int(NKV), Tensor(), out, lse);
  Tensor d_out = gpu->zeros(q.shape(), DType::kBF16), d_lse = gpu->zeros(lse.shape(), DType::kF32);
  gpu->attention_forward(to_device(*gpu, q), to_device(*gpu, k), to_device(*gpu, v), int(NH), int(NKV), Tensor(),
                         d_out, d_lse);
  EXPECT_LE(rel_err(to_host(*gpu, d_out), out), 1e-2);
  EXPECT_LE(rel_err(to_host(*gpu, d_lse), lse), 1e-5);

  Tensor dq = Tensor::zeros(q.shape(), DType::kF32), dk = Tensor::zeros(k.shape(), DType::kBF16),
         dv = Tensor::zeros(v.shape(), DType::kF32);
  cpu().attention_backward(q, k, v, out, lse, dout, int(NH), int(NKV), Tensor(), dq, dk, dv);
  Tensor d_dq = gpu->zeros(dq.shape(), DType::kF32), d_dk = gpu->zeros(dk.shape(), DType::kBF16),
         d_dv = gpu->zeros(dv.shape(), DType::kF32);
  gpu->attention_backward(to_device(*gpu, q), to_device(*gpu, k), to_device(*gpu, v), to_device(*gpu, out),
                          to_device(*gpu, lse), to_device(*gpu, dout), int(NH), int(NKV), Tensor(), d_dq, d_dk, d_dv);
  EXPECT_LE(rel_err(to_host(*gpu, d_dq), dq, 1.0), 2e-5);
  EXPECT_LE(rel_err(to_host(*gpu, d_dk), dk, 1.0), 1e-2);
  EXPECT_LE(rel_err(to_host(*gpu, d_dv), dv, 1.0), 2e-5);
}

TEST(CudaAttention, Fp64IsAnError) {
  SKIP_WITHOUT_GPU();
  auto gpu = make_cuda_ops(0);
  Tensor q = gpu->zeros(Shape{1, 4, 64}, DType::kF64), lse = gpu->zeros(Shape{1, 1, 4}, DType::kF64);
  Tensor out = gpu->zeros(q.shape(), DType::kF64);
  EXPECT_THROW(gpu->attention_forward(q, q, q, 1, 1, Tensor(), out, lse), Error);
  Tensor start = Tensor::zeros(Shape{1}, DType::kI32);
  EXPECT_THROW(gpu->attention_cached(q, q, q, 1, 1, start, out), Error);
}

TEST(CudaAttention, CachedMatchesCpu) {
  SKIP_WITHOUT_GPU();
  auto gpu = make_cuda_ops(0);
  uint64_t seed = 9000;
  const int64_t B = 2, L = 200;
  for (int64_t S : {1, 7, 64})
    for (int64_t HS : {37, 64, 80, 128})
      for (auto [NH, NKV] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}})
        for (const int window : {0, 5, 70}) {
        SCOPED_TRACE("S=" + std::to_string(S) + " HS=" + std::to_string(HS) + " NH=" + std::to_string(NH) +
                     " NKV=" + std::to_string(NKV) + " window=" + std::to_string(window));
        Tensor q = randn(Shape{B, S, NH * HS}, seed += 10, DType::kF32);
        Tensor kc = randn(Shape{B, L, NKV * HS}, seed + 1, DType::kF32);
        Tensor vc = randn(Shape{B, L, NKV * HS}, seed + 2, DType::kF32);
        Tensor start = Tensor::zeros(Shape{B}, DType::kI32);
        start.data<int32_t>()[0] = static_cast<int32_t>(L - S);  // up to the cache's end
        start.data<int32_t>()[1] = static_cast<int32_t>(std::min<int64_t>(17, L - S));
        Tensor out = Tensor::zeros(q.shape(), DType::kF32);
        cpu().attention_cached(q, kc, vc, int(NH), int(NKV), start, out, window);
        Tensor d_out = gpu->zeros(q.shape(), DType::kF32);
        gpu->attention_cached(to_device(*gpu, q), to_device(*gpu, kc), to_device(*gpu, vc), int(NH), int(NKV), start,
                              d_out, window);
        EXPECT_LE(rel_err(to_host(*gpu, d_out), out), 1e-5);
      }
}

}  // namespace
}  // namespace trident
