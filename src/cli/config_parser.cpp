// Reading the INI file and command-line overrides into a RunConfig, with typed conversion and
// the cross-key rules checked before any work starts.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "config_values.hpp"
#include "trident/cli/config_parser.hpp"
#include "trident/core/error.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/interop/hf_config.hpp"

namespace po = boost::program_options;

namespace trident::cli {

std::string resolved_ini(const Values& v) {
  std::ostringstream os;
  std::string section;
  for (const ConfigKey& k : config_schema()) {
    const std::string name = k.name;
    const size_t dot = name.find('.');
    if (name.substr(0, dot) != section) {
      section = name.substr(0, dot);
      os << (os.tellp() > 0 ? "\n" : "") << "[" << section << "]\n";
    }
    os << name.substr(dot + 1) << " = " << v.str(name) << "\n";
  }
  return os.str();
}

namespace {

po::options_description schema_options() {
  po::options_description desc("configuration keys (INI [section] key = value, or --section.key=value)");
  for (const ConfigKey& k : config_schema())
    desc.add_options()(k.name, po::value<std::string>()->default_value(k.fallback), k.help);
  return desc;
}

}  // namespace

std::string config_help(const std::string& usage) {
  po::options_description general("options");
  general.add_options()("config", po::value<std::string>(), "INI configuration file")("help", "this help");
  std::ostringstream os;
  os << usage << "\n\n" << general << "\n" << schema_options();
  return os.str();
}

namespace {
// Whether text holds a %word% sequence. Boost.Program_options builds its error messages by
// replacing placeholders such as %canonical_option% with the offending text; text that itself
// holds one makes that replacement loop forever (found by fuzz_config), so its message is
// never asked for then.
bool has_placeholder(const std::string& text) {
  for (size_t at = text.find('%'); at != std::string::npos; at = text.find('%', at + 1)) {
    size_t end = at + 1;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    if (end > at + 1 && end < text.size() && text[end] == '%') return true;
  }
  return false;
}
}  // namespace

namespace {

// What an empty command-line value (--section.key=) is while Boost parses it.
constexpr const char* kEmptyValue = "\x1f<empty>";

// A configuration is a few kilobytes: anything past this bound is not one (/dev/zero).
constexpr size_t kMaxConfigBytes = size_t(1) << 20;
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// The text of --config FILE: a readable file (or pipe) of at most kMaxConfigBytes, its
// leading UTF-8 byte-order mark (editors on Windows write one) dropped.
std::string read_config_file(const std::string& path) {
  TRIDENT_CONFIG_CHECK(!std::filesystem::is_directory(path), "--config ", path, ": a directory, not a config file");
  std::ifstream file(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(file.good(), "cannot read config file ", path);
  std::string text(kMaxConfigBytes + 1, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  TRIDENT_CONFIG_CHECK(!file.bad(), "cannot read config file ", path);
  text.resize(static_cast<size_t>(file.gcount()));
  TRIDENT_CONFIG_CHECK(text.size() <= kMaxConfigBytes, "--config ", path, ": larger than ", kMaxConfigBytes >> 20,
                       " MiB, not a configuration file");
  if (text.starts_with(kUtf8Bom)) text.erase(0, kUtf8Bom.size());
  return text;
}

// Boost's exception as a ConfigError naming where the input came from.
[[noreturn]] void rethrow_config_error(const po::error& e, const std::string& input, const std::string& source) {
  if (has_placeholder(input))
    throw ConfigError("invalid configuration in " + source + " (a line or argument holding a %word% sequence is " +
                      "not allowed where the option parser must report it)");
  if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&e))
    throw ConfigError("unknown configuration key '" + unknown->get_option_name() + "' in " + source +
                      " (trident train --help lists every key)");
  throw ConfigError(std::string(e.what()) + " (in " + source + ")");
}

// Every schema key's value (vm's, else its default) and the keys vm set.
std::map<std::string, std::string> schema_values(const po::variables_map& vm, std::set<std::string>* given = nullptr) {
  std::map<std::string, std::string> values;
  for (const ConfigKey& k : config_schema()) {
    values[k.name] = vm[k.name].as<std::string>();
    if (values[k.name] == kEmptyValue) values[k.name].clear();
    if (given && !vm[k.name].defaulted()) given->insert(k.name);
  }
  return values;
}

}  // namespace

train::RunConfig parse_run_config(int argc, char** argv, int world_size, const std::string& architecture_from) {
  po::options_description general("options");
  general.add_options()("config", po::value<std::string>(), "INI configuration file");
  po::options_description keys = schema_options();
  po::options_description all;
  all.add(general).add(keys);

  po::variables_map vm;
  std::string source = "the command line";
  std::string input;  // every argument and the file's text
  // --section.key= (nothing after the sign) clears a key the file sets. Boost refuses an empty
  // value there, so it travels as kEmptyValue and becomes "" after parsing.
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    input += std::string(argv[i]) + "\n";
    std::string a = argv[i];
    if (i > 0 && a.starts_with("--") && a.size() > 3 && a.back() == '=' && a.find('=') == a.size() - 1) a += kEmptyValue;
    args.push_back(std::move(a));
  }
  try {
    // Command-line values are stored first, so they win over the file's.
    po::store(po::command_line_parser(std::vector<std::string>(args.begin() + 1, args.end())).options(all).style(po::command_line_style::default_style &
                                                                     ~po::command_line_style::allow_guessing).run(),
              vm);
    if (vm.count("config")) {
      source = vm["config"].as<std::string>();
      const std::string text = read_config_file(source);
      input += text;
      std::istringstream lines(text);
      po::store(po::parse_config_file(lines, keys, /*allow_unregistered=*/false), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    rethrow_config_error(e, input, source);
  }
  std::set<std::string> given;  // keys set in the file or on the command line
  std::map<std::string, std::string> values = schema_values(vm, &given);
  apply_init_from(values, given);
  if (!architecture_from.empty()) apply_checkpoint_architecture(values, given, architecture_from);
  return to_run_config(Values(std::move(values)), world_size);
}

model::ModelConfig model_config_from_ini(const std::string& ini, std::string* init_from, std::string* train_data) {
  po::variables_map vm;
  try {
    // Keys this trident does not know (a checkpoint of another version) are passed over.
    std::istringstream lines(ini.starts_with(kUtf8Bom) ? ini.substr(kUtf8Bom.size()) : ini);
    po::store(po::parse_config_file(lines, schema_options(), /*allow_unregistered=*/true), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    rethrow_config_error(e, ini, "the configuration text");
  }
  const Values values(schema_values(vm));
  if (init_from) *init_from = values.str("model.init_from");
  if (train_data) *train_data = data::first_prefix(values.str("data.train"));
  return read_model_section(values);
}

interop::CheckpointModel checkpoint_model(const std::string& path) {
  const io::CheckpointListing listing = io::list_checkpoint(path);
  const auto config = listing.attributes.texts.find("config");
  TRIDENT_CONFIG_CHECK(config != listing.attributes.texts.end(), path, " has no config text: not a trident checkpoint");
  interop::CheckpointModel model;
  try {
    model.config = model_config_from_ini(config->second, &model.init_from, &model.train_data);
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(path, ": its config text: ", e.what()));
  }
  // A checkpoint's init_from may be another checkpoint (convert --from hf, a resumed fine-tune):
  // follow the chain to the HF directory it started from, if it still exists.
  std::string from = model.init_from;
  for (int depth = 0; depth < 16 && !from.empty(); ++depth) {
    if (interop::is_hf_model_dir(from)) {
      model.hf_base = std::filesystem::absolute(from).lexically_normal().string();
      break;
    }
    if (!std::filesystem::is_regular_file(from)) break;
    try {
      const io::CheckpointListing next = io::list_checkpoint(from);
      const auto text = next.attributes.texts.find("config");
      if (text == next.attributes.texts.end()) break;
      std::string next_from;
      model_config_from_ini(text->second, &next_from);
      from = next_from;
    } catch (const std::exception&) {
      break;  // not a readable checkpoint: no known base
    }
  }
  return model;
}

}  // namespace trident::cli
