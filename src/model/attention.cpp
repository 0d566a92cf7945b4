// Self-attention block part: projections, per-head q/k norms, RoPE, fused attention kernel,
// output projection.
#include "trident/model/attention.hpp"

#include <cmath>

namespace trident::model {

namespace {
double output_init_std(const ModelConfig& cfg) { return 0.02 / std::sqrt(2.0 * cfg.layers); }
bool qkv_bias(const ModelConfig& cfg) { return cfg.has_bias() || cfg.qkv_bias; }
bool o_bias(const ModelConfig& cfg) { return cfg.has_bias() || cfg.o_bias; }

// t [..., heads*HS] seen as one row per norm statistic: [numel / W, W], W a head's HS features
// (or the whole projection's, qk_norm_scope = proj).
Tensor per_head(const Tensor& t, int64_t hs) { return t.view(Shape{t.numel() / hs, hs}); }

// RMSNorm of every head (or whole row) of raw into out (qk_norm); rstd [rows * heads] ([rows]).
void norm_heads(Ops& ops, const Norm& norm, const Tensor& raw, Tensor& out, const Tensor& rstd, int64_t hs) {
  NormActivations a{per_head(out, hs), Tensor(), rstd};
  norm.forward(ops, per_head(raw, hs), a);
}

// The projections' outputs (or their gradients): q, k, v side by side (one batched GEMM), or
// with qk_norm the raw q and k beside v (the norms write q and k on their own).
void side_by_side(Ops& ops, const Shape& q_shape, const Shape& kv_shape, DType dtype, bool qk_norm, Tensor& q,
                  Tensor& k, Tensor& v, Tensor& q_raw, Tensor& k_raw) {
  const std::vector<Tensor> parts = Linear::zeros_side_by_side(ops, {q_shape, kv_shape, kv_shape}, dtype);
  Tensor& first = qk_norm ? q_raw : q;
  Tensor& second = qk_norm ? k_raw : k;
  first = parts[0], second = parts[1], v = parts[2];
  if (qk_norm) q = ops.zeros(q_shape, dtype), k = ops.zeros(kv_shape, dtype);
}

// The q, k and v weights side by side in the flat buffers (their biases and adapters after), so
// that the three projections can run as one batched GEMM.
std::array<Parameter*, 3> add_qkv_weights(ParamStore& store, const std::string& prefix, const ModelConfig& cfg,
                                          TensorParallel tp) {
  const int hs = cfg.head_size();
  return {&Linear::add_weight(store, prefix + ".q", cfg.hidden, cfg.heads * hs, 0.02, Split::kColumn, tp),
          &Linear::add_weight(store, prefix + ".k", cfg.hidden, cfg.kv_heads * hs, 0.02, Split::kColumn, tp),
          &Linear::add_weight(store, prefix + ".v", cfg.hidden, cfg.kv_heads * hs, 0.02, Split::kColumn, tp)};
}
}  // namespace

Attention::Attention(ParamStore& store, const std::string& prefix, const ModelConfig& cfg, TensorParallel tp,
                     int layer)
    : cfg_(cfg),
      tp_(tp),
      heads_(cfg.heads / tp.size()),
      kv_heads_(cfg.kv_heads / tp.size()),
      window_(cfg.windowed(layer) ? cfg.sliding_window : 0),
      rotary_(cfg.arch == Arch::kLlama ? cfg.rotary() : RotaryFrequencies{}),
      qkv_weights_(add_qkv_weights(store, prefix, cfg, tp)),
      q_(store, prefix + ".q", cfg.hidden, cfg.heads * cfg.head_size(), qkv_bias(cfg), 0.02, Split::kColumn, tp,
         cfg.lora.rank_for("q"), cfg.lora.scale(), qkv_weights_[0]),
      k_(store, prefix + ".k", cfg.hidden, cfg.kv_heads * cfg.head_size(), qkv_bias(cfg), 0.02, Split::kColumn, tp,
         cfg.lora.rank_for("k"), cfg.lora.scale(), qkv_weights_[1]),
      v_(store, prefix + ".v", cfg.hidden, cfg.kv_heads * cfg.head_size(), qkv_bias(cfg), 0.02, Split::kColumn, tp,
         cfg.lora.rank_for("v"), cfg.lora.scale(), qkv_weights_[2]),
      o_(store, prefix + ".o", cfg.heads * cfg.head_size(), cfg.hidden, o_bias(cfg), output_init_std(cfg),
         Split::kRow, tp, cfg.lora.rank_for("o"), cfg.lora.scale()) {
  cfg.check_tensor_parallel(tp.size());
  if (cfg.qk_norm) {  // replicated over the tensor-parallel group: every head shares them
    q_norm_.emplace(store, prefix + ".q_norm", cfg.qk_norm_width(cfg.heads), /*layernorm=*/false, cfg.norm_eps);
    k_norm_.emplace(store, prefix + ".k_norm", cfg.qk_norm_width(cfg.kv_heads), /*layernorm=*/false, cfg.norm_eps);
  }
}

AttentionActivations Attention::make_activations(Ops& ops, int64_t batch, DType dtype,
                                                std::optional<DType> stored) const {
  const int64_t t = cfg_.seq_len, hs = cfg_.head_size();
  const DType s = stored.value_or(dtype);
  AttentionActivations a;
  const Shape q_shape{batch, t, heads_ * hs}, kv_shape{batch, t, kv_heads_ * hs};
  side_by_side(ops, q_shape, kv_shape, s, cfg_.qk_norm, a.q, a.k, a.v, a.q_raw, a.k_raw);
  a.out = ops.zeros(q_shape, s);
  a.lse = ops.zeros(Shape{batch, heads_, t}, dtype);
  make_norm_statistics(ops, batch * t, dtype, a.q_rstd, a.k_rstd);
  return a;
}

void Attention::make_norm_statistics(Ops& ops, int64_t rows, DType dtype, Tensor& q_rstd, Tensor& k_rstd) const {
  if (!cfg_.qk_norm) return;
  const int64_t hs = cfg_.head_size();
  q_rstd = ops.zeros(Shape{rows * heads_ * hs / cfg_.qk_norm_width(heads_)}, dtype);
  k_rstd = ops.zeros(Shape{rows * kv_heads_ * hs / cfg_.qk_norm_width(kv_heads_)}, dtype);
}

AttentionScratch Attention::make_scratch(Ops& ops, int64_t batch, DType dtype) const {
  const int64_t t = cfg_.seq_len, hs = cfg_.head_size();
  AttentionScratch s;
  const Shape q_shape{batch, t, heads_ * hs}, kv_shape{batch, t, kv_heads_ * hs};
  s.dout = ops.zeros(q_shape, dtype);
  side_by_side(ops, q_shape, kv_shape, dtype, cfg_.qk_norm, s.dq, s.dk, s.dv, s.dq_raw, s.dk_raw);
  return s;
}

template <typename Buffers>
void Attention::project(Ops& ops, const Tensor& x, const Tensor& positions, Buffers& b,
                        const DropoutSite& lora) const {
  const int64_t hs = cfg_.head_size();
  if (cfg_.qk_norm) {
    Linear::forward_parts(ops, {&q_, &k_, &v_}, x, {b.q_raw, b.k_raw, b.v}, lora);
    norm_heads(ops, *q_norm_, b.q_raw, b.q, b.q_rstd, cfg_.qk_norm_width(heads_));
    norm_heads(ops, *k_norm_, b.k_raw, b.k, b.k_rstd, cfg_.qk_norm_width(kv_heads_));
  } else {
    Linear::forward_parts(ops, {&q_, &k_, &v_}, x, {b.q, b.k, b.v}, lora);
  }
  if (cfg_.arch == Arch::kLlama) {
    ops.rope_forward(b.q, positions, static_cast<int>(hs), rotary_);
    ops.rope_forward(b.k, positions, static_cast<int>(hs), rotary_);
  }
}

void Attention::forward(Ops& ops, const Tensor& x, const TokenPositions& positions, AttentionActivations& a,
                        Tensor& out, bool accumulate, const DropoutSite& lora) const {
  recompute(ops, x, positions, a, lora);
  o_.forward(ops, a.out, out, accumulate, lora);
}

void Attention::recompute(Ops& ops, const Tensor& x, const TokenPositions& positions, AttentionActivations& a,
                          const DropoutSite& lora) const {
  project(ops, x, positions.positions, a, lora);
  ops.attention_forward(a.q, a.k, a.v, heads_, kv_heads_, positions.mask(windowed()), a.out, a.lse);
}

void Attention::backward(Ops& ops, const Tensor& x, const TokenPositions& positions, const AttentionActivations& a,
                         const Tensor& dout, AttentionScratch& s, Tensor& dx, const DropoutSite& lora) const {
  const int64_t hs = cfg_.head_size();
  o_.backward(ops, a.out, dout, &s.dout, false, lora);
  ops.attention_backward(a.q, a.k, a.v, a.out, a.lse, s.dout, heads_, kv_heads_, positions.mask(windowed()), s.dq,
                         s.dk, s.dv);
  if (cfg_.arch == Arch::kLlama) {
    ops.rope_backward(s.dq, positions.positions, static_cast<int>(hs), rotary_);
    ops.rope_backward(s.dk, positions.positions, static_cast<int>(hs), rotary_);
  }
  const Tensor* dq = &s.dq;
  const Tensor* dk = &s.dk;
  if (cfg_.qk_norm) {  // through the per-head norms (their backward accumulates into dx)
    ops.fill(s.dq_raw, 0.0);
    ops.fill(s.dk_raw, 0.0);
    const int64_t wq = cfg_.qk_norm_width(heads_), wk = cfg_.qk_norm_width(kv_heads_);
    Tensor dq_heads = per_head(s.dq_raw, wq), dk_heads = per_head(s.dk_raw, wk);
    q_norm_->backward(ops, per_head(a.q_raw, wq), {Tensor(), Tensor(), a.q_rstd}, per_head(s.dq, wq), dq_heads);
    k_norm_->backward(ops, per_head(a.k_raw, wk), {Tensor(), Tensor(), a.k_rstd}, per_head(s.dk, wk), dk_heads);
    dq = &s.dq_raw;
    dk = &s.dk_raw;
  }
  Linear::backward_parts(ops, {&q_, &k_, &v_}, x, {*dq, *dk, s.dv}, &dx, lora);
}

std::vector<Tensor> Attention::head_norm_grads() const {
  if (!cfg_.qk_norm) return {};
  std::vector<Tensor> out = q_norm_->grads();
  for (const Tensor& t : k_norm_->grads()) out.push_back(t);
  return out;
}

KvCache Attention::make_cache(Ops& ops, int64_t batch, int64_t length, DType dtype) const {
  const int64_t width = kv_heads_ * cfg_.head_size();
  return {ops.zeros(Shape{batch, length, width}, dtype), ops.zeros(Shape{batch, length, width}, dtype)};
}

DecodeAttention Attention::make_decode_scratch(Ops& ops, int64_t rows, DType dtype) const {
  const int64_t hs = cfg_.head_size();
  DecodeAttention s;
  const Shape q_shape{rows, heads_ * hs}, kv_shape{rows, kv_heads_ * hs};
  side_by_side(ops, q_shape, kv_shape, dtype, cfg_.qk_norm, s.q, s.k, s.v, s.q_raw, s.k_raw);
  s.out = ops.zeros(q_shape, dtype);
  s.lse = ops.zeros(Shape{rows * heads_}, dtype);
  make_norm_statistics(ops, rows, dtype, s.q_rstd, s.k_rstd);
  return s;
}

void Attention::decode(Ops& ops, const Tensor& x, const Tensor& positions, const Tensor& start, KvCache& cache,
                       DecodeAttention& s, Tensor& out) const {
  project(ops, x, positions, s, DropoutSite{});
  // The new keys and values join the cache at their sequences' positions.
  const int64_t batch = cache.k.dim(0), length = cache.k.dim(1), width = cache.k.dim(2);
  const int64_t rows = x.dim(0), steps = rows / batch;
  const int32_t* first = start.data<int32_t>();
  Tensor k_rows = cache.k.view(Shape{batch * length, width}), v_rows = cache.v.view(Shape{batch * length, width});
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t at = b * length + first[b];
    Tensor k_dst = k_rows.narrow(at, at + steps), v_dst = v_rows.narrow(at, at + steps);
    ops.copy(s.k.narrow(b * steps, (b + 1) * steps), k_dst);
    ops.copy(s.v.narrow(b * steps, (b + 1) * steps), v_dst);
  }
  const Shape q_shape{batch, steps, s.q.dim(1)};
  Tensor attended = s.out.view(q_shape);
  // A prefill from position 0 sees only its own rows: plain causal attention, the tiled kernel
  // training uses (sliding windows aside), instead of one query at a time against the cache.
  bool from_zero = window_ == 0 && steps > 1;
  for (int64_t b = 0; b < batch && from_zero; ++b) from_zero = first[b] == 0;
  if (from_zero) {
    const Shape kv_shape{batch, steps, s.k.dim(1)};
    Tensor lse = s.lse.narrow(0, rows * heads_).view(Shape{batch, heads_, steps});
    ops.attention_forward(s.q.view(q_shape), s.k.view(kv_shape), s.v.view(kv_shape), heads_, kv_heads_, Tensor(),
                          attended, lse);
  } else {
    ops.attention_cached(s.q.view(q_shape), cache.k, cache.v, heads_, kv_heads_, start, attended, window_);
  }
  o_.forward(ops, s.out, out);
  if (tp_.size() > 1) {
    tp_.all_reduce(out);
    o_.add_bias(ops, out);
  }
}

Tensor& Attention::finish_output(Ops& ops, Tensor& partial, Tensor& rows) const {
  Tensor& out = tp_.reduce_to_rows(partial, rows);
  o_.add_bias(ops, out);
  return out;
}

}  // namespace trident::model
