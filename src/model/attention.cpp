// Self-attention block part: projections, RoPE, fused attention kernel, output projection.
#include "trident/model/attention.hpp"

#include <cmath>

namespace trident::model {

namespace {
double output_init_std(const ModelConfig& cfg) { return 0.02 / std::sqrt(2.0 * cfg.layers); }
bool qkv_bias(const ModelConfig& cfg) { return cfg.has_bias() || cfg.qkv_bias; }
}  // namespace

Attention::Attention(ParamStore& store, const std::string& prefix, const ModelConfig& cfg, TensorParallel tp)
    : cfg_(cfg),
      tp_(tp),
      heads_(cfg.heads / tp.size()),
      kv_heads_(cfg.kv_heads / tp.size()),
      q_(store, prefix + ".q", cfg.hidden, cfg.heads * cfg.head_size(), qkv_bias(cfg), 0.02, Split::kColumn, tp,
         cfg.lora.rank_for("q"), cfg.lora.scale()),
      k_(store, prefix + ".k", cfg.hidden, cfg.kv_heads * cfg.head_size(), qkv_bias(cfg), 0.02, Split::kColumn, tp,
         cfg.lora.rank_for("k"), cfg.lora.scale()),
      v_(store, prefix + ".v", cfg.hidden, cfg.kv_heads * cfg.head_size(), qkv_bias(cfg), 0.02, Split::kColumn, tp,
         cfg.lora.rank_for("v"), cfg.lora.scale()),
      o_(store, prefix + ".o", cfg.heads * cfg.head_size(), cfg.hidden, cfg.has_bias(), output_init_std(cfg),
         Split::kRow, tp, cfg.lora.rank_for("o"), cfg.lora.scale()) {
  cfg.check_tensor_parallel(tp.size());
}

AttentionActivations Attention::make_activations(Ops& ops, int64_t batch, DType dtype,
                                                std::optional<DType> stored) const {
  const int64_t t = cfg_.seq_len, hs = cfg_.head_size();
  const DType s = stored.value_or(dtype);
  AttentionActivations a;
  a.q = ops.zeros(Shape{batch, t, heads_ * hs}, s);
  a.k = ops.zeros(Shape{batch, t, kv_heads_ * hs}, s);
  a.v = ops.zeros(Shape{batch, t, kv_heads_ * hs}, s);
  a.out = ops.zeros(Shape{batch, t, heads_ * hs}, s);
  a.lse = ops.zeros(Shape{batch, heads_, t}, dtype);
  return a;
}

AttentionScratch Attention::make_scratch(Ops& ops, int64_t batch, DType dtype) const {
  const int64_t t = cfg_.seq_len, hs = cfg_.head_size();
  AttentionScratch s;
  s.dout = ops.zeros(Shape{batch, t, heads_ * hs}, dtype);
  s.dq = ops.zeros(Shape{batch, t, heads_ * hs}, dtype);
  s.dk = ops.zeros(Shape{batch, t, kv_heads_ * hs}, dtype);
  s.dv = ops.zeros(Shape{batch, t, kv_heads_ * hs}, dtype);
  return s;
}

void Attention::forward(Ops& ops, const Tensor& x, const Tensor& positions, AttentionActivations& a, Tensor& out,
                        bool accumulate, const DropoutSite& lora) const {
  recompute(ops, x, positions, a, lora);
  o_.forward(ops, a.out, out, accumulate, lora);
}

void Attention::recompute(Ops& ops, const Tensor& x, const Tensor& positions, AttentionActivations& a,
                          const DropoutSite& lora) const {
  q_.forward(ops, x, a.q, false, lora);
  k_.forward(ops, x, a.k, false, lora);
  v_.forward(ops, x, a.v, false, lora);
  if (cfg_.arch == Arch::kLlama) {
    ops.rope_forward(a.q, positions, cfg_.head_size(), cfg_.rope_theta);
    ops.rope_forward(a.k, positions, cfg_.head_size(), cfg_.rope_theta);
  }
  ops.attention_forward(a.q, a.k, a.v, heads_, kv_heads_, positions, a.out, a.lse);
}

void Attention::backward(Ops& ops, const Tensor& x, const Tensor& positions, const AttentionActivations& a,
                         const Tensor& dout, AttentionScratch& s, Tensor& dx, const DropoutSite& lora) const {
  o_.backward(ops, a.out, dout, &s.dout, false, lora);
  ops.attention_backward(a.q, a.k, a.v, a.out, a.lse, s.dout, heads_, kv_heads_, positions, s.dq, s.dk, s.dv);
  if (cfg_.arch == Arch::kLlama) {
    ops.rope_backward(s.dq, positions, cfg_.head_size(), cfg_.rope_theta);
    ops.rope_backward(s.dk, positions, cfg_.head_size(), cfg_.rope_theta);
  }
  q_.backward(ops, x, s.dq, &dx, false, lora);
  k_.backward(ops, x, s.dk, &dx, /*accumulate_dx=*/true, lora);
  v_.backward(ops, x, s.dv, &dx, /*accumulate_dx=*/true, lora);
}

KvCache Attention::make_cache(Ops& ops, int64_t batch, int64_t length, DType dtype) const {
  const int64_t width = kv_heads_ * cfg_.head_size();
  return {ops.zeros(Shape{batch, length, width}, dtype), ops.zeros(Shape{batch, length, width}, dtype)};
}

DecodeAttention Attention::make_decode_scratch(Ops& ops, int64_t rows, DType dtype) const {
  const int64_t hs = cfg_.head_size();
  return {ops.zeros(Shape{rows, heads_ * hs}, dtype), ops.zeros(Shape{rows, kv_heads_ * hs}, dtype),
          ops.zeros(Shape{rows, kv_heads_ * hs}, dtype), ops.zeros(Shape{rows, heads_ * hs}, dtype)};
}

void Attention::decode(Ops& ops, const Tensor& x, const Tensor& positions, const Tensor& start, KvCache& cache,
                       DecodeAttention& s, Tensor& out) const {
  q_.forward(ops, x, s.q);
  k_.forward(ops, x, s.k);
  v_.forward(ops, x, s.v);
  if (cfg_.arch == Arch::kLlama) {
    ops.rope_forward(s.q, positions, cfg_.head_size(), cfg_.rope_theta);
    ops.rope_forward(s.k, positions, cfg_.head_size(), cfg_.rope_theta);
  }
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
  ops.attention_cached(s.q.view(q_shape), cache.k, cache.v, heads_, kv_heads_, start, attended);
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
