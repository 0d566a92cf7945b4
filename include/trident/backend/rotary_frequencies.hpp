// The rotary embedding's input to Ops::rope_forward / rope_backward.
#pragma once
#include <cmath>
#include <vector>

namespace trident {

// A rotary embedding's frequencies (model::rotary_frequencies computes a model's, with its RoPE
// scaling, as transformers does): the angle of pair i at position p is p * inv_freq[i], and
// cos and sin are multiplied by scale (YaRN's attention factor; 1 otherwise).
struct RotaryFrequencies {
  static constexpr int kMaxPairs = 256;  // head sizes up to 512
  std::vector<double> inv_freq;          // [HS / 2]
  double scale = 1.0;
  // Plain RoPE: inv_freq[i] = theta^(-2i / head_size).
  static RotaryFrequencies plain(double theta, int head_size) {
    RotaryFrequencies f;
    for (int i = 0; i < head_size / 2; ++i) f.inv_freq.push_back(std::pow(theta, -2.0 * i / head_size));
    return f;
  }
  bool operator==(const RotaryFrequencies& o) const { return inv_freq == o.inv_freq && scale == o.scale; }
};

}  // namespace trident
