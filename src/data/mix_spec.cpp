// Parsing data.train's weight/prefix pairs and the mixture keys beside it.
#include "trident/data/mix_spec.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "trident/core/error.hpp"

namespace trident::data {
namespace {

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The whole word as a finite number, or false.
bool parse_number(const std::string& word, double* out) {
  if (word.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  if (end != word.c_str() + word.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string source_name(const std::string& prefix) {
  std::string p = prefix;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return std::filesystem::path(p).filename().string();
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::vector<MixStage> parse_stages(const std::string& text, size_t sources) {
  std::vector<MixStage> stages;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ';');) {
    item = trim(item);
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    TRIDENT_CONFIG_CHECK(colon != std::string::npos, "data.mix_stages: '", item,
                         "' is not STEP: W1 W2 ... (e.g. 2000: 0.4 0.4 0.2; 8000: 0.2 0.5 0.3)");
    MixStage stage;
    double step = 0;
    const std::string step_text = trim(item.substr(0, colon));
    TRIDENT_CONFIG_CHECK(parse_number(step_text, &step) && step >= 1 && step == std::floor(step) && step < 0x1p53,
                         "data.mix_stages: the step '", step_text, "' is not a whole number >= 1");
    stage.step = static_cast<int64_t>(step);
    TRIDENT_CONFIG_CHECK(stages.empty() || stage.step > stages.back().step, "data.mix_stages: step ", stage.step,
                         " follows step ", stages.empty() ? 0 : stages.back().step, "; give the stages in increasing order");
    double sum = 0;
    for (const std::string& w : split_words(item.substr(colon + 1))) {
      double v = 0;
      TRIDENT_CONFIG_CHECK(parse_number(w, &v) && v >= 0, "data.mix_stages: the weight '", w, "' of step ",
                           stage.step, " is not a number >= 0");
      stage.weights.push_back(v);
      sum += v;
    }
    TRIDENT_CONFIG_CHECK(stage.weights.size() == sources, "data.mix_stages: step ", stage.step, " gives ",
                         stage.weights.size(), " weights for the ", sources, " sources of data.train");
    TRIDENT_CONFIG_CHECK(sum > 0, "data.mix_stages: the weights of step ", stage.step, " are all zero");
    stages.push_back(std::move(stage));
  }
  return stages;
}

}  // namespace

MixSpec parse_mix(const std::string& train, const std::string& alpha, const std::string& stages,
                  const std::string& max_repeat, const std::string& change) {
  MixSpec spec;
  const std::vector<std::string> items = split_words(train);
  double first = 0;
  if (items.size() > 1 && parse_number(items[0], &first)) {
    TRIDENT_CONFIG_CHECK(items.size() % 2 == 0, "data.train: ", items.size(),
                         " items, an odd number: not weight, prefix pairs (e.g. 0.6 input/data/en 0.4 input/data/code)");
    for (size_t i = 0; i < items.size(); i += 2) {
      double w = 0;
      TRIDENT_CONFIG_CHECK(parse_number(items[i], &w), "data.train: '", items[i], "' (item ", i + 1,
                           ") is not a weight; give weight, prefix pairs (e.g. 0.6 input/data/en 0.4 input/data/code)");
      TRIDENT_CONFIG_CHECK(w > 0, "data.train: the weight ", items[i], " of ", items[i + 1],
                           " is not positive; leave a source out rather than weigh it 0");
      double unused = 0;
      TRIDENT_CONFIG_CHECK(!parse_number(items[i + 1], &unused), "data.train: item ", i + 2, " ('", items[i + 1],
                           "') is a number where a shard prefix belongs");
      spec.sources.push_back({source_name(items[i + 1]), items[i + 1], w});
    }
  } else {
    for (const std::string& prefix : items) spec.sources.push_back({source_name(prefix), prefix, 0});
  }
  if (!alpha.empty()) {
    TRIDENT_CONFIG_CHECK(parse_number(alpha, &spec.alpha) && spec.alpha >= 0 && spec.alpha <= 10,
                         "data.mix_alpha = ", alpha, " is not a number in [0, 10]");
    spec.has_alpha = true;
    TRIDENT_CONFIG_CHECK(spec.sources.empty() || spec.sources[0].weight == 0,
                         "data.mix_alpha sets the weights from the sources' token counts: give data.train as prefixes "
                         "without weights, or drop data.mix_alpha");
  } else if (spec.sources.size() > 1) {
    TRIDENT_CONFIG_CHECK(spec.sources[0].weight > 0, "data.train: ", spec.sources.size(),
                         " prefixes without weights; give weight, prefix pairs (0.6 A 0.4 B) or data.mix_alpha");
  }
  for (MixSource& s : spec.sources) {
    TRIDENT_CONFIG_CHECK(!s.name.empty() && s.name != "." && s.name != "..", "data.train: the prefix '", s.prefix,
                         "' has no file name to name its source by");
    if (spec.sources.size() == 1 && !spec.has_alpha) s.weight = 1;
  }
  std::set<std::string> names;
  for (const MixSource& s : spec.sources)
    TRIDENT_CONFIG_CHECK(names.insert(s.name).second, "data.train: two sources are named '", s.name,
                         "' (a source is named by its prefix's file name); rename one shard set");
  TRIDENT_CONFIG_CHECK(spec.sources.size() <= 65535, "data.train: ", spec.sources.size(),
                       " sources; at most 65535 are supported");
  if (!stages.empty()) {
    TRIDENT_CONFIG_CHECK(!spec.sources.empty(), "data.mix_stages needs data.train");
    spec.stages = parse_stages(stages, spec.sources.size());
  }
  if (!max_repeat.empty()) {
    TRIDENT_CONFIG_CHECK(parse_number(max_repeat, &spec.max_repeat) && spec.max_repeat >= 0,
                         "data.max_repeat = ", max_repeat, " is not a number >= 0 (0: no limit)");
  }
  if (change == "continue") spec.change = MixChange::kContinue;
  else TRIDENT_CONFIG_CHECK(change.empty() || change == "refuse", "data.mix_change = ", change,
                            " is not refuse or continue");
  return spec;
}

std::string first_prefix(const std::string& list) {
  const std::vector<std::string> items = split_words(list);
  double w = 0;
  if (items.size() > 1 && parse_number(items[0], &w)) return items[1];
  return items.empty() ? "" : items[0];
}

std::vector<std::string> valid_prefixes(const std::string& valid) {
  std::vector<std::string> items = split_words(valid);
  double w = 0;
  if (items.size() > 1 && parse_number(items[0], &w)) {  // weight, prefix pairs: the prefixes
    TRIDENT_CONFIG_CHECK(items.size() % 2 == 0, "data.valid: ", items.size(),
                         " items, an odd number: not weight, prefix pairs");
    std::vector<std::string> prefixes;
    for (size_t i = 1; i < items.size(); i += 2) prefixes.push_back(items[i]);
    items = prefixes;
  }
  std::set<std::string> names;
  for (const std::string& p : items)
    TRIDENT_CONFIG_CHECK(names.insert(source_name(p)).second, "data.valid: two prefixes named ", source_name(p),
                         " (each source is named by its prefix's file name)");
  return items;
}

}  // namespace trident::data
