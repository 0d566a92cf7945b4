// Prep records: JSONL lines of each kind parsed (and their errors), template rendering (presets,
// custom strings with escapes, {output} placement), chat rendering and the dedup normalisation.
#include <gtest/gtest.h>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/prep_record.hpp"

namespace trident::data {
namespace {

Example parse(const char* line) { return parse_example(Json::parse(line)); }

TEST(PrepRecord, ParsesEachKind) {
  const Example pair = parse(R"({"id": 3, "input": "q", "output": "a"})");
  EXPECT_EQ(pair.kind, Example::Kind::kPromptAnswer);
  EXPECT_EQ(pair.input, "q");
  EXPECT_EQ(pair.output, "a");
  const Example text = parse(R"({"text": "plain", "meta": {"x": [1]}})");
  EXPECT_EQ(text.kind, Example::Kind::kText);
  EXPECT_EQ(text.output, "plain");
  const Example chat = parse(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})");
  EXPECT_EQ(chat.kind, Example::Kind::kChat);
  ASSERT_EQ(chat.messages.size(), 2u);
  EXPECT_EQ(chat.messages[1].content, "yo");
}

TEST(PrepRecord, RejectsWrongShapes) {
  for (const char* bad : {R"({"input": "a"})", R"({"input": "a", "output": 3})", R"(["input"])", R"({})",
                          R"({"messages": "hi"})", R"({"messages": [{"role": "user"}]})",
                          R"({"messages": [{"role": "user", "content": "no answer"}]})"})
    EXPECT_THROW(parse(bad), ConfigError) << bad;
  try {
    parse(R"({"input": "only"})");
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "missing key \"output\"");
  }
}

TEST(PrepRecord, RendersPresetsAndCustomTemplates) {
  Example e;
  e.kind = Example::Kind::kPromptAnswer;
  e.input = "2+2?";
  e.output = "4";
  RenderedDocument d = PromptTemplate("plain").render(e);
  EXPECT_EQ(d.prompt, "2+2?");
  EXPECT_EQ(d.answer, "4");
  d = PromptTemplate("chatml").render(e);
  EXPECT_EQ(d.prompt, "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(d.answer, "4<|im_end|>\n");
  d = PromptTemplate("Q: {input}\\nA: ").render(e);  // {output} appended; \n unescaped
  EXPECT_EQ(d.prompt, "Q: 2+2?\nA: ");
  EXPECT_EQ(d.answer, "4");
  d = PromptTemplate("<q>{input}</q><a>{output}</a>").render(e);
  EXPECT_EQ(d.prompt, "<q>2+2?</q><a>");
  EXPECT_EQ(d.answer, "4</a>");
  EXPECT_THROW(PromptTemplate("no placeholder"), ConfigError);
  EXPECT_THROW(PromptTemplate("{output} before {input}"), ConfigError);
  Example text;
  text.output = "raw";
  d = PromptTemplate("alpaca").render(text);  // text documents get no template
  EXPECT_EQ(d.prompt, "");
  EXPECT_EQ(d.answer, "raw");
}

TEST(PrepRecord, ChatAnswerIsTheLastAssistantMessage) {
  const Example chat = parse(
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},)"
      R"( {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]})");
  const RenderedDocument d = PromptTemplate("alpaca").render(chat);  // chats are always ChatML
  EXPECT_EQ(d.prompt,
            "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n"
            "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(d.answer, "d<|im_end|>\n");
  const auto content = example_content(chat);
  EXPECT_EQ(content.first, "user\na\nassistant\nb\nuser\nc\n");
  EXPECT_EQ(content.second, "d");
}

TEST(PrepRecord, DedupNormalisesWhitespaceOnly) {
  EXPECT_EQ(normalize_for_dedup("  a \t b\n\nc  "), "a b c");
  EXPECT_EQ(normalize_for_dedup("A b"), "A b");
  Example x, y;
  x.output = "hello  world\n";
  y.output = "hello world";
  EXPECT_EQ(example_dedup_hash(x), example_dedup_hash(y));
  EXPECT_NE(example_placement_hash(x), example_placement_hash(y));  // placement sees the raw text
  y.output = "Hello world";
  EXPECT_NE(example_dedup_hash(x), example_dedup_hash(y));
}

}  // namespace
}  // namespace trident::data
