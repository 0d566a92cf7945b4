// Chat templates, what is refused and where the template comes from: unsupported constructs and
// syntax errors name the file and line, raise_exception carries its message, work and nesting
// are bounded; load_chat_template reads a tokenizer directory as transformers does; prep with
// --template model writes the documents (one BOS, loss start after the prompt, one end of
// text) and reports a line the template refuses.
#include <gtest/gtest.h>

#include <filesystem>

#include "prep_test_util.hpp"
#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/chat_template.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

using prep_test::write_file;

const std::string kLlama3 = std::string(TRIDENT_TEST_DATA) + "/tokenizers/llama3/tokenizer.json";

std::string load_error(const std::string& path) {
  try {
    load_chat_template(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string error_of(const std::string& source, const std::string& context = "{}") {
  try {
    ChatTemplate(source, "T", {}).render(Json::parse(context));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(source, needle)                                             \
  do {                                                                           \
    const std::string message = error_of(source);                                \
    EXPECT_NE(message.find(needle), std::string::npos) << "got: " << message;    \
  } while (0)

TEST(ChatTemplateErrors, UnsupportedConstructsNameTheLine) {
  EXPECT_ERROR("line 1\n{% include 'other.jinja' %}", "chat template T line 2: '{% include %}' is not supported");
  EXPECT_ERROR("\n\n{% extends 'base' %}", "chat template T line 3: '{% extends %}' is not supported");
  EXPECT_ERROR("{% for x in y recursive %}{% endfor %}", "line 1: recursive for loops are not supported");
  EXPECT_ERROR("a\nb {{ x | frobnicate }}", "chat template T line 2: the filter 'frobnicate' is not supported");
  EXPECT_ERROR("{% if x is prime %}{% endif %}", "line 1: the test 'prime' is not supported");
  EXPECT_ERROR("{% whatever %}", "line 1: unknown tag '{% whatever %}'");
  EXPECT_ERROR("{{ f(*args) }}", "*args and **kwargs in calls are not supported");
}

TEST(ChatTemplateErrors, SyntaxErrorsNameTheLine) {
  EXPECT_ERROR("{% if x %}\nopen", "line 2: unexpected end of template, expected 'elif', 'else' or 'endif'");
  EXPECT_ERROR("{{ x", "line 1: unexpected end of template, expected '}}'");
  EXPECT_ERROR("ok\n{# never closed", "line 2: missing end of comment tag");
  EXPECT_ERROR("{{ 'unterminated }}", "unterminated string literal");
  EXPECT_ERROR("{% endif %}", "unexpected '{% endif %}'");
  EXPECT_ERROR("{% break %}", "'{% break %}' outside a for loop");
  EXPECT_ERROR("{{ (1 }}", "expected ')'");
  EXPECT_ERROR("{{ a ]] }}", "unexpected ']'");
  EXPECT_ERROR("{{ 1 $ 2 }}", "unexpected character '$'");
  EXPECT_ERROR("{% set none = 1 %}", "cannot assign to 'none'");
}

TEST(ChatTemplateErrors, RaiseExceptionCarriesItsMessage) {
  const std::string message = error_of("{% for m in messages %}\n{% if m.role == 'system' %}\n"
                                       "{{ raise_exception('System role not supported') }}\n{% endif %}{% endfor %}",
                                       R"({"messages": [{"role": "system", "content": ""}]})");
  EXPECT_EQ(message, "chat template T line 3: the template raised an exception: System role not supported");
}

TEST(ChatTemplateErrors, RuntimeErrorsNameTheLine) {
  EXPECT_ERROR("\n{{ x.y.z }}", "line 2: 'x' is undefined");
  EXPECT_EQ(error_of("{{ x.y.z }}", R"({"x": {}})"), "chat template T line 1: 'dict object' has no attribute 'y'");
  EXPECT_ERROR("{{ 'a' + 1 }}", "unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_ERROR("{{ messages[0]['role'] }}", "'messages' is undefined");
  EXPECT_ERROR("{{ [].append(1) }}", "access to attribute 'append' of 'list' object is unsafe");
  EXPECT_ERROR("{{ 9223372036854775807 + 1 }}", "integer overflow");
  EXPECT_ERROR("{{ 1 // 0 }}", "division or modulo by zero");
  EXPECT_ERROR("{{ strftime_now('%Z') }}", "the directive %Z is not supported");
}

TEST(ChatTemplateErrors, WorkAndNestingAreBounded) {
  EXPECT_ERROR("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}", "nested more than 200 levels deep");
  std::string ifs;
  for (int i = 0; i < 300; ++i) ifs += "{% if true %}";
  EXPECT_ERROR(ifs, "nested more than 200 levels deep");
  EXPECT_ERROR("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro calls nested more than 50 deep");
  EXPECT_ERROR("{{ 'x' * 100000000 }}", "repetition too large");
  EXPECT_ERROR("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "the rendering is longer than 64 MiB");
  EXPECT_ERROR("{{ range(1000000) }}", "range too big");
}

TEST(ChatTemplateErrors, StrftimeNowIsTheFixedDate) {
  EXPECT_EQ(ChatTemplate("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%A %B %j %H:%M') }}", "T", {})
                .render(Json::parse("{}")),
            "26 Jul 2024|Friday July 208 00:00");
}

TEST(ChatTemplateErrors, SplitNeedsAnAssistantAfterTheFirstMessage) {
  const ChatTemplate t("{% for m in messages %}{{ m.content }}{% endfor %}", "T", {});
  try {
    t.render_document({{"assistant", "a"}, {"user", "u"}});
    FAIL() << "an assistant-first conversation split";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is the first message"), std::string::npos) << e.what();
  }
  // A template that renders a user turn differently once a reply follows cannot be split.
  const ChatTemplate odd("{% for m in messages %}{% if loop.last %}[{% endif %}{{ m.content }}{% endfor %}", "T", {});
  try {
    odd.render_document({{"user", "u"}, {"assistant", "a"}});
    FAIL() << "an unsplittable template split";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("chat template T cannot be split at the last assistant message"), std::string::npos)
        << e.what();
  }
}

TEST(ChatTemplateLoad, ReadsTheTokenizerDirectoryAsTransformers) {
  const testing::TempDir dir;
  const std::string tmpl = "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}{{ eos_token }}";
  write_file(dir / "tokenizer_config.json", "{}");
  EXPECT_NE(load_error(dir.path.string()).find("has no \"chat_template\""), std::string::npos);
  Json config = Json::object();
  Json bos = Json::object();
  bos.set("content", Json("<s>"));
  config.set("bos_token", std::move(bos));
  config.set("eos_token", Json("</s>"));
  config.set("chat_template", Json(tmpl));
  write_file(dir / "tokenizer_config.json", config.dump());
  for (const std::string& path : {dir.path.string(), dir / "tokenizer.json", dir / "tokenizer_config.json"}) {
    const ChatTemplate t = load_chat_template(path);
    EXPECT_EQ(t.render({{"user", "hi"}}, false), "<s>user:hi;</s>");
    EXPECT_EQ(t.special_token("bos_token"), "<s>");
    EXPECT_EQ(t.name(), dir / "tokenizer_config.json");
  }
  // A list of named templates: "default" is used.
  Json named = Json::array();
  for (const char* name : {"tool_use", "default"}) {
    Json entry = Json::object();
    entry.set("name", Json(name));
    entry.set("template", Json(std::string(name) + "{{ messages|length }}"));
    named.push_back(std::move(entry));
  }
  config.set("chat_template", named);
  write_file(dir / "tokenizer_config.json", config.dump());
  EXPECT_EQ(load_chat_template(dir.path.string()).render({{"user", "x"}}, false), "default1");
  // chat_template.jinja beside it takes precedence, and errors name it.
  write_file(dir / "chat_template.jinja", "jinja {{ bos_token }}\n{% bad %}");
  EXPECT_EQ(load_error(dir.path.string()), "chat template " + (dir / "chat_template.jinja") + " line 2: unknown tag '{% bad %}'");
  write_file(dir / "chat_template.jinja", "jinja {{ bos_token }}\n");
  EXPECT_EQ(load_chat_template(dir.path.string()).render({{"user", "x"}}, false), "jinja <s>");
}

TEST(ChatTemplateLoad, RefusesWhatHasNoTemplate) {
  const testing::TempDir dir;
  EXPECT_NE(load_error("byte").find("the byte tokenizer has no chat template"), std::string::npos);
  EXPECT_NE(load_error(dir.path.string()).find("no tokenizer_config.json or chat_template.jinja in"), std::string::npos);
  Json config = Json::object();
  Json named = Json::array();
  Json entry = Json::object();
  entry.set("name", Json("rag"));
  entry.set("template", Json("x"));
  named.push_back(std::move(entry));
  config.set("chat_template", std::move(named));
  write_file(dir / "tokenizer_config.json", config.dump());
  EXPECT_NE(load_error(dir.path.string()).find("lists templates (rag) but none named \"default\""), std::string::npos);
  EXPECT_THROW(PromptTemplate("model"), ConfigError);  // needs the tokenizer
}

// A tokenizer directory: the Llama-3 fixture's tokenizer.json and a config with `tmpl`.
std::string llama_dir(const testing::TempDir& dir, const std::string& tmpl, const std::string& eos) {
  std::filesystem::copy_file(kLlama3, dir / "tokenizer.json");
  Json config = Json::object();
  config.set("bos_token", Json("<|begin_of_text|>"));
  config.set("eos_token", Json(eos));
  config.set("chat_template", Json(tmpl));
  write_file(dir / "tokenizer_config.json", config.dump());
  return dir / "tokenizer.json";
}

TEST(ChatTemplatePrep, ModelTemplateDocuments) {
  const testing::TempDir dir;
  const std::string tmpl =
      "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content | trim }}"
      "<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";
  const auto tokenizer = load_tokenizer(llama_dir(dir, tmpl, "<|eot_id|>"));
  const uint32_t bos = *tokenizer->special_token("<|begin_of_text|>");
  const std::string jsonl = write_file(dir / "chat.jsonl",
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]})"
      "\n" R"({"input": "2+2?", "output": "4"})" "\n");
  PrepOptions o = prep_test::options_for({jsonl}, dir / "out");
  o.prompt_template = "model";
  const PrepSummary s = prepare_shards(o, *tokenizer, PrepComm::single_process());
  EXPECT_EQ(s.documents_out(), 2);
  const ShardReader reader(dir / "out");
  const PromptTemplate model("model", tokenizer->describe());
  const std::string prompts[] = {
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user"
      "<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|><|start_header_id|>assistant"
      "<|end_header_id|>\n\n"};
  const std::string answers[] = {"Hello!<|eot_id|>", "4<|eot_id|>"};
  for (uint64_t d = 0; d < 2; ++d) {
    const DocumentSpan span = reader.document(d);
    std::vector<uint32_t> ids;
    for (uint64_t t = span.begin; t < span.end; ++t) ids.push_back(reader.token(t));
    EXPECT_EQ(span.loss_start, tokenizer->encode(prompts[d]).size());
    EXPECT_EQ(tokenizer->decode(std::span(ids).first(span.loss_start)), prompts[d]);
    EXPECT_EQ(tokenizer->decode(std::span(ids).subspan(span.loss_start)),
              answers[d] + tokenizer->decode(std::vector<uint32_t>{tokenizer->end_of_text()}));
    EXPECT_EQ(ids[0], bos);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), bos), 1) << "one BOS: the template's";
  }
  EXPECT_NE(prep_test::read_file(prep_json_path(dir / "out")).find("\"template\":\"model\""), std::string::npos);
}

TEST(ChatTemplatePrep, EndOfTextFromTheTemplateIsNotDoubled) {
  const testing::TempDir dir;
  const auto probe = load_tokenizer(llama_dir(dir, "", ""));
  const std::string end = probe->decode(std::vector<uint32_t>{probe->end_of_text()});
  Json config = Json::object();
  config.set("eos_token", Json(end));
  config.set("chat_template", Json("{% for m in messages %}{{ m.content }}{% endfor %}{% if not add_generation_prompt %}"
                                   "{{ eos_token }}{% endif %}"));
  write_file(dir / "tokenizer_config.json", config.dump());
  const std::string jsonl = write_file(dir / "pairs.jsonl", R"({"input": "a", "output": "b"})" "\n");
  PrepOptions o = prep_test::options_for({jsonl}, dir / "out");
  o.prompt_template = "model";
  prepare_shards(o, *probe, PrepComm::single_process());
  const ShardReader reader(dir / "out");
  const DocumentSpan span = reader.document(0);
  std::vector<uint32_t> ids;
  for (uint64_t t = span.begin; t < span.end; ++t) ids.push_back(reader.token(t));
  std::vector<uint32_t> expected = probe->encode("a");  // prompt and answer encode apart
  for (uint32_t id : probe->encode("b" + end)) expected.push_back(id);
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(ids.back(), probe->end_of_text());
}

TEST(ChatTemplatePrep, RefusedLinesNameTheFileAndLine) {
  const testing::TempDir dir;
  const auto tokenizer = load_tokenizer(llama_dir(dir,
      "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
      "{{ m.content }}{% endfor %}", "<|eot_id|>"));
  const std::string jsonl = write_file(dir / "chat.jsonl",
      R"({"input": "ok", "output": "fine"})" "\n"
      R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]})" "\n");
  PrepOptions o = prep_test::options_for({jsonl}, dir / "out");
  o.prompt_template = "model";
  try {
    prepare_shards(o, *tokenizer, PrepComm::single_process());
    FAIL() << "a refused line was written";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(jsonl + ":2: chat template"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("raised an exception: System role not supported"), std::string::npos) << e.what();
  }
  o.skip_bad_lines = true;
  const PrepSummary s = prepare_shards(o, *tokenizer, PrepComm::single_process());
  EXPECT_EQ(s.documents_in, 2);
  EXPECT_EQ(s.bad_lines, 1);
  EXPECT_EQ(s.documents_out(), 1);
}

}  // namespace
}  // namespace trident::data
