// Tests of the parts of `trident evalgen --paraphrase` around the model: temperature and top-p
// sampling (the nucleus, the frequencies, the seeded draws), the n-gram novelty measure, the
// request and the cut of a generation, the planted-rewrite file, and the driver with a fake
// rewriter (kept lines and their fields, duplicates, too-long requests, the same bytes twice).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/chat_template.hpp"
#include "trident/data/evalgen/novelty.hpp"
#include "trident/data/evalgen/paraphrase.hpp"
#include "trident/data/evalgen/paraphrase_prompt.hpp"
#include "trident/data/evalgen/token_sampling.hpp"

namespace trident::data::evalgen {
namespace {

using testing::TempDir;

const std::string kLibrary = std::string(TRIDENT_SOURCE_DIR) + "/input/eval";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(EvalgenSampling, GreedyAndNucleus) {
  const std::vector<float> logits = {std::log(0.2f), std::log(0.5f), std::log(0.3f), -INFINITY, NAN};
  for (double u : {0.0, 0.3, 0.999}) {
    EXPECT_EQ(sample_token(logits.data(), 5, {0.0, 1.0}, u), 1);   // greedy
    EXPECT_EQ(sample_token(logits.data(), 5, {1.0, 0.45}, u), 1);  // 0.5 of the mass: the top id alone
    EXPECT_NE(sample_token(logits.data(), 5, {1.0, 0.75}, u), 0);  // 0.5 + 0.3: ids 1 and 2 only
    EXPECT_LT(sample_token(logits.data(), 5, {1.0, 1.0}, u), 3);   // never a -inf or NaN logit
  }
  // In the nucleus {1, 2} (mass 0.8), id 1 takes the draws below 0.5 / 0.8.
  EXPECT_EQ(sample_token(logits.data(), 5, {1.0, 0.75}, 0.625 - 1e-4), 1);
  EXPECT_EQ(sample_token(logits.data(), 5, {1.0, 0.75}, 0.625 + 1e-4), 2);
  // Ties: the lower id first.
  const std::vector<float> flat = {1.0f, 1.0f, 1.0f};
  EXPECT_EQ(sample_token(flat.data(), 3, {0.0, 1.0}, 0.7), 0);
  EXPECT_EQ(sample_token(flat.data(), 3, {1.0, 0.3}, 0.9), 0);
}

TEST(EvalgenSampling, FrequenciesFollowTheTemperature) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  for (double t : {0.5, 1.0, 2.0}) {
    std::vector<int> n(3, 0);
    const int draws = 20000;
    for (int i = 0; i < draws; ++i)
      ++n[size_t(sample_token(logits.data(), 3, {t, 1.0}, sample_uniform(sample_stream(9, "sort", "easy", 1, 0), i)))];
    double z = 0;
    for (float l : logits) z += std::exp(l / t);
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(n[size_t(k)] / double(draws), std::exp(logits[size_t(k)] / t) / z, 0.015) << t;
  }
}

TEST(EvalgenSampling, DrawsAreSeededPerCaseSampleAndPosition) {
  EXPECT_EQ(sample_uniform(sample_stream(1, "copy", "easy", 3, 0), 4),
            sample_uniform(sample_stream(1, "copy", "easy", 3, 0), 4));
  std::set<uint64_t> streams;
  std::set<double> draws;
  for (uint64_t seed : {1, 2})
    for (const char* suite : {"copy", "date"})
      for (const char* level : {"easy", "hard"})
        for (int64_t index : {0, 1})
          for (int sample : {0, 1}) {
            const uint64_t s = sample_stream(seed, suite, level, index, sample);
            streams.insert(s);
            for (int64_t position : {0, 1}) {
              const double u = sample_uniform(s, position);
              EXPECT_GE(u, 0.0);
              EXPECT_LT(u, 1.0);
              draws.insert(u);
            }
          }
  EXPECT_EQ(streams.size(), 32u);
  EXPECT_EQ(draws.size(), 64u);
}

TEST(EvalgenNovelty, CountsNGramsNoWordingHas) {
  NgramNovelty n;
  n.add_wording("Question: What is {a} + {b}?\nAnswer:");
  n.add_prompt("Question: What is 12 + 7?\nAnswer:", {{"a", "12"}, {"b", "7"}});
  EXPECT_EQ(n.novel(), 0);
  EXPECT_GT(n.distinct(), 10);
  const int64_t before = n.distinct();
  n.add_prompt("Question: What is 3 + 4?\nAnswer:", {{"a", "3"}, {"b", "4"}});  // other numbers: no new n-gram
  EXPECT_EQ(n.distinct(), before);
  n.add_prompt("Question: Find 3 + 4.\nAnswer:", {{"a", "3"}, {"b", "4"}});
  // New: "find", "."; ": find", "find #", "# .", ". answer"; "question : find", ": find #", "find # +",
  // "+ # .", "# . answer", ". answer :" (# the placeholder word).
  EXPECT_EQ(n.novel(), 12);
}

TEST(EvalgenParaphrasePrompt, RequestAndCut) {
  const std::string prompt = "Question: What is 1 + 2?\nAnswer:";
  EXPECT_EQ(paraphrase_request(prompt, nullptr),
            std::string(kParaphraseInstruction) + "\n\n" + prompt + "\n\nRewrite:\n");
  const ChatTemplate chatml(
      "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      "chatml", {});
  EXPECT_EQ(paraphrase_request(prompt, &chatml), "<|im_start|>user\n" + std::string(kParaphraseInstruction) + "\n\n" +
                                                     prompt + "<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(assistant_turn_end(&chatml), "<|im_end|>");
  EXPECT_EQ(assistant_turn_end(nullptr), "");
  EXPECT_EQ(cut_rewrite("  Q: 1 + 2?\nAnswer:<|im_end|>\nmore", "<|im_end|>", prompt), "Q: 1 + 2?\nAnswer:");
  EXPECT_EQ(cut_rewrite("Q: 1 + 2?\nAnswer:\n\nRewrite:\nagain", "", prompt), "Q: 1 + 2?\nAnswer:");
  EXPECT_EQ(cut_rewrite("a\n\nb", "", "x\n\ny"), "a\n\nb");  // the original has a blank line: kept
}

TEST(EvalgenParaphrasePlant, ReadsLinesAndNamesBadOnes) {
  TempDir dir;
  std::ofstream(dir / "good.jsonl") << R"({"source": 3, "sample": 1, "text": "a\nb"})"
                                    << "\n\n"
                                    << R"({"source": 0, "sample": 0, "text": "c"})"
                                    << "\n";
  const auto planted = read_planted_rewrites(dir / "good.jsonl");
  ASSERT_EQ(planted.size(), 2u);
  EXPECT_EQ(planted.at({3, 1}), "a\nb");
  std::ofstream(dir / "bad.jsonl") << R"({"source": 3, "sample": 1, "text": "a"})"
                                   << "\n"
                                   << R"({"source": 3, "text": "a"})"
                                   << "\n";
  try {
    read_planted_rewrites(dir / "bad.jsonl");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2: expected {\"source\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_planted_rewrites(dir / "none.jsonl"), ConfigError);
}

// A fake model: sample 0 rewords with another library wording of the same template, sample 1
// repeats sample 0 (a duplicate), sample 2 changes a number, sample 3 of case 1 is too long.
std::vector<Rewrite> fake_rewriter(const std::vector<RewriteRequest>& requests) {
  std::vector<Rewrite> out;
  for (const RewriteRequest& r : requests) {
    const EvalCase& c = *r.source_case;
    std::string text = c.prompt;
    if (r.sample <= 1) {
      if (c.template_name == "add")
        text = "Question: Find the sum of " + c.slots.at("a") + " and " + c.slots.at("b") + ".\nAnswer:";
      else
        text = "Question: Calculate " + c.slots.at("a") + " - " + c.slots.at("b") + ".\nAnswer:";
      if (r.sample == 1) text = "  " + text + " ";
    } else if (r.sample == 2) {
      text = "Question: What is 100000 + " + c.slots.at("b") + "?\nAnswer:";
    }
    out.push_back({text, r.source == 1 && r.sample == 3});
    EXPECT_EQ(r.stream, sample_stream(4, "arithmetic", c.level, r.source % 2, r.sample));
  }
  return out;
}

TEST(EvalgenParaphraseDriver, WritesKeptRewritesWithTheirSource) {
  TempDir dir;
  EvalgenOptions o;
  o.suites = {"arithmetic"};
  o.levels = {"easy", "medium"};
  o.n = 2;  // add, subtract in turn
  o.seed = 4;
  o.templates_dir = kLibrary;
  ParaphraseOptions p;
  p.model = "fake/model";
  p.samples = 4;
  p.planted[{3, 2}] = "Question: What is the difference when you subtract nothing?\nAnswer:";
  const std::string out = dir / "rewrites.jsonl";
  const EvalgenPlan plan = plan_eval_suites(o, out, false);
  const ParaphraseSummary s = write_paraphrased_suites(o, plan, p, fake_rewriter, out);
  EXPECT_EQ(s.cases, 4);
  EXPECT_EQ(s.sampled, 16);
  EXPECT_EQ(s.kept, 4);        // sample 0 of each case
  EXPECT_EQ(s.duplicates, 4);  // sample 1
  EXPECT_EQ(s.too_long, 1);
  EXPECT_EQ(s.verdicts[size_t(RewriteVerdict::kNumbers)], 4);       // sample 2, the planted one too
  EXPECT_EQ(s.verdicts[size_t(RewriteVerdict::kSameAsSource)], 3);  // sample 3 but the too-long one
  EXPECT_GT(s.novel_ngrams, 0);
  EXPECT_LT(s.novel_ngrams, s.ngrams);
  std::istringstream lines(read_all(out));
  std::string line;
  int64_t expected_source = 0;
  while (std::getline(lines, line)) {
    const Json j = Json::parse(line);
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.as_object()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"input", "output", "answers", "suite", "template", "level", "source",
                                              "sample", "paraphrase_model"}));
    EXPECT_EQ(j.at("source").as_int(), expected_source++);
    EXPECT_EQ(j.at("sample").as_int(), 0);
    EXPECT_EQ(j.at("paraphrase_model").as_string(), "fake/model");
    EXPECT_EQ(j.at("input").as_string().rfind("Question: ", 0), 0u);
  }
  EXPECT_EQ(expected_source, 4);
  // The same inputs write the same bytes; an existing file is refused by the plan.
  const std::string again = dir / "again.jsonl";
  write_paraphrased_suites(o, plan_eval_suites(o, again, false), p, fake_rewriter, again);
  EXPECT_EQ(read_all(out), read_all(again));
  EXPECT_THROW(plan_eval_suites(o, out, false), ConfigError);
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

}  // namespace
}  // namespace trident::data::evalgen
