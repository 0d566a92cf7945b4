// RoPE scaling types, their config-file form, and their frequencies (transformers'
// _compute_*_parameters in modeling_rope_utils.py, computed here in double).
#include "trident/model/rope_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numbers>

#include "trident/core/error.hpp"
#include "trident/core/number_text.hpp"

namespace trident::model {

const char* rope_type_name(RopeType type) {
  switch (type) {
    case RopeType::kDefault: return "default";
    case RopeType::kLinear: return "linear";
    case RopeType::kLlama3: return "llama3";
    case RopeType::kYarn: return "yarn";
  }
  return "?";
}

std::string RopeScaling::str() const {
  if (type == RopeType::kDefault) return "none";
  std::string out = std::string(rope_type_name(type)) + ":factor=" + number_text(factor);
  if (type == RopeType::kLlama3)
    out += ",low_freq_factor=" + number_text(low_freq_factor) + ",high_freq_factor=" + number_text(high_freq_factor);
  if (type == RopeType::kYarn) {
    out += ",beta_fast=" + number_text(beta_fast) + ",beta_slow=" + number_text(beta_slow);
    if (attention_factor > 0) out += ",attention_factor=" + number_text(attention_factor);
    if (mscale > 0) out += ",mscale=" + number_text(mscale);
    if (mscale_all_dim > 0) out += ",mscale_all_dim=" + number_text(mscale_all_dim);
    if (!truncate) out += ",truncate=false";
  }
  if ((type == RopeType::kLlama3 || type == RopeType::kYarn) && original_max_positions > 0)
    out += ",original_max_positions=" + std::to_string(original_max_positions);
  return out;
}

RopeScaling parse_rope_scaling(const std::string& text) {
  RopeScaling s;
  if (text.empty() || text == "none" || text == "default") return s;
  const size_t colon = text.find(':');
  const std::string type = text.substr(0, colon);
  if (type == "linear") s.type = RopeType::kLinear;
  else if (type == "llama3") s.type = RopeType::kLlama3;
  else if (type == "yarn") s.type = RopeType::kYarn;
  else
    throw ConfigError("model.rope_scaling: type '" + type + "' is not supported (none, linear, llama3 or yarn; "
                      "dynamic NTK and longrope are refused)");
  std::map<std::string, std::string> values;
  std::istringstream items(colon == std::string::npos ? "" : text.substr(colon + 1));
  for (std::string item; std::getline(items, item, ',');) {
    const size_t eq = item.find('=');
    TRIDENT_CONFIG_CHECK(eq != std::string::npos, "model.rope_scaling: '", item, "' is not key=value");
    values[item.substr(0, eq)] = item.substr(eq + 1);
  }
  auto number = [&](const char* key, double& out) {
    const auto it = values.find(key);
    if (it == values.end()) return;
    char* end = nullptr;
    out = std::strtod(it->second.c_str(), &end);
    TRIDENT_CONFIG_CHECK(!it->second.empty() && *end == '\0' && std::isfinite(out), "model.rope_scaling: ", key,
                         " = '", it->second, "' is not a number");
    values.erase(it);
  };
  number("factor", s.factor);
  number("low_freq_factor", s.low_freq_factor);
  number("high_freq_factor", s.high_freq_factor);
  number("beta_fast", s.beta_fast);
  number("beta_slow", s.beta_slow);
  number("attention_factor", s.attention_factor);
  number("mscale", s.mscale);
  number("mscale_all_dim", s.mscale_all_dim);
  double original = 0;
  number("original_max_positions", original);
  TRIDENT_CONFIG_CHECK(original >= 0 && original == std::floor(original) && original < 1e12,
                       "model.rope_scaling: original_max_positions must be a whole number");
  s.original_max_positions = static_cast<int64_t>(original);
  if (const auto it = values.find("truncate"); it != values.end()) {
    TRIDENT_CONFIG_CHECK(it->second == "true" || it->second == "false", "model.rope_scaling: truncate must be true or false");
    s.truncate = it->second == "true";
    values.erase(it);
  }
  TRIDENT_CONFIG_CHECK(values.empty(), "model.rope_scaling: unknown key '", values.empty() ? "" : values.begin()->first,
                       "' for type ", type);
  TRIDENT_CONFIG_CHECK(s.factor > 0, "model.rope_scaling: factor must be > 0");
  TRIDENT_CONFIG_CHECK(s.type != RopeType::kLlama3 || s.high_freq_factor > s.low_freq_factor,
                       "model.rope_scaling: high_freq_factor must be > low_freq_factor");
  return s;
}

RotaryFrequencies rotary_frequencies(const RopeScaling& scaling, double theta, int head_size, int64_t max_positions) {
  RotaryFrequencies f = RotaryFrequencies::plain(theta, head_size);
  const double pi = std::numbers::pi;
  const int64_t half = head_size / 2, dim = head_size;
  const double original =
      double(scaling.original_max_positions > 0 ? scaling.original_max_positions : std::max<int64_t>(max_positions, 1));
  switch (scaling.type) {
    case RopeType::kDefault:
      break;
    case RopeType::kLinear:
      for (double& v : f.inv_freq) v /= scaling.factor;
      break;
    case RopeType::kLlama3: {
      const double low_wavelen = original / scaling.low_freq_factor, high_wavelen = original / scaling.high_freq_factor;
      for (double& v : f.inv_freq) {
        const double wavelen = 2 * pi / v;
        if (wavelen > low_wavelen) {
          v /= scaling.factor;  // low frequencies: interpolated
        } else if (wavelen >= high_wavelen) {  // between: a smooth mix
          const double smooth = (original / wavelen - scaling.low_freq_factor) /
                                (scaling.high_freq_factor - scaling.low_freq_factor);
          v = (1 - smooth) * v / scaling.factor + smooth * v;
        }
      }
      break;
    }
    case RopeType::kYarn: {
      auto get_mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
      f.scale = scaling.attention_factor > 0 ? scaling.attention_factor
                : scaling.mscale > 0 && scaling.mscale_all_dim > 0
                    ? get_mscale(scaling.factor, scaling.mscale) / get_mscale(scaling.factor, scaling.mscale_all_dim)
                    : get_mscale(scaling.factor, 1.0);
      auto correction_dim = [&](double rotations) {
        return (double(dim) * std::log(original / (rotations * 2 * pi))) / (2 * std::log(theta));
      };
      double low = correction_dim(scaling.beta_fast), high = correction_dim(scaling.beta_slow);
      if (scaling.truncate) low = std::floor(low), high = std::ceil(high);
      low = std::max(low, 0.0), high = std::min(high, double(dim - 1));
      if (low == high) high += 0.001;  // as transformers: no singular ramp
      for (int64_t i = 0; i < half; ++i) {
        const double extrapolation = f.inv_freq[size_t(i)], interpolation = extrapolation / scaling.factor;
        const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation_share = 1 - ramp;
        f.inv_freq[size_t(i)] = interpolation * (1 - extrapolation_share) + extrapolation * extrapolation_share;
      }
      break;
    }
  }
  return f;
}

}  // namespace trident::model
