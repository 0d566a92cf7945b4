// model.init_from and the [model] section: the pretrained model defines the architecture, so its
// config.json (or a trident checkpoint's config text) sets every model key it determines; a key
// the user also set must agree with it (a conflict is a ConfigError, never silently one or the
// other). model.seq_len and model.dropout stay the run's. The resolved config.ini of the run
// then shows the model actually trained.
#include <cstdlib>
#include <filesystem>

#include "trident/cli/config_parser.hpp"
#include "trident/core/error.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/interop/hf_config.hpp"
#include "trident/interop/model_keys.hpp"

namespace trident::cli {

namespace {

// "1e-05" and "1e-5", "true" and "1": the same value written two ways.
bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  char* ea = nullptr;
  char* eb = nullptr;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  if (!a.empty() && !b.empty() && *ea == '\0' && *eb == '\0') return x == y;
  auto truth = [](const std::string& s) { return s == "true" || s == "1" || s == "yes" || s == "on"; };
  auto falsity = [](const std::string& s) { return s == "false" || s == "0" || s == "no" || s == "off"; };
  return (truth(a) && truth(b)) || (falsity(a) && falsity(b));
}

}  // namespace

namespace {

// The [model] keys (and with_lora, the [lora] keys) of `from`, an HF directory or a checkpoint.
void apply_model_source(std::map<std::string, std::string>& values, const std::set<std::string>& given,
                        const std::string& from, const char* role, bool with_lora, bool overrides) {
  std::map<std::string, std::string> keys;
  std::string source;
  if (interop::is_hf_model_dir(from)) {
    const interop::HfModelInfo info = interop::read_hf_config(from);
    keys = interop::model_key_texts(info.config);
    source = from + "/config.json";
    const int seq_len = std::atoi(values.at("model.seq_len").c_str());
    TRIDENT_CONFIG_CHECK(!info.config.learned_positions() || seq_len <= info.config.max_positions, "model.seq_len = ",
                         seq_len, " exceeds the ", info.config.max_positions, " learned positions of ", source);
  } else if (std::filesystem::is_regular_file(from)) {
    const io::CheckpointListing listing = io::list_checkpoint(from);
    const auto text = listing.attributes.texts.find("config");
    TRIDENT_CONFIG_CHECK(text != listing.attributes.texts.end(), role, " = ", from,
                         ": the file has no config text (not a trident checkpoint)");
    model::ModelConfig m;
    try {
      m = model_config_from_ini(text->second);
    } catch (const ConfigError& e) {
      throw ConfigError(detail::concat(role, " = ", from, ": its config text: ", e.what()));
    }
    keys = interop::model_key_texts(m, with_lora);
    source = from + (with_lora ? " (its [model] and [lora] sections)" : " (its [model] section)");
  } else {
    throw ConfigError(std::string(role) + " = " + from + ": neither a Hugging Face model directory (with config.json) "
                      "nor a trident checkpoint file");
  }
  for (const auto& [key, value] : keys) {
    TRIDENT_CONFIG_CHECK(overrides || !given.count(key) || same_value(values.at(key), value), key, " = ", values.at(key),
                         " conflicts with ", role, ": ", source, " gives ", value,
                         " (leave the key out, or set it to that value)");
    values[key] = value;
  }
}

}  // namespace

void apply_init_from(std::map<std::string, std::string>& values, const std::set<std::string>& given) {
  const std::string from = values.at("model.init_from");
  if (!from.empty()) apply_model_source(values, given, from, "model.init_from", /*with_lora=*/false, /*overrides=*/false);
}

void apply_checkpoint_architecture(std::map<std::string, std::string>& values, const std::set<std::string>& given,
                                   const std::string& checkpoint) {
  // A path that is no file is left to the resume, which names it (checkpoint.resume: ... not found).
  if (!std::filesystem::is_regular_file(checkpoint)) return;
  apply_model_source(values, given, checkpoint, "--checkpoint", /*with_lora=*/true, /*overrides=*/true);
}

}  // namespace trident::cli
