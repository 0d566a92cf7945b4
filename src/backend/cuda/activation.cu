// GELU (tanh approximation) and SwiGLU, forward and backward, elementwise over any shape.
// Every tensor is [ACT] (fp32, bf16 or fp16, each independently; fp32 arithmetic). Formulas and
// constants are the CPU backend's (src/backend/cpu/activation.cpp). Each element is read
// before the outputs at its index are written, by the same thread: outputs may alias inputs.
#include "backend/cuda/column_sums.cuh"
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/reduce.cuh"

namespace trident::cuda {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;
// fp32 constants rounded from the double expressions, as the CPU's T(2 * kSqrt2OverPi) etc.
constexpr float kK = float(kSqrt2OverPi), kK2 = float(2 * kSqrt2OverPi), kK2C = float(2 * kSqrt2OverPi * kGeluCubic),
                kK3C = float(3 * kGeluCubic);

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

// gelu(x) = 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
__device__ __forceinline__ float gelu(float v) { return v * sigmoid(v * (kK2 + kK2C * v * v)); }
// gelu'(x) = s + 2 x s (1 - s) u'(x), s = sigmoid(2u), u'(x) = sqrt(2/pi) (1 + 3*0.044715 x^2).
__device__ __forceinline__ float gelu_grad(float v) {
  const float s = sigmoid(v * (kK2 + kK2C * v * v));
  return s + 2.f * v * s * (1.f - s) * (kK * (1.f + kK3C * v * v));
}

// x[n, F] += bias (kept: backward reads the pre-activation), y = gelu(x), in one pass.
__global__ void bias_gelu_forward_kernel(void* x, Elem ex, const float* bias, int64_t F, void* y, Elem ey, int64_t n,
                                         bool vec) {
  for_range(n, vec, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    float v[W];
    loadv(x, ex, i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] += bias[(i + k) % F];
    storev(x, ex, i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = gelu(v[k]);
    storev(y, ey, i, v);
  });
}

// The fused backward's values for column_sums: dx = gelu'(x) * dy, stored as it is made (dx may
// alias dy: each element is read, then written, by one thread).
struct GeluGradValues {
  const void* x;
  Elem ex;
  const void* dy;
  Elem edy;
  void* dx;
  Elem edx;
  __device__ float operator()(int64_t i) const {
    const float d = load(dy, edy, i) * gelu_grad(load(x, ex, i));
    store(dx, edx, i, d);
    return d;
  }
};

// y = gelu(x).
__global__ void gelu_forward_kernel(const void* x, Elem ex, void* y, Elem ey, int64_t n, bool vec) {
  for_range(n, vec, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    float v[W];
    loadv(x, ex, i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = gelu(v[k]);
    storev(y, ey, i, v);
  });
}

// dx = gelu'(x) * dy.
__global__ void gelu_backward_kernel(const void* x, Elem ex, const void* dy, Elem edy, void* dx, Elem edx, int64_t n,
                                     bool vec) {
  for_range(n, vec, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    float v[W], d[W];
    loadv(x, ex, i, v);
    loadv(dy, edy, i, d);
#pragma unroll
    for (int k = 0; k < W; ++k) d[k] = d[k] * gelu_grad(v[k]);
    storev(dx, edx, i, d);
  });
}

// y = silu(gate) * up, silu(g) = g * sigmoid(g).
__global__ void swiglu_forward_kernel(const void* gate, Elem eg, const void* up, Elem eu, void* y, Elem ey, int64_t n,
                                      bool vec) {
  for_range(n, vec, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    float g[W], u[W];
    loadv(gate, eg, i, g);
    loadv(up, eu, i, u);
#pragma unroll
    for (int k = 0; k < W; ++k) g[k] = g[k] * sigmoid(g[k]) * u[k];
    storev(y, ey, i, g);
  });
}

// dgate = dy * up * s (1 + g (1 - s)), dup = dy * g * s, s = sigmoid(g).
__global__ void swiglu_backward_kernel(const void* gate, Elem eg, const void* up, Elem eu, const void* dy, Elem edy,
                                       void* dgate, Elem edg, void* dup, Elem edu, int64_t n, bool vec) {
  for_range(n, vec, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    float g[W], u[W], d[W], dg[W], du[W];
    loadv(gate, eg, i, g);
    loadv(up, eu, i, u);
    loadv(dy, edy, i, d);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float s = sigmoid(g[k]);
      dg[k] = d[k] * u[k] * s * (1.f + g[k] * (1.f - s));
      du[k] = d[k] * g[k] * s;
    }
    storev(dgate, edg, i, dg);
    storev(dup, edu, i, du);
  });
}

// Checks that t is [ACT] with ref's element count; returns its Elem.
Elem same_act(const char* op, const Tensor& ref, const Tensor& t, const char* name) {
  const Elem e = act_elem(t, op, name);
  check_numel(t, ref.numel(), op, name);
  return e;
}

// Launches kernel(args..., n, vec) over n elements (nothing for n = 0), on the vector path where
// every tensor is 16-byte aligned; each thread does 8 elements per step on that path.
template <typename... Params, typename... Args>
void launch_elementwise(void (*kernel)(Params...), int64_t n, std::initializer_list<const Tensor*> tensors,
                        cudaStream_t stream, Args... args) {
  if (n == 0) return;
  const bool vec = all_aligned16(tensors);
  kernel<<<grid_for(vec ? (n + 7) / 8 : n), 256, 0, stream>>>(args..., n, vec);
  TRIDENT_CUDA_LAUNCHED();
}

}  // namespace

void gelu_forward(const Tensor& x, Tensor& y, cudaStream_t stream) {
  constexpr const char* op = "gelu_forward";
  const Elem ex = act_elem(x, op, "x"), ey = same_act(op, x, y, "y");
  launch_elementwise(gelu_forward_kernel, x.numel(), {&x, &y}, stream, x.raw(), ex, y.raw(), ey);
}

void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx, cudaStream_t stream) {
  constexpr const char* op = "gelu_backward";
  const Elem ex = act_elem(x, op, "x"), edy = same_act(op, x, dy, "dy"), edx = same_act(op, x, dx, "dx");
  launch_elementwise(gelu_backward_kernel, x.numel(), {&x, &dy, &dx}, stream, x.raw(), ex, dy.raw(), edy, dx.raw(),
                     edx);
}

void bias_gelu_forward(Tensor& x, const Tensor& bias, Tensor& y, cudaStream_t stream) {
  constexpr const char* op = "bias_gelu_forward";
  const Elem ex = act_elem(x, op, "x"), ey = same_act(op, x, y, "y");
  check_f32(bias, op, "bias");
  const int64_t F = bias.numel();
  TRIDENT_CHECK(F > 0 ? last_dim(x) == F : x.numel() == 0, op, ": x ", x.shape().str(), " does not end in bias's ", F);
  launch_elementwise(bias_gelu_forward_kernel, x.numel(), {&x, &y}, stream, x.raw(), ex, bias.data<float>(), F,
                     y.raw(), ey);
}

void gelu_bias_backward(const Tensor& x, const Tensor& dy, Tensor& dx, Tensor& dbias, DeviceAllocator& alloc,
                        cudaStream_t stream) {
  constexpr const char* op = "gelu_bias_backward";
  const Elem ex = act_elem(x, op, "x"), edy = same_act(op, x, dy, "dy"), edx = same_act(op, x, dx, "dx");
  check_f32(dbias, op, "dbias");
  const int64_t F = dbias.numel();
  TRIDENT_CHECK(F > 0 ? last_dim(x) == F : x.numel() == 0, op, ": x ", x.shape().str(), " does not end in dbias's ", F);
  column_sums(GeluGradValues{x.raw(), ex, dy.raw(), edy, dx.raw(), edx}, F == 0 ? 0 : x.numel() / F, F,
              dbias.data<float>(), alloc, stream);
}

void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y, cudaStream_t stream) {
  constexpr const char* op = "swiglu_forward";
  const Elem eg = act_elem(gate, op, "gate"), eu = same_act(op, gate, up, "up"), ey = same_act(op, gate, y, "y");
  launch_elementwise(swiglu_forward_kernel, gate.numel(), {&gate, &up, &y}, stream, gate.raw(), eg, up.raw(), eu,
                     y.raw(), ey);
}

void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup,
                     cudaStream_t stream) {
  constexpr const char* op = "swiglu_backward";
  const Elem eg = act_elem(gate, op, "gate"), eu = same_act(op, gate, up, "up"), edy = same_act(op, gate, dy, "dy"),
             edg = same_act(op, gate, dgate, "dgate"), edu = same_act(op, gate, dup, "dup");
  launch_elementwise(swiglu_backward_kernel, gate.numel(), {&gate, &up, &dy, &dgate, &dup}, stream, gate.raw(), eg,
                     up.raw(), eu, dy.raw(), edy, dgate.raw(), edg, dup.raw(), edu);
}

}  // namespace trident::cuda
