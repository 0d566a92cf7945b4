// config.json of GPT-2 / Llama / Mistral / Qwen2 models <-> ModelConfig.
#include "trident/interop/hf_config.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <vector>
#include <fstream>
#include <set>
#include <sstream>

#include "trident/core/error.hpp"

namespace trident::interop {

namespace fs = std::filesystem;
using model::Arch;
using model::ModelConfig;
using model::MoeConfig;
using model::RopeScaling;
using model::RopeType;

namespace {

// Typed reads of config.json keys, naming the file and key on error.
class Keys {
 public:
  Keys(const Json& json, const std::string& where) : json_(json), where_(where) {}
  const Json* find(const char* key) const {
    const Json* v = json_.find(key);
    return v && !v->is_null() ? v : nullptr;
  }
  int64_t integer(const char* key) const {
    const Json* v = find(key);
    TRIDENT_CONFIG_CHECK(v, where_, ": missing \"", key, "\"");
    TRIDENT_CONFIG_CHECK(v->is_number() && v->as_number() == double(int64_t(v->as_number())), where_, ": \"", key,
                         "\" must be an integer");
    return v->as_int();
  }
  int64_t integer(const char* key, int64_t fallback) const { return find(key) ? integer(key) : fallback; }
  double number(const char* key, double fallback) const {
    const Json* v = find(key);
    if (!v) return fallback;
    TRIDENT_CONFIG_CHECK(v->is_number(), where_, ": \"", key, "\" must be a number");
    return v->as_number();
  }
  bool boolean(const char* key, bool fallback) const {
    const Json* v = find(key);
    if (!v) return fallback;
    TRIDENT_CONFIG_CHECK(v->is_bool(), where_, ": \"", key, "\" must be true or false");
    return v->as_bool();
  }
  std::string text(const char* key, const std::string& fallback) const {
    const Json* v = find(key);
    if (!v) return fallback;
    TRIDENT_CONFIG_CHECK(v->is_string(), where_, ": \"", key, "\" must be a string");
    return v->as_string();
  }
  // A feature trident does not implement: the key must be absent/null or hold `allowed`.
  void require(const char* key, const Json& allowed, const std::string& why) const {
    const Json* v = find(key);
    if (!v) return;
    TRIDENT_CONFIG_CHECK(v->dump() == allowed.dump(), where_, ": \"", key, "\": ", v->dump(), " is not supported (",
                         why, ")");
  }
  const std::string& where() const { return where_; }

 private:
  const Json& json_;
  std::string where_;
};

int to_int(int64_t v, const Keys& k, const char* what) {
  TRIDENT_CONFIG_CHECK(v >= 1 && v <= INT32_MAX, k.where(), ": ", what, " = ", v, " is out of range");
  return static_cast<int>(v);
}

// Keys every transformers config may hold that change nothing trident computes (bookkeeping,
// generation defaults of older files, the fine-tuning head of a classification model).
bool is_bookkeeping_key(const std::string& key) {
  static const std::set<std::string> keys = {
      "_name_or_path", "architectures", "dtype", "torch_dtype", "transformers_version", "model_type", "use_cache",
      "initializer_range", "output_attentions", "output_hidden_states", "return_dict", "id2label", "label2id",
      "problem_type", "finetuning_task", "tokenizer_class", "prefix", "task_specific_params", "chunk_size_feed_forward",
      "is_encoder_decoder", "is_decoder", "tie_encoder_decoder", "torchscript", "use_bfloat16", "tf_legacy_loss",
      "pruned_heads", "cross_attention_hidden_size", "sep_token_id", "decoder_start_token_id", "max_length",
      "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty",
      "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
      "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
      "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
      "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens", "pretraining_tp",
      "_attn_implementation_autoset", "bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings"};
  return keys.count(key) > 0;
}

// Every key of the file is bookkeeping or one the family's parser reads: anything else could
// change what the model computes, so it is an error naming the key.
void check_known_keys(const Json& json, const std::string& where, const std::string& family,
                      const std::vector<const char*>& model_keys) {
  std::set<std::string> known(model_keys.begin(), model_keys.end());
  for (const auto& [key, value] : json.as_object()) {
    if (is_bookkeeping_key(key) || known.count(key)) continue;
    throw ConfigError(detail::concat(where, ": \"", key, "\" is not a ", family,
                                     " setting trident understands (it could change what the model computes; "
                                     "remove it if it does not)"));
  }
  TRIDENT_CONFIG_CHECK(!json.find("is_encoder_decoder") || json.at("is_encoder_decoder").dump() == "false", where,
                       ": is_encoder_decoder: trident models are decoder-only");
}

// bos/pad: one id or null; eos: one id, a list, or null. Ids at or above vocab_size name no
// token of this model (transformers' GPT2Config puts 50256 into every small model it makes):
// they are dropped, as if null.
void read_special_tokens(const Keys& k, const Json& json, int64_t vocab, ModelConfig& m) {
  auto token = [vocab](int64_t id) { return id >= 0 && id < vocab ? id : -1; };
  m.bos_token_id = token(k.integer("bos_token_id", -1));
  m.pad_token_id = token(k.integer("pad_token_id", -1));
  const Json* eos = json.find("eos_token_id");
  if (!eos || eos->is_null()) return;
  std::vector<int64_t> ids;
  if (eos->is_array()) {
    for (const Json& id : eos->as_array()) {
      TRIDENT_CONFIG_CHECK(id.is_number() && id.as_number() == double(int64_t(id.as_number())), k.where(),
                           ": \"eos_token_id\" must be an integer or a list of integers");
      ids.push_back(id.as_int());
    }
  } else {
    ids.push_back(k.integer("eos_token_id"));
  }
  m.eos_token_ids.clear();
  for (const int64_t id : ids)
    if (token(id) >= 0) m.eos_token_ids.push_back(id);
}

HfModelInfo parse_gpt2(const Keys& k, const Json& json) {
  check_known_keys(json, k.where(), "gpt2",
                   {"activation_function", "add_cross_attention", "attn_pdrop", "embd_pdrop", "resid_pdrop",
                    "layer_norm_epsilon", "n_embd", "n_head", "n_inner", "n_layer", "n_positions", "n_ctx",
                    "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "scale_attn_weights",
                    "summary_activation", "summary_first_dropout", "summary_proj_to_labels", "summary_type",
                    "summary_use_proj", "vocab_size"});
  HfModelInfo info;
  info.family = HfFamily::kGPT2;
  ModelConfig& m = info.config;
  m.arch = Arch::kGPT2;
  m.hidden = to_int(k.integer("n_embd", 768), k, "n_embd");
  m.layers = to_int(k.integer("n_layer", 12), k, "n_layer");
  m.heads = to_int(k.integer("n_head", 12), k, "n_head");
  m.kv_heads = m.heads;
  m.ffn_hidden = to_int(k.integer("n_inner", 4 * int64_t(m.hidden)), k, "n_inner");
  m.vocab = to_int(k.integer("vocab_size"), k, "vocab_size");
  m.max_positions = to_int(k.integer("n_positions", 1024), k, "n_positions");
  m.norm_eps = k.number("layer_norm_epsilon", 1e-5);
  m.tie_embeddings = k.boolean("tie_word_embeddings", true);
  read_special_tokens(k, json, m.vocab, m);
  const std::string act = k.text("activation_function", "gelu_new");
  TRIDENT_CONFIG_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", k.where(), ": activation_function \"", act,
                       "\" is not supported (trident's GPT-2 MLP uses the tanh GELU, gelu_new)");
  k.require("scale_attn_weights", Json(true), "trident scales attention scores by 1/sqrt(head size)");
  k.require("scale_attn_by_inverse_layer_idx", Json(false), "trident does not scale attention by layer index");
  k.require("add_cross_attention", Json(false), "trident models are decoder-only");
  return info;
}

// RoPE as transformers 4 (top-level rope_theta, rope_scaling {"type" | "rope_type", ...}) and
// 5 (rope_parameters {"rope_type", "rope_theta", ...}) write it; rope_scaling wins when both
// are set, as in transformers.
void read_rope(const Keys& k, const Json& json, ModelConfig& m) {
  const Json* legacy = k.find("rope_scaling");
  const Json* params = legacy ? legacy : k.find("rope_parameters");
  const char* key = legacy ? "rope_scaling" : "rope_parameters";
  m.rope_theta = k.number("rope_theta", 10000.0);
  if (!params) return;
  TRIDENT_CONFIG_CHECK(params->is_object(), k.where(), ": \"", key, "\" must be an object or null");
  const Keys p(*params, detail::concat(k.where(), ": ", key));
  for (const auto& [name, value] : params->as_object())
    TRIDENT_CONFIG_CHECK(!value.is_object(), k.where(), ": \"", key, "\" is set per layer type (\"", name,
                         "\"); trident uses one rotary embedding for every layer");
  m.rope_theta = p.number("rope_theta", m.rope_theta);
  const std::string type = p.text("rope_type", p.text("type", "default"));
  RopeScaling& s = m.rope_scaling;
  if (type == "default") s.type = RopeType::kDefault;
  else if (type == "linear") s.type = RopeType::kLinear;
  else if (type == "llama3") s.type = RopeType::kLlama3;
  else if (type == "yarn") s.type = RopeType::kYarn;
  else if (type == "dynamic")
    throw ConfigError(detail::concat(k.where(), ": ", key, ": rope_type \"dynamic\" is not supported (its frequencies "
                                     "change with the length of each input; trident's are fixed per model)"));
  else
    throw ConfigError(detail::concat(k.where(), ": ", key, ": rope_type \"", type, "\" is not supported (trident "
                                     "computes default, linear, llama3 and yarn)"));
  TRIDENT_CONFIG_CHECK(p.number("partial_rotary_factor", 1.0) == 1.0, k.where(), ": ", key,
                       ": partial_rotary_factor != 1 is not supported (trident rotates every head dimension)");
  const std::set<std::string> common = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
  std::set<std::string> allowed;
  if (s.type == RopeType::kLinear) allowed = {"factor"};
  if (s.type == RopeType::kLlama3)
    allowed = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
  if (s.type == RopeType::kYarn)
    allowed = {"factor",  "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
               "mscale", "mscale_all_dim", "truncate"};
  for (const auto& [name, value] : params->as_object())
    TRIDENT_CONFIG_CHECK(common.count(name) || allowed.count(name) || (s.type == RopeType::kDefault && name == "factor"),
                         k.where(), ": ", key, ": \"", name, "\" is not a setting of rope_type ", type,
                         " that trident understands");
  if (s.none()) return;
  // Where transformers takes the pretraining length from: the rope dict, the config's own key
  // (Phi-3 style), or max_position_embeddings.
  const int64_t top_original = k.integer("original_max_position_embeddings", 0);
  s.original_max_positions =
      top_original > 0 ? top_original : p.integer("original_max_position_embeddings", m.max_positions);
  if (s.type == RopeType::kYarn && !p.find("factor"))
    s.factor = double(m.max_positions) / double(std::max<int64_t>(s.original_max_positions, 1));
  else
    s.factor = p.number("factor", 0);
  TRIDENT_CONFIG_CHECK(s.factor > 0, k.where(), ": ", key, ": rope_type ", type, " needs a factor > 0");
  if (s.type == RopeType::kLlama3) {
    for (const char* needed : {"low_freq_factor", "high_freq_factor"})
      TRIDENT_CONFIG_CHECK(p.find(needed), k.where(), ": ", key, ": rope_type llama3 needs \"", needed, "\"");
    s.low_freq_factor = p.number("low_freq_factor", 1);
    s.high_freq_factor = p.number("high_freq_factor", 4);
  }
  if (s.type == RopeType::kYarn) {
    s.attention_factor = p.number("attention_factor", 0);
    s.beta_fast = p.number("beta_fast", 32);
    s.beta_slow = p.number("beta_slow", 1);
    s.mscale = p.number("mscale", 0);
    s.mscale_all_dim = p.number("mscale_all_dim", 0);
    s.truncate = p.boolean("truncate", true);
  }
  (void)json;
}

// Sliding-window attention: Mistral's sliding_window applies to every layer; Qwen2/Qwen3 window
// layers max_window_layers.. when use_sliding_window, or those layer_types names
// "sliding_attention" (which must be the last ones).
void read_sliding_window(const Keys& k, const Json& json, HfFamily family, ModelConfig& m) {
  if (family == HfFamily::kMistral) {
    m.sliding_window = static_cast<int>(std::min<int64_t>(k.integer("sliding_window", 0), INT32_MAX));
    m.window_from = 0;
    return;
  }
  const bool use = k.boolean("use_sliding_window", false);
  const int64_t window = use ? k.integer("sliding_window", 0) : 0;
  std::vector<bool> windowed(size_t(m.layers), false);
  if (const Json* types = k.find("layer_types")) {
    TRIDENT_CONFIG_CHECK(types->is_array() && types->as_array().size() == size_t(m.layers), k.where(),
                         ": \"layer_types\" must list one type per layer (", m.layers, ")");
    for (size_t i = 0; i < windowed.size(); ++i) {
      const Json& t = types->as_array()[i];
      TRIDENT_CONFIG_CHECK(t.is_string() && (t.as_string() == "full_attention" || t.as_string() == "sliding_attention"),
                           k.where(), ": layer_types[", i, "] = ", t.dump(),
                           " is not supported (full_attention or sliding_attention)");
      windowed[i] = t.as_string() == "sliding_attention";
    }
  } else {
    const int64_t from = k.integer("max_window_layers", 28);
    for (size_t i = 0; i < windowed.size(); ++i) windowed[i] = int64_t(i) >= from;
  }
  if (window <= 0) return;  // no window: every layer attends over the whole sequence
  size_t first = windowed.size();
  while (first > 0 && windowed[first - 1]) --first;
  for (size_t i = 0; i < first; ++i)
    TRIDENT_CONFIG_CHECK(!windowed[i], k.where(), ": sliding-window layers must be the last ones (layer ", i,
                         " is windowed, layer ", first - 1, " is not)");
  if (first == windowed.size()) return;  // no layer windowed
  m.sliding_window = static_cast<int>(std::min<int64_t>(window, INT32_MAX));
  m.window_from = static_cast<int>(first);
  (void)json;
}

// The experts of a Mixtral / Qwen2-MoE / Qwen3-MoE config (router_aux_loss_coef is a training
// choice: moe.aux_loss_coef stays the run's).
void read_moe(const Keys& k, HfFamily family, ModelConfig& m) {
  MoeConfig& moe = m.moe;
  TRIDENT_CONFIG_CHECK(k.number("router_jitter_noise", 0.0) == 0.0, k.where(),
                       ": router_jitter_noise != 0 is not supported (trident's router has no noise)");
  moe.top_k = to_int(k.integer("num_experts_per_tok", 2), k, "num_experts_per_tok");
  if (family == HfFamily::kMixtral) {
    moe.experts = to_int(k.integer("num_local_experts", 8), k, "num_local_experts");
    moe.ffn_hidden = m.ffn_hidden;
    moe.norm_topk_prob = true;  // Mixtral always renormalises the top k
    return;
  }
  if (family == HfFamily::kOlmoe) {  // every layer: experts of intermediate_size
    moe.experts = to_int(k.integer("num_experts"), k, "num_experts");
    moe.ffn_hidden = m.ffn_hidden;
    moe.norm_topk_prob = k.boolean("norm_topk_prob", false);
    return;
  }
  const char* experts = k.find("num_experts") ? "num_experts" : "num_local_experts";
  moe.experts = to_int(k.integer(experts), k, experts);
  moe.ffn_hidden = to_int(k.integer("moe_intermediate_size"), k, "moe_intermediate_size");
  moe.every = to_int(k.integer("decoder_sparse_step", 1), k, "decoder_sparse_step");
  moe.norm_topk_prob = k.boolean("norm_topk_prob", false);
  if (const Json* dense = k.find("mlp_only_layers"))
    TRIDENT_CONFIG_CHECK(dense->is_array() && dense->as_array().empty(), k.where(),
                         ": mlp_only_layers = ", dense->dump(), " is not supported (only decoder_sparse_step picks the "
                         "dense layers)");
  const int64_t shared = family == HfFamily::kQwen2Moe ? k.integer("shared_expert_intermediate_size", 0) : 0;
  TRIDENT_CONFIG_CHECK(shared % moe.ffn_hidden == 0, k.where(), ": shared_expert_intermediate_size ", shared,
                       " is not a multiple of moe_intermediate_size ", moe.ffn_hidden,
                       " (trident's shared MLP is moe.shared_experts experts wide)");
  moe.shared_experts = static_cast<int>(shared / moe.ffn_hidden);
}

// The config.json keys of the Mistral and Qwen2/Qwen3 blocks, which their MoE families extend.
const std::vector<const char*> kMistralKeys = {
    "attention_dropout", "head_dim", "hidden_act", "hidden_size", "intermediate_size", "max_position_embeddings",
    "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "rms_norm_eps", "rope_parameters",
    "rope_scaling", "rope_theta", "sliding_window", "vocab_size", "original_max_position_embeddings"};
const std::vector<const char*> kQwenKeys = {
    "attention_bias", "attention_dropout", "head_dim", "hidden_act", "hidden_size", "intermediate_size",
    "layer_types", "max_position_embeddings", "max_window_layers", "num_attention_heads", "num_hidden_layers",
    "num_key_value_heads", "rms_norm_eps", "rope_parameters", "rope_scaling", "rope_theta", "sliding_window",
    "use_sliding_window", "vocab_size", "original_max_position_embeddings"};

std::vector<const char*> with(std::vector<const char*> keys, std::initializer_list<const char*> more) {
  keys.insert(keys.end(), more);
  return keys;
}

HfModelInfo parse_llama_like(const Keys& k, const Json& json, HfFamily family) {
  switch (family) {
    case HfFamily::kLlama:
      check_known_keys(json, k.where(), "llama",
                       {"attention_bias", "attention_dropout", "head_dim", "hidden_act", "hidden_size",
                        "intermediate_size", "max_position_embeddings", "mlp_bias", "num_attention_heads",
                        "num_hidden_layers", "num_key_value_heads", "rms_norm_eps", "rope_parameters",
                        "rope_scaling", "rope_theta", "vocab_size", "original_max_position_embeddings"});
      break;
    case HfFamily::kMistral:
      check_known_keys(json, k.where(), "mistral", kMistralKeys);
      break;
    case HfFamily::kQwen2:
    case HfFamily::kQwen3:
      check_known_keys(json, k.where(), hf_family_name(family), kQwenKeys);
      TRIDENT_CONFIG_CHECK(family == HfFamily::kQwen3 || !k.find("attention_bias"), k.where(),
                           ": \"attention_bias\" is not a qwen2 setting (Qwen2 has q/k/v biases and no o bias)");
      break;
    case HfFamily::kMixtral:
      check_known_keys(json, k.where(), "mixtral",
                       with(kMistralKeys, {"num_local_experts", "num_experts_per_tok", "router_aux_loss_coef",
                                           "router_jitter_noise", "output_router_logits"}));
      break;
    case HfFamily::kQwen2Moe:
    case HfFamily::kQwen3Moe:
      check_known_keys(json, k.where(), hf_family_name(family),
                       with(kQwenKeys, {"decoder_sparse_step", "mlp_only_layers", "moe_intermediate_size",
                                        "norm_topk_prob", "num_experts", "num_local_experts", "num_experts_per_tok",
                                        "output_router_logits", "router_aux_loss_coef",
                                        "shared_expert_intermediate_size", "qkv_bias"}));
      TRIDENT_CONFIG_CHECK(family == HfFamily::kQwen3Moe || !k.find("attention_bias"), k.where(),
                           ": \"attention_bias\" is not a qwen2_moe setting (it has qkv_bias)");
      break;
    case HfFamily::kOlmoe:
      check_known_keys(json, k.where(), "olmoe",
                       {"attention_bias", "attention_dropout", "clip_qkv", "hidden_act", "hidden_size",
                        "intermediate_size", "max_position_embeddings", "norm_topk_prob", "num_attention_heads",
                        "num_experts", "num_experts_per_tok", "num_hidden_layers", "num_key_value_heads",
                        "output_router_logits", "rms_norm_eps", "rope_parameters", "rope_scaling", "rope_theta",
                        "router_aux_loss_coef", "vocab_size", "original_max_position_embeddings"});
      k.require("clip_qkv", Json(), "trident does not clamp q, k and v");
      break;
    case HfFamily::kGPT2: break;
  }
  HfModelInfo info;
  info.family = family;
  ModelConfig& m = info.config;
  m.arch = Arch::kLlama;
  m.hidden = to_int(k.integer("hidden_size"), k, "hidden_size");
  m.layers = to_int(k.integer("num_hidden_layers"), k, "num_hidden_layers");
  m.heads = to_int(k.integer("num_attention_heads"), k, "num_attention_heads");
  m.kv_heads = to_int(k.integer("num_key_value_heads", m.heads), k, "num_key_value_heads");
  m.ffn_hidden = to_int(k.integer("intermediate_size"), k, "intermediate_size");
  m.vocab = to_int(k.integer("vocab_size"), k, "vocab_size");
  m.max_positions = to_int(k.integer("max_position_embeddings", 2048), k, "max_position_embeddings");
  m.norm_eps = k.number("rms_norm_eps", 1e-6);
  m.tie_embeddings = k.boolean("tie_word_embeddings", false);
  read_special_tokens(k, json, m.vocab, m);
  if (k.find("head_dim")) {
    m.head_dim = to_int(k.integer("head_dim"), k, "head_dim");
    if (m.head_dim * m.heads == m.hidden) m.head_dim = 0;  // the default, kept implicit
  } else {
    TRIDENT_CONFIG_CHECK(m.hidden % m.heads == 0, k.where(), ": hidden_size ", m.hidden,
                         " is not divisible by num_attention_heads ", m.heads, " (and no head_dim is given)");
  }
  const bool attention_bias = k.boolean("attention_bias", false);
  m.qkv_bias = family == HfFamily::kQwen2 || attention_bias ||
               (family == HfFamily::kQwen2Moe && k.boolean("qkv_bias", true));
  m.o_bias = attention_bias;
  m.qk_norm = family == HfFamily::kQwen3 || family == HfFamily::kQwen3Moe || family == HfFamily::kOlmoe;
  m.qk_norm_whole = family == HfFamily::kOlmoe;  // OlmoeRMSNorm over all heads of q (and of k)
  const std::string act = k.text("hidden_act", "silu");
  TRIDENT_CONFIG_CHECK(act == "silu", k.where(), ": hidden_act \"", act,
                       "\" is not supported (trident's Llama MLP is SwiGLU with silu)");
  k.require("mlp_bias", Json(false), "trident's Llama MLP has no biases");
  TRIDENT_CONFIG_CHECK(k.number("attention_dropout", 0.0) == 0.0, k.where(),
                       ": attention_dropout != 0 is not supported (trident has no dropout on attention "
                       "probabilities; model.dropout applies to each branch)");
  read_rope(k, json, m);
  read_sliding_window(k, json, family == HfFamily::kMixtral ? HfFamily::kMistral : family, m);
  if (family == HfFamily::kMixtral || family == HfFamily::kQwen2Moe || family == HfFamily::kQwen3Moe ||
      family == HfFamily::kOlmoe)
    read_moe(k, family, m);
  return info;
}

}  // namespace

const char* hf_family_name(HfFamily family) {
  switch (family) {
    case HfFamily::kGPT2: return "gpt2";
    case HfFamily::kLlama: return "llama";
    case HfFamily::kMistral: return "mistral";
    case HfFamily::kQwen2: return "qwen2";
    case HfFamily::kQwen3: return "qwen3";
    case HfFamily::kMixtral: return "mixtral";
    case HfFamily::kQwen2Moe: return "qwen2_moe";
    case HfFamily::kQwen3Moe: return "qwen3_moe";
    case HfFamily::kOlmoe: return "olmoe";
  }
  return "?";
}

HfModelInfo parse_hf_config(const Json& json, const std::string& where) {
  TRIDENT_CONFIG_CHECK(json.is_object(), where, ": not a JSON object");
  const Keys k(json, where);
  const std::string type = k.text("model_type", "");
  HfModelInfo info;
  if (type == "gpt2") info = parse_gpt2(k, json);
  else if (type == "llama") info = parse_llama_like(k, json, HfFamily::kLlama);
  else if (type == "mistral") info = parse_llama_like(k, json, HfFamily::kMistral);
  else if (type == "qwen2") info = parse_llama_like(k, json, HfFamily::kQwen2);
  else if (type == "qwen3") info = parse_llama_like(k, json, HfFamily::kQwen3);
  else if (type == "mixtral") info = parse_llama_like(k, json, HfFamily::kMixtral);
  else if (type == "qwen2_moe") info = parse_llama_like(k, json, HfFamily::kQwen2Moe);
  else if (type == "qwen3_moe") info = parse_llama_like(k, json, HfFamily::kQwen3Moe);
  else if (type == "olmoe") info = parse_llama_like(k, json, HfFamily::kOlmoe);
  else
    throw ConfigError(where + ": model_type \"" + type + "\" is not supported (trident loads gpt2, llama, mistral, "
                      "qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe and olmoe models)");
  ModelConfig checked = info.config;
  checked.seq_len = int(std::min<int64_t>(checked.seq_len, checked.positions()));  // the run picks its own
  try {
    checked.resolve();
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": the model it describes is not valid in trident: " + e.what());
  }
  return info;
}

namespace {
Json read_json_file(const std::string& path) {
  std::ifstream in(path);
  TRIDENT_CONFIG_CHECK(in.good(), path, " not found (model.init_from names a Hugging Face model directory or a trident "
                       "checkpoint .h5)");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return Json::parse(text.str());
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": not valid JSON: " + e.what());
  }
}
}  // namespace

HfModelInfo read_hf_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  HfModelInfo info = parse_hf_config(read_json_file(path), path);
  // generate() stops at generation_config.json's eos ids where it has them (instruct models list
  // their end-of-turn token there).
  const fs::path generation = fs::path(dir) / "generation_config.json";
  if (fs::is_regular_file(generation)) {
    const Json g = read_json_file(generation.string());
    TRIDENT_CONFIG_CHECK(g.is_object(), generation.string(), ": not a JSON object");
    if (const Json* eos = g.find("eos_token_id"); eos && !eos->is_null()) {
      ModelConfig ids;
      read_special_tokens(Keys(g, generation.string()), g, info.config.vocab, ids);
      info.config.eos_token_ids = ids.eos_token_ids;
    }
  }
  return info;
}

namespace {
HfFamily hf_moe_family_for(const ModelConfig& cfg) {
  const MoeConfig& moe = cfg.moe;
  TRIDENT_CONFIG_CHECK(cfg.arch == Arch::kLlama, "a gpt2 mixture-of-experts model has no Hugging Face family "
                       "(Mixtral, Qwen2-MoE and Qwen3-MoE are Llama-style)");
  if (cfg.qk_norm_whole) {
    TRIDENT_CONFIG_CHECK(moe.shared_experts == 0 && moe.every == 1 && moe.ffn_hidden == cfg.ffn_hidden &&
                             cfg.qkv_bias == cfg.o_bias && cfg.sliding_window == 0 && cfg.head_dim == 0,
                         "model.qk_norm_scope = proj exports as OLMoE: experts of model.ffn_hidden in every layer, no "
                         "shared expert or window, head size hidden / heads, attention_bias on q, k, v and o alike");
    return HfFamily::kOlmoe;
  }
  TRIDENT_CONFIG_CHECK(!cfg.o_bias, "model.o_bias in this mixture-of-experts model has no Hugging Face family (OLMoE "
                       "has one, with q/k norms over the whole projections)");
  if (cfg.qk_norm) {
    TRIDENT_CONFIG_CHECK(moe.shared_experts == 0 && !cfg.qkv_bias, "model.qk_norm exports as Qwen3-MoE, which has no "
                         "shared expert (moe.shared_experts) and no q/k/v biases");
    TRIDENT_CONFIG_CHECK(cfg.sliding_window == 0, "a sliding window in a Qwen3-MoE export is not supported");
    return HfFamily::kQwen3Moe;
  }
  if (moe.norm_topk_prob && moe.every == 1 && moe.shared_experts == 0 && !cfg.qkv_bias && moe.ffn_hidden == cfg.ffn_hidden &&
      (cfg.sliding_window == 0 || cfg.window_from == 0))
    return HfFamily::kMixtral;
  TRIDENT_CONFIG_CHECK(moe.shared_experts > 0, "this mixture-of-experts model has no Hugging Face family: Mixtral "
                       "renormalises (moe.norm_topk_prob) in every layer with expert size model.ffn_hidden and no "
                       "biases; Qwen2-MoE has a shared expert (moe.shared_experts > 0)");
  TRIDENT_CONFIG_CHECK(cfg.sliding_window == 0, "a sliding window in a Qwen2-MoE export is not supported");
  return HfFamily::kQwen2Moe;
}
}  // namespace

bool is_hf_model_dir(const std::string& path) {
  return fs::is_directory(path) && fs::is_regular_file(fs::path(path) / "config.json");
}

HfFamily hf_family_for(const ModelConfig& cfg) {
  if (cfg.moe.enabled()) return hf_moe_family_for(cfg);
  if (cfg.arch == Arch::kGPT2) return HfFamily::kGPT2;
  const bool windowed = cfg.sliding_window > 0;
  if (cfg.qk_norm) {
    TRIDENT_CONFIG_CHECK(cfg.qkv_bias == cfg.o_bias, "model.qk_norm exports as Qwen3, whose attention_bias puts biases "
                         "on q, k, v and o alike (model.qkv_bias and model.o_bias differ)");
    return HfFamily::kQwen3;
  }
  if (cfg.qkv_bias && !cfg.o_bias) return HfFamily::kQwen2;
  TRIDENT_CONFIG_CHECK(cfg.qkv_bias == cfg.o_bias, "model.o_bias without model.qkv_bias has no Hugging Face family");
  if (!windowed) return HfFamily::kLlama;
  TRIDENT_CONFIG_CHECK(!cfg.qkv_bias && cfg.window_from == 0, "a sliding window over layers ", cfg.window_from,
                       ".. with these biases has no Hugging Face family (Mistral windows every layer, without "
                       "biases; Qwen2 has q/k/v biases)");
  return HfFamily::kMistral;
}

HfModelInfo hf_info_for(const ModelConfig& cfg) {
  HfModelInfo info;
  info.family = hf_family_for(cfg);
  info.config = cfg;
  info.config.max_positions = cfg.positions();
  return info;
}

namespace {

Json token_ids_json(const std::vector<int64_t>& ids) {
  if (ids.empty()) return Json();
  if (ids.size() == 1) return Json(ids[0]);
  Json list = Json::array();
  for (const int64_t id : ids) list.push_back(Json(id));
  return list;
}

Json token_id_json(int64_t id) { return id >= 0 ? Json(id) : Json(); }

// rope_parameters (transformers 5) for the model's RoPE; rope_scaling carries the same dict
// for transformers 4 (null without scaling), rope_theta stays at the top level for it too.
Json rope_parameters_json(const ModelConfig& cfg, bool with_theta) {
  const RopeScaling& s = cfg.rope_scaling;
  Json r = Json::object();
  r.set("rope_type", Json(s.none() ? "default" : rope_type_name(s.type)));
  if (with_theta) r.set("rope_theta", Json(cfg.rope_theta));
  if (s.none()) return r;
  r.set("factor", Json(s.factor));
  if (s.type == RopeType::kLlama3) {
    r.set("low_freq_factor", Json(s.low_freq_factor));
    r.set("high_freq_factor", Json(s.high_freq_factor));
  }
  if (s.type == RopeType::kYarn) {
    // Settings at transformers' defaults stay implicit, as it writes them.
    if (s.beta_fast != RopeScaling{}.beta_fast) r.set("beta_fast", Json(s.beta_fast));
    if (s.beta_slow != RopeScaling{}.beta_slow) r.set("beta_slow", Json(s.beta_slow));
    if (s.attention_factor > 0) r.set("attention_factor", Json(s.attention_factor));
    if (s.mscale > 0) r.set("mscale", Json(s.mscale));
    if (s.mscale_all_dim > 0) r.set("mscale_all_dim", Json(s.mscale_all_dim));
    if (!s.truncate) r.set("truncate", Json(false));
  }
  if (s.type == RopeType::kLlama3 || s.type == RopeType::kYarn)
    r.set("original_max_position_embeddings",
          Json(s.original_max_positions > 0 ? s.original_max_positions : cfg.positions()));
  return r;
}

const char* architecture_name(HfFamily family) {
  switch (family) {
    case HfFamily::kGPT2: return "GPT2LMHeadModel";
    case HfFamily::kLlama: return "LlamaForCausalLM";
    case HfFamily::kMistral: return "MistralForCausalLM";
    case HfFamily::kQwen2: return "Qwen2ForCausalLM";
    case HfFamily::kQwen3: return "Qwen3ForCausalLM";
    case HfFamily::kMixtral: return "MixtralForCausalLM";
    case HfFamily::kQwen2Moe: return "Qwen2MoeForCausalLM";
    case HfFamily::kQwen3Moe: return "Qwen3MoeForCausalLM";
    case HfFamily::kOlmoe: return "OlmoeForCausalLM";
  }
  return "?";
}

}  // namespace

Json hf_config_json(const ModelConfig& cfg, const std::string& torch_dtype) {
  const HfModelInfo info = hf_info_for(cfg);
  const ModelConfig& m = info.config;
  Json j = Json::object();
  Json arch = Json::array();
  arch.push_back(Json(architecture_name(info.family)));
  j.set("architectures", std::move(arch));
  j.set("model_type", Json(hf_family_name(info.family)));
  j.set("vocab_size", Json(m.vocab));
  if (info.family == HfFamily::kGPT2) {
    j.set("n_positions", Json(m.max_positions));
    j.set("n_embd", Json(m.hidden));
    j.set("n_layer", Json(m.layers));
    j.set("n_head", Json(m.heads));
    j.set("n_inner", Json(m.ffn_hidden));
    j.set("activation_function", Json("gelu_new"));
    j.set("layer_norm_epsilon", Json(m.norm_eps));
    for (const char* p : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) j.set(p, Json(m.dropout));
  } else {
    j.set("max_position_embeddings", Json(m.max_positions));
    j.set("hidden_size", Json(m.hidden));
    j.set("intermediate_size", Json(m.ffn_hidden));
    j.set("num_hidden_layers", Json(m.layers));
    j.set("num_attention_heads", Json(m.heads));
    j.set("num_key_value_heads", Json(m.kv_heads));
    if (info.family != HfFamily::kOlmoe) j.set("head_dim", Json(m.head_size()));  // OLMoE: hidden / heads
    j.set("hidden_act", Json("silu"));
    j.set("rms_norm_eps", Json(m.norm_eps));
    j.set("rope_theta", Json(m.rope_theta));
    j.set("rope_parameters", rope_parameters_json(m, /*with_theta=*/true));
    j.set("rope_scaling", m.rope_scaling.none() ? Json() : rope_parameters_json(m, /*with_theta=*/false));
    const HfFamily f = info.family;
    if (f == HfFamily::kLlama || f == HfFamily::kQwen3 || f == HfFamily::kQwen3Moe || f == HfFamily::kOlmoe)
      j.set("attention_bias", Json(m.qkv_bias));
    if (f == HfFamily::kOlmoe) {
      j.set("num_experts", Json(m.moe.experts));
      j.set("norm_topk_prob", Json(m.moe.norm_topk_prob));
      j.set("clip_qkv", Json());
    }
    if (f == HfFamily::kLlama) j.set("mlp_bias", Json(false));
    if (f == HfFamily::kMistral || f == HfFamily::kMixtral)
      j.set("sliding_window", m.sliding_window > 0 ? Json(m.sliding_window) : Json());
    if (f == HfFamily::kMixtral) j.set("num_local_experts", Json(m.moe.experts));  // router_jitter_noise: 0.0 default
    if (f == HfFamily::kQwen2Moe || f == HfFamily::kQwen3Moe) {
      // transformers 5 names the count num_local_experts in Qwen3-MoE, num_experts in Qwen2-MoE.
      j.set(f == HfFamily::kQwen3Moe ? "num_local_experts" : "num_experts", Json(m.moe.experts));
      j.set("moe_intermediate_size", Json(m.moe.ffn_hidden));
      j.set("decoder_sparse_step", Json(m.moe.every));
      j.set("mlp_only_layers", Json::array());
      j.set("norm_topk_prob", Json(m.moe.norm_topk_prob));
    }
    if (f == HfFamily::kQwen2Moe) {
      j.set("shared_expert_intermediate_size", Json(int64_t(m.moe.shared_experts) * m.moe.ffn_hidden));
      j.set("qkv_bias", Json(m.qkv_bias));
    }
    if (m.moe.enabled()) {
      j.set("num_experts_per_tok", Json(m.moe.top_k));
      // transformers types it float: an integral value (which Json writes as "0") keeps its default.
      if (m.moe.aux_loss_coef != std::floor(m.moe.aux_loss_coef))
        j.set("router_aux_loss_coef", Json(m.moe.aux_loss_coef));
      j.set("output_router_logits", Json(false));
    }
    if (f == HfFamily::kQwen2 || f == HfFamily::kQwen3 || f == HfFamily::kQwen2Moe || f == HfFamily::kQwen3Moe) {
      const bool windowed = m.sliding_window > 0;
      j.set("use_sliding_window", Json(windowed));
      j.set("sliding_window", windowed ? Json(m.sliding_window) : Json());
      j.set("max_window_layers", Json(windowed ? m.window_from : m.layers));
      Json types = Json::array();
      for (int l = 0; l < m.layers; ++l) types.push_back(Json(m.windowed(l) ? "sliding_attention" : "full_attention"));
      j.set("layer_types", std::move(types));
    }
    j.set("attention_dropout", Json(0.0));
  }
  j.set("bos_token_id", token_id_json(m.bos_token_id));
  j.set("eos_token_id", token_ids_json(m.eos_token_ids));
  j.set("pad_token_id", token_id_json(m.pad_token_id));
  j.set("tie_word_embeddings", Json(m.tie_embeddings));
  j.set("dtype", Json(torch_dtype));
  j.set("torch_dtype", Json(torch_dtype));
  return j;
}

Json hf_generation_config_json(const ModelConfig& cfg) {
  Json j = Json::object();
  j.set("bos_token_id", token_id_json(cfg.bos_token_id));
  j.set("eos_token_id", token_ids_json(cfg.eos_token_ids));
  if (cfg.pad_token_id >= 0) j.set("pad_token_id", Json(cfg.pad_token_id));
  return j;
}

std::string model_tokenizer_path(const std::string& init_from) {
  if (init_from.empty() || !fs::is_directory(init_from)) return "";
  const fs::path tok = fs::path(init_from) / "tokenizer.json";
  return fs::is_regular_file(tok) ? tok.string() : "";
}

}  // namespace trident::interop
