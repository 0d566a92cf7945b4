// Hugging Face config.json <-> ModelConfig for the families trident runs: GPT-2
// (GPT2LMHeadModel), Llama, Mistral (the Llama layout, without sliding-window attention) and
// Qwen2 (Llama with q/k/v biases). Anything the model would compute differently from trident
// (rope_scaling, another activation, sliding windows, biases trident has no place for) is
// rejected with a message naming the key, rather than loaded into a model that is silently
// wrong. Weight names live in hf_names.hpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "trident/core/json.hpp"
#include "trident/model/model_config.hpp"

namespace trident::model {

enum class HfFamily { kGPT2, kLlama, kMistral, kQwen2 };
const char* hf_family_name(HfFamily family);  // its config.json model_type

struct HfModelInfo {
  HfFamily family = HfFamily::kLlama;
  ModelConfig config;         // seq_len stays at its default: the run chooses it
  int64_t max_positions = 0;  // n_positions / max_position_embeddings
};

// Parses a config.json document; `where` names the file in errors (ConfigError).
HfModelInfo parse_hf_config(const Json& json, const std::string& where);
// DIR/config.json.
HfModelInfo read_hf_config(const std::string& dir);
// Whether path is a Hugging Face model directory (holds config.json).
bool is_hf_model_dir(const std::string& path);

// The HF family a trident model exports as (llama, or qwen2 with qkv_bias; gpt2), with
// max_positions = seq_len.
HfModelInfo hf_info_for(const ModelConfig& cfg);
// config.json for a trident model, loadable by transformers' AutoModelForCausalLM.
Json hf_config_json(const ModelConfig& cfg);

// The [model] keys a config.json determines, as config-file strings ("model.hidden" -> "768"):
// what model.init_from = DIR sets (model.seq_len, model.dropout stay the run's).
std::map<std::string, std::string> hf_model_keys(const HfModelInfo& info);

// The tokenizer that comes with a model: DIR/tokenizer.json for an HF model directory that has
// one, else "" (prep and generation use it when no tokenizer is named).
std::string model_tokenizer_path(const std::string& init_from);

}  // namespace trident::model
