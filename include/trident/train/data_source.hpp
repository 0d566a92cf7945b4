// The token data of a run: a shard set opened and checked against the model, the sampler its
// configuration implies, and (DataSource) this rank's micro-batches of each training step,
// loaded before the step and handed to the pipeline schedule.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "trident/data/sampler.hpp"
#include "trident/dist/topology.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

// Opens the shard (set) at prefix; ConfigError names `key` (data.train, data.valid) when it is
// unset, unreadable or written for a larger vocabulary than model.vocab.
std::unique_ptr<data::ShardSet> open_run_shards(const RunConfig& cfg, const char* key, const std::string& prefix);

// seq_len, batch sizes, this rank's dp slice, seed, packing and bucketing from the run.
data::SamplerOptions run_sampler_options(const RunConfig& cfg, const dist::Topology& topology);

// A shard set and its sampler: micro-batches [0, m) of this rank for any global batch index,
// in tensors allocated once (load() refills them).
class DataSource {
 public:
  // Opens `prefix` (ConfigError naming `key` as open_run_shards does).
  DataSource(const RunConfig& cfg, const dist::Topology& topology, const char* key, const std::string& prefix);

  // This rank's micro-batches of global batch `index` (the optimizer step when training): m
  // batches of [B, T] int32 host tensors, valid until the next load().
  const std::vector<data::Batch>& load(int64_t index);
  // The whole global batch's targets >= 0 (all dp ranks) and its padding statistics.
  data::GlobalBatchStats global_batch_stats(int64_t index) { return sampler_->global_batch_stats(index); }

  int micro_batches() const { return sampler_->micro_batches_per_step(); }
  int64_t num_rows() const { return sampler_->num_rows(); }
  const data::ShardSet& shards() const { return *shards_; }
  const data::DocumentStream& documents() const { return sampler_->documents(); }
  const data::BatchSampler& sampler() const { return *sampler_; }
  const std::string& prefix() const { return prefix_; }
  // Seconds spent in load() so far (the data phase of `trident bench step`).
  double seconds() const { return seconds_; }

 private:
  std::string prefix_;
  std::unique_ptr<data::ShardSet> shards_;
  std::unique_ptr<data::BatchSampler> sampler_;
  std::vector<data::Batch> batches_;
  double seconds_ = 0;
};

}  // namespace trident::train
