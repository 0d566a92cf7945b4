// Declarations of the CPU kernels behind CpuOps, one group per source file. Each takes
// Tensors, checks dtypes and shapes, and dispatches to a template over float/double.
#pragma once
#include <vector>

#include "trident/backend/ops.hpp"
#include "trident/core/tensor.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

// gemm.cpp: fp32 (oneDNN sgemm) or fp64 with a, b, c of one dtype. gemm_dims checks the
// shapes of c = op(a) op(b) (any dtypes) and returns M, N, K.
struct GemmDims {
  int64_t M, N, K;
};
GemmDims gemm_dims(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c);
void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta, Tensor& c);

// elementwise.cpp
void copy(const Tensor& src, Tensor& dst);
void fill(Tensor& x, double value);
void add_bias(Tensor& y, const Tensor& bias);
void bias_backward(const Tensor& dy, Tensor& dbias);
void add(const Tensor& a, const Tensor& b, Tensor& out);
void scale(Tensor& x, double s);
void dropout(Tensor& x, double p, uint64_t key, uint64_t stream, int64_t first_index);
void add_gaussian(Tensor& x, double std_dev, uint64_t key, uint64_t stream, int64_t first_index);
void cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset, int64_t valid_columns,
                               Tensor& row_max, Tensor& sum_exp, Tensor& target_logit);
void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                  int64_t valid_columns, const Tensor& row_max, const Tensor& sum_exp,
                                  double grad_scale, Tensor& dlogits);
double sum_squares(const Tensor& x);

// embedding.cpp
void embedding_forward(const Tensor& tokens, const Tensor& positions, const Tensor& wte, const Tensor& wpe,
                       int64_t vocab_offset, Tensor& out);
void embedding_backward(const Tensor& tokens, const Tensor& positions, const Tensor& dout, int64_t vocab_offset,
                        Tensor& dwte, Tensor& dwpe);

// norm.cpp
void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y, Tensor& mean,
                       Tensor& rstd);
void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean,
                        const Tensor& rstd, Tensor& dx, Tensor& dw, Tensor& db);
void rmsnorm_forward(const Tensor& x, const Tensor& w, double eps, Tensor& y, Tensor& rstd);
void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx,
                      Tensor& dw);

// activation.cpp
void gelu_forward(const Tensor& x, Tensor& y);
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
void bias_gelu_forward(Tensor& x, const Tensor& bias, Tensor& y);
void gelu_bias_backward(const Tensor& x, const Tensor& dy, Tensor& dx, Tensor& dbias);
void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y);
void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup);

void gather_rows(const Tensor& x, const Tensor& index, const Tensor& scale, Tensor& out);
void combine_rows(const Tensor& y, const Tensor& slots, const Tensor& weights, Tensor& out, bool accumulate);
void row_dots(const Tensor& a, const Tensor& b, const Tensor& slots, Tensor& out);

// rope.cpp: cos/sin of pos * theta^(-2i/HS) for pos < positions(), i < HS/2, computed in
// double once and grown on demand (owned by the CpuOps object, not global).
class RopeTable {
 public:
  // Makes the table cover positions [0, max_pos] for the frequencies f (scale included).
  void ensure(const RotaryFrequencies& f, int64_t max_pos);
  const double* cos_row(int64_t pos) const { return cos_.data() + pos * half_; }
  const double* sin_row(int64_t pos) const { return sin_.data() + pos * half_; }

 private:
  int64_t half_ = 0;
  RotaryFrequencies frequencies_;
  int64_t positions_ = 0;
  std::vector<double> cos_, sin_;
};
void rope(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& f, bool inverse,
          RopeTable& table);

// attention_forward.cpp, attention_backward.cpp
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                       const Tensor& positions, Tensor& out, Tensor& lse);
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int heads, int kv_heads, const Tensor& positions, Tensor& dq,
                        Tensor& dk, Tensor& dv);
// attention_matmul.cpp: the same with bf16 q, k, v through oneDNN bf16 matmuls (scores and
// probabilities in fp32, P and dS rounded to bf16 for the products); out, dout, dq, dk, dv fp32 or
// bf16, lse fp32. CpuOps takes it when the matmul precision is bf16.
void attention_forward_matmul(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                              const Tensor& positions, Tensor& out, Tensor& lse);
void attention_backward_matmul(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                               const Tensor& dout, int heads, int kv_heads, const Tensor& positions, Tensor& dq,
                               Tensor& dk, Tensor& dv);
// attention_cached.cpp
void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int heads, int kv_heads,
                      const Tensor& start, Tensor& out, int window);

// cross_entropy.cpp
void cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets, double grad_scale,
                                    Tensor& losses, Tensor& dlogits);

// adamw.cpp
void adamw(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const Ops::AdamWArgs& args);

// peak.cpp: FLOP/s of a register-only FMA loop on all OpenMP threads for ~40 ms.
double measure_peak_fma_flops(DType dtype);

}  // namespace trident::cpu
