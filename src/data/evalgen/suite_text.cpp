// evalgen suites on strings and lists: `copy` (repeat a text exactly), `reverse` (a word's
// letters or a list's items in reverse order) and `sort` (numbers ascending, words
// alphabetically). Lengths grow with the level. Parameters: {"text": "..."} or {"items": [...]}.
#include <algorithm>
#include <set>

#include "suite_util.hpp"
#include "trident/core/error.hpp"
#include "trident/data/evalgen/suite.hpp"

namespace trident::data::evalgen {

namespace {

std::vector<ParamDef> range(const std::string& what, int64_t lo, int64_t hi) {
  return {{what + "_min", lo, hi, {}}, {what + "_max", lo, hi, {}}};
}

Json text_params(const std::string& text) {
  Json p = Json::object();
  p.append("text", Json(text));
  return p;
}

Json items_params(Json items) {
  Json p = Json::object();
  p.append("items", std::move(items));
  return p;
}

std::vector<std::string> joined(const std::vector<std::vector<std::string>>& lists, const std::string& sep) {
  std::vector<std::string> out;
  for (const auto& l : lists) out.push_back(join(l, sep));
  return out;
}

class CopySuite final : public Suite {
 public:
  const char* name() const override { return "copy"; }
  std::vector<TemplateDef> templates() const override {
    return {{"letters", range("chars", 3, 500), {"text"}}, {"words", range("words", 3, 100), {"text"}}};
  }
  int max_choices() const override { return 6; }

  Draw draw(const std::string& tmpl, const LevelParams& level, const std::vector<std::string>& words,
            EvalRng& rng) const override {
    std::string text;
    if (tmpl == "letters") {
      text = random_letters(rng, rng.between(level.at("chars_min"), level.at("chars_max")));
    } else {
      std::vector<std::string> w(rng.between(level.at("words_min"), level.at("words_max")));
      for (std::string& s : w) s = words[rng.below(words.size())];
      text = join(w, " ");
    }
    return {text_params(text), {{"text", text}}};
  }

  std::vector<std::string> accepted(const std::string&, const Json& params) const override {
    return {params.at("text").as_string()};
  }

  std::vector<std::string> near_misses(const std::string& tmpl, const Json& params, const std::vector<std::string>&,
                                       EvalRng&) const override {
    const std::string& text = params.at("text").as_string();
    if (tmpl == "letters") return string_near_misses(text);
    std::vector<std::string> out = joined(list_near_misses(split(text, " ")), " ");
    for (const std::string& s : string_near_misses(text)) out.push_back(s);
    return out;
  }

  // Repeat as it is: not reordered, not a part of it, not in other letters.
  RewordRule reword_rule(const std::string&, const Json&) const override {
    RewordRule r;
    r.must_say = {{"repeat", "copy", "again", "verbatim", "exactly", "reproduce", "echo", "same"}};
    r.must_not_say = reordering_phrases();
    for (const std::string& p : selection_phrases()) r.must_not_say.push_back(p);
    for (const char* p : {"first", "last"}) r.must_not_say.push_back(p);
    return r;
  }
};

class ReverseSuite final : public Suite {
 public:
  const char* name() const override { return "reverse"; }
  std::vector<TemplateDef> templates() const override {
    return {{"word", range("chars", 3, 200), {"text"}}, {"list", range("items", 3, 40), {"items"}}};
  }
  int max_choices() const override { return 6; }

  Draw draw(const std::string& tmpl, const LevelParams& level, const std::vector<std::string>& words,
            EvalRng& rng) const override {
    if (tmpl == "word") {
      const std::string text = random_letters(rng, rng.between(level.at("chars_min"), level.at("chars_max")));
      return {text_params(text), {{"text", text}}};
    }
    const int64_t n = rng.between(level.at("items_min"), level.at("items_max"));
    TRIDENT_CONFIG_CHECK(static_cast<size_t>(n) <= words.size(), "reverse: ", n, " items, but words.json has ",
                         words.size(), " words");
    const std::vector<std::string> items = distinct_words(rng, words, n);
    return {items_params(string_array(items)), {{"items", join(items, ", ")}}};
  }

  std::vector<std::string> accepted(const std::string& tmpl, const Json& params) const override {
    if (tmpl == "word") {
      std::string t = params.at("text").as_string();
      std::reverse(t.begin(), t.end());
      return {t};
    }
    std::vector<std::string> items = strings_of(params.at("items"));
    std::reverse(items.begin(), items.end());
    return {join(items, ", ")};
  }

  std::vector<std::string> near_misses(const std::string& tmpl, const Json& params, const std::vector<std::string>&,
                                       EvalRng&) const override {
    const std::string right = accepted(tmpl, params)[0];
    if (tmpl == "word") {  // the word unreversed, then slips in the reversal
      std::vector<std::string> out = {params.at("text").as_string()};
      for (const std::string& s : string_near_misses(right)) out.push_back(s);
      return out;
    }
    const std::vector<std::string> items = strings_of(params.at("items"));
    std::vector<std::string> out = {join(items, ", ")};
    for (const std::string& s : joined(list_near_misses(split(right, ", ")), ", ")) out.push_back(s);
    return out;
  }

  // Reversed (letters or items), not sorted, nothing left out.
  RewordRule reword_rule(const std::string&, const Json&) const override {
    RewordRule r;
    r.must_say = {{"reverse", "reversed", "backwards", "backward", "right to left", "last to first"}};
    r.must_not_say = {"sort", "sorted", "alphabetical", "alphabetically", "ascending", "descending", "increasing",
                      "decreasing", "shuffle", "shuffled"};
    for (const std::string& p : selection_phrases()) r.must_not_say.push_back(p);
    return r;
  }
};

class SortSuite final : public Suite {
 public:
  const char* name() const override { return "sort"; }
  std::vector<TemplateDef> templates() const override {
    std::vector<ParamDef> numbers = range("count", 3, 50);
    for (const ParamDef& d : range("digits", 1, 9)) numbers.push_back(d);
    return {{"numbers", numbers, {"items"}}, {"words", range("count", 3, 40), {"items"}}};
  }
  int max_choices() const override { return 6; }

  Draw draw(const std::string& tmpl, const LevelParams& level, const std::vector<std::string>& words,
            EvalRng& rng) const override {
    const int64_t n = rng.between(level.at("count_min"), level.at("count_max"));
    if (tmpl == "words") {
      TRIDENT_CONFIG_CHECK(static_cast<size_t>(n) <= words.size(), "sort: ", n, " words, but words.json has ",
                           words.size());
      const std::vector<std::string> items = distinct_words(rng, words, n);
      return {items_params(string_array(items)), {{"items", join(items, ", ")}}};
    }
    std::vector<int64_t> items;
    std::set<int64_t> seen;
    for (int tries = 0; static_cast<int64_t>(items.size()) < n; ++tries) {  // distinct numbers
      TRIDENT_CONFIG_CHECK(tries < 100000, "sort: cannot draw ", n, " distinct numbers of ", level.at("digits_min"),
                           " to ", level.at("digits_max"), " digits");
      const int64_t v = draw_with_digits(rng, rng.between(level.at("digits_min"), level.at("digits_max")));
      if (seen.insert(v).second) items.push_back(v);
    }
    std::vector<std::string> shown;
    for (int64_t v : items) shown.push_back(std::to_string(v));
    return {items_params(int_array(items)), {{"items", join(shown, ", ")}}};
  }

  std::vector<std::string> accepted(const std::string& tmpl, const Json& params) const override {
    return {join(sorted(tmpl, params), ", ")};
  }

  std::vector<std::string> near_misses(const std::string& tmpl, const Json& params, const std::vector<std::string>&,
                                       EvalRng&) const override {
    const std::vector<std::string> right = sorted(tmpl, params);
    std::vector<std::string> out = {join(shown_items(tmpl, params), ", "),
                                    join(std::vector<std::string>(right.rbegin(), right.rend()), ", ")};
    for (const std::string& s : joined(list_near_misses(right), ", ")) out.push_back(s);
    return out;
  }

  // Numbers from the smallest up, words from a to z: never the other direction.
  RewordRule reword_rule(const std::string& tmpl, const Json&) const override {
    RewordRule r;
    if (tmpl == "words") {
      r.must_say = {{"alphabetical", "alphabetically", "a to z", "dictionary order", "lexicographic",
                     "lexicographical", "lexicographically"}};
      r.must_not_say = {"z to a", "length", "shortest", "longest", "ascending", "descending"};
    } else {
      r.must_say = {{"ascending", "increasing", "smallest to largest", "lowest to highest", "least to greatest",
                     "smallest to biggest", "small to large", "low to high", "smallest first", "lowest first"}};
      r.must_not_say = {"descending", "decreasing", "largest to smallest", "highest to lowest", "greatest to least",
                        "biggest to smallest", "large to small", "high to low", "largest first", "highest first",
                        "alphabetical", "alphabetically"};
    }
    for (const char* p : {"reverse", "reversed", "backwards", "backward", "shuffle", "shuffled"})
      r.must_not_say.push_back(p);
    for (const std::string& p : selection_phrases()) r.must_not_say.push_back(p);
    return r;
  }

 private:
  static std::vector<std::string> shown_items(const std::string& tmpl, const Json& params) {
    if (tmpl == "words") return strings_of(params.at("items"));
    std::vector<std::string> out;
    for (int64_t v : ints_of(params.at("items"))) out.push_back(std::to_string(v));
    return out;
  }
  // Numbers by value, words by byte order (lower-case ASCII: alphabetical).
  static std::vector<std::string> sorted(const std::string& tmpl, const Json& params) {
    std::vector<std::string> out;
    if (tmpl == "words") {
      out = strings_of(params.at("items"));
      std::sort(out.begin(), out.end());
    } else {
      std::vector<int64_t> v = ints_of(params.at("items"));
      std::sort(v.begin(), v.end());
      for (int64_t x : v) out.push_back(std::to_string(x));
    }
    TRIDENT_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), "sort: items must be distinct");
    return out;
  }
};

}  // namespace

std::unique_ptr<Suite> make_copy_suite() { return std::make_unique<CopySuite>(); }
std::unique_ptr<Suite> make_reverse_suite() { return std::make_unique<ReverseSuite>(); }
std::unique_ptr<Suite> make_sort_suite() { return std::make_unique<SortSuite>(); }

}  // namespace trident::data::evalgen
