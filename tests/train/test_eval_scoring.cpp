// The pure parts of the evaluation framework: OOD ranking metrics against hand-worked cases,
// the harness's word/character counts and rolling windows, and the perturbations' contracts
// (seeded, never touching the last character, shuffles that keep the gold choice).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "trident/core/error.hpp"
#include "trident/data/tokenizer.hpp"
#include "trident/train/eval/likelihood_task.hpp"
#include "trident/train/eval/ood.hpp"
#include "trident/train/eval/perturb.hpp"

namespace trident::train {
namespace {

TEST(DetectionMetrics, HandWorkedCases) {
  // Perfect separation.
  DetectionMetrics m = detection_metrics({0.1, 0.2, 0.3}, {0.5, 0.6});
  EXPECT_DOUBLE_EQ(m.auroc, 1.0);
  EXPECT_DOUBLE_EQ(m.aupr, 1.0);
  EXPECT_DOUBLE_EQ(m.fpr95, 0.0);
  // Reversed.
  m = detection_metrics({0.5, 0.6}, {0.1, 0.2});
  EXPECT_DOUBLE_EQ(m.auroc, 0.0);
  EXPECT_DOUBLE_EQ(m.fpr95, 1.0);
  // in {1, 3}, ood {2, 4}: pairs (ood > in) = (2>1), (4>1), (4>3) = 3 of 4.
  m = detection_metrics({1, 3}, {2, 4});
  EXPECT_DOUBLE_EQ(m.auroc, 0.75);
  // Average precision: thresholds 4 (P=1, R=.5), 3 (P=.5), 2 (P=2/3, R=1): .5*1 + .5*2/3.
  EXPECT_NEAR(m.aupr, 0.5 + 0.5 * 2.0 / 3.0, 1e-15);
  EXPECT_DOUBLE_EQ(m.fpr95, 0.5);  // catching both OOD needs threshold 2: one of two in above
  // Ties count half.
  m = detection_metrics({1, 1}, {1, 1});
  EXPECT_DOUBLE_EQ(m.auroc, 0.5);
  EXPECT_THROW(detection_metrics({}, {1}), Error);
}

TEST(HarnessCounts, WordsAndCharactersAsPython) {
  EXPECT_EQ(count_words("one two  three"), 3);       // re.split(r"\s+") -> 3 pieces
  EXPECT_EQ(count_words("  lead and trail "), 5);     // ['', 'lead', 'and', 'trail', '']
  EXPECT_EQ(count_words(""), 1);                      // ['']
  EXPECT_EQ(count_words("a\tb\nc\x0b" "d"), 4);
  EXPECT_EQ(count_words("no\xc2\xa0" "break"), 2);    // U+00A0 is whitespace to Python's str
  EXPECT_EQ(count_characters("caf\xc3\xa9"), 4);
  EXPECT_EQ(count_characters("\xe2\x80\x94"), 1);
}

TEST(HarnessEncoder, RollingWindowsPredictEveryTokenOnce) {
  const auto tokenizer = data::load_tokenizer("byte");
  const HarnessEncoder enc(*tokenizer);
  const std::string text(23, 'x');
  const auto windows = enc.rolling(text, 8);
  // 23 tokens, windows of 8: 8 + 8 + 7 predicted.
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_EQ(windows[0].context, std::vector<int32_t>{enc.prefix_token()});
  size_t predicted = 0;
  for (const auto& w : windows) {
    predicted += w.continuation.size();
    EXPECT_EQ(w.context.size() + w.continuation.size() - 1, 8u) << "each row fills the window";
  }
  EXPECT_EQ(predicted, 23u);
  EXPECT_TRUE(enc.rolling("", 8).empty());
}

TEST(HarnessEncoder, TrailingSpaceMovesToTheContinuation) {
  const auto tokenizer = data::load_tokenizer("byte");
  const HarnessEncoder enc(*tokenizer);
  const LoglikelihoodRequest r = enc.request("ab ", "c");
  EXPECT_EQ(r.context.size(), 2u);        // "ab"
  EXPECT_EQ(r.continuation.size(), 2u);   // " c"
  const LoglikelihoodRequest empty = enc.request("", " c");
  EXPECT_EQ(empty.context, std::vector<int32_t>{enc.prefix_token()});
}

TEST(Perturbations, SeededAndLeaveTheEndAlone) {
  const std::string text = "Question: What is the capital of France and why?\nAnswer:";
  for (std::string_view name : kPerturbations) {
    const PerturbSpec spec{std::string(name), 0.3, 7};
    const std::string a = perturb_text(spec, 3, text), b = perturb_text(spec, 3, text);
    EXPECT_EQ(a, b) << name << " is not a function of its seed and index";
    EXPECT_EQ(a.back(), text.back()) << name;
    if (name == "shuffle_choices") {
      EXPECT_EQ(a, text);
    } else {
      EXPECT_NE(a, text) << name << " changed nothing at rate 0.3";
      if (name != "distractor") {
        EXPECT_NE(a, perturb_text({std::string(name), 0.3, 8}, 3, text)) << name;
      }
    }
  }
  std::set<std::string> sentences;  // the distractor varies over examples
  for (uint64_t i = 0; i < 16; ++i) sentences.insert(perturb_text({"distractor", 0.05, 1}, i, "x?"));
  EXPECT_GE(sentences.size(), 4u);
  const PerturbSpec shuffle{"shuffle_choices", 0.05, 1};
  std::set<std::vector<int>> seen;
  for (uint64_t i = 0; i < 20; ++i) {
    std::vector<int> order = perturb_order(shuffle, i, 4);
    EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3}));
    seen.insert(order);
  }
  EXPECT_GT(seen.size(), 5u);
  EXPECT_EQ(perturb_order({"typo", 0.05, 1}, 0, 3), (std::vector<int>{0, 1, 2}));
}

TEST(Perturbations, NamesAreChecked) {
  EXPECT_EQ(parse_perturbations("typo, case"), (std::vector<std::string>{"typo", "case"}));
  EXPECT_TRUE(parse_perturbations("").empty());
  EXPECT_THROW(parse_perturbations("typo,bogus"), ConfigError);
  EXPECT_THROW(parse_perturbations("typo,typo"), ConfigError);
}

}  // namespace
}  // namespace trident::train
