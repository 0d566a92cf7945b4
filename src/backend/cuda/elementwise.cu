// Elementwise and reduction kernels of CudaOps: dtype conversion (copy), fill, add, scale, bias
// add and its backward, sum of squares. Activations may be fp32, bf16 or fp16 each (widened to
// fp32, rounded to nearest even on store); bias and dbias are fp32; sums over rows are double,
// as on the CPU. Reductions use a fixed grid for a given size, so results are deterministic.
#include <algorithm>
#include <string>

#include "allocator.hpp"
#include "column_sums.cuh"
#include "core_kernels.cuh"
#include "device_access.cuh"

namespace trident::cuda {
namespace {

constexpr int kThreads = 256;

void check_f32(const Tensor& t, const char* op, const char* arg) {
  TRIDENT_CHECK(t.dtype() == DType::kF32, op, ": ", arg, " is ", dtype_name(t.dtype()),
                "; the CUDA backend takes fp32 here");
}

__global__ void convert_kernel(const void* src, Elem s, void* dst, Elem d, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(dst, d, i, load(src, s, i));
}

template <typename T>
__global__ void fill_kernel(T* x, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = value;
}

// out may alias a or b: each index is read before it is written, by the same thread.
__global__ void add_kernel(const void* a, Elem ea, const void* b, Elem eb, void* out, Elem eo, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(out, eo, i, load(a, ea, i) + load(b, eb, i));
}

__global__ void scale_kernel(void* x, Elem e, float s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(x, e, i, load(x, e, i) * s);
}

__global__ void add_bias_kernel(void* y, Elem e, const float* bias, int64_t n, int64_t C) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(y, e, i, load(y, e, i) + bias[i % C]);
}

// dbias's values: dy as it is.
struct PlainValues {
  const void* dy;
  Elem e;
  __device__ float operator()(int64_t i) const { return load(dy, e, i); }
};

__device__ __forceinline__ double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); the result in thread 0.
__device__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? warp_sums[lane] : 0.0;
  if (warp == 0) v = warp_sum(v);
  return v;
}

// Pass 1 of sum_squares: one double partial per block (grid-stride over the elements).
__global__ void sum_squares_partial_kernel(const void* x, Elem e, int64_t n, double* partial) {
  double acc = 0.0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double v = load(x, e, i);
    acc += v * v;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void sum_partials_kernel(const double* partial, int n, double* out) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = acc;
}

}  // namespace

void convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n, cudaStream_t stream) {
  const Elem es = elem_of(src_dtype, "copy", "src"), ed = elem_of(dst_dtype, "copy", "dst");
  if (n == 0) return;
  convert_kernel<<<grid_for(n), kThreads, 0, stream>>>(src, es, dst, ed, n);
  TRIDENT_CUDA_LAUNCHED();
}

void fill(Tensor& x, double value, cudaStream_t stream) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const unsigned grid = grid_for(n);
  auto launch = [&](auto pattern) {
    using T = decltype(pattern);
    bool zero = true;  // an all-zero bit pattern is a memset
    for (size_t i = 0; i < sizeof(T); ++i) zero = zero && reinterpret_cast<const char*>(&pattern)[i] == 0;
    if (zero) {
      TRIDENT_CUDA_CHECK(cudaMemsetAsync(x.raw(), 0, x.bytes(), stream));
      return;
    }
    fill_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(x.raw()), pattern, n);
    TRIDENT_CUDA_LAUNCHED();
  };
  switch (x.dtype()) {
    case DType::kF32: launch(static_cast<float>(value)); break;
    case DType::kF64: launch(value); break;
    case DType::kI32: launch(static_cast<int32_t>(value)); break;
    case DType::kBF16: launch(fp32_to_bf16_bits(static_cast<float>(value))); break;
    case DType::kF16: launch(fp32_to_fp16_bits(static_cast<float>(value))); break;
  }
}

void add(const Tensor& a, const Tensor& b, Tensor& out, cudaStream_t stream) {
  constexpr const char* op = "add";
  const Elem ea = elem_of(a, op, "a"), eb = elem_of(b, op, "b"), eo = elem_of(out, op, "out");
  TRIDENT_CHECK(b.numel() == a.numel() && out.numel() == a.numel(), "add: a ", a.shape().str(), ", b ",
                b.shape().str(), " and out ", out.shape().str(), " differ in size");
  const int64_t n = a.numel();
  if (n == 0) return;
  add_kernel<<<grid_for(n), kThreads, 0, stream>>>(a.raw(), ea, b.raw(), eb, out.raw(), eo, n);
  TRIDENT_CUDA_LAUNCHED();
}

void scale(Tensor& x, double s, cudaStream_t stream) {
  const Elem e = elem_of(x, "scale", "x");
  const int64_t n = x.numel();
  if (n == 0) return;
  scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x.raw(), e, static_cast<float>(s), n);
  TRIDENT_CUDA_LAUNCHED();
}

void add_bias(Tensor& y, const Tensor& bias, cudaStream_t stream) {
  constexpr const char* op = "add_bias";
  const Elem e = elem_of(y, op, "y");
  check_f32(bias, op, "bias");
  const int64_t C = bias.numel(), n = y.numel();
  const int64_t last = y.ndim() == 0 ? 1 : y.dim(-1);
  TRIDENT_CHECK(C > 0 ? last == C : n == 0, "add_bias: y ", y.shape().str(), " does not end in bias's ", C);
  if (n == 0) return;
  add_bias_kernel<<<grid_for(n), kThreads, 0, stream>>>(y.raw(), e, bias.data<float>(), n, C);
  TRIDENT_CUDA_LAUNCHED();
}

void bias_backward(const Tensor& dy, Tensor& dbias, DeviceAllocator& alloc, cudaStream_t stream) {
  constexpr const char* op = "bias_backward";
  const Elem e = elem_of(dy, op, "dy");
  check_f32(dbias, op, "dbias");
  const int64_t C = dbias.numel(), N = C == 0 ? 0 : dy.numel() / C;
  const int64_t last = dy.ndim() == 0 ? 1 : dy.dim(-1);
  TRIDENT_CHECK(C == 0 || last == C, "bias_backward: dy ", dy.shape().str(), " does not end in dbias's ", C);
  column_sums(PlainValues{dy.raw(), e}, N, C, dbias.data<float>(), alloc, stream);
}

double sum_squares(const Tensor& x, DeviceAllocator& alloc, cudaStream_t stream) {
  const Elem e = elem_of(x, "sum_squares", "x");
  const int64_t n = x.numel();
  if (n == 0) return 0.0;
  const unsigned blocks = std::min<unsigned>(grid_for(n), 1024);
  auto scratch = alloc.allocate((blocks + 1) * sizeof(double));
  double* partial = static_cast<double*>(scratch->data());
  sum_squares_partial_kernel<<<blocks, kThreads, 0, stream>>>(x.raw(), e, n, partial);
  TRIDENT_CUDA_LAUNCHED();
  sum_partials_kernel<<<1, 1024, 0, stream>>>(partial, static_cast<int>(blocks), partial + blocks);
  TRIDENT_CUDA_LAUNCHED();
  double result = 0.0;
  TRIDENT_CUDA_CHECK(cudaMemcpyAsync(&result, partial + blocks, sizeof(double), cudaMemcpyDeviceToHost, stream));
  TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

}  // namespace trident::cuda
