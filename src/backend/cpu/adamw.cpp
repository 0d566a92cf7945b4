// One AdamW step (PyTorch's formula: decoupled weight decay, bias correction), in place.
// param, grad, exp_avg, exp_avg_sq: same numel and dtype (fp32; fp64 accepted for tests).
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

struct AdamWConsts {
  double decay, b1, b2, one_b1, one_b2, step_size, bias2_sqrt, eps, grad_scale;
};

// Elements [begin, end) of one step, scalar (the tail, fp64, and paths without AVX). Without
// -fno-math-errno GCC keeps an errno path in std::sqrt, so this loop does not vectorise.
template <typename T>
void adamw_scalar(T* p, const T* g, T* m, T* v, int64_t begin, int64_t end, const AdamWConsts& c) {
  const T decay = T(c.decay), b1 = T(c.b1), b2 = T(c.b2), one_b1 = T(c.one_b1), one_b2 = T(c.one_b2);
  const T step_size = T(c.step_size), bias2 = T(c.bias2_sqrt), eps = T(c.eps), gs = T(c.grad_scale);
  for (int64_t i = begin; i < end; ++i) {
    const T gi = g[i] * gs;
    const T mi = b1 * m[i] + one_b1 * gi;
    const T vi = b2 * v[i] + one_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - step_size * (mi / (std::sqrt(vi) / bias2 + eps));
  }
}

template <typename T>
void adamw_range(T* p, const T* g, T* m, T* v, int64_t begin, int64_t end, const AdamWConsts& c) {
  adamw_scalar(p, g, m, v, begin, end, c);
}

// The same operations in the same order on whole vectors (the sqrt instructions are correctly
// rounded, like std::sqrt; no FMA contraction under -std=c++20), so every path gives the same
// bits: 16 lanes (AVX-512) or 8 (AVX2).
#if TRIDENT_CPU_AVX512
struct F32Lanes {
  using V = __m512;
  static constexpr int64_t kLanes = 16;
  static V set(double x) { return _mm512_set1_ps(float(x)); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V sqrt(V a) { return _mm512_mask_sqrt_ps(a, 0xffff, a); }
};
#elif defined(__AVX2__)
struct F32Lanes {
  using V = __m256;
  static constexpr int64_t kLanes = 8;
  static V set(double x) { return _mm256_set1_ps(float(x)); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
};
#endif

#if TRIDENT_CPU_AVX512 || defined(__AVX2__)
template <>
void adamw_range<float>(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end,
                        const AdamWConsts& c) {
  using L = F32Lanes;
  const L::V decay = L::set(c.decay), b1 = L::set(c.b1), b2 = L::set(c.b2), one_b1 = L::set(c.one_b1),
             one_b2 = L::set(c.one_b2), step_size = L::set(c.step_size), bias2 = L::set(c.bias2_sqrt),
             eps = L::set(c.eps), gs = L::set(c.grad_scale);
  int64_t i = begin;
  for (; i + L::kLanes <= end; i += L::kLanes) {
    const L::V gi = L::mul(L::load(g + i), gs);
    const L::V mi = L::add(L::mul(b1, L::load(m + i)), L::mul(one_b1, gi));
    const L::V vi = L::add(L::mul(b2, L::load(v + i)), L::mul(L::mul(one_b2, gi), gi));
    L::store(m + i, mi);
    L::store(v + i, vi);
    const L::V denom = L::add(L::div(L::sqrt(vi), bias2), eps);
    const L::V update = L::mul(step_size, L::div(mi, denom));
    L::store(p + i, L::sub(L::mul(L::load(p + i), decay), update));
  }
  adamw_scalar(p, g, m, v, i, end, c);  // fewer than one vector left
}
#endif

}  // namespace

// g = grad_scale * grad; p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= (lr / (1 - b1^step)) * m / (sqrt(v) / sqrt(1 - b2^step) + eps).
void adamw(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const Ops::AdamWArgs& args) {
  constexpr const char* op = "adamw";
  check_tensor(param, op, "param");
  check_dtype(grad, param.dtype(), op, "grad");
  check_numel(grad, param.numel(), op, "grad");
  check_dtype(exp_avg, param.dtype(), op, "exp_avg");
  check_numel(exp_avg, param.numel(), op, "exp_avg");
  check_dtype(exp_avg_sq, param.dtype(), op, "exp_avg_sq");
  check_numel(exp_avg_sq, param.numel(), op, "exp_avg_sq");
  TRIDENT_CHECK(args.step >= 1, op, ": step ", args.step, " must be >= 1 (1-based)");
  const double bias1 = 1.0 - std::pow(args.beta1, double(args.step));
  const double b2 = args.second_moment_decay();
  const AdamWConsts c{1.0 - args.lr * args.weight_decay, args.beta1, b2, 1.0 - args.beta1,
                     1.0 - b2, args.lr / bias1, args.bias2_sqrt(), args.eps, args.grad_scale};
  dispatch_float(param.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* m = exp_avg.data<T>();
    T* v = exp_avg_sq.data<T>();
    const int64_t n = param.numel();
    const int chunks = n > kParallelElems ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(chunks) schedule(static)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      // chunk bounds on 64-byte multiples so every thread's vector loop starts aligned
      const int64_t align = 64 / sizeof(T);
      const int64_t begin = std::min(n, n * chunk / chunks / align * align);
      const int64_t end = chunk + 1 == chunks ? n : std::min(n, n * (chunk + 1) / chunks / align * align);
      adamw_range(p, g, m, v, begin, end, c);
    }
  });
}

}  // namespace trident::cpu
