// Opening a run's shards and deriving its sampler options (one place for trainer and evaluator).
#include "trident/train/data_source.hpp"

#include <numeric>

#include "trident/core/error.hpp"

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
                              .length_multiple = std::lcm<int64_t>(8, topology.layout().tp)};
}

}  // namespace trident::train
