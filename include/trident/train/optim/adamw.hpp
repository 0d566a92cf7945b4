// AdamW with decoupled weight decay over ranges of the flat parameter buffer (segments): the
// whole model, or this rank's ZeRO-1 share of it. First and second moments exist only for the
// segments, in the master weights' dtype (fp32). Weight decay applies to segments whose
// parameter asks for it (matmul weights), not to norms, biases or embeddings.
// LISA: segments can be idle; an idle segment holds no moments (released, so the memory
// really falls) and is not updated; one made active again starts from zero moments with its
// own bias-correction count, as a fresh optimizer over the active layers would.
#pragma once
#include <vector>

#include "trident/model/param_store.hpp"
#include "trident/train/train_config.hpp"

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
  void set_steps_taken(int64_t steps);  // when resuming (bias correction)
  // From step steps + 1 on, the second moments stay as they were after `steps` steps (0: never):
  // top-k compression after a dense start (dist::CompressionOptions::topk_dense_steps).
  void freeze_variance_after(int64_t steps) { freeze_after_ = steps; }
  const std::vector<OptimSegment>& segments() const { return segments_; }
  // A segment's moments; undefined while it is idle.
  const Tensor& exp_avg(size_t segment) const { return exp_avg_[segment]; }
  const Tensor& exp_avg_sq(size_t segment) const { return exp_avg_sq_[segment]; }
  size_t state_bytes() const;

  // LISA: which segments are trained from now on, and since when (the optimizer steps done when
  // their moments started, for bias correction). Newly active ones get zero moments; newly
  // idle ones release theirs; those staying active keep them.
  void set_active(const std::vector<bool>& active, const std::vector<int64_t>& since);
  bool active(size_t segment) const { return exp_avg_[segment].defined(); }

 private:
  model::ParamStore& params_;
  Ops& ops_;
  const TrainConfig& cfg_;
  std::vector<OptimSegment> segments_;
  std::vector<Tensor> values_, exp_avg_, exp_avg_sq_;  // per segment
  std::vector<int64_t> first_step_;  // steps done when the segment's moments started
  int64_t step_ = 0;
  int64_t freeze_after_ = 0;
};

}  // namespace trident::train
