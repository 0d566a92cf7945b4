// The template library of `trident evalgen` as data: one JSON file per suite in a directory
// (input/eval/ by default), with the prompt wordings and the per-level difficulty parameters
// of each template, and words.json (the vocabulary that word-based templates draw from).
//
// <suite>.json: {"suite": "arithmetic",
//                "templates": [{"name": "add",
//                               "prompts": ["Question: What is {a} + {b}?\nAnswer:", ...],
//                               "levels": {"easy": {"digits_min": 1, "digits_max": 2},
//                                          "medium": {...}, "hard": {...}}}, ...]}
// words.json:   {"words": ["apple", ...]}  (distinct, lower-case ASCII letters)
// A template's name must be one the C++ suite implements, every level must be given with
// exactly the parameters the template declares (integers in their range, or one of the named
// options; a *_min never above its *_max), and a prompt may only use the template's
// placeholders and must not end in whitespace. Anything else is a ConfigError naming the file
// and the key.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trident::data::evalgen {

// The levels, in order of difficulty.
const std::vector<std::string>& level_names();

// A level parameter the C++ of a template reads: an integer in [lo, hi], or, when options is
// not empty, one of those strings.
struct ParamDef {
  std::string name;
  int64_t lo = 0, hi = 0;
  std::vector<std::string> options;
};

// What the C++ of a suite declares for one template.
struct TemplateDef {
  std::string name;
  std::vector<ParamDef> params;
  std::vector<std::string> placeholders;  // the {name}s its prompts may use
};

// One template's parameters at one level, validated against its ParamDefs.
struct LevelParams {
  std::map<std::string, int64_t> ints;
  std::map<std::string, std::string> texts;
  int64_t at(const std::string& key) const;             // Error when undeclared (a bug)
  const std::string& text(const std::string& key) const;
};

struct TemplateSpec {
  std::string name;
  std::vector<std::string> prompts;
  std::map<std::string, LevelParams> levels;  // every name of level_names()
};

struct SuiteSpec {
  std::string suite, file;
  std::vector<TemplateSpec> templates;  // file order
  std::vector<std::string> words;       // words.json
};

// Reads DIR/<suite>.json and DIR/words.json.
SuiteSpec load_suite_spec(const std::string& dir, const std::string& suite, const std::vector<TemplateDef>& defs);

// The placeholders "{name}" (name of [a-z_]) of a wording, in order of appearance.
std::vector<std::string> prompt_placeholders(const std::string& wording);
// The wording with each placeholder replaced by its value (Error when one has none).
std::string fill_prompt(const std::string& wording, const std::map<std::string, std::string>& values);

}  // namespace trident::data::evalgen
