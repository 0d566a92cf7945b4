// The backend interface: every kernel the model and trainer need, over Tensors on one device.
// Layers above call Ops and never branch on the device (docs/design.md section 9).
//
// Shape letters used throughout:
//   B batch (micro-batch), T sequence length, N = B*T rows, C hidden, V vocab,
//   NH query heads, NKV key/value heads (NH % NKV == 0), HS head size, F ffn hidden.
// Activations are row-major [N, features]; q is [B, T, NH*HS] and k, v are [B, T, NKV*HS]
// (head-interleaved within a row, exactly what the projection GEMMs produce).
// Conventions: "+=" outputs accumulate (parameter gradients across micro-batches, residual
// gradients); all other outputs are overwritten. Token ids, positions and targets are int32.
//
// Dtype contract (mixed precision). A float kernel call either computes in fp64 (every float
// argument fp64: finite-difference checks) or in fp32. In an fp32 call:
//  - activation arguments [ACT] may each be fp32, bf16 or fp16, independently (a bf16 branch
//    output may be added into an fp32 residual, a norm may read fp32 and write bf16). 16-bit
//    values are widened to fp32 on load and rounded to nearest even on store; everything in
//    between (sums, norms' statistics, softmax, exp/log, the loss) is fp32, long sums over rows
//    (dw, db, dbias) are accumulated in double. A "+=" 16-bit output is
//    widened, added to in fp32 and rounded once.
//  - parameters and their gradients (w, b, dw, db, bias, dbias, wte, wpe, dwte, dwpe) and saved
//    statistics (mean, rstd, lse, losses, row_max, sum_exp, target_logit) are fp32.
//  - gemm: a, b, c each fp32, bf16 or fp16; see gemm below.
// Anything else (a 16-bit parameter or statistic, fp64 mixed with other dtypes, int32 where a
// float is expected) is an Error naming the kernel, the argument and the dtypes it takes.
// The CPU backend has no fp16 arithmetic (no AVX512-FP16 on these CPUs): fp16 is storage only.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "trident/backend/rotary_frequencies.hpp"
#include "trident/core/tensor.hpp"

namespace trident {

class Ops {
 public:
  virtual ~Ops() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  // Peak FLOP/s of this rank's compute resources for dtype, measured (not assumed).
  virtual double peak_flops(DType dtype) = 0;

  // Waits until every kernel this backend has queued has finished (the CPU backend's have
  // returned already). For timing; results are ordered without it (copy() to the host waits).
  virtual void synchronize() {}

  // Most device memory held by this backend's tensors at once since it was made, in MiB (the
  // GPU's "memory" figure; its allocator's cache not counted). 0 on the CPU backend, whose
  // memory is the process's (peak RSS).
  virtual double peak_device_mb() const { return 0; }

  // A zero-filled tensor on this device.
  virtual Tensor zeros(Shape shape, DType dtype) = 0;
  // dst = src, elementwise (same numel); across devices when one side is on the host. Converts
  // when the dtypes differ: fp32 <-> fp64, and between fp32, bf16 and fp16 (round to nearest
  // even; the CPU's vectorised bf16 rounding flushes fp32 subnormals, |x| < 2^-126, to zero).
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  virtual void fill(Tensor& x, double value) = 0;

  // Mixed precision: fp32 inputs of GEMMs are rounded to dtype (kBF16, kF16) and accumulated
  // in fp32; kF32 (the default) computes fp32 inputs in fp32. Returns the precision the backend
  // will use: kF32 where the hardware or library has no faster 16-bit path (the CPU measures
  // it). At kF32 the CPU widens 16-bit inputs and multiplies in fp32 (16-bit storage, fp32
  // arithmetic); the GPU multiplies 16-bit inputs on its 16-bit tensor cores whatever this
  // setting (products of 16-bit values are exact in fp32 either way).
  virtual DType set_matmul_precision(DType dtype) = 0;
  // The precision the last set_matmul_precision settled on (kF32 before any).
  virtual DType matmul_precision() const = 0;
  // Why the last set_matmul_precision returned another precision than asked ("" when it did not).
  virtual std::string matmul_precision_note() const { return ""; }

  // c = alpha * op(a) @ op(b) + beta * c, a and b seen as 2-D [rows, last dim].
  // op(a): [M, K], op(b): [K, N], c: [M, N]. trans_b with b = W[out, in] gives x @ W^T.
  // Dtypes: all fp64, or a, b, c each fp32/bf16/fp16 with fp32 accumulation. At bf16 matmul
  // precision bf16 and fp32 inputs (rounded) use bf16 dot products; c may be fp32 (beta = 1
  // accumulates 16-bit products into fp32 master gradients) or 16-bit (rounded once at the
  // end). Inputs with fp16, and any 16-bit input at fp32 precision, are widened and multiplied
  // in fp32 on the CPU.
  virtual void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                    double beta, Tensor& c) = 0;
  // Several GEMMs of one shape in one call: c[g] = alpha * op(a[g]) @ op(b[g]) + beta * c[g] for
  // g < c.size(), where an a (or b) of one tensor is shared by every part. Where each operand's
  // parts lie one stride apart in memory, the GPU runs them as one strided-batched cuBLASLt
  // GEMM (the fused q/k/v and gate/up projections); elsewhere, and on the CPU, part by part.
  virtual void gemm_parts(bool trans_a, bool trans_b, double alpha, const std::vector<Tensor>& a,
                          const std::vector<Tensor>& b, double beta, const std::vector<Tensor>& c) {
    check_gemm_parts(a, b, c);
    for (size_t g = 0; g < c.size(); ++g) {
      Tensor part = c[g];
      gemm(trans_a, trans_b, alpha, a[a.size() == 1 ? 0 : g], b[b.size() == 1 ? 0 : g], beta, part);
    }
  }
  static void check_gemm_parts(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                               const std::vector<Tensor>& c) {
    TRIDENT_CHECK(!c.empty() && (a.size() == 1 || a.size() == c.size()) && (b.size() == 1 || b.size() == c.size()),
                  "gemm_parts: ", c.size(), " outputs for ", a.size(), " a and ", b.size(),
                  " b operands (each one or one per output)");
  }

  // y[N, C] += bias[C] (broadcast over rows). [ACT] y, a, b, out, x, dy; bias, dbias fp32.
  virtual void add_bias(Tensor& y, const Tensor& bias) = 0;
  // dbias[C] += sum over rows of dy[N, C].
  virtual void bias_backward(const Tensor& dy, Tensor& dbias) = 0;
  // out = a + b (same shape; out may alias a or b).
  virtual void add(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // x *= s.
  virtual void scale(Tensor& x, double s) = 0;
  // Sum of squares of all elements, accumulated in double. x [ACT].
  virtual double sum_squares(const Tensor& x) = 0;

  // out[n, :] = wte[tokens[n] - vocab_offset, :] (+ wpe[positions[n], :] when wpe is defined).
  // wte may be a vocabulary shard holding ids [vocab_offset, vocab_offset + rows): a token
  // outside it contributes a zero row (the tensor-parallel group sums the shards' outputs).
  virtual void embedding_forward(const Tensor& tokens, const Tensor& positions, const Tensor& wte,
                                 const Tensor& wpe, int64_t vocab_offset, Tensor& out) = 0;
  // dwte[tokens[n] - vocab_offset, :] += dout[n, :] for tokens in the shard;
  // dwpe[positions[n], :] += dout[n, :] when dwpe is defined.
  // [ACT] out, dout; the tables and their gradients are fp32.
  virtual void embedding_backward(const Tensor& tokens, const Tensor& positions, const Tensor& dout,
                                  int64_t vocab_offset, Tensor& dwte, Tensor& dwpe) = 0;

  // y = (x - mean) * rstd * w + b over the last dim C; saves mean[N], rstd[N].
  // Norms: [ACT] x, y, dy, dx; w, b, dw, db, mean, rstd fp32 (fp64 in fp64 calls).
  virtual void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps,
                                 Tensor& y, Tensor& mean, Tensor& rstd) = 0;
  // dx += ..., dw += ..., db += ... (dw, db undefined: frozen parameters, dx only)
  virtual void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean,
                                  const Tensor& rstd, Tensor& dx, Tensor& dw, Tensor& db) = 0;
  // y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps); saves rstd[N].
  virtual void rmsnorm_forward(const Tensor& x, const Tensor& w, double eps, Tensor& y, Tensor& rstd) = 0;
  // dx += ..., dw += ... (dw undefined: a frozen weight, dx only)
  virtual void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd,
                                Tensor& dx, Tensor& dw) = 0;

  // GELU, tanh approximation (GPT-2's "gelu_new"). dx may alias dy. Activations: [ACT] all.
  virtual void gelu_forward(const Tensor& x, Tensor& y) = 0;
  virtual void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) = 0;
  // The bias of a projection and GELU in one pass: x[N, F] += bias (x keeps the pre-activation
  // that backward reads), y = gelu(x) of the fp32 sum. bias fp32.
  virtual void bias_gelu_forward(Tensor& x, const Tensor& bias, Tensor& y) = 0;
  // dx = gelu'(x) * dy and dbias[F] += its column sums (in double), in one pass; dx may alias dy.
  virtual void gelu_bias_backward(const Tensor& x, const Tensor& dy, Tensor& dx, Tensor& dbias) = 0;
  // y = silu(gate) * up. dgate/dup may alias nothing but each other's inputs' storage is read first.
  virtual void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y) = 0;
  virtual void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate,
                               Tensor& dup) = 0;

  // Mixture-of-experts token movement over rows of C features. index, slots: int32 on the
  // device; scale, weights: fp32 (fp64 in fp64 calls); x, y, a, b, out [ACT]. Row sums are
  // accumulated in double. Each output row is written by one thread group: deterministic.
  // gather_rows: out[m, :] = scale[m] * x[index[m], :] for m < M (scale undefined: 1).
  //   x [N, C], index [M] in [0, N), out [M, C].
  virtual void gather_rows(const Tensor& x, const Tensor& index, const Tensor& scale, Tensor& out) = 0;
  // combine_rows: out[n, :] (+)= sum over j with slots[n, j] >= 0 of weights[n, j] * y[slots[n, j], :]
  //   (weights undefined: 1; "+=" when accumulate). y [M, C], slots [N, K], out [N, C].
  virtual void combine_rows(const Tensor& y, const Tensor& slots, const Tensor& weights, Tensor& out,
                            bool accumulate) = 0;
  // row_dots: out[n, j] = a[n, :] . b[slots[n, j], :], 0 where slots[n, j] < 0.
  //   a [N, C], b [M, C], slots [N, K], out [N, K] fp32 (fp64 in fp64 calls).
  virtual void row_dots(const Tensor& a, const Tensor& b, const Tensor& slots, Tensor& out) = 0;

  // Rotary embedding in place on x[N, H*HS], rotate-half pairing (i, i + HS/2) as in Llama;
  // angle = positions[n] * f.inv_freq[i] (i < HS/2), cos and sin scaled by f.scale. Backward
  // rotates the gradient by the negative angle. x, dx [ACT] (rotated in fp32, rounded once).
  virtual void rope_forward(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& f) = 0;
  virtual void rope_backward(Tensor& dx, const Tensor& positions, int head_size, const RotaryFrequencies& f) = 0;

  // Causal softmax attention, scale 1/sqrt(HS), grouped KV heads (query head h reads kv head
  // h / (NH/NKV)). Never builds a T x T matrix per head beyond one tile. Saves the row
  // log-sum-exp lse[B, NH, T] (fp32) for the backward pass. [ACT] q, k, v, out, dout, dq, dk, dv.
  // Document masking: with positions (int32 [B*T]) defined, query t of a row sees keys
  // t - positions[t] .. t only: positions restart at 0 where a packed document starts, so a
  // token attends within its own document. t - positions[t] must be >= 0 and non-decreasing
  // along each row. Undefined positions: plain causal (as if positions[t] = t).
  virtual void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads,
                                 int kv_heads, const Tensor& positions, Tensor& out, Tensor& lse) = 0;
  // dq, dk, dv are overwritten.
  virtual void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                  const Tensor& lse, const Tensor& dout, int heads, int kv_heads,
                                  const Tensor& positions, Tensor& dq, Tensor& dk, Tensor& dv) = 0;
  // Generation: attention of S new queries per sequence against a key/value cache that already
  // holds their keys and values. q, out: [B, S, NH*HS]; k_cache, v_cache: [B, L, NKV*HS];
  // start: int32 [B] on the host, the position of sequence b's first new token. Query s of
  // sequence b sees cache positions 0 .. start[b] + s (causal), or with window > 0 only the
  // last `window` of them (sliding-window layers). fp32 or fp64, all alike.
  virtual void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int heads,
                                int kv_heads, const Tensor& start, Tensor& out, int window = 0) = 0;

  // Fused softmax + cross-entropy over logits[N, V]: losses[n] = -log softmax(logits[n])[t]
  // for targets t >= 0, 0 where targets[n] < 0 (ignored: prompt or padding). Writes
  // dlogits[n] = grad_scale * (softmax - onehot) (zero for ignored rows); dlogits may alias logits.
  // [ACT] logits, dlogits; losses fp32. With 16-bit dlogits, grad_scale should keep
  // grad_scale * softmax above the format's smallest normal (fp16: 6e-5) where it matters.
  virtual void cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets,
                                              double grad_scale, Tensor& losses, Tensor& dlogits) = 0;

  // Vocabulary-parallel cross-entropy, for logits[N, Vl] holding global ids [vocab_offset,
  // vocab_offset + Vl) of which the first valid_columns are real (the rest is padding, ignored).
  // Step 1, per row: row_max = max_j logits; sum_exp = sum_j exp(logits - row_max);
  // target_logit = logits[t - vocab_offset] when this shard holds target t, else 0. [N] each,
  // fp32; logits and dlogits [ACT].
  virtual void cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                         int64_t valid_columns, Tensor& row_max, Tensor& sum_exp,
                                         Tensor& target_logit) = 0;
  // Step 2, with the group's max and sum of exponentials (relative to that max):
  // dlogits = grad_scale * (exp(logits - max) / sum - onehot(t)); zero for ignored rows and
  // padding columns. dlogits may alias logits.
  virtual void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                            int64_t valid_columns, const Tensor& row_max, const Tensor& sum_exp,
                                            double grad_scale, Tensor& dlogits) = 0;

  // Dropout in place with a counter-based mask: global element g = first_index + i is kept and
  // scaled by 1/(1-p) when u(g) >= p, else zeroed, where u(g) is word g % 4 of the Philox block
  // (key, g / 4, stream) mapped to (0, 1). The mask depends only on (key, stream, global index):
  // backward applies the same call to the gradient, and every layout that gives an element the
  // same global index drops it alike (docs/design.md section 2). x [ACT]: the mask is dtype-independent.
  virtual void dropout(Tensor& x, double p, uint64_t key, uint64_t stream, int64_t first_index) = 0;
  // Gaussian noise in place (differential privacy): x[i] += std_dev * z(g), g = first_index + i,
  // z(g) standard normal from Philox block (key, g / 2, stream) by Box-Muller (cos for even g,
  // sin for odd). A function of (key, stream, global index) alone, like dropout's mask; the
  // backends agree to rounding of log, sqrt and cos/sin. x [ACT] or fp64.
  virtual void add_gaussian(Tensor& x, double std_dev, uint64_t key, uint64_t stream, int64_t first_index) = 0;

  // One AdamW step (decoupled weight decay, bias-corrected, PyTorch's formula) on fp32 tensors:
  // p -= lr*wd*p; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
  // p -= (lr / (1 - b1^step)) * m / (sqrt(v) / sqrt(1 - b2^step) + eps).
  // With variance_step > 0 the second moment is frozen: v stays as it was after that many steps
  // (not updated) and is bias-corrected for that step (top-k compression, comm.topk_dense_steps).
  struct AdamWArgs {
    double lr, beta1, beta2, eps, weight_decay;
    long step;  // 1-based
    double grad_scale = 1.0;  // gradients are multiplied by this first (clipping, unscaling)
    long variance_step = 0;
    // What both backends' kernels use: v = decay * v + (1 - decay) * g^2, and sqrt(1 - beta2^t).
    double second_moment_decay() const { return variance_step > 0 ? 1.0 : beta2; }
    double bias2_sqrt() const { return std::sqrt(1.0 - std::pow(beta2, double(variance_step > 0 ? variance_step : step))); }
  };
  virtual void adamw(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                     const AdamWArgs& args) = 0;
};

}  // namespace trident
