// evalgen suite `kv_lookup`: key-value pairs in the prompt, one key asked. Harder levels have
// more pairs and more keys one letter away from the asked one. Parameters:
// {"keys": [...], "values": [...], "query": key} (values as strings: numbers or words).
#include <algorithm>
#include <set>

#include "suite_util.hpp"
#include "trident/core/error.hpp"
#include "trident/data/evalgen/suite.hpp"

namespace trident::data::evalgen {

namespace {

bool one_letter_apart(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  int diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += a[i] != b[i];
  return diff == 1;
}

class KvLookupSuite final : public Suite {
 public:
  const char* name() const override { return "kv_lookup"; }
  std::vector<TemplateDef> templates() const override {
    std::vector<ParamDef> common = {{"pairs_min", 2, 200, {}}, {"pairs_max", 2, 200, {}}, {"key_chars", 3, 16, {}},
                                    {"similar_keys", 0, 50, {}}};
    std::vector<ParamDef> number = common;
    number.push_back({"value_digits", 2, 9, {}});
    return {{"number", number, {"pairs", "key"}}, {"word", common, {"pairs", "key"}}};
  }
  int max_choices() const override { return 8; }

  Draw draw(const std::string& tmpl, const LevelParams& level, const std::vector<std::string>& words,
            EvalRng& rng) const override {
    const int64_t n = rng.between(level.at("pairs_min"), level.at("pairs_max")), len = level.at("key_chars");
    const std::string query = random_letters(rng, len);
    std::vector<std::string> keys = {query};
    std::set<std::string> seen = {query};
    // Near keys first (one letter of the query changed), then unrelated ones.
    const int64_t similar = std::min<int64_t>(level.at("similar_keys"), n - 1);
    for (int tries = 0; static_cast<int64_t>(keys.size()) < n; ++tries) {
      TRIDENT_CHECK(tries < 100000, "kv_lookup: cannot draw ", n, " distinct keys of ", len, " letters");
      std::string k = query;
      if (static_cast<int64_t>(keys.size()) <= similar) {
        k[rng.below(len)] = static_cast<char>('a' + rng.below(26));
      } else {
        k = random_letters(rng, len);
      }
      if (seen.insert(k).second) keys.push_back(k);
    }
    for (size_t i = keys.size(); i > 1; --i) std::swap(keys[i - 1], keys[rng.below(i)]);  // shuffled
    std::vector<std::string> values;
    if (tmpl == "word") {
      TRIDENT_CONFIG_CHECK(static_cast<size_t>(n) <= words.size(), "kv_lookup: ", n, " pairs, but words.json has ",
                           words.size(), " words");
      values = distinct_words(rng, words, n);
    } else {
      std::set<int64_t> used;
      while (static_cast<int64_t>(values.size()) < n) {
        const int64_t v = draw_with_digits(rng, level.at("value_digits"));
        if (used.insert(v).second) values.push_back(std::to_string(v));
      }
    }
    std::vector<std::string> lines;
    for (int64_t i = 0; i < n; ++i) lines.push_back(keys[i] + ": " + values[i]);
    Draw d;
    d.params = Json::object();
    d.params.append("keys", string_array(keys));
    d.params.append("values", string_array(values));
    d.params.append("query", Json(query));
    d.slots = {{"pairs", join(lines, "\n")}, {"key", query}};
    return d;
  }

  std::vector<std::string> accepted(const std::string&, const Json& params) const override {
    return {params.at("values").as_array()[query_index(params)].as_string()};
  }

  std::vector<std::string> near_misses(const std::string& tmpl, const Json& params, const std::vector<std::string>& words,
                                       EvalRng& rng) const override {
    const std::vector<std::string> keys = strings_of(params.at("keys")), values = strings_of(params.at("values"));
    const std::string& query = params.at("query").as_string();
    std::vector<std::string> out;
    for (size_t i = 0; i < keys.size(); ++i)  // the values of the look-alike keys are the likely mistakes
      if (one_letter_apart(keys[i], query)) out.push_back(values[i]);
    const size_t q = query_index(params);  // then the neighbours in the context
    if (q > 0) out.push_back(values[q - 1]);
    if (q + 1 < values.size()) out.push_back(values[q + 1]);
    for (const std::string& v : values) out.push_back(v);
    if (tmpl == "number") {
      for (const std::string& v : integer_near_misses(std::stoll(values[q]))) out.push_back(v);
    } else {
      for (const std::string& w : distinct_words(rng, words, std::min<int64_t>(16, words.size()))) out.push_back(w);
    }
    return out;
  }

  // The value of the asked key (which key: the slot counts of paraphrase_check.hpp).
  RewordRule reword_rule(const std::string&, const Json&) const override {
    RewordRule r;
    r.must_say = {{"value", "values"}};
    r.must_not_say = {"which key", "what key", "how many", "sum", "total", "largest", "smallest", "reverse", "first",
                      "last"};
    return r;
  }

 private:
  static size_t query_index(const Json& params) {
    const std::vector<std::string> keys = strings_of(params.at("keys"));
    TRIDENT_CHECK(keys.size() == params.at("values").as_array().size(), "kv_lookup: keys and values differ in number");
    TRIDENT_CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == keys.size(), "kv_lookup: duplicate keys");
    const auto it = std::find(keys.begin(), keys.end(), params.at("query").as_string());
    TRIDENT_CHECK(it != keys.end(), "kv_lookup: the asked key is not in the context");
    return static_cast<size_t>(it - keys.begin());
  }
};

}  // namespace

std::unique_ptr<Suite> make_kv_lookup_suite() { return std::make_unique<KvLookupSuite>(); }

}  // namespace trident::data::evalgen
