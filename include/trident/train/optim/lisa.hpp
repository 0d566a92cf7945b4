// LISA, layerwise importance sampled AdamW (Pan et al., 2024): every `interval` steps, `layers`
// of the transformer blocks are drawn uniformly without replacement to be trained until the
// next draw, the others idle (no gradient, no optimizer state); the embedding and the head
// are trained throughout unless switched off. The draw of a period is a pure function of
// (seed, period): every rank, of any layout, draws the same layers, and a resumed run redraws
// what the interrupted one had (no state to save beyond the step).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident::train {

struct LisaConfig {
  bool enabled = false;
  int layers = 2;        // blocks trained at a time
  int interval = 20;     // steps between draws
  bool embedding = true; // train the token (and position) embedding throughout
  bool head = true;      // train the output head and final norm throughout
};

class LisaSchedule {
 public:
  LisaSchedule(const LisaConfig& cfg, int model_layers, uint64_t seed);

  int64_t period(int64_t step) const { return step / cfg_.interval; }
  // The blocks trained at optimizer step `step` (0-based), ascending.
  std::vector<int> active_layers(int64_t step) const;
  // Whether parameter `name` is trained at `step`: its block drawn, or embedding / head (a
  // table tied to the head is trained when either is).
  bool trains(const std::string& name, int64_t step, bool tied_embeddings) const;
  // The first step of the unbroken run of periods up to step's in which `name` has been
  // trained (its optimizer moments' age); only for names trained at step.
  int64_t trained_since(const std::string& name, int64_t step, bool tied_embeddings) const;
  const LisaConfig& config() const { return cfg_; }

 private:
  LisaConfig cfg_;
  int model_layers_;
  uint64_t key_;
};

}  // namespace trident::train
