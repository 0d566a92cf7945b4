// Fused softmax + cross-entropy over the vocabulary, whole or vocabulary-parallel, one block per
// row. logits, dlogits: [N, V] [ACT] (may alias); targets: [N] int32 on the device (< 0:
// ignored); losses and the shard statistics: [N] fp32. Softmax, exp/log and the loss in fp32.
//
// The row statistics are gathered online in one pass (per thread a running max m and
// sum_j exp(x_j - m), rescaled when m grows, then merged across the block), and the gradient
// pass recomputes exp: the row is read twice, written once. Every read of a row happens before
// the block-wide barrier of the merge and every write after it, and each thread writes only
// elements it read itself, so dlogits may be logits.
//
// Targets are on the device and are not checked on the host (a synchronisation per step): a
// target >= V in cross_entropy_forward_backward gives a NaN loss (where the CPU backend throws),
// so the step is seen to fail; its gradient row is then the scaled softmax.
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/reduce.cuh"

namespace trident::cuda {
namespace {

constexpr int kMaxThreads = 512;

int ce_threads(int64_t V, bool vec) { return row_threads(vec ? V / 8 : V, kMaxThreads); }

// Zeros over [0, V) of row `base` (ignored rows).
__device__ __forceinline__ void zero_row(void* d, Elem ed, int64_t base, int64_t V, bool vec) {
  for_row(V, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float z[W] = {};
    storev(d, ed, base + c, z);
  });
}

// (max, sum of exp) of row elements [base, base + count), combined over the block.
__device__ __forceinline__ void row_stats(const void* x, Elem ex, int64_t base, int64_t count, bool vec, float& m,
                                          float& s) {
  m = -INFINITY;
  s = 0.f;
  for_row(count, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float v[W];
    loadv(x, ex, base + c, v);
#pragma unroll
    for (int k = 0; k < W; ++k) online_add(m, s, v[k]);
  });
}

// v = exp(v - m) * f - gs * onehot(target) for the W columns c .. c+W-1 of a row (f = gs / sum):
// one piece of the row's gradient gs * (softmax - onehot(target)).
template <int W>
__device__ __forceinline__ void softmax_grad(float (&v)[W], int64_t c, int64_t target, float m, float f, float gs) {
#pragma unroll
  for (int k = 0; k < W; ++k) {
    v[k] = expf(v[k] - m) * f;
    if (c + k == target) v[k] -= gs;
  }
}

// losses[n] = max + log(sum) - logits[n, t]; dlogits[n] = gs * (softmax - onehot(t)).
__global__ void cross_entropy_kernel(const void* logits, Elem el, const int32_t* __restrict__ targets, int64_t V,
                                     float gs, float* __restrict__ losses, void* dlogits, Elem ed, bool vec) {
  const int64_t n = blockIdx.x, base = n * V;
  const int32_t t = targets[n];
  if (t < 0) {  // uniform over the block
    zero_row(dlogits, ed, base, V, vec);
    if (threadIdx.x == 0) losses[n] = 0.f;
    return;
  }
  const bool valid = t < V;
  float m, s;
  row_stats(logits, el, base, V, vec, m, s);
  const float x_target = threadIdx.x == 0 && valid ? load(logits, el, base + t) : 0.f;  // before the barrier
  block_max_sum(m, s);
  if (threadIdx.x == 0) losses[n] = valid ? m + logf(s) - x_target : NAN;
  const float f = gs / s;
  for_row(V, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float v[W];
    loadv(logits, el, base + c, v);
    softmax_grad(v, c, t, m, f, gs);
    storev(dlogits, ed, base + c, v);
  });
}

// Over the first valid columns: row_max, sum_exp relative to it, and the target's logit when
// this shard holds it (else 0). Ignored rows get statistics too, as on the CPU.
__global__ void shard_stats_kernel(const void* logits, Elem el, const int32_t* __restrict__ targets, int64_t V,
                                   int64_t offset, int64_t valid, float* __restrict__ row_max,
                                   float* __restrict__ sum_exp, float* __restrict__ target_logit, bool vec) {
  const int64_t n = blockIdx.x, base = n * V;
  float m, s;
  row_stats(logits, el, base, valid, vec, m, s);
  block_max_sum(m, s);
  if (threadIdx.x == 0) {
    const int32_t t = targets[n];
    const int64_t local = int64_t(t) - offset;
    row_max[n] = m;  // -inf when valid == 0, as the CPU
    sum_exp[n] = s;
    target_logit[n] = t >= 0 && local >= 0 && local < valid ? load(logits, el, base + local) : 0.f;
  }
}

// dlogits = gs * (exp(logits - max) / sum - onehot(t)) over valid columns, 0 on padding and on
// ignored rows. Elementwise given the row's statistics: no barrier needed for aliasing.
__global__ void shard_backward_kernel(const void* logits, Elem el, const int32_t* __restrict__ targets, int64_t V,
                                      int64_t offset, int64_t valid, const float* __restrict__ row_max,
                                      const float* __restrict__ sum_exp, float gs, void* dlogits, Elem ed,
                                      bool vec) {
  const int64_t n = blockIdx.x, base = n * V;
  const int32_t t = targets[n];
  if (t < 0) {
    zero_row(dlogits, ed, base, V, vec);
    return;
  }
  const int64_t local = int64_t(t) - offset;
  const float m = row_max[n], f = gs / sum_exp[n];
  // vec implies valid % 8 == 0: an 8-column piece is all valid or all padding
  for_row(V, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float v[W] = {};
    if (c < valid) {
      loadv(logits, el, base + c, v);
      softmax_grad(v, c, local, m, f, gs);
    }
    storev(dlogits, ed, base + c, v);
  });
}

struct ShardShape {
  int64_t N, V;
  Elem logits;
};

ShardShape check_shard(const char* op, const Tensor& logits, const Tensor& targets, int64_t valid_columns,
                       std::initializer_list<const Tensor*> rows) {
  const Elem el = act_elem(logits, op, "logits");
  const int64_t V = last_dim(logits), N = rows_of(logits);
  check_i32(targets, op, "targets");
  check_numel(targets, N, op, "targets");
  TRIDENT_CHECK(valid_columns >= 0 && valid_columns <= V, op, ": valid_columns ", valid_columns, " of ", V);
  for (const Tensor* t : rows) {
    check_f32(*t, op, "row statistics");
    check_numel(*t, N, op, "row statistics");
  }
  return {N, V, el};
}

}  // namespace

void cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets, double grad_scale, Tensor& losses,
                                    Tensor& dlogits, cudaStream_t stream) {
  constexpr const char* op = "cross_entropy_forward_backward";
  const Elem el = act_elem(logits, op, "logits");
  const int64_t V = last_dim(logits), N = rows_of(logits);
  check_i32(targets, op, "targets");
  check_numel(targets, N, op, "targets");
  check_f32(losses, op, "losses");
  check_numel(losses, N, op, "losses");
  const Elem ed = act_elem(dlogits, op, "dlogits");
  check_numel(dlogits, N * V, op, "dlogits");
  if (N == 0) return;
  const bool vec = rows_vectorisable(V, {&logits, &dlogits});
  cross_entropy_kernel<<<static_cast<unsigned>(N), ce_threads(V, vec), 0, stream>>>(
      logits.raw(), el, targets.data<int32_t>(), V, float(grad_scale), losses.data<float>(), dlogits.raw(), ed, vec);
  TRIDENT_CUDA_LAUNCHED();
}

void cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                               int64_t valid_columns, Tensor& row_max, Tensor& sum_exp, Tensor& target_logit,
                               cudaStream_t stream) {
  constexpr const char* op = "cross_entropy_shard_stats";
  const auto s = check_shard(op, logits, targets, valid_columns, {&row_max, &sum_exp, &target_logit});
  if (s.N == 0) return;
  const bool vec = rows_vectorisable(s.V, {&logits}) && valid_columns % 8 == 0;
  shard_stats_kernel<<<static_cast<unsigned>(s.N), ce_threads(valid_columns, vec), 0, stream>>>(
      logits.raw(), s.logits, targets.data<int32_t>(), s.V, vocab_offset, valid_columns, row_max.data<float>(),
      sum_exp.data<float>(), target_logit.data<float>(), vec);
  TRIDENT_CUDA_LAUNCHED();
}

void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                  int64_t valid_columns, const Tensor& row_max, const Tensor& sum_exp,
                                  double grad_scale, Tensor& dlogits, cudaStream_t stream) {
  constexpr const char* op = "cross_entropy_shard_backward";
  const auto s = check_shard(op, logits, targets, valid_columns, {&row_max, &sum_exp});
  const Elem ed = act_elem(dlogits, op, "dlogits");
  check_numel(dlogits, logits.numel(), op, "dlogits");
  if (s.N == 0) return;
  const bool vec = rows_vectorisable(s.V, {&logits, &dlogits}) && valid_columns % 8 == 0;
  shard_backward_kernel<<<static_cast<unsigned>(s.N), ce_threads(s.V, vec), 0, stream>>>(
      logits.raw(), s.logits, targets.data<int32_t>(), s.V, vocab_offset, valid_columns, row_max.data<float>(),
      sum_exp.data<float>(), float(grad_scale), dlogits.raw(), ed, vec);
  TRIDENT_CUDA_LAUNCHED();
}

}  // namespace trident::cuda
