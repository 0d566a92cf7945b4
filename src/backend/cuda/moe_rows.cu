// Mixture-of-experts token movement on the GPU, as the CPU backend's moe_rows.cpp: gather rows
// into expert order, combine expert rows back with routing weights, per-(token, choice) dot
// products. One block per output row, so every row is written by one block in a fixed order
// (deterministic, no atomics). Activations fp32 / bf16 / fp16; scale, weights, dots fp32.
#include "device_access.cuh"
#include "kernels.cuh"
#include "reduce.cuh"

namespace trident::cuda {
namespace {

constexpr int kThreads = 256;

int64_t features(const Tensor& t) { return t.ndim() == 0 ? 1 : t.dim(-1); }

__global__ void gather_rows_kernel(const void* x, Elem ex, const int32_t* index, const float* scale, void* out,
                                   Elem eo, int64_t C) {
  const int64_t m = blockIdx.x;
  const int64_t src = int64_t(index[m]) * C;
  const float s = scale ? scale[m] : 1.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) store(out, eo, m * C + c, s * load(x, ex, src + c));
}

__global__ void combine_rows_kernel(const void* y, Elem ey, const int32_t* slots, const float* weights, int64_t K,
                                    void* out, Elem eo, int64_t C, bool accumulate) {
  const int64_t n = blockIdx.x;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = accumulate ? load(out, eo, n * C + c) : 0.0f;
    for (int64_t j = 0; j < K; ++j) {
      const int32_t slot = slots[n * K + j];
      if (slot < 0) continue;
      const float w = weights ? weights[n * K + j] : 1.0f;
      acc += w * load(y, ey, int64_t(slot) * C + c);
    }
    store(out, eo, n * C + c, acc);
  }
}

// Block (n, j): a tree sum in double of a[n] . b[slots[n, j]] over C, in a fixed order.
__global__ void row_dots_kernel(const void* a, Elem ea, const void* b, Elem eb, const int32_t* slots, int64_t K,
                                int64_t C, float* out) {
  __shared__ double partial[kThreads];
  const int64_t n = blockIdx.x, j = blockIdx.y;
  const int32_t slot = slots[n * K + j];
  double acc = 0.0;
  if (slot >= 0)
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
      acc += double(load(a, ea, n * C + c)) * double(load(b, eb, int64_t(slot) * C + c));
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width >>= 1) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[n * K + j] = float(partial[0]);
}

}  // namespace

void gather_rows(const Tensor& x, const Tensor& index, const Tensor& scale, Tensor& out, cudaStream_t stream) {
  constexpr const char* op = "gather_rows";
  const Elem ex = elem_of(x, op, "x"), eo = elem_of(out, op, "out");
  check_i32(index, op, "index");
  const int64_t C = features(x), M = index.numel();
  TRIDENT_CHECK(features(out) == C && out.numel() == M * C, op, ": out ", out.shape().str(), " is not [", M, ", ", C,
                "]");
  if (scale.defined()) {
    check_f32(scale, op, "scale");
    TRIDENT_CHECK(scale.numel() == M, op, ": scale has ", scale.numel(), " elements, expected ", M);
  }
  if (M == 0 || C == 0) return;
  gather_rows_kernel<<<static_cast<unsigned>(M), kThreads, 0, stream>>>(
      x.raw(), ex, index.data<int32_t>(), scale.defined() ? scale.data<float>() : nullptr, out.raw(), eo, C);
  TRIDENT_CUDA_LAUNCHED();
}

void combine_rows(const Tensor& y, const Tensor& slots, const Tensor& weights, Tensor& out, bool accumulate,
                  cudaStream_t stream) {
  constexpr const char* op = "combine_rows";
  const Elem ey = elem_of(y, op, "y"), eo = elem_of(out, op, "out");
  check_i32(slots, op, "slots");
  const int64_t C = features(out), N = C == 0 ? 0 : out.numel() / C;
  TRIDENT_CHECK(features(y) == C, op, ": y ", y.shape().str(), " does not have ", C, " features per row");
  const int64_t K = N == 0 ? 0 : slots.numel() / N;
  TRIDENT_CHECK(slots.numel() == N * K, op, ": slots has ", slots.numel(), " elements for ", N, " rows");
  if (weights.defined()) {
    check_f32(weights, op, "weights");
    TRIDENT_CHECK(weights.numel() == N * K, op, ": weights has ", weights.numel(), " elements, expected ", N * K);
  }
  if (N == 0) return;
  combine_rows_kernel<<<static_cast<unsigned>(N), kThreads, 0, stream>>>(
      y.raw(), ey, slots.data<int32_t>(), weights.defined() ? weights.data<float>() : nullptr, K, out.raw(), eo, C,
      accumulate);
  TRIDENT_CUDA_LAUNCHED();
}

void row_dots(const Tensor& a, const Tensor& b, const Tensor& slots, Tensor& out, cudaStream_t stream) {
  constexpr const char* op = "row_dots";
  const Elem ea = elem_of(a, op, "a"), eb = elem_of(b, op, "b");
  check_i32(slots, op, "slots");
  check_f32(out, op, "out");
  const int64_t C = features(a), N = C == 0 ? 0 : a.numel() / C;
  TRIDENT_CHECK(features(b) == C, op, ": b ", b.shape().str(), " does not have ", C, " features per row");
  const int64_t K = N == 0 ? 0 : out.numel() / N;
  TRIDENT_CHECK(out.numel() == N * K && slots.numel() == N * K, op, ": out and slots need ", N, " x K elements");
  if (N == 0 || K == 0) return;
  row_dots_kernel<<<dim3(static_cast<unsigned>(N), static_cast<unsigned>(K)), kThreads, 0, stream>>>(
      a.raw(), ea, b.raw(), eb, slots.data<int32_t>(), K, C, out.data<float>());
  TRIDENT_CUDA_LAUNCHED();
}

}  // namespace trident::cuda
