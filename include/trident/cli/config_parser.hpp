// The configuration schema (every [section] key of docs/design.md section 5 with its default and
// meaning) and its parser: an INI file read by Boost.Program_options, each key overridable on
// the command line as --section.key=value. Unknown keys, wrong types and impossible
// combinations raise ConfigError naming the key and the rule (the CLI exits with code 2).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "trident/interop/hf_convert.hpp"
#include "trident/train/run_config.hpp"

namespace trident::cli {

struct ConfigKey {
  const char* name;       // "section.key"
  const char* fallback;   // default value as written in an INI file ("" = unset)
  const char* help;
};

const std::vector<ConfigKey>& config_schema();

// Parses args (the arguments after "train"): --config FILE and --section.key=value overrides.
// world_size is the number of MPI ranks, checked against dp*tp*pp. architecture_from: a
// checkpoint whose [model] and [lora] sections set those keys (eval --checkpoint), as init_from.
train::RunConfig parse_run_config(int argc, char** argv, int world_size, const std::string& architecture_from = "");

// model.init_from: the model keys its config.json (or checkpoint config) determines replace the
// defaults in values; a key in `given` (set by the user) must agree, else ConfigError.
// (src/cli/init_from_config.cpp)
void apply_init_from(std::map<std::string, std::string>& values, const std::set<std::string>& given);
// The same for a checkpoint's [model] and [lora] sections (the model it holds, adapters
// included); they replace what the configuration says, since the weights define the model.
void apply_checkpoint_architecture(std::map<std::string, std::string>& values, const std::set<std::string>& given,
                                   const std::string& checkpoint);

// The one reader of a [model] section written as INI text (a checkpoint's config attribute):
// its [model] and [lora] keys as the run configuration reads them (keys it does not know are
// passed over; absent ones take the schema's defaults); init_from receives model.init_from,
// train_data data.train (the shards the model was trained on).
model::ModelConfig model_config_from_ini(const std::string& ini, std::string* init_from = nullptr,
                                         std::string* train_data = nullptr);
// The model a trident checkpoint file describes (its config text); ConfigError naming the file.
interop::CheckpointModel checkpoint_model(const std::string& path);

// "--help" text for a subcommand that takes the run configuration.
std::string config_help(const std::string& usage);

}  // namespace trident::cli
