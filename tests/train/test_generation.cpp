// Greedy generation with the KV cache (Decoder + Generator, single rank) against recomputing
// the whole sequence with the training forward for every new token, in fp64 (so a differing
// token means a bug, not rounding); stop tokens, short batches; and the answer scoring.
#include <gtest/gtest.h>

#include <algorithm>

#include "trident/backend/cpu_ops.hpp"
#include "trident/train/eval/answer_match.hpp"
#include "trident/train/eval/generator.hpp"

namespace trident::train {
namespace {

model::ModelConfig tiny(model::Arch arch) {
  model::ModelConfig c;
  c.arch = arch;
  c.layers = 3;
  c.hidden = 32;
  c.heads = 4;
  c.kv_heads = arch == model::Arch::kLlama ? 2 : 4;
  c.vocab = 53;
  c.seq_len = 24;
  c.tie_embeddings = arch == model::Arch::kGPT2;
  return c;
}

// The next token by the full forward of prompt + generated: the last row's argmax.
std::vector<int32_t> recompute_greedy(model::GPTModel& m, std::vector<int32_t> seq, int new_tokens) {
  std::vector<int32_t> out;
  for (int i = 0; i < new_tokens; ++i) {
    // The whole row, right-padded: causal attention keeps the padding out of row n - 1.
    const int64_t n = int64_t(seq.size()), T = m.config().seq_len;
    Tensor tokens = Tensor::zeros(Shape{1, T}, DType::kI32), positions = Tensor::zeros(Shape{1, T}, DType::kI32);
    for (int64_t t = 0; t < T; ++t) tokens.data<int32_t>()[t] = t < n ? seq[t] : 0, positions.data<int32_t>()[t] = int32_t(t);
    const Tensor& logits = m.forward_logits(tokens, positions);
    const double* last = logits.data<double>() + (n - 1) * logits.dim(1);
    const int32_t next = int32_t(std::max_element(last, last + m.config().vocab) - last);
    out.push_back(next);
    seq.push_back(next);
  }
  return out;
}

class Generation : public ::testing::TestWithParam<model::Arch> {
 protected:
  std::unique_ptr<Ops> ops_ = make_cpu_ops(2);
};

TEST_P(Generation, KvCacheEqualsRecomputingTheSequence) {
  model::GPTModel m(tiny(GetParam()), *ops_, DType::kF64, 1);
  m.initialize(7);
  // Larger weights than the initialiser's, so the greedy path moves around the vocabulary.
  Tensor values = m.params().flat_values();
  ops_->scale(values, 8.0);
  const std::vector<std::vector<int32_t>> prompts = {{5, 17, 3}, {40}, {9, 9, 9, 9, 30, 2, 11}, {52, 0}};
  const int new_tokens = 10;
  Generator gen(m, *ops_, nullptr, 4, 7, 7 + new_tokens);
  const auto got = gen.generate(prompts, new_tokens, {});
  ASSERT_EQ(got.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], recompute_greedy(m, prompts[i], new_tokens)) << i;
  // The same generator serves fewer prompts, and a second round starts clean.
  EXPECT_EQ(gen.generate({prompts[2]}, new_tokens, {}), std::vector<std::vector<int32_t>>{got[2]});
}

TEST_P(Generation, StopsAtAStopToken) {
  model::GPTModel m(tiny(GetParam()), *ops_, DType::kF64, 1);
  m.initialize(7);
  Tensor values = m.params().flat_values();
  ops_->scale(values, 8.0);
  Generator gen(m, *ops_, nullptr, 2, 3, 15);
  const auto free_run = gen.generate({{1, 2, 3}, {4}}, 12, {});
  const int32_t stop = free_run[0][4];
  const auto stopped = gen.generate({{1, 2, 3}, {4}}, 12, {stop});
  const auto cut = std::find(free_run[0].begin(), free_run[0].end(), stop);
  EXPECT_EQ(stopped[0], std::vector<int32_t>(free_run[0].begin(), cut));
  const auto cut1 = std::find(free_run[1].begin(), free_run[1].end(), stop);
  EXPECT_EQ(stopped[1], std::vector<int32_t>(free_run[1].begin(), cut1));
}

TEST_P(Generation, RejectsPromptsPastTheCache) {
  model::GPTModel m(tiny(GetParam()), *ops_, DType::kF64, 1);
  m.initialize(7);
  Generator gen(m, *ops_, nullptr, 1, 4, 8);
  EXPECT_THROW(gen.generate({{1, 2, 3, 4}}, 5, {}), Error);
  EXPECT_THROW(gen.generate({{}}, 2, {}), Error);
}

// Mixture of experts (every second layer, a shared expert): decoding routes each new token as
// the full forward routes it.
TEST(MoeGeneration, KvCacheEqualsRecomputingTheSequence) {
  std::unique_ptr<Ops> ops = make_cpu_ops(2);
  model::ModelConfig cfg = tiny(model::Arch::kLlama);
  cfg.moe = {.experts = 4, .top_k = 2, .ffn_hidden = 24, .every = 2, .shared_experts = 1};
  model::GPTModel m(cfg, *ops, DType::kF64, 1);
  m.initialize(7);
  Tensor values = m.params().flat_values();
  ops->scale(values, 8.0);
  const std::vector<std::vector<int32_t>> prompts = {{5, 17, 3}, {40}, {9, 9, 9, 9, 30, 2, 11}};
  Generator gen(m, *ops, nullptr, 3, 7, 17);
  const auto got = gen.generate(prompts, 10, {});
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], recompute_greedy(m, prompts[i], 10)) << i;
}

INSTANTIATE_TEST_SUITE_P(Archs, Generation, ::testing::Values(model::Arch::kGPT2, model::Arch::kLlama),
                         [](const auto& info) { return std::string(model::arch_name(info.param)); });

// SQuAD's normalisation and scores.
TEST(AnswerMatch, NormalisesLikeSquad) {
  EXPECT_EQ(normalize_answer("  The Eiffel  Tower!\n"), "eiffel tower");
  EXPECT_EQ(normalize_answer("an apple, a pear"), "apple pear");
  EXPECT_EQ(normalize_answer("theory"), "theory");  // only whole words are articles
  EXPECT_EQ(exact_match("Paris.", "paris"), 1.0);
  EXPECT_EQ(exact_match("Paris, France", "Paris"), 0.0);
  EXPECT_DOUBLE_EQ(token_f1("the cat sat on the mat", "a cat on a mat"), 2 * 1.0 * 0.75 / 1.75);
  EXPECT_DOUBLE_EQ(token_f1("cat cat", "cat"), 2 * 0.5 * 1.0 / 1.5);  // a bag: one match for one "cat"
  EXPECT_EQ(token_f1("", ""), 1.0);
  EXPECT_EQ(token_f1("the", "dog"), 0.0);
  EXPECT_EQ(token_f1("x", "y"), 0.0);
  const AnswerScore s = score_answer("42", {"forty-two", "42"});
  EXPECT_EQ(s.exact_match, 1.0);
  EXPECT_EQ(s.f1, 1.0);
}

}  // namespace
}  // namespace trident::train
