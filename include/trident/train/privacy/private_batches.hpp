// Differential privacy's batches: the privacy units each step samples, packed into rows and
// dealt to the data-parallel ranks' micro-batches.
//
// Sampling (privacy.sampling): poisson: unit u joins step t when the counter-based uniform
// keyed by (train.seed, t, u) is below q = min(1, E / N), E = train.global_batch the expected
// units per step, N the units of data.train; shuffle: step t takes units [tE, tE + E) of the
// epochs' seed-keyed permutations. Either way a pure function of (seed, step), so every rank of
// any layout samples the same units, and a resumed run the same as an unbroken one.
//
// Rows: privacy.unit = row: each sampled row of the batch sampler is a row of the step.
// privacy.unit = document: each sampled document (its first seq_len + 1 tokens) is packed
// after the previous one into the current row of seq_len inputs while it fits (positions
// restart at 0, so attention stays within it), else into a new row. A unit never crosses a row.
//
// Rounds: the step's rows fill micro-batches of b = train.micro_batch rows on each of the dp
// replicas, M = ceil(rows / (b dp)) per replica, in rounds of at most m = G / (b dp) (the
// schedule's micro-batches per step; exactly m, padded with empty rows, under the interleaved
// schedule). A round of m' micro-batches starting at row s gives dp rank r rows
// [s + r m' b, s + (r+1) m' b), micro-batch i of them [i b, (i+1) b). The last micro-batch is
// padded with empty rows (no targets); with pp = 1 a micro-batch is cut to its longest row
// (rounded up to lcm(8, tp)).
#pragma once
#include <cstdint>
#include <vector>

#include "trident/data/batch.hpp"
#include "trident/data/sampler.hpp"
#include "trident/dist/topology.hpp"
#include "trident/train/data_source.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

// One step's sample, as every rank sees it (rounds: this rank's micro-batches).
struct PrivateStepBatches {
  int64_t units = 0;                             // K: units sampled, all ranks together
  std::vector<int64_t> unit_targets;             // [K] trainable targets of each unit
  std::vector<std::vector<data::Batch>> rounds;  // this rank's micro-batches of each round
  int64_t rows = 0;                              // rows the units fill, all ranks together
  data::GlobalBatchStats stats;                  // the whole step: valid targets, padding, computed tokens
};

class PrivateBatches {
 public:
  // source: data.train's shards and sampler (outlives this). fewer_micro_batches: the pipeline
  // schedule takes rounds of fewer micro-batches than a step's (PipelineExecutor).
  PrivateBatches(const DataSource& source, const RunConfig& cfg, const dist::Topology& topology,
                 bool fewer_micro_batches);

  int64_t num_units() const { return units_; }  // N
  double sample_rate() const { return sample_rate_; }  // q
  int64_t expected_units() const { return expected_; }  // E
  // Documents longer than seq_len + 1 tokens (privacy.unit = document: trained on their first
  // seq_len + 1 tokens only).
  int64_t long_documents() const { return long_documents_; }

  // The sample of step `step` (valid until the next call).
  const PrivateStepBatches& load(int64_t step);
  // The statistics of the step load() returned last.
  const data::GlobalBatchStats& last_stats() const { return step_.stats; }

 private:
  // A unit's place in a row: where it starts and how many input tokens it takes.
  struct Piece {
    int64_t unit_index;  // in the step's sample
    int64_t source;      // document or sampler row
    int64_t at, length;
  };
  std::vector<int64_t> sample(int64_t step);
  // Writes piece p into row r's tensors (length L); returns its trainable targets.
  int64_t write_piece(const Piece& p, int32_t* tokens, int32_t* targets, int32_t* positions, int64_t L) const;
  int64_t piece_targets(const Piece& p) const;
  void compute_permutation(int64_t epoch);

  const DataSource& source_;
  PrivacyUnit unit_;
  PrivacySampling sampling_;
  uint64_t seed_;
  int64_t T_, G_, b_, dp_, dp_rank_, length_multiple_;
  bool cut_rows_;  // pp = 1: micro-batches cut to their longest row
  bool fewer_;     // rounds of fewer micro-batches allowed
  int64_t units_ = 0, expected_ = 0, long_documents_ = 0;
  double sample_rate_ = 0;
  int64_t cached_epoch_ = -1;
  std::vector<uint32_t> permutation_;
  PrivateStepBatches step_;
  mutable std::vector<int32_t> scratch_;  // one row of each tensor (piece_targets of a sampler row)
};

}  // namespace trident::train
