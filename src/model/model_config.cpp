// Model configuration rules and parameter / FLOP counts.
#include "trident/model/model_config.hpp"

#include <algorithm>
#include <cmath>

#include "trident/core/error.hpp"

namespace trident::model {

Arch arch_from_name(const std::string& name) {
  if (name == "gpt2") return Arch::kGPT2;
  if (name == "llama") return Arch::kLlama;
  throw ConfigError("model.arch: unknown architecture '" + name + "' (expected gpt2 or llama)");
}

const char* arch_name(Arch arch) { return arch == Arch::kGPT2 ? "gpt2" : "llama"; }

void ModelConfig::resolve() {
  // Upper bounds far beyond any model, so sizes and their products stay within int / int64.
  constexpr int kMaxWidth = 1 << 20, kMaxLayers = 1 << 16, kMaxVocab = 1 << 30, kMaxSeq = 1 << 24;
  TRIDENT_CONFIG_CHECK(layers >= 1 && layers <= kMaxLayers, "model.layers must be in [1, ", kMaxLayers, "] (got ", layers, ")");
  TRIDENT_CONFIG_CHECK(hidden >= 1 && hidden <= kMaxWidth, "model.hidden must be in [1, ", kMaxWidth, "] (got ", hidden, ")");
  TRIDENT_CONFIG_CHECK(heads >= 1, "model.heads must be >= 1 (got ", heads, ")");
  TRIDENT_CONFIG_CHECK(head_dim >= 0 && head_dim <= kMaxWidth, "model.head_dim must be in [0, ", kMaxWidth, "] (got ",
                       head_dim, ")");
  TRIDENT_CONFIG_CHECK(head_dim > 0 || hidden % heads == 0, "model.heads = ", heads, " must divide model.hidden = ",
                       hidden, " (or set model.head_dim)");
  TRIDENT_CONFIG_CHECK(arch == Arch::kLlama || head_dim == 0 || head_dim * heads == hidden,
                       "model.head_dim differs from hidden / heads: that needs arch = llama");
  TRIDENT_CONFIG_CHECK(arch == Arch::kLlama || (!qk_norm && !o_bias && sliding_window == 0 && rope_scaling.none()),
                       "model.qk_norm, model.o_bias, model.sliding_window and model.rope_scaling need arch = llama");
  TRIDENT_CONFIG_CHECK(sliding_window >= 0 && window_from >= 0 && window_from <= layers,
                       "model.sliding_window must be >= 0 and model.window_from in [0, model.layers]");
  TRIDENT_CONFIG_CHECK(max_positions >= 0, "model.max_positions must be >= 0");
  if (kv_heads == 0) kv_heads = heads;
  TRIDENT_CONFIG_CHECK(kv_heads >= 1 && heads % kv_heads == 0, "model.kv_heads = ", kv_heads,
                       " must divide model.heads = ", heads);
  TRIDENT_CONFIG_CHECK(arch == Arch::kLlama || kv_heads == heads,
                       "model.kv_heads = ", kv_heads, " differs from model.heads: grouped-query attention needs arch = llama");
  TRIDENT_CONFIG_CHECK(arch != Arch::kLlama || head_size() % 2 == 0, "the head size (model.head_dim, or model.hidden / model.heads) = ", head_size(),
                       " must be even for rotary embeddings (arch = llama)");
  if (ffn_hidden == 0)
    ffn_hidden = arch == Arch::kGPT2 ? 4 * hidden : (8 * hidden / 3 + 63) / 64 * 64;
  TRIDENT_CONFIG_CHECK(ffn_hidden >= 1 && ffn_hidden <= 4 * kMaxWidth, "model.ffn_hidden must be in [1, ",
                       4 * kMaxWidth, "] (got ", ffn_hidden, ")");
  TRIDENT_CONFIG_CHECK(vocab >= 2 && vocab <= kMaxVocab, "model.vocab must be in [2, ", kMaxVocab, "] (got ", vocab, ")");
  TRIDENT_CONFIG_CHECK(seq_len >= 1 && seq_len <= kMaxSeq, "model.seq_len must be in [1, ", kMaxSeq, "] (got ", seq_len, ")");
  TRIDENT_CONFIG_CHECK(!learned_positions() || max_positions == 0 || seq_len <= max_positions, "model.seq_len = ",
                       seq_len, " exceeds the ", max_positions, " learned positions (model.max_positions)");
  TRIDENT_CONFIG_CHECK(max_positions <= kMaxSeq, "model.max_positions must be <= ", kMaxSeq);
  TRIDENT_CONFIG_CHECK(bos_token_id >= -1 && bos_token_id < vocab && pad_token_id >= -1 && pad_token_id < vocab,
                       "model.bos_token_id and model.pad_token_id must be token ids below model.vocab (or -1: none)");
  for (const int64_t id : eos_token_ids)
    TRIDENT_CONFIG_CHECK(id >= 0 && id < vocab, "model.eos_token_id: ", id, " is not a token id below model.vocab = ",
                         vocab);
  TRIDENT_CONFIG_CHECK(dropout >= 0.0 && dropout < 1.0, "model.dropout must be in [0, 1) (got ", dropout, ")");
  if (lora.enabled()) {
    TRIDENT_CONFIG_CHECK(lora.r <= hidden, "lora.r = ", lora.r, " must be <= model.hidden = ", hidden);
    TRIDENT_CONFIG_CHECK(lora.alpha > 0, "lora.alpha must be > 0 (got ", lora.alpha, ")");
    TRIDENT_CONFIG_CHECK(lora.dropout >= 0 && lora.dropout < 1, "lora.dropout must be in [0, 1) (got ", lora.dropout, ")");
    int targeted = 0;
    for (const char* t : {"q", "k", "v", "o", "up", "down", "gate"}) targeted += lora.rank_for(t) > 0;
    size_t names = lora.targets.empty() ? 0 : size_t(std::count(lora.targets.begin(), lora.targets.end(), ',')) + 1;
    TRIDENT_CONFIG_CHECK(targeted > 0 && size_t(targeted) == names, "lora.targets = '", lora.targets,
                         "': a comma list of distinct names among q, k, v, o, up, down, gate");
    TRIDENT_CONFIG_CHECK(gated_mlp() || lora.rank_for("gate") == 0,
                         "lora.targets: gate needs arch = llama (gpt2 has no gate projection)");
  }
  constexpr int kMaxExperts = 1 << 12;
  TRIDENT_CONFIG_CHECK(moe.experts == 0 || (moe.experts >= 2 && moe.experts <= kMaxExperts),
                       "moe.experts must be 0 (dense) or in [2, ", kMaxExperts, "] (got ", moe.experts, ")");
  if (moe.enabled()) {
    TRIDENT_CONFIG_CHECK(moe.top_k >= 1 && moe.top_k <= moe.experts, "moe.top_k must be in [1, moe.experts = ",
                         moe.experts, "] (got ", moe.top_k, ")");
    if (moe.ffn_hidden == 0) moe.ffn_hidden = ffn_hidden;
    TRIDENT_CONFIG_CHECK(moe.ffn_hidden >= 1 && moe.ffn_hidden <= 4 * kMaxWidth, "moe.ffn_hidden must be in [1, ",
                         4 * kMaxWidth, "] (got ", moe.ffn_hidden, ")");
    TRIDENT_CONFIG_CHECK(moe.every >= 1 && moe.every <= layers, "moe.every must be in [1, model.layers = ", layers,
                         "] (got ", moe.every, ")");
    TRIDENT_CONFIG_CHECK(moe.shared_experts >= 0 && moe.shared_experts <= moe.experts,
                         "moe.shared_experts must be in [0, moe.experts] (got ", moe.shared_experts, ")");
    TRIDENT_CONFIG_CHECK(moe.aux_loss_coef >= 0 && moe.z_loss_coef >= 0,
                         "moe.aux_loss_coef and moe.z_loss_coef must be >= 0");
    TRIDENT_CONFIG_CHECK(moe.capacity_factor == 0 || (moe.capacity_factor > 0 && moe.capacity_factor <= moe.experts),
                         "moe.capacity_factor must be 0 (dropless) or in (0, moe.experts] (got ", moe.capacity_factor, ")");
    // LoRA dropout masks are keyed by a token's place in its micro-batch; rows sorted by
    // expert have no such place that every layout shares.
    TRIDENT_CONFIG_CHECK(!lora.enabled() || lora.dropout == 0 ||
                             (lora.rank_for("up") == 0 && lora.rank_for("gate") == 0 && lora.rank_for("down") == 0),
                         "lora.dropout > 0 on up/gate/down projections is not supported with moe.experts > 0 "
                         "(target attention projections only, or set lora.dropout = 0)");
  }
}

void ModelConfig::check_tensor_parallel(int tp) const {
  TRIDENT_CONFIG_CHECK(heads % tp == 0, "model.heads = ", heads, " must be divisible by parallel.tp = ", tp);
  TRIDENT_CONFIG_CHECK(kv_heads % tp == 0, "model.kv_heads = ", kv_heads, " must be divisible by parallel.tp = ", tp,
                       " (each tensor-parallel rank holds whole key/value heads)");
  TRIDENT_CONFIG_CHECK(ffn_hidden % tp == 0, "model.ffn_hidden = ", ffn_hidden, " must be divisible by parallel.tp = ", tp);
  TRIDENT_CONFIG_CHECK(!qk_norm_whole || tp == 1, "model.qk_norm_scope = proj (a norm over all heads) with parallel.tp = ",
                       tp, " is not supported: its statistic would span the tensor-parallel ranks; use tp = 1");
  TRIDENT_CONFIG_CHECK(!moe.enabled() || moe.ffn_hidden % tp == 0, "moe.ffn_hidden = ", moe.ffn_hidden,
                       " must be divisible by parallel.tp = ", tp);
}

int ModelConfig::moe_layers() const {
  int n = 0;
  for (int l = 0; l < layers; ++l) n += moe.layer(l);
  return n;
}

int64_t ModelConfig::matmul_params() const { return std::llround(plan_shape().matmul_params()); }
int64_t ModelConfig::total_params() const { return std::llround(plan_shape().total_params()); }
int64_t ModelConfig::lora_params() const { return std::llround(plan_shape().lora_params()); }

int LoraConfig::rank_for(const std::string& name) const {
  if (!enabled()) return 0;
  size_t start = 0;
  while (start <= targets.size()) {
    const size_t end = std::min(targets.find(',', start), targets.size());
    std::string t = targets.substr(start, end - start);
    t.erase(0, t.find_first_not_of(' '));
    t.erase(t.find_last_not_of(' ') + 1);
    if (t == name) return r;
    start = end + 1;
  }
  return 0;
}

plan::ModelShape ModelConfig::plan_shape() const {
  plan::ModelShape s;
  s.arch = arch == Arch::kGPT2 ? plan::ModelArch::kGPT2 : plan::ModelArch::kLlama;
  s.layers = layers, s.hidden = hidden, s.heads = heads, s.kv_heads = kv_heads, s.ffn = ffn_hidden;
  s.head_dim = head_dim;
  s.vocab = vocab, s.seq = seq_len, s.tied = tie_embeddings, s.dropout = dropout > 0;
  s.qkv_bias = qkv_bias, s.o_bias = o_bias, s.positions = positions();
  if (qk_norm) s.q_norm = qk_norm_width(heads), s.k_norm = qk_norm_width(kv_heads);
  s.lora = {lora.rank_for("q"),  lora.rank_for("k"),    lora.rank_for("v"),   lora.rank_for("o"),
            lora.rank_for("up"), lora.rank_for("gate"), lora.rank_for("down")};
  if (moe.enabled()) {
    s.experts = moe.experts, s.top_k = moe.top_k, s.moe_ffn = moe.ffn_hidden, s.moe_every = moe.every;
    s.shared_ffn = moe.shared_experts * moe.ffn_hidden;
  }
  return s;
}

}  // namespace trident::model
