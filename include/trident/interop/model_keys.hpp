// The keys of a model's [model], [moe] and [lora] sections, in one table: each key's name,
// default and help (the config schema lists them from here), and how its value moves between
// config text and a ModelConfig. read_model_keys is the one reader (a run's configuration, a
// checkpoint's config text); model_key_texts the one writer (what model.init_from and
// --checkpoint set, a converted checkpoint's config text).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "trident/model/model_config.hpp"

namespace trident::interop {

struct ModelKey {
  const char* name;      // "model.hidden"
  const char* fallback;  // the default as written in an INI file ("" = unset)
  const char* help;
  // What a pretrained model determines (written by model_key_texts); the rest are the run's own
  // choices (seq_len, dropout, the MoE losses' weights, the capacity, LoRA's dropout).
  bool architecture;
  // Sets the value from its text (a ConfigError naming the key when it does not parse), and
  // gives it as text; empty for keys held outside ModelConfig (model.init_from, lora.enabled's
  // reading, lora.init_from).
  std::function<void(model::ModelConfig&, const std::string&)> read;
  std::function<std::string(const model::ModelConfig&)> write;
};

// Every key, [model] first, then [moe], then [lora], each in the order config files list them.
const std::vector<ModelKey>& model_keys();

// The model of the keys' texts (text(name) for every key of the table), resolved: defaults
// filled, every rule checked (ConfigError naming the key). [moe] keys after moe.experts are read
// only when it is not 0, [lora] keys only when lora.enabled.
model::ModelConfig read_model_keys(const std::function<const std::string&(const std::string&)>& text);

// The architecture keys of m as config text ("model.hidden" -> "768"); [moe] keys after
// moe.experts only for a mixture of experts. with_lora: lora.enabled, and with it r, alpha and
// targets (a fine-tuned model's adapters).
std::map<std::string, std::string> model_key_texts(const model::ModelConfig& m, bool with_lora = false);

// "128001,128009": token ids in their config-text form (model.eos_token_id).
std::string token_ids_text(const std::vector<int64_t>& ids);

}  // namespace trident::interop
