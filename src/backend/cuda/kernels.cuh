// The CUDA kernels behind CudaOps, one launcher per Ops method (same arguments and contract as
// ops.hpp, plus the stream to launch on). CudaOps checks that every tensor is on its device;
// each launcher checks shapes and dtypes and throws trident::Error naming the kernel.
// fp64 calls (the CPU backend's finite-difference mode) are an Error on CUDA.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "trident/backend/rotary_frequencies.hpp"
#include "trident/core/tensor.hpp"

namespace trident::cuda {

class DeviceAllocator;

// embedding.cu
void embedding_forward(const Tensor& tokens, const Tensor& positions, const Tensor& wte, const Tensor& wpe,
                       int64_t vocab_offset, Tensor& out, cudaStream_t stream);
void embedding_backward(const Tensor& tokens, const Tensor& positions, const Tensor& dout, int64_t vocab_offset,
                        Tensor& dwte, Tensor& dwpe, cudaStream_t stream);

// norm.cu
void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y, Tensor& mean,
                       Tensor& rstd, cudaStream_t stream);
void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                        Tensor& dx, Tensor& dw, Tensor& db, cudaStream_t stream);
void rmsnorm_forward(const Tensor& x, const Tensor& w, double eps, Tensor& y, Tensor& rstd, cudaStream_t stream);
void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx,
                      Tensor& dw, cudaStream_t stream);

// activation.cu
void gelu_forward(const Tensor& x, Tensor& y, cudaStream_t stream);
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx, cudaStream_t stream);
void bias_gelu_forward(Tensor& x, const Tensor& bias, Tensor& y, cudaStream_t stream);
void gelu_bias_backward(const Tensor& x, const Tensor& dy, Tensor& dx, Tensor& dbias, DeviceAllocator& alloc,
                        cudaStream_t stream);
void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y, cudaStream_t stream);
void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup,
                     cudaStream_t stream);

// moe_rows.cu
void gather_rows(const Tensor& x, const Tensor& index, const Tensor& scale, Tensor& out, cudaStream_t stream);
void combine_rows(const Tensor& y, const Tensor& slots, const Tensor& weights, Tensor& out, bool accumulate,
                  cudaStream_t stream);
void row_dots(const Tensor& a, const Tensor& b, const Tensor& slots, Tensor& out, cudaStream_t stream);

// rope.cu
void rope_forward(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& f, cudaStream_t stream);
void rope_backward(Tensor& dx, const Tensor& positions, int head_size, const RotaryFrequencies& f, cudaStream_t stream);

// cross_entropy.cu
void cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets, double grad_scale,
                                    Tensor& losses, Tensor& dlogits, cudaStream_t stream);
void cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                               int64_t valid_columns, Tensor& row_max, Tensor& sum_exp, Tensor& target_logit,
                               cudaStream_t stream);
void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                  int64_t valid_columns, const Tensor& row_max, const Tensor& sum_exp,
                                  double grad_scale, Tensor& dlogits, cudaStream_t stream);

// attention.cu (flash-style, fused: no T x T matrix in global memory)
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                       const Tensor& positions, Tensor& out, Tensor& lse, cudaStream_t stream);
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int heads, int kv_heads, const Tensor& positions, Tensor& dq,
                        Tensor& dk, Tensor& dv, cudaStream_t stream);
// start is a host int32 tensor (as in ops.hpp); the launcher copies it to the device.
void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int heads, int kv_heads,
                      const Tensor& start, Tensor& out, int window, cudaStream_t stream);

}  // namespace trident::cuda
