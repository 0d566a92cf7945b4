// ROUGE and BLEU against the reference packages: the pairs of tests/data/text_overlap/
// pairs.jsonl (utils/make_text_overlap_fixtures.py: rouge-score 0.1.2, sacrebleu 2.4.3,
// nltk 3.10.4) score the same within 1e-9 per pair, without and with stemming, corpus BLEU over
// the first 400 too, and predictions with several references; NLTK's Porter stemmer gives every
// stem of porter.tsv; a few hand cases pin the tokenizers' rules.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trident/core/json.hpp"
#include "trident/train/eval/porter_stemmer.hpp"
#include "trident/train/eval/text_overlap.hpp"

namespace trident::train {
namespace {

std::vector<Json> fixture() {
  std::ifstream in(std::string(TRIDENT_TEST_DATA) + "/text_overlap/pairs.jsonl");
  std::vector<Json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

void expect_rouge(const RougeScores& s, const Json& line, const char* suffix, size_t i) {
  const std::string p = line.at("prediction").as_string(), sfx(suffix);
  EXPECT_NEAR(s.rouge1, line.at("rouge1" + sfx).as_number(), 1e-9) << "line " << i << sfx << ": " << p;
  EXPECT_NEAR(s.rouge2, line.at("rouge2" + sfx).as_number(), 1e-9) << "line " << i << sfx << ": " << p;
  EXPECT_NEAR(s.rougeL, line.at("rougeL" + sfx).as_number(), 1e-9) << "line " << i << sfx << ": " << p;
  EXPECT_NEAR(s.rougeLsum, line.at("rougeLsum" + sfx).as_number(), 1e-9) << "line " << i << sfx << ": " << p;
}

// Lines of one reference ("reference") or several ("references"); the last one corpus BLEU of
// the first 400.
TEST(TextOverlap, RougeAndBleuEqualTheReferencePackages) {
  const std::vector<Json> lines = fixture();
  ASSERT_EQ(lines.size(), 641u);
  CorpusBleu corpus;
  size_t single = 0, multi = 0;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    const std::string& p = lines[i].at("prediction").as_string();
    std::vector<std::string> refs;
    if (const Json* several = lines[i].find("references")) {
      for (const Json& r : several->as_array()) refs.push_back(r.as_string());
      ++multi;
    } else {
      refs.push_back(lines[i].at("reference").as_string());
      ++single;
    }
    expect_rouge(rouge(p, refs), lines[i], "", i);
    expect_rouge(rouge(p, refs, /*stem=*/true), lines[i], "_stem", i);
    if (refs.size() == 1) {  // the single-reference overload agrees
      expect_rouge(rouge(p, refs[0]), lines[i], "", i);
      expect_rouge(rouge(p, refs[0], /*stem=*/true), lines[i], "_stem", i);
    }
    CorpusBleu one;
    one.add(p, refs);
    EXPECT_NEAR(one.score(), lines[i].at("bleu").as_number(), 1e-9) << "line " << i << ": " << p;
    if (i < 400) corpus.add(p, refs);
  }
  EXPECT_EQ(single, 550u);
  EXPECT_EQ(multi, 90u);
  EXPECT_NEAR(corpus.score(), lines.back().at("corpus_bleu").as_number(), 1e-9);
}

TEST(Porter, StemsEqualNltk) {
  std::ifstream in(std::string(TRIDENT_TEST_DATA) + "/text_overlap/porter.tsv");
  size_t count = 0;
  for (std::string line; std::getline(in, line); ++count) {
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    EXPECT_EQ(porter_stem(line.substr(0, tab)), line.substr(tab + 1)) << line.substr(0, tab);
  }
  EXPECT_GT(count, 5000u);
  // The irregular forms, the rules around them, and a stemmed tokenizer: only tokens of more than
  // 3 characters are stemmed ("was" stays, "dies" -> "die").
  EXPECT_EQ(porter_stem("skies"), "sky");
  EXPECT_EQ(porter_stem("dying"), "die");
  EXPECT_EQ(porter_stem("generalizations"), "gener");
  EXPECT_EQ(rouge_tokens("Was it running? Dies, RELATIONAL happiness", true),
            (std::vector<std::string>{"was", "it", "run", "die", "relat", "happi"}));
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
