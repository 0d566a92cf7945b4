// Final norm, output projection to the vocabulary and fused softmax cross-entropy.
// x: [N, C], logits: [N, V], targets: [N] int32 (-1 = not trained on).
// Forward and backward run back to back: the logits buffer turns into its own gradient, so
// [N, V] is held once, never per micro-batch. Vocabulary-parallel under tensor parallelism:
// each rank holds V/tp logits per row and the softmax statistics are combined over the group,
// so the full logits are never gathered.
#pragma once
#include <optional>
#include <vector>
#include "trident/model/model_config.hpp"
#include "trident/model/norm.hpp"
#include "trident/model/tensor_parallel.hpp"

namespace trident::model {

struct HeadBuffers {
  NormActivations norm;  // [R, C] this rank's rows (all N without sequence parallelism)
  Tensor gathered;     // [N, C] the norm output of all rows (sequence parallelism)
  Tensor dnorm;        // [N, C] gradient of the norm output (this rank's vocabulary part)
  Tensor dnorm_rows;   // [R, C] ... summed over the group
  Tensor logits;       // [N, V/tp], then dlogits
  Tensor losses;       // [N] per-token loss (tp = 1)
  Tensor host_losses;  // [N] host copy for the sum
  // Vocabulary-parallel softmax statistics per row: max, sum of exp, target logit ([N] each,
  // on the device and on the host where the group's values are combined).
  Tensor row_max, sum_exp, target_logit;
  Tensor host_stats;   // [4, N] fp64: max, sum, target logit, this shard's max
  Tensor host_targets; // [N] int32: the targets where the host reads them (GPU backend)
};

// Evaluation sums over the valid targets of some rows: summed token loss, targets the model
// ranks first (argmax = target; a tie with another logit counts as right) and their count.
struct EvalSums {
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t count = 0;
  EvalSums& operator+=(const EvalSums& o) {
    loss_sum += o.loss_sum, correct += o.correct, count += o.count;
    return *this;
  }
};

// Generation: the head's buffers for B rows (one per sequence).
struct GreedyBuffers {
  NormActivations norm;  // [B, C]
  Tensor logits;         // [B, V/tp]
  Tensor host_logits;    // [B, V/tp] on the host, where the argmax is taken
};

class LMHead {
 public:
  // tied: the projection is the token embedding (its gradient accumulates there).
  LMHead(ParamStore& store, const ModelConfig& cfg, Parameter* tied, TensorParallel tp = {});
  // The norm output (the head GEMM's input) and its gathered form in `stored` when given.
  HeadBuffers make_buffers(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored = {}) const;
  std::vector<Tensor> norm_grads() const { return norm_.grads(); }

  // logits = norm(x) @ W^T into b.logits (x: [R, C]).
  void forward(Ops& ops, const Tensor& x, HeadBuffers& b) const;
  // Loss and backward after forward(): returns the loss summed over valid targets; dx is
  // overwritten with grad_scale * dL/dx; parameter gradients accumulate.
  double loss_backward(Ops& ops, const Tensor& x, const Tensor& targets, double grad_scale, HeadBuffers& b,
                       Tensor& dx) const;

  // Loss and accuracy sums after forward(), no gradient (evaluation); the same on every rank
  // of the tensor-parallel group.
  EvalSums evaluate(Ops& ops, const Tensor& targets, HeadBuffers& b) const;

  // Generation: the greedy next token of each row of x [B, C] (whole rows): the highest logit
  // over the real vocabulary, the lowest id on ties (as torch.argmax), the same on every rank
  // of the tensor-parallel group.
  std::vector<int32_t> greedy(Ops& ops, const Tensor& x, GreedyBuffers& b) const;
  GreedyBuffers make_greedy_buffers(Ops& ops, int64_t rows, DType dtype) const;

 private:
  // Softmax statistics of the group's full rows into b.host_stats (max, sum of exp relative to
  // it, target logit); rows of b.row_max/sum_exp hold this shard's values before.
  void combine_stats(Ops& ops, const Tensor& targets, HeadBuffers& b) const;
  // Loss summed over valid rows, dlogits written into b.logits: vocabulary-parallel path.
  double vocab_parallel_loss(Ops& ops, const Tensor& targets, double grad_scale, HeadBuffers& b) const;

  Norm norm_;
  Parameter* weight_;
  TensorParallel tp_;
  int64_t vocab_ = 0;          // real vocabulary
  int64_t vocab_offset_ = 0;   // first id of this rank's rows
  int64_t local_vocab_ = 0;    // rows on this rank (padded)
};

}  // namespace trident::model
