// The [privacy] section: differentially private training (DP-SGD with AdamW or SGD behind it).
#pragma once
#include <string>

#include "trident/train/privacy/accountant.hpp"

namespace trident::train {

// What one privacy unit is: a document of the shard (several may share a packed row; a
// document longer than seq_len + 1 tokens is trained on its first seq_len + 1) or a whole row
// of the batch sampler (data.packing's rows; a document may then span several units).
enum class PrivacyUnit { kDocument, kRow };
// poisson: every unit joins a step independently with probability q (what the accountant
// assumes); shuffle: each epoch's permutation cut into batches of the expected size (the
// accountant's figure is then the Poisson analysis applied to it, not a proven bound).
enum class PrivacySampling { kPoisson, kShuffle };

struct PrivacyConfig {
  bool enabled = false;
  double clip = 1.0;               // C: each unit's gradient is scaled to an L2 norm of at most C
  double noise_multiplier = 0;     // sigma (0: the one target_epsilon needs)
  double target_epsilon = 0;       // 0: none (then noise_multiplier is required)
  double delta = 0;                // 0: 1 / N, N the privacy units
  PrivacyUnit unit = PrivacyUnit::kDocument;
  PrivacySampling sampling = PrivacySampling::kPoisson;
  privacy::Accountant accountant = privacy::Accountant::kPrv;
};

const char* privacy_unit_name(PrivacyUnit u);
const char* privacy_sampling_name(PrivacySampling s);

}  // namespace trident::train
