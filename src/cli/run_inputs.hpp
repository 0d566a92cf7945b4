// The files a run reads (run_inputs.cpp), as (what, path) pairs: checked by security.inputs
// and listed in the audit log before anything is read.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "trident/train/run_config.hpp"

namespace trident::cli {

using RunInputs = std::vector<std::pair<std::string, std::string>>;
RunInputs run_inputs(const train::RunConfig& cfg, const std::string& config_path);

}  // namespace trident::cli
