// RoPE scaling (model.rope_scaling): the rotary frequencies of a model as transformers computes
// them for its rope types: default (theta^(-2i/HS)), linear (all divided by a factor), llama3
// (Llama 3.1/3.2: low frequencies divided by the factor, high ones kept, a smooth ramp between)
// and yarn (NTK-by-parts interpolation with an attention factor on cos and sin). Written in a
// config file as "none" or "TYPE:key=value,..." (e.g. "llama3:factor=8,low_freq_factor=1,
// high_freq_factor=4,original_max_positions=8192").
#pragma once
#include <string>

#include "trident/backend/ops.hpp"

namespace trident::model {

enum class RopeType { kDefault, kLinear, kLlama3, kYarn };

struct RopeScaling {
  RopeType type = RopeType::kDefault;
  double factor = 1;
  double low_freq_factor = 1, high_freq_factor = 4;  // llama3
  int64_t original_max_positions = 0;                // llama3, yarn (0: the model's max positions)
  double beta_fast = 32, beta_slow = 1;              // yarn
  double attention_factor = 0;                       // yarn: 0 = from factor (and mscale)
  double mscale = 0, mscale_all_dim = 0;             // yarn (DeepSeek's form; 0 = unset)
  bool truncate = true;                              // yarn: floor/ceil the correction range

  bool none() const { return type == RopeType::kDefault; }
  // The config-file form ("none", or "TYPE:key=value,...").
  std::string str() const;
};

// Parses the config-file form; ConfigError naming model.rope_scaling and what is wrong.
RopeScaling parse_rope_scaling(const std::string& text);
const char* rope_type_name(RopeType type);

// The frequencies of head size `head_size`, base theta, for a model of `max_positions`
// positions (yarn and llama3 fall back to it for original_max_positions).
RotaryFrequencies rotary_frequencies(const RopeScaling& scaling, double theta, int head_size, int64_t max_positions);

}  // namespace trident::model
