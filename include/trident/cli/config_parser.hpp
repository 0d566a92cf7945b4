// The configuration schema (every [section] key of DESIGN.md section 4 with its default and
// meaning) and its parser: an INI file read by Boost.Program_options, each key overridable on
// the command line as --section.key=value. Unknown keys, wrong types and impossible
// combinations raise ConfigError naming the key and the rule (the CLI exits with code 2).
#pragma once
#include <string>
#include <vector>

#include "trident/train/run_config.hpp"

namespace trident::cli {

struct ConfigKey {
  const char* name;       // "section.key"
  const char* fallback;   // default value as written in an INI file ("" = unset)
  const char* help;
};

const std::vector<ConfigKey>& config_schema();

// Parses args (the arguments after "train"): --config FILE and --section.key=value overrides.
// world_size is the number of MPI ranks, checked against dp*tp*pp.
train::RunConfig parse_run_config(int argc, char** argv, int world_size);

// "--help" text for a subcommand that takes the run configuration.
std::string config_help(const std::string& usage);

}  // namespace trident::cli
