// Opening a run's shards, deriving its sampler options, and loading a step's micro-batches.
#include "trident/train/data_source.hpp"

#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/timer.hpp"

namespace trident::train {

std::unique_ptr<data::ShardSet> open_run_shards(const RunConfig& cfg, const char* key, const std::string& prefix) {
  TRIDENT_CONFIG_CHECK(!prefix.empty(), key, ": no shard prefix given");
  std::unique_ptr<data::ShardSet> shards;
  try {
    shards = std::make_unique<data::ShardSet>(prefix);  // one shard or a set of them
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(key, ": ", e.what()));
  }
  TRIDENT_CONFIG_CHECK(shards->vocab() <= static_cast<uint64_t>(cfg.model.vocab), key, ": shard ", prefix,
                       " was written for vocab ", shards->vocab(), " but model.vocab = ", cfg.model.vocab);
  return shards;
}

data::SamplerOptions run_sampler_options(const RunConfig& cfg, const dist::Topology& topology) {
  // Bucketed lengths stay divisible by tp, which sequence parallelism splits rows over.
  return data::SamplerOptions{.seq_len = cfg.model.seq_len, .global_batch = cfg.train.global_batch,
                              .micro_batch = cfg.train.micro_batch, .dp_rank = topology.dp_rank(),
                              .dp_size = topology.layout().dp, .seed = cfg.train.seed,
                              .packing = cfg.data.packing, .bucket = cfg.data.bucket,
                              .length_multiple = std::lcm<int64_t>(8, topology.layout().tp),
                              .truncate = cfg.data.truncate, .whole_batch = !cfg.privacy.enabled};
}

DataSource::DataSource(const RunConfig& cfg, const dist::Topology& topology, const char* key,
                       const std::string& prefix)
    : prefix_(prefix), shards_(open_run_shards(cfg, key, prefix)) {
  sampler_ = std::make_unique<data::BatchSampler>(*shards_, run_sampler_options(cfg, topology));
  for (int k = 0; k < sampler_->micro_batches_per_step(); ++k) batches_.push_back(sampler_->make_batch());
}

const std::vector<data::Batch>& DataSource::load(int64_t index) {
  Stopwatch watch;
  for (size_t k = 0; k < batches_.size(); ++k) sampler_->fill(index, static_cast<int>(k), batches_[k]);
  seconds_ += watch.seconds();
  return batches_;
}

}  // namespace trident::train
