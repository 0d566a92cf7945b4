// Google Benchmark micro-benchmarks of the CPU kernels at GPT-2-124M-like shapes (8 x 256
// tokens, d 768). Each reports the GB/s of the bytes it must move ("GB=x/s") or the GFLOP/s of
// its arithmetic ("GFLOP=x/s"), next to what this machine does in the same run: copy_GB/s, a
// plain fp32 copy of 64 MiB (DRAM; BM_Copy's 6 MiB stays in cache), and peak_GFLOP/s, the
// measured FMA rate of Ops::peak_flops. Compare a kernel with those, never with numbers from
// another run or machine.
//   build/tests/trident_kernel_bench [--benchmark_filter=REGEX] [--benchmark_min_time=0.5]
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>

#include "trident/backend/cpu_ops.hpp"
#include "trident/core/rng.hpp"

namespace {

using trident::DType;
using trident::Ops;
using trident::Shape;
using trident::Tensor;

constexpr int64_t kBatch = 8, kSeq = 256, kRows = kBatch * kSeq, kHidden = 768, kHeads = 12, kFfn = 3072;
constexpr int64_t kVocab = 50304;

Ops& ops() {
  static std::unique_ptr<Ops> instance = trident::make_cpu_ops(0);
  return *instance;
}

Tensor random(Shape shape, uint64_t seed, DType dtype = DType::kF32, double scale = 1.0) {
  Tensor host = Tensor::zeros(shape, DType::kF32);
  float* p = host.data<float>();
  for (int64_t i = 0; i < host.numel(); ++i) p[i] = float(scale * trident::rng_normal(seed, uint64_t(i)));
  Tensor out = ops().zeros(shape, dtype);
  ops().copy(host, out);
  return out;
}

// The machine's references, measured once.
struct References {
  double copy_gbs = 0, peak_gflops = 0, peak_bf16_gflops = 0;
};
const References& references() {
  static const References r = [] {
    References out;
    const int64_t n = int64_t(16) << 20;  // 64 MiB of fp32
    Tensor a = random(Shape{n}, 1), b = ops().zeros(Shape{n}, DType::kF32);
    ops().copy(a, b);
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      ops().copy(a, b);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    out.copy_gbs = 2.0 * double(n) * 4 / best / 1e9;
    out.peak_gflops = ops().peak_flops(DType::kF32) / 1e9;
    out.peak_bf16_gflops = ops().peak_flops(DType::kBF16) / 1e9;
    return out;
  }();
  return r;
}

void report_bytes(benchmark::State& state, double bytes_per_call) {
  state.counters["GB"] = benchmark::Counter(bytes_per_call / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["copy_GB/s"] = references().copy_gbs;
}

void report_flops(benchmark::State& state, double flops_per_call, bool bf16 = false) {
  state.counters["GFLOP"] = benchmark::Counter(flops_per_call / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_GFLOP/s"] = bf16 ? references().peak_bf16_gflops : references().peak_gflops;
}

// The matmul precision of a benchmark's GEMMs and attention: bf16 (arg 1) where bf16 GEMMs are
// the faster here, else the benchmark is skipped; fp32 (arg 0). Restored to fp32 by the caller.
bool use_precision(benchmark::State& state, bool bf16) {
  const DType want = bf16 ? DType::kBF16 : DType::kF32;
  if (ops().set_matmul_precision(want) == want) return true;
  state.SkipWithError(("bf16 GEMMs are not the faster here: " + ops().matmul_precision_note()).c_str());
  ops().set_matmul_precision(DType::kF32);
  return false;
}

void BM_Copy(benchmark::State& state) {
  Tensor a = random(Shape{kRows, kHidden}, 2), b = ops().zeros(Shape{kRows, kHidden}, DType::kF32);
  for (auto _ : state) ops().copy(a, b);
  report_bytes(state, 2.0 * double(a.bytes()));
}

// x [N, C] @ W^T [C, F]: the MLP's up projection (arg 0: fp32 inputs, 1: bf16).
void BM_Gemm(benchmark::State& state) {
  const bool bf16 = state.range(0) == 1;
  const DType dt = bf16 ? DType::kBF16 : DType::kF32;
  Tensor x = random(Shape{kRows, kHidden}, 3, dt), w = random(Shape{kFfn, kHidden}, 4, dt, 0.02);
  Tensor y = ops().zeros(Shape{kRows, kFfn}, DType::kF32);
  if (!use_precision(state, bf16)) return;
  for (auto _ : state) ops().gemm(false, true, 1.0, x, w, 0.0, y);
  report_flops(state, 2.0 * kRows * kHidden * kFfn, bf16);
  ops().set_matmul_precision(DType::kF32);
}

void BM_LayerNormForward(benchmark::State& state) {
  Tensor x = random(Shape{kRows, kHidden}, 5), w = random(Shape{kHidden}, 6), b = random(Shape{kHidden}, 7);
  Tensor y = ops().zeros(Shape{kRows, kHidden}, DType::kF32), mean = ops().zeros(Shape{kRows}, DType::kF32),
         rstd = ops().zeros(Shape{kRows}, DType::kF32);
  for (auto _ : state) ops().layernorm_forward(x, w, b, 1e-5, y, mean, rstd);
  report_bytes(state, 2.0 * double(x.bytes()));
}

void BM_LayerNormBackward(benchmark::State& state) {
  Tensor x = random(Shape{kRows, kHidden}, 8), w = random(Shape{kHidden}, 9), b = random(Shape{kHidden}, 10);
  Tensor y = ops().zeros(Shape{kRows, kHidden}, DType::kF32), mean = ops().zeros(Shape{kRows}, DType::kF32),
         rstd = ops().zeros(Shape{kRows}, DType::kF32);
  ops().layernorm_forward(x, w, b, 1e-5, y, mean, rstd);
  Tensor dy = random(Shape{kRows, kHidden}, 11), dx = ops().zeros(Shape{kRows, kHidden}, DType::kF32);
  Tensor dw = ops().zeros(Shape{kHidden}, DType::kF32), db = ops().zeros(Shape{kHidden}, DType::kF32);
  for (auto _ : state) ops().layernorm_backward(dy, x, w, mean, rstd, dx, dw, db);
  report_bytes(state, 4.0 * double(x.bytes()));  // read dy, x, dx; write dx
}

void BM_GeluForward(benchmark::State& state) {
  Tensor x = random(Shape{kRows, kFfn}, 12), y = ops().zeros(Shape{kRows, kFfn}, DType::kF32);
  for (auto _ : state) ops().gelu_forward(x, y);
  report_bytes(state, 2.0 * double(x.bytes()));
}

// GELU's backward with the bias gradient: as two passes (gelu_backward, bias_backward) and fused
// (gelu_bias_backward); the same bytes counted for both. dx is not written over dy here: repeated
// in place, the gradient would shrink into subnormals and time those.
void BM_GeluBiasBackward(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  Tensor x = random(Shape{kRows, kFfn}, 16), dy = random(Shape{kRows, kFfn}, 17);
  Tensor dx = ops().zeros(Shape{kRows, kFfn}, DType::kF32), db = ops().zeros(Shape{kFfn}, DType::kF32);
  for (auto _ : state) {
    if (fused) {
      ops().gelu_bias_backward(x, dy, dx, db);
    } else {
      ops().gelu_backward(x, dy, dx);
      ops().bias_backward(dx, db);
    }
  }
  report_bytes(state, 3.0 * double(x.bytes()));
}

// Causal attention over [B, T, NH*HS]: 4 * B * NH * T^2 * HS / 2 FLOPs forward (QK^T and PV,
// half the square), 2.5x that backward. Arg 1: bf16 q, k, v, out and gradients at bf16 matmul
// precision (the tiled oneDNN path), as mixed-precision training runs it.
void BM_AttentionForward(benchmark::State& state) {
  const bool bf16 = state.range(0) == 1;
  const DType dt = bf16 ? DType::kBF16 : DType::kF32;
  const Shape s{kBatch, kSeq, kHidden};
  Tensor q = random(s, 13, dt), k = random(s, 14, dt), v = random(s, 15, dt), out = ops().zeros(s, dt);
  Tensor lse = ops().zeros(Shape{kBatch, kHeads, kSeq}, DType::kF32);
  if (!use_precision(state, bf16)) return;
  for (auto _ : state) ops().attention_forward(q, k, v, kHeads, kHeads, Tensor(), out, lse);
  report_flops(state, 2.0 * kBatch * double(kSeq) * kSeq * kHidden, bf16);
  ops().set_matmul_precision(DType::kF32);
}

void BM_AttentionBackward(benchmark::State& state) {
  const bool bf16 = state.range(0) == 1;
  const DType dt = bf16 ? DType::kBF16 : DType::kF32;
  const Shape s{kBatch, kSeq, kHidden};
  Tensor q = random(s, 16, dt), k = random(s, 17, dt), v = random(s, 18, dt), out = ops().zeros(s, dt);
  Tensor lse = ops().zeros(Shape{kBatch, kHeads, kSeq}, DType::kF32);
  if (!use_precision(state, bf16)) return;
  ops().attention_forward(q, k, v, kHeads, kHeads, Tensor(), out, lse);
  Tensor dout = random(s, 19, dt), dq = ops().zeros(s, dt), dk = ops().zeros(s, dt), dv = ops().zeros(s, dt);
  for (auto _ : state) ops().attention_backward(q, k, v, out, lse, dout, kHeads, kHeads, Tensor(), dq, dk, dv);
  report_flops(state, 5.0 * kBatch * double(kSeq) * kSeq * kHidden, bf16);
  ops().set_matmul_precision(DType::kF32);
}

// One decode step of generation: 8 sequences, 1 new query each, over a 1024-position cache.
void BM_AttentionCachedDecode(benchmark::State& state) {
  const int64_t length = 1024;
  Tensor q = random(Shape{kBatch, 1, kHidden}, 20), kc = random(Shape{kBatch, length, kHidden}, 21);
  Tensor vc = random(Shape{kBatch, length, kHidden}, 22), out = ops().zeros(Shape{kBatch, 1, kHidden}, DType::kF32);
  Tensor start = Tensor::zeros(Shape{kBatch}, DType::kI32);
  for (int64_t b = 0; b < kBatch; ++b) start.data<int32_t>()[b] = int32_t(length - 1);
  for (auto _ : state) ops().attention_cached(q, kc, vc, kHeads, kHeads, start, out);
  report_bytes(state, double(kc.bytes() + vc.bytes()));  // the cache is read once
}

// Softmax cross-entropy and its gradient over [N, V] logits (one read, one write).
void BM_CrossEntropy(benchmark::State& state) {
  const int64_t rows = 512;
  Tensor logits = random(Shape{rows, kVocab}, 23), dlogits = ops().zeros(Shape{rows, kVocab}, DType::kF32);
  Tensor targets = Tensor::zeros(Shape{rows}, DType::kI32), losses = ops().zeros(Shape{rows}, DType::kF32);
  for (int64_t i = 0; i < rows; ++i) targets.data<int32_t>()[i] = int32_t((i * 7919) % kVocab);
  for (auto _ : state) ops().cross_entropy_forward_backward(logits, targets, 1.0, losses, dlogits);
  report_bytes(state, 2.0 * double(logits.bytes()));
}

// AdamW over 16M parameters: reads p, g, m, v and writes p, m, v.
void BM_AdamW(benchmark::State& state) {
  const int64_t n = int64_t(16) << 20;
  Tensor p = random(Shape{n}, 24), g = random(Shape{n}, 25), m = ops().zeros(Shape{n}, DType::kF32),
         v = ops().zeros(Shape{n}, DType::kF32);
  long step = 0;
  for (auto _ : state)
    ops().adamw(p, g, m, v, {.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .step = ++step});
  report_bytes(state, 7.0 * double(p.bytes()));
}

BENCHMARK(BM_Copy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gemm)->Arg(0)->Arg(1)->ArgName("bf16")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LayerNormForward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LayerNormBackward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GeluForward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GeluBiasBackward)->Arg(0)->Arg(1)->ArgName("fused")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionForward)->Arg(0)->Arg(1)->ArgName("bf16")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionBackward)->Arg(0)->Arg(1)->ArgName("bf16")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionCachedDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CrossEntropy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AdamW)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
