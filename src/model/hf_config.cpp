// config.json of GPT-2 / Llama / Mistral / Qwen2 models <-> ModelConfig.
#include "trident/model/hf_config.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trident/core/error.hpp"

namespace trident::model {

namespace fs = std::filesystem;

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

HfModelInfo parse_gpt2(const Keys& k) {
  HfModelInfo info;
  info.family = HfFamily::kGPT2;
  ModelConfig& m = info.config;
  m.arch = Arch::kGPT2;
  m.hidden = to_int(k.integer("n_embd", k.integer("hidden_size", 768)), k, "n_embd");
  m.layers = to_int(k.integer("n_layer", 12), k, "n_layer");
  m.heads = to_int(k.integer("n_head", 12), k, "n_head");
  m.kv_heads = m.heads;
  m.ffn_hidden = to_int(k.integer("n_inner", 4 * int64_t(m.hidden)), k, "n_inner");
  m.vocab = to_int(k.integer("vocab_size"), k, "vocab_size");
  info.max_positions = k.integer("n_positions", 1024);
  m.norm_eps = k.number("layer_norm_epsilon", 1e-5);
  m.tie_embeddings = k.boolean("tie_word_embeddings", true);
  const std::string act = k.text("activation_function", "gelu_new");
  TRIDENT_CONFIG_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", k.where(), ": activation_function \"", act,
                       "\" is not supported (trident's GPT-2 MLP uses the tanh GELU, gelu_new)");
  k.require("scale_attn_weights", Json(true), "trident scales attention scores by 1/sqrt(head size)");
  k.require("scale_attn_by_inverse_layer_idx", Json(false), "trident does not scale attention by layer index");
  k.require("add_cross_attention", Json(false), "trident models are decoder-only");
  return info;
}

HfModelInfo parse_llama_like(const Keys& k, HfFamily family) {
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
  info.max_positions = k.integer("max_position_embeddings", 2048);
  m.norm_eps = k.number("rms_norm_eps", 1e-6);
  m.rope_theta = k.number("rope_theta", 10000.0);
  m.tie_embeddings = k.boolean("tie_word_embeddings", false);
  m.qkv_bias = family == HfFamily::kQwen2;
  TRIDENT_CONFIG_CHECK(m.hidden % m.heads == 0, k.where(), ": hidden_size ", m.hidden,
                       " is not divisible by num_attention_heads ", m.heads);
  if (k.find("head_dim"))
    TRIDENT_CONFIG_CHECK(k.integer("head_dim") == m.hidden / m.heads, k.where(), ": head_dim ", k.integer("head_dim"),
                         " differs from hidden_size / num_attention_heads = ", m.hidden / m.heads,
                         " (not supported)");
  const std::string act = k.text("hidden_act", "silu");
  TRIDENT_CONFIG_CHECK(act == "silu", k.where(), ": hidden_act \"", act,
                       "\" is not supported (trident's Llama MLP is SwiGLU with silu)");
  k.require("rope_scaling", Json(), "trident's rotary embedding has no scaling; set rope_scaling to null");
  k.require("attention_bias", Json(false), "trident's Llama attention has no biases");
  k.require("mlp_bias", Json(false), "trident's Llama MLP has no biases");
  if (family == HfFamily::kMistral)
    k.require("sliding_window", Json(), "sliding-window attention; trident attends over the whole sequence");
  if (family == HfFamily::kQwen2)
    k.require("use_sliding_window", Json(false), "sliding-window attention; trident attends over the whole sequence");
  return info;
}

std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  return std::string(buf, r.ptr);
}

}  // namespace

const char* hf_family_name(HfFamily family) {
  switch (family) {
    case HfFamily::kGPT2: return "gpt2";
    case HfFamily::kLlama: return "llama";
    case HfFamily::kMistral: return "mistral";
    case HfFamily::kQwen2: return "qwen2";
  }
  return "?";
}

HfModelInfo parse_hf_config(const Json& json, const std::string& where) {
  TRIDENT_CONFIG_CHECK(json.is_object(), where, ": not a JSON object");
  const Keys k(json, where);
  const std::string type = k.text("model_type", "");
  HfModelInfo info;
  if (type == "gpt2") info = parse_gpt2(k);
  else if (type == "llama") info = parse_llama_like(k, HfFamily::kLlama);
  else if (type == "mistral") info = parse_llama_like(k, HfFamily::kMistral);
  else if (type == "qwen2") info = parse_llama_like(k, HfFamily::kQwen2);
  else
    throw ConfigError(where + ": model_type \"" + type + "\" is not supported (trident loads gpt2, llama, mistral "
                      "and qwen2 models)");
  TRIDENT_CONFIG_CHECK(info.max_positions >= 1, where, ": the maximum number of positions must be >= 1");
  ModelConfig checked = info.config;
  try {
    checked.resolve();
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": the model it describes is not valid in trident: " + e.what());
  }
  return info;
}

HfModelInfo read_hf_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  std::ifstream in(path);
  TRIDENT_CONFIG_CHECK(in.good(), path, " not found (model.init_from names a Hugging Face model directory or a trident "
                       "checkpoint .h5)");
  std::stringstream text;
  text << in.rdbuf();
  Json json;
  try {
    json = Json::parse(text.str());
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": not valid JSON: " + e.what());
  }
  return parse_hf_config(json, path);
}

bool is_hf_model_dir(const std::string& path) {
  return fs::is_directory(path) && fs::is_regular_file(fs::path(path) / "config.json");
}

HfModelInfo hf_info_for(const ModelConfig& cfg) {
  HfModelInfo info;
  info.family = cfg.arch == Arch::kGPT2 ? HfFamily::kGPT2 : cfg.qkv_bias ? HfFamily::kQwen2 : HfFamily::kLlama;
  info.config = cfg;
  info.max_positions = cfg.seq_len;
  return info;
}

Json hf_config_json(const ModelConfig& cfg) {
  const HfModelInfo info = hf_info_for(cfg);
  Json j = Json::object();
  Json arch = Json::array();
  if (info.family == HfFamily::kGPT2) {
    arch.push_back(Json("GPT2LMHeadModel"));
    j.set("architectures", std::move(arch));
    j.set("model_type", Json("gpt2"));
    j.set("vocab_size", Json(cfg.vocab));
    j.set("n_positions", Json(cfg.seq_len));
    j.set("n_embd", Json(cfg.hidden));
    j.set("n_layer", Json(cfg.layers));
    j.set("n_head", Json(cfg.heads));
    j.set("n_inner", Json(cfg.ffn_hidden));
    j.set("activation_function", Json("gelu_new"));
    j.set("layer_norm_epsilon", Json(cfg.norm_eps));
    for (const char* p : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) j.set(p, Json(cfg.dropout));
  } else {
    const bool qwen = info.family == HfFamily::kQwen2;
    arch.push_back(Json(qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM"));
    j.set("architectures", std::move(arch));
    j.set("model_type", Json(qwen ? "qwen2" : "llama"));
    j.set("vocab_size", Json(cfg.vocab));
    j.set("max_position_embeddings", Json(cfg.seq_len));
    j.set("hidden_size", Json(cfg.hidden));
    j.set("intermediate_size", Json(cfg.ffn_hidden));
    j.set("num_hidden_layers", Json(cfg.layers));
    j.set("num_attention_heads", Json(cfg.heads));
    j.set("num_key_value_heads", Json(cfg.kv_heads));
    j.set("hidden_act", Json("silu"));
    j.set("rms_norm_eps", Json(cfg.norm_eps));
    j.set("rope_theta", Json(cfg.rope_theta));
    j.set("rope_scaling", Json());
    if (qwen) j.set("use_sliding_window", Json(false));
    else {
      j.set("attention_bias", Json(false));
      j.set("mlp_bias", Json(false));
    }
    j.set("attention_dropout", Json(0.0));
  }
  j.set("tie_word_embeddings", Json(cfg.tie_embeddings));
  j.set("torch_dtype", Json("float32"));
  return j;
}

std::map<std::string, std::string> hf_model_keys(const HfModelInfo& info) {
  const ModelConfig& m = info.config;
  return {{"model.arch", arch_name(m.arch)},
          {"model.layers", std::to_string(m.layers)},
          {"model.hidden", std::to_string(m.hidden)},
          {"model.heads", std::to_string(m.heads)},
          {"model.kv_heads", std::to_string(m.kv_heads)},
          {"model.ffn_hidden", std::to_string(m.ffn_hidden)},
          {"model.vocab", std::to_string(m.vocab)},
          {"model.tie_embeddings", m.tie_embeddings ? "true" : "false"},
          {"model.norm_eps", number_text(m.norm_eps)},
          {"model.rope_theta", number_text(m.rope_theta)},
          {"model.qkv_bias", m.qkv_bias ? "true" : "false"}};
}

std::string model_tokenizer_path(const std::string& init_from) {
  if (init_from.empty() || !fs::is_directory(init_from)) return "";
  const fs::path tok = fs::path(init_from) / "tokenizer.json";
  return fs::is_regular_file(tok) ? tok.string() : "";
}

}  // namespace trident::model
