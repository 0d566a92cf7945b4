// The token data of a run: a shard set opened and checked against the model, the sampler its
// configuration implies, and (DataSource) this rank's micro-batches of each training step,
// loaded before the step and handed to the pipeline schedule.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trident/core/log.hpp"
#include "trident/data/sampler.hpp"
#include "trident/dist/topology.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

// Opens the shard (set) at prefix; ConfigError names `key` (data.train, data.valid) when it is
// unset, unreadable or written for a larger vocabulary than model.vocab.
std::unique_ptr<data::ShardSet> open_run_shards(const RunConfig& cfg, const char* key, const std::string& prefix);

// seq_len, batch sizes, dp slice `dp_rank` of `dp_size`, seed, packing and bucketing from the
// run (bucketed lengths a multiple of lcm(8, tp)); the second form: this rank's.
data::SamplerOptions run_sampler_options(const RunConfig& cfg, int dp_rank, int dp_size, int tp);
data::SamplerOptions run_sampler_options(const RunConfig& cfg, const dist::Topology& topology);

// The mixture of data.train resolved against its shards: each source's normalised weight
// (data.mix_alpha: proportional to tokens^alpha) and the phases of data.mix_stages.
std::vector<data::MixPhase> resolve_mix_phases(const RunConfig& cfg, const std::vector<uint64_t>& source_tokens);

// A shard set (or data.train's mixture of them) and its sampler: micro-batches [0, m) of this
// rank for any global batch index, in tensors allocated once (load() refills them).
class DataSource {
 public:
  // Opens `prefix` (ConfigError naming `key` as open_run_shards does).
  DataSource(const RunConfig& cfg, const dist::Topology& topology, const char* key, const std::string& prefix);
  // data.train: its sources (cfg.data.mix) interleaved by the mixture; data.max_repeat checked
  // against the rows train.steps need.
  DataSource(const RunConfig& cfg, const dist::Topology& topology);
  // The same with explicit sampler options (trident inspect --batches: dp = 1, no MPI).
  DataSource(const RunConfig& cfg, const data::SamplerOptions& options);

  // This rank's micro-batches of global batch `index` (the optimizer step when training): m
  // batches of [B, T] int32 host tensors, valid until the next load().
  const std::vector<data::Batch>& load(int64_t index);
  // The whole global batch's targets >= 0 (all dp ranks) and its padding statistics.
  data::GlobalBatchStats global_batch_stats(int64_t index) { return sampler_->global_batch_stats(index); }

  int micro_batches() const { return sampler_->micro_batches_per_step(); }
  int64_t num_rows() const { return sampler_->num_rows(); }
  // The first source's shards (the only one's, but for a mixture).
  const data::ShardSet& shards() const { return *shards_[0]; }
  size_t num_sources() const { return shards_.size(); }
  const data::ShardSet& shards(size_t i) const { return *shards_[i]; }
  bool mixture() const { return mixture_; }

  // A mixture's state in a checkpoint after `steps_done` steps: data_rows_<name> (each
  // source's rows consumed), data_documents_<name> (documents started in them, from
  // `documents`, the counts so far), data_origin_step and data_origin_rows_<name> (where the
  // schedule starts), and the text data_mix (describe_mix()). Nothing for a single source.
  void checkpoint_record(int64_t steps_done, const std::vector<int64_t>& documents, std::map<std::string, double>& numbers,
                         std::string& mix) const;
  // After a resume at `step` from a checkpoint holding `numbers` and `mix`: the same mix goes on
  // from the checkpoint's origin (bitwise the uninterrupted run); a changed one is a
  // ConfigError unless data.mix_change = continue, which starts the new mix at `step` from each
  // source's cursor. Returns each source's documents consumed so far (zeros when unknown).
  std::vector<int64_t> resume(int64_t step, const std::map<std::string, double>& numbers, const std::string& mix,
                              const Logger& log);
  // The mixture as a checkpoint records it: sources, integer shares, stages.
  std::string describe_mix() const;
  // One line per source for the banner: its size, weight, the rows train.steps need of it and
  // the repeat factor that makes.
  std::vector<std::string> mix_lines() const;
  const data::DocumentStream& documents() const { return sampler_->documents(); }
  const data::BatchSampler& sampler() const { return *sampler_; }
  data::BatchSampler& sampler() { return *sampler_; }
  const std::string& prefix() const { return prefix_; }
  // Seconds spent in load() so far (the data phase of `trident bench step`).
  double seconds() const { return seconds_; }

 private:
  // Each source's rows needed by train.steps and its epochs of rows (the repeat factor).
  std::vector<int64_t> rows_needed() const;

  int64_t global_batch_ = 0, steps_ = 0;
  data::MixSpec mix_;
  std::string prefix_;
  std::vector<std::unique_ptr<data::ShardSet>> shards_;
  bool mixture_ = false;
  std::vector<data::MixPhase> phases_;
  std::unique_ptr<data::BatchSampler> sampler_;
  std::vector<data::Batch> batches_;
  double seconds_ = 0;
};

}  // namespace trident::train
