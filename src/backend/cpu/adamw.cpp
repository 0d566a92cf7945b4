// One AdamW step (PyTorch's formula: decoupled weight decay, bias correction), in place.
// param, grad, exp_avg, exp_avg_sq: same numel and dtype (fp32; fp64 accepted for tests).
#include <immintrin.h>

#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu {
namespace {

struct AdamWConsts {
  double decay, b1, b2, one_b1, one_b2, step_size, bias2_sqrt, eps, grad_scale;
};

// Elements [begin, end) of one step, scalar (the tail, fp64, and CPUs without AVX-512). Without
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

#if defined(__AVX512F__)
// The same operations in the same order on 16 fp32 lanes (_mm512_sqrt_ps is correctly rounded,
// like std::sqrt).
template <>
void adamw_range<float>(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end,
                        const AdamWConsts& c) {
  const __m512 decay = _mm512_set1_ps(float(c.decay)), b1 = _mm512_set1_ps(float(c.b1)),
               b2 = _mm512_set1_ps(float(c.b2)), one_b1 = _mm512_set1_ps(float(c.one_b1)),
               one_b2 = _mm512_set1_ps(float(c.one_b2)), step_size = _mm512_set1_ps(float(c.step_size)),
               bias2 = _mm512_set1_ps(float(c.bias2_sqrt)), eps = _mm512_set1_ps(float(c.eps)),
               gs = _mm512_set1_ps(float(c.grad_scale));
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    const __m512 gi = _mm512_mul_ps(_mm512_loadu_ps(g + i), gs);
    const __m512 mi = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(one_b1, gi));
    const __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(v + i)),
                                    _mm512_mul_ps(_mm512_mul_ps(one_b2, gi), gi));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_mask_sqrt_ps(vi, 0xffff, vi), bias2), eps);
    const __m512 update = _mm512_mul_ps(step_size, _mm512_div_ps(mi, denom));
    _mm512_storeu_ps(p + i, _mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(p + i), decay), update));
  }
  adamw_scalar(p, g, m, v, i, end, c);  // fewer than 16 left
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
