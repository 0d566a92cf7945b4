// The launchers behind CudaOps's own methods (copy conversions, fill, bias, add, scale, sum of
// squares, dropout, AdamW): private to the CUDA backend, next to the shared ones in kernels.cuh.
// Each checks dtypes and shapes and throws trident::Error naming the kernel; CudaOps has already
// checked that the tensors are on the device.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "trident/backend/ops.hpp"
#include "trident/core/tensor.hpp"

namespace trident::cuda {

class DeviceAllocator;

// elementwise.cu
// dst[0:n] = src[0:n] converted between fp32, bf16 and fp16 (round to nearest even).
void convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n, cudaStream_t stream);
void fill(Tensor& x, double value, cudaStream_t stream);
void add_bias(Tensor& y, const Tensor& bias, cudaStream_t stream);
void bias_backward(const Tensor& dy, Tensor& dbias, DeviceAllocator& alloc, cudaStream_t stream);
void add(const Tensor& a, const Tensor& b, Tensor& out, cudaStream_t stream);
void scale(Tensor& x, double s, cudaStream_t stream);
// Synchronises the stream (the sum comes back to the host).
double sum_squares(const Tensor& x, DeviceAllocator& alloc, cudaStream_t stream);

// dropout.cu
void dropout(Tensor& x, double p, uint64_t key, uint64_t stream_id, int64_t first_index, cudaStream_t stream);
void add_gaussian(Tensor& x, double std_dev, uint64_t key, uint64_t stream_id, int64_t first_index,
                  cudaStream_t stream);

// adamw.cu
void adamw(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const Ops::AdamWArgs& args,
           cudaStream_t stream);

}  // namespace trident::cuda
