// LisaSwitch: applies a LisaSchedule to a model and its optimizer. At the first step it sees
// and at every lisa.interval-th step after, the drawn blocks become trained and the rest idle:
// their parameters take no gradient and their optimizer moments are released (so the memory
// really falls); a block drawn again restarts from zero moments with its own bias correction.
#pragma once
#include <cstdint>

#include "trident/core/log.hpp"
#include "trident/model/param_store.hpp"
#include "trident/train/optim/adamw.hpp"
#include "trident/train/optim/lisa.hpp"

namespace trident::train {

class LisaSwitch {
 public:
  // tied_embeddings: the token table is also the head (trained when either is).
  LisaSwitch(const LisaConfig& cfg, int model_layers, uint64_t seed, bool tied_embeddings, model::ParamStore& params,
             AdamW& optimizer, const Logger& log);
  // Before optimizer step `step` (0-based).
  void apply(int64_t step);

 private:
  LisaSchedule schedule_;
  int layers_;
  bool tied_;
  model::ParamStore& params_;
  AdamW& optimizer_;
  const Logger& log_;
  bool applied_ = false;
  size_t full_state_bytes_;  // the optimizer state with every layer trained
};

}  // namespace trident::train
