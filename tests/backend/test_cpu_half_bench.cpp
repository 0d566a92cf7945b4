// Micro-benchmarks of activation kernels in fp32 and bf16 (not tests: disabled, no timing
// assertion). Run: test_backend --gtest_also_run_disabled_tests --gtest_filter='*KernelBench*'
// Prints ms per call and GB/s of activation bytes moved (attention: also GFLOP/s); compare
// the fp32 and bf16 lines of one run, never bare numbers across machines.
#include <chrono>
#include <cstdio>
#include <functional>

#include "test_cpu_util.hpp"

namespace trident::test {
namespace {

double seconds_per_call(const std::function<void()>& f) {
  f();  // warm-up: scratch buffers, first touch
  const auto start = std::chrono::steady_clock::now();
  int calls = 0;
  double s = 0;
  do {
    f();
    ++calls;
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (s < 0.4);
  return s / calls;
}

void report(const char* what, DType dt, double s, double bytes, double flops = 0) {
  std::printf("%-26s %-5s %9.3f ms %8.1f GB/s", what, std::string(dtype_name(dt)).c_str(), s * 1e3, bytes / s / 1e9);
  if (flops > 0) std::printf(" %8.1f GFLOP/s", flops / s / 1e9);
  std::printf("\n");
}

void bench(DType dt) {
  auto ops = make_cpu_ops(0);
  const double e = double(dtype_size(dt));
  {  // N = 8 x 1024 tokens, C = 768
    const int64_t N = 8192, C = 768;
    Tensor x = ops->zeros(Shape{N, C}, dt), y = ops->zeros(Shape{N, C}, dt), dy = ops->zeros(Shape{N, C}, dt),
           dx = ops->zeros(Shape{N, C}, dt);
    ops->copy(randn<float>(Shape{N, C}, 1), x);
    ops->copy(randn<float>(Shape{N, C}, 2), dy);
    Tensor w = randn<float>(Shape{C}, 3), b = randn<float>(Shape{C}, 4), dw = ops->zeros(Shape{C}, DType::kF32),
           db = ops->zeros(Shape{C}, DType::kF32);
    Tensor mean = ops->zeros(Shape{N}, DType::kF32), rstd = ops->zeros(Shape{N}, DType::kF32);
    const double act = double(N * C) * e;
    report("layernorm_forward", dt, seconds_per_call([&] { ops->layernorm_forward(x, w, b, 1e-5, y, mean, rstd); }),
           2 * act);
    report("layernorm_backward", dt,
           seconds_per_call([&] { ops->layernorm_backward(dy, x, w, mean, rstd, dx, dw, db); }), 4 * act);
    report("gelu_forward", dt, seconds_per_call([&] { ops->gelu_forward(x, y); }), 2 * act);
    report("add", dt, seconds_per_call([&] { ops->add(x, dy, y); }), 3 * act);
  }
  {  // B = 1, T = 1024, NH = 12, HS = 64 (GPT-2 small, one sequence)
    const int64_t B = 1, T = 1024, NH = 12, HS = 64;
    Tensor q = ops->zeros(Shape{B, T, NH * HS}, dt), k = ops->zeros(Shape{B, T, NH * HS}, dt),
           v = ops->zeros(Shape{B, T, NH * HS}, dt), out = ops->zeros(Shape{B, T, NH * HS}, dt),
           dout = ops->zeros(Shape{B, T, NH * HS}, dt), dq = ops->zeros(Shape{B, T, NH * HS}, dt),
           dk = ops->zeros(Shape{B, T, NH * HS}, dt), dv = ops->zeros(Shape{B, T, NH * HS}, dt);
    for (Tensor* t : {&q, &k, &v, &dout}) ops->copy(randn<float>(t->shape(), 5), *t);
    Tensor lse = ops->zeros(Shape{B, NH, T}, DType::kF32);
    const double act = double(B * T * NH * HS) * e;
    const double flops = 4.0 * B * NH * double(T) * T / 2 * HS;  // QK^T and PV over the causal half
    report("attention_forward", dt,
           seconds_per_call([&] { ops->attention_forward(q, k, v, int(NH), int(NH), Tensor(), out, lse); }), 4 * act,
           flops);
    report("attention_backward", dt, seconds_per_call([&] {
             ops->attention_backward(q, k, v, out, lse, dout, int(NH), int(NH), Tensor(), dq, dk, dv);
           }),
           8 * act, 2.5 * flops);
  }
  {  // N = 256 rows, V = 50304
    const int64_t N = 256, V = 50304;
    Tensor logits = ops->zeros(Shape{N, V}, dt), dlogits = ops->zeros(Shape{N, V}, dt);
    ops->copy(randn<float>(Shape{N, V}, 6), logits);
    std::vector<int32_t> t(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) t[size_t(n)] = int32_t(n * 97 % V);
    Tensor targets = i32_tensor(t), losses = ops->zeros(Shape{N}, DType::kF32);
    report("cross_entropy", dt, seconds_per_call([&] {
             ops->cross_entropy_forward_backward(logits, targets, 1.0, losses, dlogits);
           }),
           2 * double(N * V) * e);
  }
}

TEST(DISABLED_KernelBench, Fp32) { bench(DType::kF32); }
TEST(DISABLED_KernelBench, Bf16) { bench(DType::kBF16); }

}  // namespace
}  // namespace trident::test
