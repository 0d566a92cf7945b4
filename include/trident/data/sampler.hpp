// The training batch sampler: cuts the token stream into windows of T tokens, visits them in a
// per-epoch shuffle fixed by the seed alone, and hands each dp rank its slice of the global batch.
//
// Data order is independent of dp (DESIGN.md section 2). With G = global_batch,
// b = micro_batch, W = floor((num_tokens - 1) / T) windows:
//   global sequence g = step * G + j (j in [0, G)) is window perm_e[g % W] of epoch e = g / W,
//   where perm_e is a Fisher-Yates shuffle of [0, W) driven by Philox keyed by (seed, e);
//   dp rank r takes j in [r * G/dp, (r+1) * G/dp); its micro-batch k holds [k*b, (k+1)*b) of
//   that slice. So for dp in {1, 2, 4}, rank-ordered micro-batches of a step are the same
//   sequences in the same order.
// Window w: inputs are tokens [w*T, w*T + T), targets are tokens [w*T + 1, w*T + T + 1).
//
// Not thread-safe (it caches the current epoch's permutation); one sampler per rank.
// Checkpoint state: the step alone. The order is a pure function of (seed, step), so resuming
// at step s (with any dp) continues exactly where the run left off.
#pragma once
#include <cstdint>
#include <vector>

#include "trident/data/batch.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {

struct SamplerOptions {
  int64_t seq_len = 0;       // T
  int64_t global_batch = 0;  // G: sequences per optimizer step, all dp ranks together
  int64_t micro_batch = 0;   // b: sequences per micro-batch
  int dp_rank = 0;
  int dp_size = 1;
  uint64_t seed = 0;
};

class BatchSampler {
 public:
  // Throws ConfigError if G % (b * dp) != 0 or the shard has fewer than G windows.
  // The reader must outlive the sampler.
  BatchSampler(const ShardReader& reader, const SamplerOptions& options);

  int64_t num_windows() const { return num_windows_; }
  // m = G / (b * dp): micro-batches per step on each dp rank.
  int micro_batches_per_step() const { return micro_batches_; }

  // Tensors of the right shape, allocated once; fill() reuses them (no per-step allocation).
  Batch make_batch() const;
  // Micro-batch `micro_index` (in [0, m)) of this rank at `step` into `out`; allocates `out`
  // on first use if it is empty.
  void fill(int64_t step, int micro_index, Batch& out);
  // Targets >= 0 in the whole global batch of `step`, all dp ranks' sequences: the loss
  // normaliser, identical for any dp. G*T unless the shard has loss starts.
  int64_t count_valid_targets(int64_t step);

  // The window of global sequence g (exposed for tests: epoch coverage).
  int64_t window_of(int64_t global_sequence);

 private:
  void compute_permutation(int64_t epoch);
  // Calls visit(lo, hi) for each run [lo, hi) of window w's targets (indices in [0, T)) that
  // lie before their document's loss start, in order.
  template <typename Visit>
  void for_each_masked_range(int64_t window, Visit&& visit) const;

  const ShardReader& reader_;
  SamplerOptions options_;
  int64_t num_windows_ = 0;
  int micro_batches_ = 0;
  uint64_t epoch_key_ = 0;
  int64_t cached_epoch_ = -1;
  std::vector<uint32_t> permutation_;  // of the cached epoch
};

}  // namespace trident::data
