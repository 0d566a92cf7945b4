// Opening a run's shards (one prefix or data.train's mixture), deriving its sampler, loading a
// step's micro-batches, and the mixture's start-up lines and checkpoint record.
#include "trident/train/data_source.hpp"

#include <cmath>
#include <cstdio>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/timer.hpp"

namespace trident::train {

std::unique_ptr<data::ShardSet> open_run_shards(const RunConfig& cfg, const char* key, const std::string& prefix) {
  TRIDENT_CONFIG_CHECK(!prefix.empty(), key, ": no shard prefix given");
  std::unique_ptr<data::ShardSet> shards;
  try {
    // One shard or a set of them; encrypted ones with security.key_file.
    shards = std::make_unique<data::ShardSet>(prefix, cfg.security.key ? &*cfg.security.key : nullptr);
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(key, ": ", e.what()));
  }
  TRIDENT_CONFIG_CHECK(shards->vocab() <= static_cast<uint64_t>(cfg.model.vocab), key, ": shard ", prefix,
                       " was written for vocab ", shards->vocab(), " but model.vocab = ", cfg.model.vocab);
  return shards;
}

data::SamplerOptions run_sampler_options(const RunConfig& cfg, int dp_rank, int dp_size, int tp) {
  // Bucketed lengths stay divisible by tp, which sequence parallelism splits rows over.
  return data::SamplerOptions{.seq_len = cfg.model.seq_len, .global_batch = cfg.train.global_batch,
                              .micro_batch = cfg.train.micro_batch, .dp_rank = dp_rank, .dp_size = dp_size,
                              .seed = cfg.train.seed, .packing = cfg.data.packing, .bucket = cfg.data.bucket,
                              .length_multiple = std::lcm<int64_t>(8, tp), .truncate = cfg.data.truncate,
                              .whole_batch = !cfg.privacy.enabled};
}

data::SamplerOptions run_sampler_options(const RunConfig& cfg, const dist::Topology& topology) {
  return run_sampler_options(cfg, topology.dp_rank(), topology.layout().dp, topology.layout().tp);
}

std::vector<data::MixPhase> resolve_mix_phases(const RunConfig& cfg, const std::vector<uint64_t>& source_tokens) {
  const data::MixSpec& mix = cfg.data.mix;
  std::vector<double> weights;
  for (size_t i = 0; i < mix.sources.size(); ++i) {
    // Temperature sampling: p_i proportional to n_i^alpha (alpha 0: uniform, 1: by size).
    const double w = mix.has_alpha ? std::pow(double(std::max<uint64_t>(source_tokens[i], 1)), mix.alpha)
                                   : mix.sources[i].weight;
    weights.push_back(w);
  }
  std::vector<data::MixPhase> phases{{0, weights}};
  for (const data::MixStage& stage : mix.stages)
    phases.push_back({stage.step * cfg.train.global_batch, stage.weights});
  return phases;
}

DataSource::DataSource(const RunConfig& cfg, const dist::Topology& topology, const char* key,
                       const std::string& prefix)
    : global_batch_(cfg.train.global_batch), steps_(cfg.train.steps), prefix_(prefix) {
  shards_.push_back(open_run_shards(cfg, key, prefix));
  sampler_ = std::make_unique<data::BatchSampler>(*shards_[0], run_sampler_options(cfg, topology));
  for (int k = 0; k < sampler_->micro_batches_per_step(); ++k) batches_.push_back(sampler_->make_batch());
}

DataSource::DataSource(const RunConfig& cfg, const dist::Topology& topology)
    : DataSource(cfg, run_sampler_options(cfg, topology)) {}

DataSource::DataSource(const RunConfig& cfg, const data::SamplerOptions& options)
    : global_batch_(cfg.train.global_batch), steps_(cfg.train.steps), mix_(cfg.data.mix) {
  TRIDENT_CONFIG_CHECK(!cfg.data.train.empty(), "data.train: no shard prefix given");
  // A config built in code sets data.train alone: its mix is what the key says.
  if (mix_.sources.empty()) mix_ = data::parse_mix(cfg.data.train, "", "", "", "");
  if (mix_.single()) {
    prefix_ = mix_.sources[0].prefix;
    shards_.push_back(open_run_shards(cfg, "data.train", prefix_));
    sampler_ = std::make_unique<data::BatchSampler>(*shards_[0], options);
  } else {
    mixture_ = true;
    prefix_ = cfg.data.train;
    std::vector<data::SamplerSource> sources;
    std::vector<uint64_t> tokens;
    for (const data::MixSource& s : mix_.sources) {
      shards_.push_back(open_run_shards(cfg, "data.train", s.prefix));
      sources.push_back({shards_.back().get(), s.name});
      tokens.push_back(shards_.back()->num_tokens());
    }
    phases_ = resolve_mix_phases(cfg, tokens);
    sampler_ = std::make_unique<data::BatchSampler>(sources, options,
                                                    data::MixSchedule(sources.size(), phases_));
    if (mix_.max_repeat > 0) {
      const std::vector<int64_t> need = rows_needed();
      for (size_t i = 0; i < need.size(); ++i) {
        const int64_t rows = sampler_->source(i).num_rows();
        TRIDENT_CONFIG_CHECK(double(need[i]) <= mix_.max_repeat * double(rows), "data.max_repeat = ",
                             mix_.max_repeat, ": source ", mix_.sources[i].name, " (", mix_.sources[i].prefix,
                             ") has ", rows, " rows but train.steps = ", steps_, " need ", need[i], " of them (",
                             double(need[i]) / double(rows), " times over); add data, lower its weight or raise "
                             "data.max_repeat");
      }
    }
  }
  for (int k = 0; k < sampler_->micro_batches_per_step(); ++k) batches_.push_back(sampler_->make_batch());
}

const std::vector<data::Batch>& DataSource::load(int64_t index) {
  Stopwatch watch;
  for (size_t k = 0; k < batches_.size(); ++k) sampler_->fill(index, static_cast<int>(k), batches_[k]);
  seconds_ += watch.seconds();
  return batches_;
}

std::vector<int64_t> DataSource::rows_needed() const { return sampler_->schedule().cursor(steps_ * global_batch_); }

std::string DataSource::describe_mix() const {
  if (!mixture_) return "";
  std::string text = "sources";
  for (const data::MixSource& s : mix_.sources) text += " " + s.name;
  for (size_t k = 0; k < phases_.size(); ++k) {
    text += k == 0 ? "; shares" : detail::concat("; from step ", phases_[k].first_row / global_batch_, " shares");
    for (const uint32_t q : data::integer_shares(phases_[k].weights)) text += " " + std::to_string(q);
  }
  return text;
}

std::vector<std::string> DataSource::mix_lines() const {
  std::vector<std::string> lines;
  if (!mixture_) return lines;
  const std::vector<int64_t> need = rows_needed();
  const std::vector<uint32_t> shares = data::integer_shares(phases_[0].weights);
  const double period = std::accumulate(shares.begin(), shares.end(), 0.0);
  for (size_t i = 0; i < mix_.sources.size(); ++i) {
    const int64_t rows = sampler_->source(i).num_rows();
    char weight[64];
    std::snprintf(weight, sizeof weight, "%.6g", double(shares[i]) / period);
    lines.push_back(detail::concat(
        "data: source ", mix_.sources[i].name, " (", mix_.sources[i].prefix, "): ", shards_[i]->num_tokens(),
        " tokens, ", rows, " rows; weight ", weight, mix_.has_alpha ? detail::concat(" (tokens^", mix_.alpha, ")") : "",
        "; train.steps = ", steps_, " need ", need[i], " rows: repeat factor ", double(need[i]) / double(rows),
        need[i] > rows ? " (repeats in reshuffled epochs)" : ""));
  }
  for (size_t k = 1; k < phases_.size(); ++k) {
    std::string text = detail::concat("data: from step ", phases_[k].first_row / global_batch_, " weights");
    const std::vector<uint32_t> q = data::integer_shares(phases_[k].weights);
    const double sum = std::accumulate(q.begin(), q.end(), 0.0);
    for (size_t i = 0; i < q.size(); ++i) {
      char weight[64];
      std::snprintf(weight, sizeof weight, " %s %.6g", mix_.sources[i].name.c_str(), double(q[i]) / sum);
      text += weight;
    }
    lines.push_back(text);
  }
  return lines;
}

void DataSource::checkpoint_record(int64_t steps_done, const std::vector<int64_t>& documents,
                                   std::map<std::string, double>& numbers, std::string& mix) const {
  if (!mixture_) return;
  const std::vector<int64_t> rows = sampler_->schedule().cursor(steps_done * global_batch_);
  const data::MixSchedule& schedule = sampler_->schedule();
  const int64_t origin_row = schedule.origin_row();
  const std::vector<int64_t> origin = schedule.cursor(origin_row);
  numbers["data_origin_step"] = double(origin_row / global_batch_);
  for (size_t i = 0; i < mix_.sources.size(); ++i) {
    const std::string& name = mix_.sources[i].name;
    numbers["data_rows_" + name] = double(rows[i]);
    numbers["data_documents_" + name] = i < documents.size() ? double(documents[i]) : 0.0;
    numbers["data_origin_rows_" + name] = double(origin[i]);
  }
  mix = describe_mix();
}

std::vector<int64_t> DataSource::resume(int64_t step, const std::map<std::string, double>& numbers,
                                        const std::string& mix, const Logger& log) {
  const size_t m = num_sources();
  std::vector<int64_t> documents(m, 0);
  if (!mixture_ || step == 0) return documents;
  auto number = [&](const std::string& name, double fallback) {
    const auto it = numbers.find(name);
    return it == numbers.end() ? fallback : it->second;
  };
  for (size_t i = 0; i < m; ++i) documents[i] = int64_t(number("data_documents_" + mix_.sources[i].name, 0));
  const std::string here = describe_mix();
  if (mix == here) {
    // The same mix: the schedule from the checkpoint's origin, as the uninterrupted run had it.
    const int64_t origin_step = int64_t(number("data_origin_step", 0));
    if (origin_step == 0) return documents;
    std::vector<int64_t> base(m);
    for (size_t i = 0; i < m; ++i) base[i] = int64_t(number("data_origin_rows_" + mix_.sources[i].name, 0));
    sampler_->set_schedule(data::MixSchedule(m, phases_, origin_step * global_batch_, base));
    return documents;
  }
  TRIDENT_CONFIG_CHECK(mix_.change == data::MixChange::kContinue, "data.train: the checkpoint's data mixture (",
                       mix.empty() ? "none recorded: one source" : mix, ") differs from this configuration's (", here,
                       "); resuming would repeat or skip data. Restore the mix, or set data.mix_change = continue to "
                       "go on from each source's cursor");
  std::vector<int64_t> base(m);
  std::string cursors;
  for (size_t i = 0; i < m; ++i) {
    base[i] = int64_t(number("data_rows_" + mix_.sources[i].name, 0));
    cursors += detail::concat(i ? ", " : "", mix_.sources[i].name, " ", base[i]);
  }
  sampler_->set_schedule(data::MixSchedule(m, phases_, step * global_batch_, base));
  log.info("data.mix_change = continue: the mix changed since the checkpoint (", mix, "); from step ", step,
           " each source goes on from its cursor (rows consumed: ", cursors, ")");
  return documents;
}

}  // namespace trident::train
