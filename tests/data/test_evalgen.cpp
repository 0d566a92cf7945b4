// Tests of `trident evalgen`'s suites: every case of every suite and level passes its checker,
// corrupted answers and every multiple-choice distractor are rejected, the output is a function
// of the options alone, difficulty grows with the level, arithmetic, last-digit, sort, lookup
// and date answers agree with references recomputed here from the prompt text (dates by
// stepping one day at a time, not by day counts), and malformed template files are named.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "evalgen_suites.hpp"
#include "trident/data/evalgen/generate.hpp"

namespace trident::data::evalgen {
namespace {

using testing::TempDir;

using test_support::kLibrary;
using test_support::load;
using test_support::Loaded;

std::vector<std::string> all_suite_names() {
  std::vector<std::string> out;
  for (const auto& s : make_suites()) out.push_back(s->name());
  return out;
}

std::vector<EvalCase> cases_of(const std::string& suite, const std::string& level, int64_t n, uint64_t seed = 7,
                               EvalFormat format = EvalFormat::kGenerate, int choices = 4) {
  const Loaded l = load(suite);
  return generate_cases(*l.suite, l.spec, level, n, seed, format, choices);
}

std::vector<int64_t> numbers_in(const std::string& text) {
  std::vector<int64_t> out;
  const std::regex number("[0-9]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(std::stoll(it->str()));
  return out;
}

TEST(EvalgenRng, BoundedDrawsAreInRangeAndSeeded) {
  EvalRng a(5, "x"), b(5, "x"), c(5, "y");
  std::vector<int> counts(7);
  bool differs = false;
  for (int i = 0; i < 7000; ++i) {
    const uint64_t v = a.below(7);
    ASSERT_LT(v, 7u);
    ASSERT_EQ(v, b.below(7));
    differs |= v != c.below(7);
    ++counts[v];
  }
  EXPECT_TRUE(differs);
  for (int n : counts) EXPECT_NEAR(n, 1000, 150);
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = a.between(-3, 3);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
  }
}

TEST(EvalgenSuites, EveryCasePassesItsCheckerAndCorruptionsFail) {
  for (const std::string& suite : all_suite_names()) {
    const Loaded l = load(suite);
    for (const std::string& level : level_names()) {
      const auto cases = generate_cases(*l.suite, l.spec, level, 40, 3, EvalFormat::kGenerate, 4);
      std::set<std::string> templates;
      for (const EvalCase& c : cases) {
        SCOPED_TRACE(suite + "/" + c.template_name + "/" + level + ": " + c.prompt);
        templates.insert(c.template_name);
        EXPECT_NO_THROW(verify_case(*l.suite, c));
        EXPECT_TRUE(check_answer(*l.suite, c, c.answer));
        EXPECT_TRUE(check_answer(*l.suite, c, " " + c.answer + "\n"));
        for (const std::string& a : c.other_answers) EXPECT_TRUE(check_answer(*l.suite, c, a));
        EXPECT_FALSE(check_answer(*l.suite, c, ""));
        EXPECT_FALSE(check_answer(*l.suite, c, c.answer + "1"));
        EXPECT_FALSE(check_answer(*l.suite, c, c.answer.substr(0, c.answer.size() - 1)));
        std::string changed = c.answer;
        changed[0] = changed[0] == '1' ? '2' : '1';
        EXPECT_FALSE(check_answer(*l.suite, c, changed));
        EXPECT_EQ(c.prompt.find_last_not_of(" \n\t"), c.prompt.size() - 1);
      }
      EXPECT_EQ(templates.size(), l.spec.templates.size()) << suite << ": every template is used";
    }
  }
}

TEST(EvalgenSuites, ChoicesAreDistinctWrongNearMissesWithUniformGold) {
  for (const std::string& suite : all_suite_names()) {
    const Loaded l = load(suite);
    for (int k : {2, l.suite->max_choices()})
      for (const std::string& level : level_names()) {
        const auto cases = generate_cases(*l.suite, l.spec, level, 60, 11, EvalFormat::kChoice, k);
        std::vector<int> gold(k);
        for (const EvalCase& c : cases) {
          SCOPED_TRACE(suite + "/" + c.template_name + "/" + level + ": " + c.params.dump());
          ASSERT_EQ(static_cast<int>(c.choices.size()), k);
          ++gold[c.gold];
          EXPECT_EQ(c.choices[c.gold], c.answer);
          EXPECT_EQ(std::set<std::string>(c.choices.begin(), c.choices.end()).size(), c.choices.size());
          for (int i = 0; i < k; ++i) {
            EXPECT_EQ(check_answer(*l.suite, c, c.choices[i]), i == c.gold) << c.choices[i];
            EXPECT_NE(c.choices[i].front(), ' ');
          }
        }
        for (int g : gold) EXPECT_GT(g, 0) << suite << " " << level << " k=" << k << ": a gold position never drawn";
      }
  }
}

TEST(EvalgenSuites, TamperedCasesFailVerification) {
  const Loaded l = load("date");
  EvalCase c = generate_cases(*l.suite, l.spec, "medium", 2, 1, EvalFormat::kChoice, 4)[1];
  EXPECT_NO_THROW(verify_case(*l.suite, c));
  EvalCase wrong_label = c;
  wrong_label.answer = c.choices[(c.gold + 1) % 4];
  EXPECT_THROW(verify_case(*l.suite, wrong_label), Error);
  EvalCase right_distractor = c;  // an accepted form among the wrong choices
  right_distractor.choices[(c.gold + 1) % 4] = c.other_answers.empty() ? c.answer : c.other_answers[0];
  EXPECT_THROW(verify_case(*l.suite, right_distractor), Error);
  EvalCase spaced = c;
  spaced.choices[(c.gold + 2) % 4] = " " + c.choices[(c.gold + 2) % 4];
  EXPECT_THROW(verify_case(*l.suite, spaced), Error);
  EvalCase trailing = c;
  trailing.prompt += " ";
  EXPECT_THROW(verify_case(*l.suite, trailing), Error);
}

TEST(EvalgenSuites, SameOptionsSameLinesOtherSeedOtherCases) {
  for (const std::string& suite : all_suite_names())
    for (EvalFormat f : {EvalFormat::kGenerate, EvalFormat::kChoice}) {
      const auto a = cases_of(suite, "medium", 20, 1, f), b = cases_of(suite, "medium", 20, 1, f);
      const auto c = cases_of(suite, "medium", 20, 2, f);
      int same_as_other_seed = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(case_json_line(a[i], f), case_json_line(b[i], f));
        same_as_other_seed += case_json_line(a[i], f) == case_json_line(c[i], f);
      }
      EXPECT_LT(same_as_other_seed, 3) << suite;
    }
}

TEST(EvalgenSuites, LineFormats) {
  EvalCase c;
  c.suite = "arithmetic";
  c.template_name = "add";
  c.level = "easy";
  c.prompt = "Question: What is 12 + 7?\nAnswer:";
  c.answer = "19";
  EXPECT_EQ(case_json_line(c, EvalFormat::kGenerate),
            R"({"input":"Question: What is 12 + 7?\nAnswer:","output":"19","answers":[],"suite":"arithmetic",)"
            R"("template":"add","level":"easy"})");
  c.choices = {"18", "19"};
  c.gold = 1;
  EXPECT_EQ(case_json_line(c, EvalFormat::kChoice),
            R"({"context":"Question: What is 12 + 7?\nAnswer:","choices":["18","19"],"gold":1,"suite":"arithmetic",)"
            R"("template":"add","level":"easy"})");
}

// The mean of f over a level's cases, for each level in order.
template <typename F>
std::vector<double> per_level(const std::string& suite, const std::string& tmpl, F f) {
  std::vector<double> means;
  for (const std::string& level : level_names()) {
    double sum = 0;
    int n = 0;
    for (const EvalCase& c : cases_of(suite, level, 60))
      if (c.template_name == tmpl) sum += f(c), ++n;
    means.push_back(sum / n);
  }
  return means;
}

void expect_growing(const std::vector<double>& m, const std::string& what) {
  EXPECT_LT(m[0], m[1]) << what;
  EXPECT_LT(m[1], m[2]) << what;
}

TEST(EvalgenSuites, DifficultyGrowsWithTheLevel) {
  const auto digits = [](const EvalCase& c) {
    return std::to_string(c.params.at("a").as_int()).size() + std::to_string(c.params.at("b").as_int()).size();
  };
  for (const char* t : {"add", "subtract", "multiply"}) expect_growing(per_level("arithmetic", t, digits), t);
  const auto length = [](const EvalCase& c) { return static_cast<double>(c.answer.size()); };
  for (const char* t : {"sum", "product"})
    expect_growing(per_level("last_digit", t, [](const EvalCase& c) { return c.prompt.size(); }), t);
  for (const char* t : {"letters", "words"}) expect_growing(per_level("copy", t, length), t);
  for (const char* t : {"word", "list"}) expect_growing(per_level("reverse", t, length), t);
  const auto items = [](const EvalCase& c) { return c.params.at("items").as_array().size(); };
  for (const char* t : {"numbers", "words"}) expect_growing(per_level("sort", t, items), t);
  const auto pairs = [](const EvalCase& c) { return c.params.at("keys").as_array().size(); };
  for (const char* t : {"number", "word"}) expect_growing(per_level("kv_lookup", t, pairs), t);
  const auto days = [](const EvalCase& c) { return c.params.at("days").as_int(); };
  for (const char* t : {"weekday_after", "date_plus"}) expect_growing(per_level("date", t, days), t);
}

TEST(EvalgenSuites, ArithmeticAndLastDigitMatchTheNumbersInThePrompt) {
  for (const std::string& level : level_names()) {
    for (const EvalCase& c : cases_of("arithmetic", level, 60)) {
      const std::vector<int64_t> v = numbers_in(c.prompt);
      ASSERT_EQ(v.size(), 2u) << c.prompt;
      // The subtract wordings name a first or "b subtracted from a": the params say which.
      const int64_t a = c.params.at("a").as_int(), b = c.params.at("b").as_int();
      ASSERT_TRUE((v[0] == a && v[1] == b) || (v[0] == b && v[1] == a)) << c.prompt;
      const int64_t want = c.template_name == "add" ? a + b : c.template_name == "subtract" ? a - b : a * b;
      EXPECT_EQ(c.answer, std::to_string(want)) << c.prompt;
      if (level != "hard" && c.template_name == "subtract") {
        EXPECT_GE(want, 0);
      }
    }
    for (const EvalCase& c : cases_of("last_digit", level, 60)) {
      const std::vector<int64_t> v = numbers_in(c.prompt);
      uint64_t sum = 0, product = 1;  // the sum exactly (eight 9-digit terms), the product mod 1000
      for (int64_t x : v) sum += x, product = product * (x % 1000) % 1000;
      const unsigned want = static_cast<unsigned>((c.template_name == "sum" ? sum : product) % 10);
      EXPECT_EQ(c.answer, std::to_string(want)) << c.prompt;
    }
  }
}

TEST(EvalgenSuites, SortReverseCopyAndLookupMatchThePrompt) {
  for (const std::string& level : level_names()) {
    for (const EvalCase& c : cases_of("sort", level, 40)) {
      const std::smatch m = [&] {
        std::smatch r;
        std::regex_search(c.prompt, r, std::regex("(?:list |: )([a-z0-9]+(?:, [a-z0-9]+)+)"));
        return r;
      }();
      ASSERT_FALSE(m.empty()) << c.prompt;
      std::vector<std::string> items;
      std::stringstream list(m[1].str());
      for (std::string s; std::getline(list, s, ',');) items.push_back(s.substr(s.front() == ' '));
      if (c.template_name == "numbers")
        std::sort(items.begin(), items.end(), [](const auto& x, const auto& y) { return std::stoll(x) < std::stoll(y); });
      else
        std::sort(items.begin(), items.end());
      std::string want;
      for (const std::string& s : items) want += (want.empty() ? "" : ", ") + s;
      EXPECT_EQ(c.answer, want) << c.prompt;
    }
    for (const EvalCase& c : cases_of("reverse", level, 20)) {
      if (c.template_name != "word") continue;
      const std::string t = c.params.at("text").as_string();
      EXPECT_EQ(c.answer, std::string(t.rbegin(), t.rend()));
      EXPECT_NE(c.prompt.find(t), std::string::npos);
    }
    for (const EvalCase& c : cases_of("copy", level, 20)) EXPECT_NE(c.prompt.find(": " + c.answer + "\n"), std::string::npos);
    for (const EvalCase& c : cases_of("kv_lookup", level, 40)) {
      const std::string key = c.params.at("query").as_string();
      std::map<std::string, std::string> context;
      std::stringstream lines(c.prompt);
      for (std::string line; std::getline(lines, line);) {
        const size_t colon = line.find(": ");
        if (colon != std::string::npos && std::count(line.begin(), line.end(), ' ') == 1) context[line.substr(0, colon)] = line.substr(colon + 2);
      }
      ASSERT_EQ(context.size(), c.params.at("keys").as_array().size()) << c.prompt;
      EXPECT_EQ(c.answer, context.at(key));
      EXPECT_NE(c.prompt.find(key + "?"), std::string::npos);
      if (level == "hard") {  // look-alike keys: one letter away from the asked one
        int near = 0;
        for (const auto& [k, v] : context) {
          int diff = 0;
          for (size_t i = 0; i < k.size(); ++i) diff += k[i] != key[i];
          near += diff == 1;
        }
        EXPECT_GE(near, 1) << c.prompt;
      }
    }
  }
}

// The reference calendar: one day at a time.
struct Ymd {
  int y, m, d;
};
int days_in(int y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0) ? 29 : kDays[m - 1];
}
Ymd next_day(Ymd t) {
  if (++t.d > days_in(t.y, t.m)) t.d = 1, ++t.m;
  if (t.m > 12) t.m = 1, ++t.y;
  return t;
}

TEST(EvalgenSuites, DatesMatchDayByDayStepping) {
  const std::vector<std::string> weekdays = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
  const char* kMonthNames[] = {"January", "February", "March", "April", "May", "June", "July", "August", "September",
                               "October", "November", "December"};
  for (const std::string& level : level_names()) {
    for (const EvalCase& c : cases_of("date", level, 80)) {
      SCOPED_TRACE(c.prompt);
      std::smatch m;
      ASSERT_TRUE(std::regex_search(c.prompt, m, std::regex("([0-9]+) days")));
      const int days = std::stoi(m[1]);
      if (c.template_name == "weekday_after") {
        int w = -1;
        for (int i = 0; i < 7; ++i)
          if (c.prompt.find(weekdays[i]) != std::string::npos) w = i;
        ASSERT_GE(w, 0);
        for (int i = 0; i < days; ++i) w = (w + 1) % 7;
        EXPECT_EQ(c.answer, weekdays[w]);
        continue;
      }
      ASSERT_TRUE(std::regex_search(c.prompt, m, std::regex("([0-9]{4})-([0-9]{2})-([0-9]{2})")));
      const Ymd start = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3])};
      Ymd t = start;
      bool leap_day = false;
      for (int i = 0; i < days; ++i) {
        t = next_day(t);
        leap_day |= t.m == 2 && t.d == 29;
      }
      char want[16];
      std::snprintf(want, sizeof want, "%04d-%02d-%02d", t.y, t.m, t.d);
      EXPECT_EQ(c.answer, want);
      const std::string month = kMonthNames[t.m - 1];
      EXPECT_TRUE(check_answer(*load("date").suite, c, month + " " + std::to_string(t.d) + ", " + std::to_string(t.y)));
      if (level == "easy") {
        EXPECT_TRUE(t.y == start.y && t.m == start.m);
      }
      if (level == "medium") {
        EXPECT_TRUE(t.y != start.y || t.m != start.m);
      }
      if (level == "hard") {
        EXPECT_TRUE(t.y != start.y || leap_day);
      }
    }
  }
}

// A copy of the library with one file replaced.
void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string load_error(const std::string& suite, const std::string& text) {
  TempDir dir;
  for (const auto& f : std::filesystem::directory_iterator(kLibrary))
    std::filesystem::copy_file(f.path(), dir.path / f.path().filename());
  write_file(dir / (suite + ".json"), text);
  try {
    for (const auto& s : make_suites())
      if (suite == s->name()) load_suite_spec(dir.path.string(), suite, s->templates());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(EvalgenTemplates, MalformedFilesNameTheFileAndKey) {
  const std::string head = R"({"suite": "arithmetic", "templates": [{"name": "add", "prompts": ["Q: {a} + {b}?\nA:"], )";
  const std::string easy = R"("easy": {"digits_min": 1, "digits_max": 2})";
  const std::string rest = R"("medium": {"digits_min": 1, "digits_max": 2}, "hard": {"digits_min": 1, "digits_max": 2})";
  const std::string ok = head + R"("levels": {)" + easy + ", " + rest + "}}]}";
  EXPECT_EQ(load_error("arithmetic", ok), "(no error)");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"suite\": ", "arithmetic.json: line 1"},
      {head + R"("levels": {)" + rest + "}}]}", "levels.easy: missing"},
      {head + R"("levels": {"easy": {"digits_min": 1}, )" + rest + "}}]}", "levels.easy.digits_max: missing"},
      {head + R"("levels": {"easy": {"digits_min": 1, "digits_max": 2, "digts": 3}, )" + rest + "}}]}",
       "levels.easy.digts: unknown parameter"},
      {head + R"("levels": {"easy": {"digits_min": 1, "digits_max": 12}, )" + rest + "}}]}",
       "levels.easy.digits_max: 12 is outside [1, 9]"},
      {head + R"("levels": {"easy": {"digits_min": 3, "digits_max": 2}, )" + rest + "}}]}",
       "levels.easy.digits_min: 3 is above digits_max"},
      {head + R"("levels": {"easy": {"digits_min": 1.5, "digits_max": 2}, )" + rest + "}}]}",
       "levels.easy.digits_min: expected an integer"},
      {R"({"suite": "arithmetic", "templates": [{"name": "add", "prompts": ["Q: {a} + {c}?"], "levels": {)" + easy + ", " +
           rest + "}}]}",
       "prompts[0]: unknown placeholder {c}"},
      {R"({"suite": "arithmetic", "templates": [{"name": "add", "prompts": ["Q: {a} + {b}? "], "levels": {)" + easy + ", " +
           rest + "}}]}",
       "prompts[0]: a prompt must be non-empty"},
      {R"({"suite": "arithmetic", "templates": [{"name": "divide", "prompts": ["Q"], "levels": {}}]})",
       "templates[0].name: unknown template \"divide\""},
      {R"({"suite": "arith", "templates": []})", "suite: \"arith\", expected \"arithmetic\""},
  };
  for (const auto& [text, want] : cases) {
    const std::string e = load_error("arithmetic", text);
    EXPECT_NE(e.find("arithmetic.json"), std::string::npos) << e;
    EXPECT_NE(e.find(want), std::string::npos) << "want \"" << want << "\" in: " << e;
  }
  const std::string date = load_error(
      "date", R"({"suite": "date", "templates": [{"name": "date_plus", "prompts": ["{date} {days}"], "levels": {)"
              R"("easy": {"days_min": 1, "days_max": 2, "year_min": 2000, "year_max": 2001, "crossing": "decade"}}}]})");
  EXPECT_NE(date.find("date.json: templates[0](date_plus).levels.easy.crossing: \"decade\" is not one of none, month, "
                      "year_or_leap"),
            std::string::npos)
      << date;
}

TEST(EvalgenOptions, UnknownNamesListTheKnownOnes) {
  const auto suites = make_suites();
  EXPECT_EQ(parse_suite_list("all", suites).size(), 7u);
  EXPECT_EQ(parse_suite_list("date,copy,date", suites), (std::vector<std::string>{"date", "copy"}));
  try {
    parse_suite_list("arithmetic,algebra", suites);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"algebra\" (known: arithmetic, last_digit, copy"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_level_list("easy,extreme"), ConfigError);
  EXPECT_THROW(parse_format("cloze"), ConfigError);
}

}  // namespace
}  // namespace trident::data::evalgen
