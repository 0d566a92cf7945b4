// Loading and validation of the evalgen template library (see templates.hpp for the format).
#include "trident/data/evalgen/templates.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"

namespace trident::data::evalgen {

namespace {

Json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in.good(), path, ": cannot read the template file (the library is input/eval/, or --templates DIR)");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return Json::parse(text.str());
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

// Member `key` of object `j`, of the wanted kind; errors name the file and the key path.
const Json& member(const Json& j, const std::string& key, Json::Kind kind, const std::string& file,
                   const std::string& where) {
  const std::string path = where.empty() ? key : where + "." + key;
  const Json* m = j.find(key);
  TRIDENT_CONFIG_CHECK(m, file, ": ", path, ": missing");
  TRIDENT_CONFIG_CHECK(m->kind() == kind, file, ": ", path, ": expected ", json_kind_name(kind), ", found ",
                       json_kind_name(m->kind()));
  return *m;
}

bool ends_in_space(const std::string& s) {
  return !s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r');
}

LevelParams parse_level(const Json& j, const TemplateDef& def, const std::string& file, const std::string& where) {
  TRIDENT_CONFIG_CHECK(j.is_object(), file, ": ", where, ": expected object, found ", json_kind_name(j.kind()));
  LevelParams p;
  for (const auto& [key, value] : j.as_object()) {
    const auto d = std::find_if(def.params.begin(), def.params.end(), [&](const ParamDef& x) { return x.name == key; });
    std::string known;
    for (const ParamDef& x : def.params) known += (known.empty() ? "" : ", ") + x.name;
    TRIDENT_CONFIG_CHECK(d != def.params.end(), file, ": ", where, ".", key, ": unknown parameter (template ", def.name,
                         " has ", known, ")");
    const std::string path = where + "." + key;
    if (!d->options.empty()) {
      TRIDENT_CONFIG_CHECK(value.is_string(), file, ": ", path, ": expected string, found ", json_kind_name(value.kind()));
      std::string opts;
      for (const std::string& o : d->options) opts += (opts.empty() ? "" : ", ") + o;
      TRIDENT_CONFIG_CHECK(std::count(d->options.begin(), d->options.end(), value.as_string()), file, ": ", path,
                           ": \"", value.as_string(), "\" is not one of ", opts);
      p.texts[key] = value.as_string();
      continue;
    }
    TRIDENT_CONFIG_CHECK(value.is_number() && value.as_number() == static_cast<double>(static_cast<int64_t>(value.as_number())),
                         file, ": ", path, ": expected an integer");
    const int64_t v = value.as_int();
    TRIDENT_CONFIG_CHECK(v >= d->lo && v <= d->hi, file, ": ", path, ": ", v, " is outside [", d->lo, ", ", d->hi, "]");
    p.ints[key] = v;
  }
  for (const ParamDef& d : def.params)
    TRIDENT_CONFIG_CHECK(p.ints.count(d.name) || p.texts.count(d.name), file, ": ", where, ".", d.name, ": missing");
  for (const auto& [key, v] : p.ints) {  // a range's ends in order
    if (key.size() < 4 || key.compare(key.size() - 4, 4, "_min") != 0) continue;
    const auto hi = p.ints.find(key.substr(0, key.size() - 4) + "_max");
    if (hi != p.ints.end())
      TRIDENT_CONFIG_CHECK(v <= hi->second, file, ": ", where, ".", key, ": ", v, " is above ", hi->first, " = ", hi->second);
  }
  return p;
}

TemplateSpec parse_template(const Json& j, const std::vector<TemplateDef>& defs, const std::string& file,
                            const std::string& where) {
  TRIDENT_CONFIG_CHECK(j.is_object(), file, ": ", where, ": expected object, found ", json_kind_name(j.kind()));
  TemplateSpec t;
  t.name = member(j, "name", Json::Kind::kString, file, where).as_string();
  const auto def = std::find_if(defs.begin(), defs.end(), [&](const TemplateDef& d) { return d.name == t.name; });
  std::string known;
  for (const TemplateDef& d : defs) known += (known.empty() ? "" : ", ") + d.name;
  TRIDENT_CONFIG_CHECK(def != defs.end(), file, ": ", where, ".name: unknown template \"", t.name, "\" (known: ", known, ")");
  const std::string here = where + "(" + t.name + ")";
  const Json& prompts = member(j, "prompts", Json::Kind::kArray, file, here);
  TRIDENT_CONFIG_CHECK(!prompts.as_array().empty(), file, ": ", here, ".prompts: empty");
  for (size_t i = 0; i < prompts.as_array().size(); ++i) {
    const std::string at = here + ".prompts[" + std::to_string(i) + "]";
    const Json& p = prompts.as_array()[i];
    TRIDENT_CONFIG_CHECK(p.is_string(), file, ": ", at, ": expected string, found ", json_kind_name(p.kind()));
    const std::string& w = p.as_string();
    TRIDENT_CONFIG_CHECK(!w.empty() && !ends_in_space(w) && w.front() != ' ', file, ": ", at,
                         ": a prompt must be non-empty and neither start nor end with whitespace");
    for (const std::string& name : prompt_placeholders(w))
      TRIDENT_CONFIG_CHECK(std::count(def->placeholders.begin(), def->placeholders.end(), name), file, ": ", at,
                           ": unknown placeholder {", name, "}");
    t.prompts.push_back(w);
  }
  const Json& levels = member(j, "levels", Json::Kind::kObject, file, here);
  for (const auto& [name, value] : levels.as_object())
    TRIDENT_CONFIG_CHECK(std::count(level_names().begin(), level_names().end(), name), file, ": ", here, ".levels.", name,
                         ": unknown level (easy, medium, hard)");
  for (const std::string& level : level_names())
    t.levels[level] = parse_level(member(levels, level, Json::Kind::kObject, file, here + ".levels"), *def, file,
                                  here + ".levels." + level);
  return t;
}

std::vector<std::string> load_words(const std::string& dir) {
  const std::string file = dir + "/words.json";
  const Json j = read_json(file);
  TRIDENT_CONFIG_CHECK(j.is_object(), file, ": expected an object {\"words\": [...]}");
  std::vector<std::string> words;
  std::set<std::string> seen;
  for (const Json& w : member(j, "words", Json::Kind::kArray, file, "").as_array()) {
    TRIDENT_CONFIG_CHECK(w.is_string(), file, ": words: expected strings");
    const std::string& s = w.as_string();
    TRIDENT_CONFIG_CHECK(!s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; }), file,
                         ": words: \"", s, "\" is not a lower-case ASCII word");
    TRIDENT_CONFIG_CHECK(seen.insert(s).second, file, ": words: \"", s, "\" appears twice");
    words.push_back(s);
  }
  TRIDENT_CONFIG_CHECK(words.size() >= 40, file, ": words: ", words.size(), " words, at least 40 needed");
  return words;
}

}  // namespace

const std::vector<std::string>& level_names() {
  static const std::vector<std::string> kLevels = {"easy", "medium", "hard"};
  return kLevels;
}

int64_t LevelParams::at(const std::string& key) const {
  const auto it = ints.find(key);
  TRIDENT_CHECK(it != ints.end(), "level parameter ", key, " is not declared by its template");
  return it->second;
}

const std::string& LevelParams::text(const std::string& key) const {
  const auto it = texts.find(key);
  TRIDENT_CHECK(it != texts.end(), "level parameter ", key, " is not declared by its template");
  return it->second;
}

SuiteSpec load_suite_spec(const std::string& dir, const std::string& suite, const std::vector<TemplateDef>& defs) {
  SuiteSpec s;
  s.suite = suite;
  s.file = dir + "/" + suite + ".json";
  const Json j = read_json(s.file);
  TRIDENT_CONFIG_CHECK(j.is_object(), s.file, ": expected an object {\"suite\", \"templates\"}");
  const std::string& name = member(j, "suite", Json::Kind::kString, s.file, "").as_string();
  TRIDENT_CONFIG_CHECK(name == suite, s.file, ": suite: \"", name, "\", expected \"", suite, "\"");
  const Json& templates = member(j, "templates", Json::Kind::kArray, s.file, "");
  TRIDENT_CONFIG_CHECK(!templates.as_array().empty(), s.file, ": templates: empty");
  std::set<std::string> seen;
  for (size_t i = 0; i < templates.as_array().size(); ++i) {
    s.templates.push_back(parse_template(templates.as_array()[i], defs, s.file, "templates[" + std::to_string(i) + "]"));
    TRIDENT_CONFIG_CHECK(seen.insert(s.templates.back().name).second, s.file, ": templates[", i, "]: template \"",
                         s.templates.back().name, "\" given twice");
  }
  s.words = load_words(dir);
  return s;
}

std::vector<std::string> prompt_placeholders(const std::string& wording) {
  std::vector<std::string> names;
  for (size_t i = 0; i < wording.size(); ++i) {
    if (wording[i] != '{') continue;
    size_t j = i + 1;
    while (j < wording.size() && ((wording[j] >= 'a' && wording[j] <= 'z') || wording[j] == '_')) ++j;
    if (j > i + 1 && j < wording.size() && wording[j] == '}') {
      names.push_back(wording.substr(i + 1, j - i - 1));
      i = j;
    }
  }
  return names;
}

std::string fill_prompt(const std::string& wording, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t i = 0;
  for (const std::string& name : prompt_placeholders(wording)) {
    const size_t at = wording.find("{" + name + "}", i);
    const auto v = values.find(name);
    TRIDENT_CHECK(v != values.end(), "no value for placeholder {", name, "} of \"", wording, "\"");
    out.append(wording, i, at - i).append(v->second);
    i = at + name.size() + 2;
  }
  return out.append(wording, i, std::string::npos);
}

}  // namespace trident::data::evalgen
