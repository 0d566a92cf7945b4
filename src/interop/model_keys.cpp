// The [model], [moe] and [lora] keys, one table (model_keys.hpp).
#include "trident/interop/model_keys.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "trident/core/error.hpp"
#include "trident/core/number_text.hpp"
#include "trident/core/value_text.hpp"

namespace trident::interop {

using model::ModelConfig;

namespace {

std::string bool_text(bool v) { return v ? "true" : "false"; }

// "2,3" -> {2, 3}; "" -> none.
std::vector<int64_t> token_ids(const std::string& key, const std::string& text) {
  std::vector<int64_t> ids;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    char* end = nullptr;
    errno = 0;
    const long long id = std::strtoll(item.c_str(), &end, 10);
    TRIDENT_CONFIG_CHECK(!item.empty() && *end == '\0' && errno == 0 && id >= 0, key,
                         ": expected comma-separated token ids, got '", text, "'");
    ids.push_back(id);
    at = comma + 1;
  }
  return ids;
}

// A key held in a field of ModelConfig: field(m) gives a reference to it (const or not);
// parse(name, text) reads its value and format(value) writes it.
template <typename Field, typename Parse, typename Format>
ModelKey field_key(const char* name, const char* fallback, const char* help, bool architecture, Field field,
                   Parse parse, Format format) {
  return {name, fallback, help, architecture,
          [name, field, parse](ModelConfig& m, const std::string& t) { field(m) = parse(name, t); },
          [field, format](const ModelConfig& m) { return std::string(format(field(m))); }};
}

std::string text(const std::string& /*key*/, const std::string& t) { return t; }
std::string same_text(const std::string& t) { return t; }
std::string int_text(int64_t v) { return std::to_string(v); }
// A number that must be > 0.
double positive_value(const std::string& key, const std::string& t) {
  const double v = number_value(key, t);
  TRIDENT_CONFIG_CHECK(v > 0, key, " must be > 0 (got ", v, ")");
  return v;
}

template <typename Field>
ModelKey int_key(const char* name, const char* fallback, const char* help, bool architecture, Field field) {
  return field_key(name, fallback, help, architecture, field, int32_value, int_text);
}
template <typename Field>
ModelKey int64_key(const char* name, const char* fallback, const char* help, bool architecture, Field field) {
  return field_key(name, fallback, help, architecture, field, integer_value, int_text);
}
template <typename Field>
ModelKey bool_key(const char* name, const char* fallback, const char* help, bool architecture, Field field) {
  return field_key(name, fallback, help, architecture, field, boolean_value, bool_text);
}
template <typename Field>
ModelKey number_key(const char* name, const char* fallback, const char* help, bool architecture, Field field) {
  return field_key(name, fallback, help, architecture, field, number_value, number_text);
}
template <typename Field>
ModelKey positive_key(const char* name, const char* fallback, const char* help, bool architecture, Field field) {
  return field_key(name, fallback, help, architecture, field, positive_value, number_text);
}
template <typename Field>
ModelKey text_key(const char* name, const char* fallback, const char* help, bool architecture, Field field) {
  return field_key(name, fallback, help, architecture, field, text, same_text);
}

bool in_section(const char* key, const char* section) { return std::string(key).rfind(section, 0) == 0; }

}  // namespace

std::string token_ids_text(const std::vector<int64_t>& ids) {
  std::string out;
  for (const int64_t id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

const std::vector<ModelKey>& model_keys() {
  static const std::vector<ModelKey> keys = {
      {"model.arch", "gpt2",
       "architecture: gpt2 (LayerNorm, GELU, learned positions) | llama (RMSNorm, RoPE, SwiGLU, GQA)",
       true, [](ModelConfig& m, const std::string& t) { m.arch = model::arch_from_name(t); },
       [](const ModelConfig& m) { return std::string(model::arch_name(m.arch)); }},
      int_key("model.layers", "8",
       "transformer blocks", true,
               [](auto& m) -> auto& { return m.layers; }),
      int_key("model.hidden", "64",
       "hidden size C", true,
               [](auto& m) -> auto& { return m.hidden; }),
      int_key("model.heads", "4",
       "attention heads", true,
               [](auto& m) -> auto& { return m.heads; }),
      int_key("model.kv_heads", "0",
       "key/value heads for grouped-query attention (0 = heads)", true,
               [](auto& m) -> auto& { return m.kv_heads; }),
      int_key("model.ffn_hidden", "0",
       "MLP hidden size (0 = 4*hidden for gpt2, 8/3*hidden rounded to 64 for llama)", true,
               [](auto& m) -> auto& { return m.ffn_hidden; }),
      int_key("model.vocab", "320",
       "vocabulary size (>= the tokenizer's)", true,
               [](auto& m) -> auto& { return m.vocab; }),
      int_key("model.seq_len", "64",
       "sequence length T", false,
               [](auto& m) -> auto& { return m.seq_len; }),
      bool_key("model.tie_embeddings", "true",
       "share the token embedding with the output head", true,
               [](auto& m) -> auto& { return m.tie_embeddings; }),
      number_key("model.dropout", "0",
       "dropout on the embedding and on each attention/MLP branch before the residual add", false,
               [](auto& m) -> auto& { return m.dropout; }),
      bool_key("model.qkv_bias", "false",
       "llama: biases on the q, k, v projections (Qwen2; with model.o_bias: Llama's attention_bias)", true,
               [](auto& m) -> auto& { return m.qkv_bias; }),
      bool_key("model.o_bias", "false",
       "llama: a bias on the attention output projection", true,
               [](auto& m) -> auto& { return m.o_bias; }),
      int_key("model.head_dim", "0",
       "llama: attention head size (0 = hidden / heads)", true,
               [](auto& m) -> auto& { return m.head_dim; }),
      bool_key("model.qk_norm", "false",
       "llama: RMSNorm over each query and key head before RoPE (Qwen3)", true,
               [](auto& m) -> auto& { return m.qk_norm; }),
      {"model.qk_norm_scope", "head",
       "with model.qk_norm: head (each head, Qwen3) | proj (the whole q and k projections, OLMoE; tp = 1)",
       true, [](ModelConfig& m, const std::string& t) {
         TRIDENT_CONFIG_CHECK(t == "head" || t == "proj", "model.qk_norm_scope must be head or proj (got '", t, "')");
         TRIDENT_CONFIG_CHECK(t == "head" || m.qk_norm, "model.qk_norm_scope = proj needs model.qk_norm = true");
         m.qk_norm_whole = t == "proj";
       },
       [](const ModelConfig& m) { return std::string(m.qk_norm_whole ? "proj" : "head"); }},
      positive_key("model.norm_eps", "1e-5",
       "epsilon of LayerNorm (gpt2) / RMSNorm (llama)", true,
               [](auto& m) -> auto& { return m.norm_eps; }),
      positive_key("model.rope_theta", "10000",
       "base of the rotary embedding's frequencies (llama)", true,
               [](auto& m) -> auto& { return m.rope_theta; }),
      {"model.rope_scaling", "none",
       "llama: RoPE scaling, none | linear:factor=F | llama3:factor=F,low_freq_factor=L,high_freq_factor=H,original_max_positions=P | yarn:factor=F[,original_max_positions=P,beta_fast=,beta_slow=,attention_factor=,mscale=,mscale_all_dim=,truncate=]",
       true, [](ModelConfig& m, const std::string& t) { m.rope_scaling = model::parse_rope_scaling(t); },
       [](const ModelConfig& m) { return m.rope_scaling.str(); }},
      int64_key("model.max_positions", "0",
       "positions the model was built for (gpt2: rows of the position table, >= seq_len; llama: what RoPE scaling reads); 0 = seq_len", true,
               [](auto& m) -> auto& { return m.max_positions; }),
      int_key("model.sliding_window", "0",
       "llama: query t attends to keys t - W + 1 .. t only, in layers window_from.. (0 = whole sequence; Mistral, Qwen2)", true,
               [](auto& m) -> auto& { return m.sliding_window; }),
      int_key("model.window_from", "0",
       "llama: the first layer with the sliding window", true,
               [](auto& m) -> auto& { return m.window_from; }),
      int64_key("model.bos_token_id", "-1",
       "the model's beginning-of-sequence token id (-1 = none; exported to config.json)", true,
               [](auto& m) -> auto& { return m.bos_token_id; }),
      {"model.eos_token_id", "",
       "the model's end-of-sequence token ids, comma-separated (generation stops at them; exported)",
       true, [](ModelConfig& m, const std::string& t) { m.eos_token_ids = token_ids("model.eos_token_id", t); },
       [](const ModelConfig& m) { return token_ids_text(m.eos_token_ids); }},
      int64_key("model.pad_token_id", "-1",
       "the model's padding token id (-1 = none; exported)", true,
               [](auto& m) -> auto& { return m.pad_token_id; }),
      {"model.init_from", "",
       "start from a Hugging Face model directory (its config.json sets the model keys) or a trident checkpoint .h5",
       false, {}, {}},
      int_key("moe.experts", "0",
       "experts per mixture-of-experts layer (0 = dense MLPs)", true,
               [](auto& m) -> auto& { return m.moe.experts; }),
      int_key("moe.top_k", "2",
       "experts each token is routed to", true,
               [](auto& m) -> auto& { return m.moe.top_k; }),
      int_key("moe.ffn_hidden", "0",
       "hidden size of each expert's MLP (0 = model.ffn_hidden)", true,
               [](auto& m) -> auto& { return m.moe.ffn_hidden; }),
      int_key("moe.every", "1",
       "layer l is an MoE layer when (l + 1) % every == 0 (1 = every layer)", true,
               [](auto& m) -> auto& { return m.moe.every; }),
      int_key("moe.shared_experts", "0",
       "a shared MLP of shared_experts * moe.ffn_hidden features behind a sigmoid gate, added for every token (Qwen2-MoE)", true,
               [](auto& m) -> auto& { return m.moe.shared_experts; }),
      bool_key("moe.norm_topk_prob", "true",
       "renormalise the k chosen routing probabilities to sum to 1 (Mixtral; Qwen's norm_topk_prob)", true,
               [](auto& m) -> auto& { return m.moe.norm_topk_prob; }),
      number_key("moe.aux_loss_coef", "0.01",
       "load-balancing loss E * sum_e f_e * P_e (Switch/Mixtral), averaged over MoE layers, times this", false,
               [](auto& m) -> auto& { return m.moe.aux_loss_coef; }),
      number_key("moe.z_loss_coef", "0",
       "router z-loss mean logsumexp(logits)^2 (ST-MoE), averaged over MoE layers, times this", false,
               [](auto& m) -> auto& { return m.moe.z_loss_coef; }),
      number_key("moe.capacity_factor", "0",
       "0 = dropless; else each expert takes ceil(factor * tokens * k / E) of a micro-batch's assignments, the rest dropped", false,
               [](auto& m) -> auto& { return m.moe.capacity_factor; }),
      {"lora.enabled", "false",
       "train LoRA adapters on the chosen projections, every other weight frozen",
       true, {},
       [](const ModelConfig& m) { return bool_text(m.lora.enabled()); }},
      {"lora.r", "8",
       "LoRA rank",
       true, [](ModelConfig& m, const std::string& t) {
         m.lora.r = int32_value("lora.r", t);
         TRIDENT_CONFIG_CHECK(m.lora.r >= 1, "lora.r must be >= 1 (got ", m.lora.r, ")");
       },
       [](const ModelConfig& m) { return std::to_string(m.lora.r); }},
      number_key("lora.alpha", "16",
       "LoRA alpha (scale alpha/r)", true,
               [](auto& m) -> auto& { return m.lora.alpha; }),
      number_key("lora.dropout", "0",
       "LoRA dropout on the adapters' input (training only; masks keyed by global element like model.dropout)", false,
               [](auto& m) -> auto& { return m.lora.dropout; }),
      text_key("lora.targets", "q,v",
       "projections with adapters: q,k,v,o,up,down,gate", true,
               [](auto& m) -> auto& { return m.lora.targets; }),
      {"lora.init_from", "",
       "start the adapters from a Hugging Face PEFT adapter directory (its r, alpha and modules must match)",
       false, {}, {}},
  };
  return keys;
}

ModelConfig read_model_keys(const std::function<const std::string&(const std::string&)>& text) {
  ModelConfig m;
  const bool lora = boolean_value("lora.enabled", text("lora.enabled"));
  for (const ModelKey& k : model_keys()) {
    if (!k.read) continue;
    if (in_section(k.name, "lora.") && !lora) continue;
    if (in_section(k.name, "moe.") && std::string(k.name) != "moe.experts" && m.moe.experts == 0) continue;
    k.read(m, text(k.name));
  }
  m.resolve();
  return m;
}

std::map<std::string, std::string> model_key_texts(const ModelConfig& m, bool with_lora) {
  std::map<std::string, std::string> out;
  for (const ModelKey& k : model_keys()) {
    if (!k.architecture || !k.write) continue;
    if (in_section(k.name, "lora.") && (!with_lora || (std::string(k.name) != "lora.enabled" && !m.lora.enabled())))
      continue;
    if (in_section(k.name, "moe.") && std::string(k.name) != "moe.experts" && !m.moe.enabled()) continue;
    out[k.name] = k.write(m);
  }
  return out;
}

}  // namespace trident::interop
