// The training batch sampler: cuts the token stream into rows of T input tokens, visits them in
// a per-epoch shuffle fixed by the seed alone, and hands each dp rank its slice of the global batch.
//
// Rows (data.packing):
//   packed (true): row w holds stream tokens [w*T, w*T + T) and targets [w*T + 1, w*T + T + 1):
//     documents are packed back to back and cut at row ends, nothing is padded. Document
//     masking: positions restart at 0 where a document starts (and at the row start), attention
//     follows the positions (Ops::attention_forward), and the target that would cross into the
//     next document is not trained on. A document that fits in one row is thus trained exactly
//     as if it had a row of its own.
//   unpacked (false): one document per row from position 0, padded to T (padding tokens have
//     target -1); a document with more than T + 1 tokens continues in further rows of T targets,
//     each starting again at position 0.
//   bucketed (data.bucket, unpacked only): within each window of kBucketWindow global batches
//     of an epoch's order, rows are sorted by length (longest first), so a micro-batch holds
//     rows of similar length; it is cut to its longest row (rounded up to length_multiple)
//     instead of T, and the model computes only that much.
// Data order is independent of dp (docs/design.md section 2). With G = global_batch, b = micro_batch,
// W rows: global sequence g = step * G + j (j in [0, G)) is row perm_e[g % W] of epoch e = g / W,
// where perm_e is a Fisher-Yates shuffle of [0, W) driven by Philox keyed by (seed, e); dp rank
// r takes j in [r * G/dp, (r+1) * G/dp); its micro-batch k holds [k*b, (k+1)*b) of that slice.
// So for dp in {1, 2, 4}, rank-ordered micro-batches of a step are the same sequences in the
// same order. Targets before a document's loss start are -1 (prompt tokens).
//
// Not thread-safe (it caches the current epoch's permutation); one sampler per rank.
// Checkpoint state: the step alone. The order is a pure function of (seed, step), so resuming
// at step s (with any dp) continues exactly where the run left off.
#pragma once
#include <cstdint>
#include <vector>

#include "trident/data/batch.hpp"
#include "trident/data/document_stream.hpp"
#include "trident/data/shard_set.hpp"

namespace trident::data {

struct SamplerOptions {
  int64_t seq_len = 0;       // T
  int64_t global_batch = 0;  // G: sequences per optimizer step, all dp ranks together
  int64_t micro_batch = 0;   // b: sequences per micro-batch
  int dp_rank = 0;
  int dp_size = 1;
  uint64_t seed = 0;
  bool packing = true;       // data.packing: packed rows with document masking, else one document per row
  bool bucket = false;       // data.bucket (needs packing = false)
  int64_t length_multiple = 8;  // bucketed micro-batch lengths are multiples of this (or T)
  Truncate truncate = Truncate::kLeft;  // data.truncate: fine-tuning documents longer than T + 1
  // Refuse a shard of fewer rows than one global batch (off for private runs, whose batches are
  // sampled units: train/privacy/private_batches.hpp).
  bool whole_batch = true;
};

// What one global batch holds, all dp ranks together (identical for any dp).
struct GlobalBatchStats {
  int64_t valid_targets = 0;    // targets >= 0: the loss normaliser
  int64_t padding_tokens = 0;   // input positions computed that hold no document token
  int64_t computed_tokens = 0;  // input positions computed: G * T, less when bucketed batches are cut
  int64_t truncated_documents = 0;  // documents starting in its rows that data.truncate = left cut
};

inline constexpr int64_t kBucketWindow = 16;  // global batches sorted together by length

class BatchSampler {
 public:
  // Throws ConfigError if G % (b * dp) != 0 or the shard has fewer than G windows.
  // The reader must outlive the sampler.
  BatchSampler(const ShardSet& reader, const SamplerOptions& options);

  int64_t num_rows() const { return num_rows_; }
  // m = G / (b * dp): micro-batches per step on each dp rank.
  int micro_batches_per_step() const { return micro_batches_; }

  // Tensors of the right shape, allocated once; fill() reuses them (no per-step allocation).
  Batch make_batch() const;
  // Micro-batch `micro_index` (in [0, m)) of this rank at `step` into `out`; allocates `out`
  // on first use if it is empty.
  void fill(int64_t step, int micro_index, Batch& out);
  // The whole global batch of `step` (all dp ranks' sequences).
  GlobalBatchStats global_batch_stats(int64_t step);
  int64_t count_valid_targets(int64_t step) { return global_batch_stats(step).valid_targets; }

  // The row of global sequence g (exposed for tests: epoch coverage).
  int64_t row_of(int64_t global_sequence);
  // The documents sampled (what data.truncate cut or left out).
  const DocumentStream& documents() const { return stream_; }
  // Writes row `row` cut to length T (>= its length): tokens, targets, positions; returns its
  // number of targets >= 0. truncated (optional) counts the cut documents starting in the row.
  int64_t fill_row(int64_t row, int64_t T, int32_t* tokens, int32_t* targets, int32_t* positions,
                   int64_t* truncated = nullptr) const;
  // Input tokens of row `row` (<= T).
  int64_t row_length(int64_t row) const { return row_span(row).length; }

 private:
  // Where a row's input tokens lie in the stream: [begin, begin + length), length <= T.
  struct RowSpan {
    uint64_t begin;
    uint32_t length;
  };
  RowSpan row_span(int64_t row) const;
  // Length of the micro-batch whose first row is global sequence g (T unless bucketed).
  int64_t micro_batch_length(int64_t first_global_sequence);
  void compute_permutation(int64_t epoch);

  DocumentStream stream_;
  SamplerOptions options_;
  int64_t num_rows_ = 0;
  std::vector<RowSpan> unpacked_rows_;  // unpacked mode: every row's span (packed rows are computed)
  std::vector<int32_t> scratch_;        // global_batch_stats: one row of each tensor
  int micro_batches_ = 0;
  uint64_t epoch_key_ = 0;
  int64_t cached_epoch_ = -1;
  std::vector<uint32_t> permutation_;  // of the cached epoch
  int64_t stats_step_ = -1;
  GlobalBatchStats stats_;  // of stats_step_
};

}  // namespace trident::data
