// The resolved configuration as strings (every schema key, from the file, the command line or
// its default) with typed getters that name the key on error, and the readers that turn it into
// a RunConfig, one per section (config_sections.cpp). Private to the CLI.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "trident/core/error.hpp"
#include "trident/core/value_text.hpp"
#include "trident/model/model_config.hpp"
#include "trident/train/run_config.hpp"

namespace trident::cli {

// The resolved string value of every key, with typed getters that name the key on error.
class Values {
 public:
  explicit Values(std::map<std::string, std::string> v) : values_(std::move(v)) {}
  const std::string& str(const std::string& key) const { return values_.at(key); }

  int64_t integer(const std::string& key) const { return integer_value(key, str(key)); }
  int int32(const std::string& key) const { return int32_value(key, str(key)); }
  double number(const std::string& key) const { return number_value(key, str(key)); }
  bool boolean(const std::string& key) const { return boolean_value(key, str(key)); }

 private:
  std::map<std::string, std::string> values_;
};

// The configuration as INI text, every key of the schema (config.ini, a checkpoint's config).
std::string resolved_ini(const Values& v);
// [model] and [lora]: the model, resolved (defaults filled, rules checked).
model::ModelConfig read_model_section(const Values& v);
// [security] (config_security.cpp): modes, group membership, the key file loaded.
security::SecurityConfig read_security_section(const Values& v);
// An octal file mode ("0640"); ConfigError naming `key` otherwise.
unsigned parse_file_mode(const std::string& key, const std::string& text);
// A file policy from its three settings (the group resolved, membership checked); key_prefix
// ("security." or "--") names them in errors.
FilePolicy file_policy_from(const std::string& group, const std::string& file_mode, const std::string& dir_mode,
                            const std::string& key_prefix);
// Where `trident plan --calibrate` keeps this machine's figures: TRIDENT_CALIBRATION, else the
// XDG cache (XDG_CACHE_HOME or ~/.cache)/trident/calibration.json (plan_command.cpp).
std::string calibration_path();
// parallel.layout = auto (auto_layout.cpp): sets c.layout's dp/tp/pp and train.micro_batch to
// the planner's best layout of world_size ranks that `valid` accepts (trident's own rules),
// and c.layout_note to say so. Collective over the job's ranks when MPI runs.
void choose_auto_layout(const Values& v, train::RunConfig& c, int world_size,
                        const std::function<bool(const train::RunConfig&)>& valid);
// Every section and the rules across them; world_size is checked against dp * tp * pp.
train::RunConfig to_run_config(const Values& v, int world_size);

}  // namespace trident::cli
