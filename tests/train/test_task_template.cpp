// Generation-task prompts under eval.template = model: the model directory's chat template
// renders each line as prep renders it, the prompt ids are its encoding (with the template's
// BOS, no other), and what the template writes after the answer is where a generation is cut,
// found after the reference even when the template writes something before it (Qwen3's <think>).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/tokenizer.hpp"
#include "trident/train/eval/task_evaluator.hpp"

namespace trident::train {
namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string model_dir(const testing::TempDir& dir, const std::string& tmpl) {
  std::filesystem::copy_file(std::string(TRIDENT_TEST_DATA) + "/tokenizers/llama3/tokenizer.json", dir / "tokenizer.json");
  Json config = Json::object();
  config.set("bos_token", Json("<|begin_of_text|>"));
  config.set("chat_template", Json(tmpl));
  write(dir / "tokenizer_config.json", config.dump());
  return dir / "tokenizer.json";
}

TEST(TaskTemplate, ModelTemplateRendersPromptsAndAnswerEnds) {
  const testing::TempDir dir;
  const auto tokenizer = data::load_tokenizer(model_dir(dir,
      "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
      "{% if m.role == 'assistant' %}<think>\n\n</think>\n\n{% endif %}{{ m.content }}<|eot_id|>{% endfor %}"
      "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"));
  write(dir / "task.jsonl", R"({"input": "2+2?", "output": "4"})" "\n"
                            R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]})" "\n");
  const std::vector<TaskExample> task = load_task(dir / "task.jsonl", "model", *tokenizer, 1000, 0);
  ASSERT_EQ(task.size(), 2u);
  EXPECT_EQ(task[0].prompt, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
                            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(task[0].references, std::vector<std::string>{"4"});
  EXPECT_EQ(task[0].answer_end, "<|eot_id|>");
  std::vector<int32_t> ids;
  for (uint32_t id : tokenizer->encode(task[0].prompt)) ids.push_back(static_cast<int32_t>(id));
  EXPECT_EQ(task[0].prompt_ids, ids);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), static_cast<int32_t>(*tokenizer->special_token("<|begin_of_text|>"))), 1);
  EXPECT_EQ(task[1].answer_end, "<|eot_id|>");
  EXPECT_TRUE(tokenizer->special_token(task[1].answer_end).has_value());  // a stop token of the generator

  try {
    load_task(dir / "task.jsonl", "model", *data::load_tokenizer("byte"), 1000, 0);
    FAIL() << "the byte tokenizer gave a chat template";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("eval.template = model: the byte tokenizer has no chat template"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trident::train
