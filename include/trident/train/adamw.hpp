// AdamW with decoupled weight decay over a ParamStore: first and second moments in the master
// weights' dtype (fp32), one
// flat buffer each, viewed per parameter. Weight decay applies to parameters whose spec asks
// for it (matmul weights), not to norms, biases or embeddings.
#pragma once
#include <vector>

#include "trident/model/param_store.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

class AdamW {
 public:
  AdamW(model::ParamStore& params, Ops& ops, const TrainConfig& cfg);
  // One update with learning rate lr; gradients are multiplied by grad_scale first (clipping).
  void step(double lr, double grad_scale);
  int64_t steps_taken() const { return step_; }
  size_t state_bytes() const { return exp_avg_.bytes() + exp_avg_sq_.bytes(); }

 private:
  model::ParamStore& params_;
  Ops& ops_;
  const TrainConfig& cfg_;
  Tensor exp_avg_, exp_avg_sq_;
  std::vector<Tensor> exp_avg_views_, exp_avg_sq_views_;
  int64_t step_ = 0;
};

}  // namespace trident::train
