// One AdamW step on fp32 tensors, the CPU backend's operations in the same order
// (cpu/adamw.cpp): explicit _rn intrinsics keep nvcc from contracting them into FMAs, and
// sqrtf and the divisions are IEEE-rounded (nvcc's default -prec-sqrt/-prec-div), so each
// element matches the CPU result bit for bit.
#include <cmath>

#include "core_kernels.cuh"
#include "device_access.cuh"

namespace trident::cuda {
namespace {

struct AdamWConsts {
  float decay, b1, b2, one_b1, one_b2, step_size, bias2_sqrt, eps, grad_scale;
};

__global__ void adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                             float* __restrict__ v, int64_t n, AdamWConsts c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float gi = __fmul_rn(g[i], c.grad_scale);
    const float mi = __fadd_rn(__fmul_rn(c.b1, m[i]), __fmul_rn(c.one_b1, gi));
    const float vi = __fadd_rn(__fmul_rn(c.b2, v[i]), __fmul_rn(__fmul_rn(c.one_b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), c.bias2_sqrt), c.eps);
    p[i] = __fsub_rn(__fmul_rn(p[i], c.decay), __fmul_rn(c.step_size, __fdiv_rn(mi, denom)));
  }
}

}  // namespace

void adamw(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const Ops::AdamWArgs& args,
           cudaStream_t stream) {
  constexpr const char* op = "adamw";
  const int64_t n = param.numel();
  auto check = [&](const Tensor& t, const char* arg) {
    TRIDENT_CHECK(t.dtype() == DType::kF32, op, ": ", arg, " is ", dtype_name(t.dtype()),
                  "; the CUDA backend's adamw takes fp32 tensors");
    TRIDENT_CHECK(t.numel() == n, op, ": ", arg, " ", t.shape().str(), " has ", t.numel(), " elements, expected ",
                  n);
  };
  check(param, "param");
  check(grad, "grad");
  check(exp_avg, "exp_avg");
  check(exp_avg_sq, "exp_avg_sq");
  TRIDENT_CHECK(args.step >= 1, op, ": step ", args.step, " must be >= 1 (1-based)");
  if (n == 0) return;
  // The constants in double, then rounded to fp32, exactly as the CPU's fp32 path does.
  const double bias1 = 1.0 - std::pow(args.beta1, double(args.step));
  const double b2 = args.second_moment_decay();
  const AdamWConsts c{float(1.0 - args.lr * args.weight_decay), float(args.beta1), float(b2),
                      float(1.0 - args.beta1), float(1.0 - b2), float(args.lr / bias1),
                      float(args.bias2_sqrt()), float(args.eps), float(args.grad_scale)};
  adamw_kernel<<<grid_for(n), 256, 0, stream>>>(param.data<float>(), grad.data<float>(), exp_avg.data<float>(),
                                                exp_avg_sq.data<float>(), n, c);
  TRIDENT_CUDA_LAUNCHED();
}

}  // namespace trident::cuda
