// The token data of a run as the trainer and the evaluator read it: a shard set opened and
// checked against the model, and the sampler options the run's configuration implies.
#pragma once
#include <memory>
#include <string>

#include "trident/data/sampler.hpp"
#include "trident/dist/topology.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

// Opens the shard (set) at prefix; ConfigError names `key` (data.train, data.valid) when it is
// unset, unreadable or written for a larger vocabulary than model.vocab.
std::unique_ptr<data::ShardSet> open_run_shards(const RunConfig& cfg, const char* key, const std::string& prefix);

// seq_len, batch sizes, this rank's dp slice, seed, packing and bucketing from the run.
data::SamplerOptions run_sampler_options(const RunConfig& cfg, const dist::Topology& topology);

}  // namespace trident::train
