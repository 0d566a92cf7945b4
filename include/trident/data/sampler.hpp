// The training batch sampler: cuts the token stream into rows of T input tokens, visits them in
// a per-epoch shuffle fixed by the seed alone, and hands each dp rank its slice of the global batch.
//
// Rows and their per-epoch order: data/source_rows.hpp. A mixture of several sources
// (data.train = 0.6 A 0.4 B) interleaves their rows by a MixSchedule: global row g is row
// (source s, its ordinal k) = schedule.locate(g), and k is that source's SourceRows order.
// A single source is the schedule "every row from source 0", so g = k.
// Data order is independent of dp (docs/design.md section 2). With G = global_batch, b = micro_batch,
// global sequence g = step * G + j (j in [0, G)) is the row located above; dp rank r takes j in [r * G/dp, (r+1) * G/dp); its micro-batch k holds [k*b, (k+1)*b) of that slice.
// So for dp in {1, 2, 4}, rank-ordered micro-batches of a step are the same sequences in the
// same order. Targets before a document's loss start are -1 (prompt tokens).
//
// Not thread-safe (it caches the current epoch's permutation); one sampler per rank.
// Checkpoint state: the step, and for a mixture the schedule's origin (mix_schedule.hpp). The
// order is a pure function of (seed, mix, step), so resuming at step s (with any dp)
// continues exactly where the run left off.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/data/batch.hpp"
#include "trident/data/document_stream.hpp"
#include "trident/data/mix_schedule.hpp"
#include "trident/data/shard_set.hpp"
#include "trident/data/source_rows.hpp"

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
  // Per source (one entry each): targets >= 0, rows, and documents starting in its rows.
  std::vector<int64_t> source_targets, source_rows, source_documents;
  std::vector<int32_t> row_source;  // [G] the source of each global-batch row
};

// One source of the sampler: its shards and its name (metrics tokens/<name>).
struct SamplerSource {
  const ShardSet* set;
  std::string name;
};

class BatchSampler {
 public:
  // Throws ConfigError if G % (b * dp) != 0 or the shard has fewer than G windows.
  // The reader must outlive the sampler.
  BatchSampler(const ShardSet& reader, const SamplerOptions& options);
  // A mixture: the sources (their shards outlive the sampler) interleaved by `schedule`. Each
  // source's epochs are shuffled by a key of (seed, its name).
  BatchSampler(const std::vector<SamplerSource>& sources, const SamplerOptions& options, MixSchedule schedule);

  // Rows of the single source, or of all sources together.
  int64_t num_rows() const;
  size_t num_sources() const { return sources_.size(); }
  const std::string& source_name(size_t i) const { return names_[i]; }
  SourceRows& source(size_t i) { return sources_[i]; }
  const SourceRows& source(size_t i) const { return sources_[i]; }
  const MixSchedule& schedule() const { return schedule_; }
  // Replaces the schedule (a resume that continues a changed mix from the sources' cursors).
  void set_schedule(MixSchedule schedule);
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

  // Where global sequence g comes from: its source, that source's ordinal and row.
  struct RowRef {
    uint32_t source;
    int64_t ordinal;
    int64_t row;
  };
  RowRef locate(int64_t global_sequence);
  // The row of global sequence g within its source (exposed for tests: epoch coverage).
  int64_t row_of(int64_t global_sequence) { return locate(global_sequence).row; }
  // The documents sampled (the single source's; what data.truncate cut or left out).
  const DocumentStream& documents() const { return sources_[0].documents(); }
  // Row `row` of the single source (SourceRows::fill_row).
  int64_t fill_row(int64_t row, int64_t T, int32_t* tokens, int32_t* targets, int32_t* positions,
                   int64_t* truncated = nullptr) const {
    return sources_[0].fill_row(row, T, tokens, targets, positions, truncated);
  }
  int64_t row_length(int64_t row) const { return sources_[0].row_length(row); }

 private:
  // Length of the micro-batch whose first row is global sequence g (T unless bucketed).
  int64_t micro_batch_length(int64_t first_global_sequence);
  void check_options();

  SamplerOptions options_;
  std::vector<SourceRows> sources_;
  std::vector<std::string> names_;
  MixSchedule schedule_;
  std::vector<int32_t> scratch_;        // global_batch_stats: one row of each tensor
  int micro_batches_ = 0;
  int64_t stats_step_ = -1;
  GlobalBatchStats stats_;  // of stats_step_
};

}  // namespace trident::data
