// Tests of the verifier of `trident evalgen --paraphrase` (paraphrase_check.hpp): every other
// library wording of every case of every suite and level is kept, and per suite, rewrites that
// change an operand, a key, a value, the answer's visibility, the operation, its direction,
// order or unit, or drop the answer cue are rejected with that rule's verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "trident/core/error.hpp"
#include "evalgen_suites.hpp"
#include "trident/data/evalgen/generate.hpp"
#include "trident/data/evalgen/paraphrase_check.hpp"

namespace trident::data::evalgen {
namespace {

using test_support::kLibrary;
using test_support::load;
using test_support::Loaded;

std::vector<std::string> strings_in(const Json& array) {
  std::vector<std::string> out;
  for (const Json& j : array.as_array()) out.push_back(j.as_string());
  return out;
}

std::string last_line(const std::string& s) { return s.substr(s.rfind('\n') + 1); }
std::string but_last_line(const std::string& s) { return s.substr(0, s.rfind('\n')); }

// The first case of `tmpl` at `level` (seeded), with its suite.
struct One {
  Loaded l;
  EvalCase c;
  RewriteVerdict check(const std::string& rewrite) const { return check_rewrite(*l.suite, c, rewrite, l.spec.words); }
  // The case's slots in `wording`, ending with the case's own answer cue.
  std::string in(const std::string& wording) const {
    return but_last_line(fill_prompt(wording, c.slots)) + "\n" + last_line(c.prompt);
  }
};

One first_case(const std::string& suite, const std::string& tmpl, const std::string& level = "easy",
               uint64_t seed = 5) {
  One o{load(suite), {}};
  for (const EvalCase& c : generate_cases(*o.l.suite, o.l.spec, level, 40, seed, EvalFormat::kGenerate, 4))
    if (c.template_name == tmpl) {
      o.c = c;
      return o;
    }
  throw Error("no case of " + tmpl);
}

std::string replace_first(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from << " not in " << s;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

TEST(EvalgenParaphraseCheck, Helpers) {
  EXPECT_EQ(count_bounded("12 123 12, x12 12x", "12"), 2);
  EXPECT_EQ(count_bounded("a: 1\nb: 2", "a: 1\nb: 2"), 1);
  EXPECT_EQ(count_bounded("(2001-03-04)", "2001-03-04"), 1);
  EXPECT_EQ(count_bounded("abc", ""), 0);
  EXPECT_EQ(normalize_rewrite("  What\tIS\n\n 1 + 2? "), "what is 1 + 2?");
  EXPECT_EQ(word_tokens("Sort  it, A-to-Z: 12+3"),
            (std::vector<std::string>{"sort", "it", ",", "a", "-", "to", "-", "z", ":", "12", "+", "3"}));
  EXPECT_EQ(mask_slots("sort 12 and 123", {{"a", "12"}, {"b", "sort"}}, "#"), "# # and 123");
  EXPECT_STREQ(rewrite_verdict_name(RewriteVerdict::kAnswerLeak), "answer_leak");
}

// Every wording of the library is a rewrite the rule keeps: the rule accepts what the templates
// themselves ask with, at every level.
TEST(EvalgenParaphraseCheck, EveryOtherLibraryWordingIsKept) {
  int64_t checked = 0;
  for (auto& suite : make_suites()) {
    const Loaded l = load(suite->name());
    for (const std::string& level : level_names())
      for (const EvalCase& c : generate_cases(*l.suite, l.spec, level, 12, 3, EvalFormat::kGenerate, 4)) {
        const auto& t = *std::find_if(l.spec.templates.begin(), l.spec.templates.end(),
                                      [&](const TemplateSpec& s) { return s.name == c.template_name; });
        for (const std::string& wording : t.prompts) {
          const std::string rewrite = but_last_line(fill_prompt(wording, c.slots)) + "\n" + last_line(c.prompt);
          const RewriteVerdict v = check_rewrite(*l.suite, c, rewrite, l.spec.words);
          const RewriteVerdict want = normalize_rewrite(rewrite) == normalize_rewrite(c.prompt)
                                          ? RewriteVerdict::kSameAsSource
                                          : RewriteVerdict::kKept;
          EXPECT_EQ(v, want) << c.suite << "/" << c.template_name << "/" << level << ": " << rewrite_verdict_name(v)
                             << "\n"
                             << c.prompt << "\n->\n"
                             << rewrite;
          ++checked;
        }
      }
  }
  EXPECT_GT(checked, 500);
}

TEST(EvalgenParaphraseCheck, GenericRules) {
  const One o = first_case("arithmetic", "add");
  const std::string a = o.c.slots.at("a"), b = o.c.slots.at("b");
  const std::string good = "Question: Find the sum of " + a + " and " + b + ".\nAnswer:";
  EXPECT_EQ(o.check(good), RewriteVerdict::kKept);
  EXPECT_EQ(o.check("  " + good + "\n"), RewriteVerdict::kKept);  // edges are trimmed
  EXPECT_EQ(o.check(o.c.prompt), RewriteVerdict::kSameAsSource);
  std::string shouted = o.c.prompt;
  for (char& ch : shouted) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  EXPECT_EQ(o.check(shouted + " "), RewriteVerdict::kSameAsSource);
  EXPECT_EQ(o.check("Sum?\nAnswer:"), RewriteVerdict::kLength);
  EXPECT_EQ(o.check(good + std::string(200, ' ') + std::string(100, 'x') + "\nAnswer:"), RewriteVerdict::kLength);
  EXPECT_EQ(o.check("Question: Find the sum of " + a + " and " + b + "."), RewriteVerdict::kAnswerCue);
  EXPECT_EQ(o.check("Question: Find the sum of " + a + " and " + b + ".\nResult:"), RewriteVerdict::kAnswerCue);
  // An operand changed, dropped, doubled, or a number added.
  const std::string changed = std::to_string(std::stoll(a) + 1);
  EXPECT_EQ(o.check("Question: Find the sum of " + changed + " and " + b + ".\nAnswer:"), RewriteVerdict::kNumbers);
  EXPECT_EQ(o.check("Question: Find the sum of " + a + " and the other one.\nAnswer:"), RewriteVerdict::kNumbers);
  EXPECT_EQ(o.check("Question: Find the sum of " + a + " and " + b + " and " + b + ".\nAnswer:"),
            RewriteVerdict::kNumbers);
  EXPECT_EQ(o.check("Question: Find the sum of " + a + " and " + b + " (answer: " + o.c.answer + ").\nAnswer:"),
            RewriteVerdict::kNumbers);
  EXPECT_EQ(o.check("Question: Find the sum of " + a + b + " and " + ".\nAnswer:"), RewriteVerdict::kNumbers);
}

TEST(EvalgenParaphraseCheck, Arithmetic) {
  const One add = first_case("arithmetic", "add"), sub = first_case("arithmetic", "subtract", "medium"),
            mul = first_case("arithmetic", "multiply");
  auto ab = [](const One& o) { return std::pair(o.c.slots.at("a"), o.c.slots.at("b")); };
  const auto [a, b] = ab(add);
  EXPECT_EQ(add.check("Question: What is " + a + " - " + b + "?\nAnswer:"), RewriteVerdict::kOperation);
  EXPECT_EQ(add.check("Question: What is " + a + " times " + b + "?\nAnswer:"), RewriteVerdict::kOperation);
  EXPECT_EQ(add.check("Question: What is " + a + " and " + b + "?\nAnswer:"), RewriteVerdict::kOperation);
  EXPECT_EQ(add.check("Question: Add " + b + " to " + a + ".\nAnswer:"), RewriteVerdict::kKept);  // commutes
  const auto [x, y] = ab(mul);
  EXPECT_EQ(mul.check("Question: Find the product of " + x + " and " + y + ".\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(mul.check("Question: Find the product of " + x + " and " + y + " plus one.\nAnswer:"),
            RewriteVerdict::kOperation);
  EXPECT_EQ(mul.check("Question: What is " + x + " divided by " + y + "?\nAnswer:"), RewriteVerdict::kOperation);
  // a - b: a first, or after "from" second.
  const auto [p, q] = ab(sub);
  ASSERT_NE(p, q);
  EXPECT_EQ(sub.check("Question: Calculate " + p + " minus " + q + ".\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(sub.check("Question: Subtract " + q + " from " + p + ".\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(sub.check("Question: Calculate " + q + " minus " + p + ".\nAnswer:"), RewriteVerdict::kOrder);
  EXPECT_EQ(sub.check("Question: Subtract " + p + " from " + q + ".\nAnswer:"), RewriteVerdict::kOrder);
  EXPECT_EQ(sub.check("Question: What is " + p + " + " + q + "?\nAnswer:"), RewriteVerdict::kOperation);
}

TEST(EvalgenParaphraseCheck, LastDigit) {
  const One o = first_case("last_digit", "sum"), prod = first_case("last_digit", "product");
  const std::string e = o.c.slots.at("expression");
  EXPECT_EQ(o.check("Question: What is the final digit of " + e + "?\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(o.check("Question: What is the first digit of " + e + "?\nAnswer:"), RewriteVerdict::kOperation);
  EXPECT_EQ(o.check("Question: What is the sum of the digits of " + e + "?\nAnswer:"), RewriteVerdict::kOperation);
  EXPECT_EQ(o.check("Question: What is the last digit of the product " + e + "?\nAnswer:"), RewriteVerdict::kOperation);
  std::string star = e;
  for (char& ch : star) ch = ch == '+' ? '*' : ch;
  EXPECT_EQ(o.check("Question: What is the last digit of " + star + "?\nAnswer:"), RewriteVerdict::kOperands);
  const std::string pe = prod.c.slots.at("expression");
  EXPECT_EQ(prod.check("Question: Give the ones digit of the product " + pe + ".\nAnswer:"), RewriteVerdict::kKept);
}

TEST(EvalgenParaphraseCheck, CopyReverseSort) {
  const One copy = first_case("copy", "words"), rev = first_case("reverse", "word"),
            rlist = first_case("reverse", "list");
  const std::string t = copy.c.slots.at("text");
  EXPECT_EQ(copy.check("Copy the following words: " + t + "\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(copy.check("Repeat the following words backwards: " + t + "\nAnswer:"), RewriteVerdict::kOperation);
  EXPECT_EQ(copy.check("Repeat only the first words: " + t + "\nAnswer:"), RewriteVerdict::kOperation);
  EXPECT_EQ(copy.check("Copy the following words: " + replace_first(t, " ", ", ") + "\nAnswer:"),
            RewriteVerdict::kOperands);
  EXPECT_EQ(copy.check("Copy the following words: " + t + " " + t + "\nAnswer:"), RewriteVerdict::kOperands);

  const std::string w = rev.c.slots.at("text");
  EXPECT_EQ(rev.check("Spell \"" + w + "\" backwards.\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(rev.check("Sort the letters of \"" + w + "\".\nAnswer:"), RewriteVerdict::kOperation);
  if (rev.c.answer != w) {  // the reversed word shown: the answer leaked
    EXPECT_EQ(rev.check("Spell \"" + w + "\" backwards (it is " + rev.c.answer + ").\nAnswer:"),
              RewriteVerdict::kAnswerLeak);
  }
  const std::string items = rlist.c.slots.at("items");
  EXPECT_EQ(rlist.check("Write this list in reverse order: " + items + "\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(rlist.check("Write this list in reverse order: " + rlist.c.answer + "\nAnswer:"),
            RewriteVerdict::kOperands);  // the items in another order

  const One nums = first_case("sort", "numbers"), words = first_case("sort", "words");
  const std::string n = nums.c.slots.at("items"), v = words.c.slots.at("items");
  EXPECT_EQ(nums.check("Put these numbers in increasing order: " + n + "\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(nums.check("Sort these numbers from largest to smallest: " + n + "\nAnswer:"), RewriteVerdict::kOperation);
  EXPECT_EQ(nums.check("Sort these numbers: " + n + "\nAnswer:"), RewriteVerdict::kOperation);  // no direction
  EXPECT_EQ(words.check("Put these words in alphabetical order: " + v + "\nAnswer:"), RewriteVerdict::kKept);
  EXPECT_EQ(words.check("Put these words in reverse alphabetical order: " + v + "\nAnswer:"),
            RewriteVerdict::kOperation);
  EXPECT_EQ(words.check("Sort these words by length: " + v + "\nAnswer:"), RewriteVerdict::kOperation);
}

TEST(EvalgenParaphraseCheck, KeyValueLookup) {
  for (const char* tmpl : {"number", "word"}) {
    const One o = first_case("kv_lookup", tmpl, "medium");
    const std::string pairs = o.c.slots.at("pairs"), key = o.c.slots.at("key");
    EXPECT_EQ(o.check(pairs + "\nQuestion: What is the value for the key " + key + "?\nAnswer:"), RewriteVerdict::kKept)
        << tmpl;
    // Another key asked: the asked key and that one occur a different number of times.
    const std::vector<std::string> keys = strings_in(o.c.params.at("keys"));
    const std::string other = keys[0] == key ? keys[1] : keys[0];
    EXPECT_EQ(o.check(pairs + "\nQuestion: What is the value for the key " + other + "?\nAnswer:"),
              RewriteVerdict::kOperands)
        << tmpl;
    // A value changed in the block.
    const std::string v = o.c.answer,
                      changed = std::string(tmpl) == "number" ? std::to_string(std::stoll(v) + 1) : "zzz";
    EXPECT_EQ(o.check(replace_first(pairs, ": " + v, ": " + changed) + "\nQuestion: What is the value for the key " +
                      key + "?\nAnswer:"),
              std::string(tmpl) == "number" ? RewriteVerdict::kNumbers : RewriteVerdict::kOperands)
        << tmpl;
    EXPECT_EQ(o.check(pairs + "\nQuestion: Which key has the largest value besides " + key + "?\nAnswer:"),
              RewriteVerdict::kOperation)
        << tmpl;
  }
}

TEST(EvalgenParaphraseCheck, Dates) {
  const One wd = first_case("date", "weekday_after"), dp = first_case("date", "date_plus", "medium");
  const std::string day = wd.c.slots.at("weekday"), n = wd.c.slots.at("days");
  EXPECT_EQ(wd.check("Question: It is " + day + " today. What day will it be after " + n + " days?\nAnswer:"),
            RewriteVerdict::kKept);
  EXPECT_EQ(wd.check("Question: It is " + day + " today. What day was it " + n + " days ago?\nAnswer:"),
            RewriteVerdict::kOperation);
  EXPECT_EQ(wd.check("Question: It is " + day + " today. What day will it be after " + n + " weeks?\nAnswer:"),
            RewriteVerdict::kOperation);
  if (wd.c.answer != day) {
    EXPECT_EQ(wd.check("Question: It is " + day + " today. What day will it be after " + n + " days (" + wd.c.answer +
                       ")?\nAnswer:"),
              RewriteVerdict::kAnswerLeak);
  }
  const std::string date = dp.c.slots.at("date"), m = dp.c.slots.at("days");
  EXPECT_EQ(dp.check("Question: What date is " + m + " days after " + date + " (YYYY-MM-DD)?\nAnswer:"),
            RewriteVerdict::kKept);
  EXPECT_EQ(dp.check("Question: What date is " + m + " days before " + date + " (YYYY-MM-DD)?\nAnswer:"),
            RewriteVerdict::kOperation);
  EXPECT_EQ(dp.check("Question: Add " + m + " to " + date + " as days. What is the date?\nAnswer:"),
            RewriteVerdict::kUnit);
  EXPECT_EQ(dp.check("Question: What weekday is " + m + " days after " + date + "?\nAnswer:"),
            RewriteVerdict::kOperation);
}

}  // namespace
}  // namespace trident::data::evalgen
