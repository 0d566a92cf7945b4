// ROUGE and BLEU against the reference packages: the 400 pairs of tests/data/text_overlap/
// pairs.jsonl (utils/make_text_overlap_fixtures.py: rouge-score 0.1.2, sacrebleu 2.4.3) score
// the same within 1e-9 per pair, corpus BLEU over all of them too, and 60 predictions with
// several references each; a few hand cases pin the tokenizers' rules.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trident/core/json.hpp"
#include "trident/train/eval/text_overlap.hpp"

namespace trident::train {
namespace {

std::vector<Json> fixture() {
  std::ifstream in(std::string(TRIDENT_TEST_DATA) + "/text_overlap/pairs.jsonl");
  std::vector<Json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

TEST(TextOverlap, RougeAndBleuEqualTheReferencePackages) {
  const std::vector<Json> lines = fixture();
  ASSERT_EQ(lines.size(), 461u);
  CorpusBleu corpus;
  for (size_t i = 0; i < 400; ++i) {
    const std::string& p = lines[i].at("prediction").as_string();
    const std::string& r = lines[i].at("reference").as_string();
    const RougeScores s = rouge(p, r);
    EXPECT_NEAR(s.rouge1, lines[i].at("rouge1").as_number(), 1e-9) << "pair " << i << ": " << p << " | " << r;
    EXPECT_NEAR(s.rouge2, lines[i].at("rouge2").as_number(), 1e-9) << "pair " << i;
    EXPECT_NEAR(s.rougeL, lines[i].at("rougeL").as_number(), 1e-9) << "pair " << i;
    EXPECT_NEAR(s.rougeLsum, lines[i].at("rougeLsum").as_number(), 1e-9) << "pair " << i << ": " << p << " | " << r;
    CorpusBleu one;
    one.add(p, r);
    EXPECT_NEAR(one.score(), lines[i].at("bleu").as_number(), 1e-9) << "pair " << i << ": " << p << " | " << r;
    corpus.add(p, r);
  }
  EXPECT_NEAR(corpus.score(), lines.back().at("corpus_bleu").as_number(), 1e-9);
  for (size_t i = 400; i + 1 < lines.size(); ++i) {  // several references: the best of each
    const std::string& p = lines[i].at("prediction").as_string();
    std::vector<std::string> refs;
    for (const Json& r : lines[i].at("references").as_array()) refs.push_back(r.as_string());
    const RougeScores s = rouge(p, refs);
    EXPECT_NEAR(s.rouge1, lines[i].at("rouge1").as_number(), 1e-9) << "line " << i;
    EXPECT_NEAR(s.rouge2, lines[i].at("rouge2").as_number(), 1e-9) << "line " << i;
    EXPECT_NEAR(s.rougeL, lines[i].at("rougeL").as_number(), 1e-9) << "line " << i;
    EXPECT_NEAR(s.rougeLsum, lines[i].at("rougeLsum").as_number(), 1e-9) << "line " << i;
    CorpusBleu one;
    one.add(p, refs);
    EXPECT_NEAR(one.score(), lines[i].at("bleu").as_number(), 1e-9) << "line " << i;
  }
}

TEST(TextOverlap, TokenizersFollowTheirRules) {
  // rouge-score: lowercase, [a-z0-9] runs; U+0130 lowercases to "i" + a combining dot.
  EXPECT_EQ(rouge_tokens("It's GPT-2, İstanbul! café"), (std::vector<std::string>{"it", "s", "gpt", "2", "i", "stanbul", "caf"}));
  // 13a: punctuation split off, points and commas kept inside numbers, a dash after a digit split.
  EXPECT_EQ(bleu_tokens_13a("Hello, world. 1,000.5 e-mail 5-4 &amp; <skipped>done  "),
            (std::vector<std::string>{"Hello", ",", "world", ".", "1,000.5", "e-mail", "5", "-", "4", "&", "done"}));
  CorpusBleu empty;
  EXPECT_EQ(empty.score(), 0.0);
  CorpusBleu same;
  same.add("the cat sat on the mat", "the cat sat on the mat");
  EXPECT_NEAR(same.score(), 100.0, 1e-9);
  EXPECT_EQ(rouge("", "a b").rouge1, 0.0);
}

}  // namespace
}  // namespace trident::train
