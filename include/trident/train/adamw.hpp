// AdamW with decoupled weight decay over ranges of the flat parameter buffer (segments): the
// whole model, or this rank's ZeRO-1 share of it. First and second moments exist only for the
// segments, in the master weights' dtype (fp32). Weight decay applies to segments whose
// parameter asks for it (matmul weights), not to norms, biases or embeddings.
#pragma once
#include <vector>

#include "trident/model/param_store.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

// Flat elements [begin, end) of the parameter buffer, updated from grad (end - begin elements).
struct OptimSegment {
  int64_t begin = 0, end = 0;
  bool weight_decay = false;
  Tensor grad;
  bool counts_in_norm = true;  // false for a replica another rank of the model-parallel group counts
};

class AdamW {
 public:
  AdamW(model::ParamStore& params, Ops& ops, const TrainConfig& cfg, std::vector<OptimSegment> segments);
  // One update with learning rate lr; gradients are multiplied by grad_scale first (clipping).
  void step(double lr, double grad_scale);
  int64_t steps_taken() const { return step_; }
  void set_steps_taken(int64_t steps) { step_ = steps; }  // when resuming (bias correction)
  const std::vector<OptimSegment>& segments() const { return segments_; }
  const Tensor& exp_avg(size_t segment) const { return exp_avg_views_[segment]; }
  const Tensor& exp_avg_sq(size_t segment) const { return exp_avg_sq_views_[segment]; }
  size_t state_bytes() const { return exp_avg_.bytes() + exp_avg_sq_.bytes(); }

 private:
  model::ParamStore& params_;
  Ops& ops_;
  const TrainConfig& cfg_;
  std::vector<OptimSegment> segments_;
  Tensor exp_avg_, exp_avg_sq_;
  std::vector<Tensor> values_, exp_avg_views_, exp_avg_sq_views_;  // per segment
  int64_t step_ = 0;
};

}  // namespace trident::train
