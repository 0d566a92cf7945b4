// A data mixture as the configuration states it (docs/design.md section 5):
//   data.train       = 0.6 input/data/en 0.3 input/data/code 0.1 input/data/zh
//                      (weight, prefix pairs in Megatron's order; or a lone prefix; or several
//                      prefixes without weights when data.mix_alpha sets them)
//   data.mix_alpha   = A       weights proportional to tokens_i^A (temperature sampling)
//   data.mix_stages  = 2000: 0.4 0.4 0.2; 8000: 0.2 0.5 0.3   (from that step on, these weights)
//   data.max_repeat  = R       a source needed more than R times over is an error at start
//   data.mix_change  = refuse | continue   (a resume whose mix differs from the checkpoint's)
// Each source is named by its prefix's file name (en, code, zh). Parsing checks the syntax
// alone; the weights are resolved (normalised, mix_alpha applied) once the shards are open.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident::data {

struct MixSource {
  std::string name;    // the prefix's file name: metrics tokens/<name>, loss/<name>
  std::string prefix;  // shard prefix
  double weight = 0;   // as given (> 0; 0 when data.mix_alpha sets it)
};

struct MixStage {
  int64_t step = 0;  // first optimizer step (0-based) that uses these weights
  std::vector<double> weights;  // one per source, >= 0, not all 0
};

enum class MixChange { kRefuse, kContinue };

struct MixSpec {
  std::vector<MixSource> sources;
  double alpha = 0;  // data.mix_alpha (used when has_alpha)
  bool has_alpha = false;
  std::vector<MixStage> stages;  // steps strictly increasing, all > 0
  double max_repeat = 0;         // 0: no limit
  MixChange change = MixChange::kRefuse;

  // A lone prefix: the single-source sampler of old, with its data order unchanged.
  bool single() const { return sources.size() == 1 && stages.empty(); }
};

// Parses the keys above; ConfigError naming the key and the item on bad input: an odd number
// of items, a weight that is not a positive number, duplicate source names, stages with the
// wrong number of weights or out of order, an unknown mix_change. Empty `train`: no sources.
MixSpec parse_mix(const std::string& train, const std::string& alpha, const std::string& stages,
                  const std::string& max_repeat, const std::string& change);

// The shard prefix of data.train's (or data.valid's) first source ("" when none): where its
// prep.json lies.
std::string first_prefix(const std::string& list);
// data.valid's prefixes: one or several, each evaluated on its own (weights, when given as in
// data.train, are ignored). ConfigError on duplicate file names (their records would collide).
std::vector<std::string> valid_prefixes(const std::string& valid);

}  // namespace trident::data
