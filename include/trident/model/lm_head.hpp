// Final norm, output projection to the vocabulary and fused softmax cross-entropy.
// x: [N, C], logits: [rows, V], targets: [N] int32 (-1 = not trained on).
// The logits are never held for all N rows (with a 50k vocabulary they are the largest
// activation by far): the loss and its backward go through chunks of rows, each chunk's logits
// computed, turned into their own gradient by the cross-entropy, and fed to the two backward
// GEMMs before the next chunk (kLogitsChunkBytes of logits at a time). Vocabulary-parallel under
// tensor parallelism: each rank holds V/tp logits per row and the softmax statistics are
// combined over the group, so the full logits are never gathered either.
#pragma once
#include <optional>
#include <vector>
#include "trident/model/model_config.hpp"
#include "trident/model/norm.hpp"
#include "trident/model/step_losses.hpp"
#include "trident/model/tensor_parallel.hpp"

namespace trident::model {

// Logits held at once per rank, at most: a chunk of rows of the vocabulary projection.
inline constexpr int64_t kLogitsChunkBytes = int64_t(64) << 20;
// Rows per chunk for a (padded, whole) vocabulary of `vocab` in dtype: the same under any tp,
// so every layout sums the head's gradient over the same chunks.
int64_t logits_chunk_rows(int64_t rows, int64_t vocab, DType dtype);

struct HeadBuffers {
  NormActivations norm;  // [R, C] this rank's rows (all N without sequence parallelism)
  Tensor gathered;     // [N, C] the norm output of all rows (sequence parallelism)
  Tensor dnorm;        // [N, C] gradient of the norm output (this rank's vocabulary part)
  Tensor dnorm_rows;   // [R, C] ... summed over the group
  Tensor logits;       // [K, V/tp] one chunk of K rows' logits (fp32: the loss reads them)
  // [K, V/tp] their gradient, in `stored` under mixed precision (rounded once, fed to both
  // GEMMs as it is); else a view of logits (written over them).
  Tensor dlogits;
  // Vocabulary-parallel softmax statistics per row of a chunk: max, sum of exp, target logit
  // ([K] each, on the device and on the host where the group's values are combined).
  Tensor row_max, sum_exp, target_logit;
  Tensor host_stats;   // [4 * K] fp64: max, sum, target logit, this shard's max (K each)
  Tensor host_targets; // [N] int32: the targets where the host reads them (GPU backend)
  Tensor full_logits;  // [N, V/tp] only for logits() (tests, comparisons), made on first use
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

// Per-target scores of a micro-batch's B*L rows (log-likelihood tasks, OOD detection), row-major;
// rows without a target (-1) hold zeros. logprob: log p(target); max_prob: the largest softmax
// probability of the row; greedy: 1 when the target has the highest logit (ties count as right).
struct TokenScores {
  std::vector<double> logprob, max_prob;
  std::vector<uint8_t> greedy;
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
  // chunk_rows: rows of logits per chunk (0: logits_chunk_rows; tests use a few).
  // gradients: the logits' gradient in this 16-bit dtype (GEMMs computing in it), else in dtype.
  HeadBuffers make_buffers(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored = {},
                           int64_t chunk_rows = 0, std::optional<DType> gradients = {}) const;
  std::vector<Tensor> norm_grads() const { return norm_.grads(); }

  // The final norm of x ([R, C]) into b (gathered over the group with sequence parallelism).
  void forward(Ops& ops, const Tensor& x, HeadBuffers& b) const;
  // After forward(): the loss, chunk by chunk, and its backward. The loss over valid targets
  // joins `losses` (per token on the device at tp = 1, summed on the host otherwise); dx is
  // overwritten with grad_scale * dL/dx; parameter gradients accumulate.
  // units (differential privacy): each unit's rows of the loss gradient are scaled by its
  // weight, logits chunks hold whole rows, and its norm pass measures instead of accumulating.
  void loss_backward(Ops& ops, const Tensor& x, const Tensor& targets, double grad_scale, HeadBuffers& b,
                     Tensor& dx, StepLosses& losses, UnitGradients* units = nullptr) const;

  // Loss and accuracy sums after forward(), no gradient (evaluation); the same on every rank
  // of the tensor-parallel group. per_token: also every row's scores (sized to the rows).
  EvalSums evaluate(Ops& ops, const Tensor& targets, HeadBuffers& b, TokenScores* per_token = nullptr) const;
  // After forward(): every row's logits, [N, V/tp] in b.full_logits (memory for all of them).
  const Tensor& logits(Ops& ops, HeadBuffers& b) const;

  // Generation: the greedy next token of each row of x [B, C] (whole rows): the highest logit
  // over the real vocabulary, the lowest id on ties (as torch.argmax), the same on every rank
  // of the tensor-parallel group.
  std::vector<int32_t> greedy(Ops& ops, const Tensor& x, GreedyBuffers& b) const;
  // Generation: the logits of each row of x [B, C] on the host, [B, V/tp] (this rank's shard;
  // columns past the real vocabulary are padding), in b.host_logits.
  const Tensor& host_logits(Ops& ops, const Tensor& x, GreedyBuffers& b) const;
  // Scoring whole rows (model::Decoder): x [n, C] the same on every rank of the tensor-parallel
  // group (no sequence parallelism), targets [n] int32 on the device; each row's log p(target),
  // largest probability and greedy flag into scores, the same on every rank of the group.
  void score_rows(Ops& ops, const Tensor& x, const Tensor& targets, HeadBuffers& b, TokenScores& scores) const;
  HeadBuffers make_scoring_buffers(Ops& ops, int64_t rows, DType dtype) const;
  int64_t vocab() const { return vocab_; }
  GreedyBuffers make_greedy_buffers(Ops& ops, int64_t rows, DType dtype) const;

 private:
  // The head GEMM's input: the norm output of all rows (gathered with sequence parallelism).
  const Tensor& normed(const HeadBuffers& b) const { return tp_.splits_rows() ? b.gathered : b.norm.y; }
  // Logits of rows [r0, r1) of x (the head GEMM's input) into the chunk buffer (a view of its
  // first r1 - r0 rows).
  Tensor chunk_logits(Ops& ops, const Tensor& x, HeadBuffers& b, int64_t r0, int64_t r1) const;
  // Evaluation sums (and per-row scores) of the normed rows x against targets, chunk by chunk.
  EvalSums evaluate_rows(Ops& ops, const Tensor& x, const Tensor& targets, HeadBuffers& b,
                         TokenScores* per_token) const;
  // A chunk's softmax statistics over the group's full rows into b.host_stats (max, sum of exp
  // relative to it, target logit, K each), from logits of `rows` rows.
  void combine_stats(Ops& ops, const Tensor& logits, const Tensor& targets, HeadBuffers& b) const;
  // Vocabulary-parallel path of a chunk: each row's loss into token_losses (0 where masked; t:
  // the chunk's host targets), its gradient written to dlogits.
  void vocab_parallel_loss(Ops& ops, const Tensor& logits, const Tensor& targets, const int32_t* t,
                           double grad_scale, HeadBuffers& b, Tensor& dlogits, double* token_losses) const;

  Norm norm_;
  Parameter* weight_;
  TensorParallel tp_;
  int64_t vocab_ = 0;          // real vocabulary
  int64_t vocab_offset_ = 0;   // first id of this rank's rows
  int64_t local_vocab_ = 0;    // rows on this rank (padded)
};

}  // namespace trident::model
