// eval.task prompts (load_task) framed as prep frames documents: the tokenizer's prefix (BOS)
// first, kept when a long prompt is cut to fit; nothing added for the byte tokenizer.
#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.hpp"
#include "trident/data/tokenizer.hpp"
#include "trident/train/eval/task_evaluator.hpp"

namespace trident::train {
namespace {

std::vector<int32_t> as_ids(const std::vector<uint32_t>& ids) { return std::vector<int32_t>(ids.begin(), ids.end()); }

TEST(TaskPrompts, StartWithTheTokenizersPrefix) {
  testing::TempDir dir;
  const std::string task = dir / "task.jsonl";
  std::ofstream(task) << "{\"input\": \"What is 2 + 2? \", \"output\": \"4\"}\n";
  const auto bos_tok = data::load_tokenizer(std::string(TRIDENT_TEST_DATA) + "/tokenizers/llama3_bos");
  const std::vector<uint32_t> prompt = bos_tok->encode("What is 2 + 2? ");
  ASSERT_GT(prompt.size(), 4u);

  const std::vector<TaskExample> whole = load_task(task, "plain", *bos_tok, 1000, 0);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].prompt_ids, as_ids(bos_tok->encode_with_specials("What is 2 + 2? ")));
  EXPECT_FALSE(whole[0].truncated);

  // Cut to 4 tokens: the BOS and the last 3 prompt tokens.
  const std::vector<TaskExample> cut = load_task(task, "plain", *bos_tok, 4, 0);
  std::vector<uint32_t> want = bos_tok->specials().prefix;
  want.insert(want.end(), prompt.end() - 3, prompt.end());
  EXPECT_EQ(cut[0].prompt_ids, as_ids(want));
  EXPECT_TRUE(cut[0].truncated);

  const auto bytes = data::load_tokenizer("byte");
  const std::vector<TaskExample> plain = load_task(task, "plain", *bytes, 5, 0);
  EXPECT_EQ(plain[0].prompt_ids, as_ids(bytes->encode("+ 2? ")));  // the last 5 bytes, nothing added
}

}  // namespace
}  // namespace trident::train
