// Chat templates against transformers: every published template of tests/data/chat_templates/
// (utils/make_chat_template_fixtures.py) renders each conversation, with and without the
// generation prompt, to transformers' exact string and ids, splits it into the same prompt and
// answer, and refuses what transformers refuses; features.json's small templates render as
// jinja2 renders them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/chat_template.hpp"
#include "trident/data/tokenizer.hpp"

namespace trident::data {
namespace {

const std::string kFixtures = std::string(TRIDENT_TEST_DATA) + "/chat_templates";

Json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

std::vector<uint32_t> to_ids(const Json& array) {
  std::vector<uint32_t> ids;
  for (const Json& v : array.as_array()) ids.push_back(static_cast<uint32_t>(v.as_int()));
  return ids;
}

std::vector<ChatMessage> to_messages(const Json& array) {
  std::vector<ChatMessage> out;
  for (const Json& m : array.as_array()) out.push_back({m.at("role").as_string(), m.at("content").as_string()});
  return out;
}

ChatTemplate fixture_template(const std::string& name, const Json& fixture) {
  std::vector<std::pair<std::string, std::string>> special;
  for (const auto& [k, v] : fixture.at("special_tokens").as_object()) special.emplace_back(k, v.as_string());
  return ChatTemplate(fixture.at("template").as_string(), name + ".json", special);
}

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kFixtures)) {
    const std::string stem = entry.path().stem().string();
    if (entry.path().extension() == ".json" && stem != "features") names.push_back(stem);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The message of the ConfigError f throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ChatTemplateFixtures, EveryPublishedTemplateIsCovered) {
  const std::vector<std::string> names = fixture_names();
  for (const char* expected : {"gemma2", "gemma3", "llama3", "llama31", "llama32", "mistral_instruct", "mistral_v03",
                               "phi3", "qwen25", "qwen3", "smollm2"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

class ChatTemplateFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateFixture, RendersAsTransformers) {
  const Json fixture = read_json(kFixtures + "/" + GetParam() + ".json");
  const ChatTemplate tmpl = fixture_template(GetParam(), fixture);
  const auto tokenizer = load_tokenizer(std::string(TRIDENT_TEST_DATA) + "/" + fixture.at("tokenizer").as_string());
  int checked = 0;
  for (const auto& [name, c] : fixture.at("cases").as_object()) {
    SCOPED_TRACE(GetParam() + " / " + name);
    const std::vector<ChatMessage> messages = to_messages(c.at("messages"));
    if (const Json* error = c.find("error")) {
      const std::string message = error_of([&] { tmpl.render(messages, true); });
      EXPECT_NE(message.find("raised an exception: " + error->as_string()), std::string::npos) << message;
      EXPECT_NE(message.find(GetParam() + ".json line "), std::string::npos) << message;
      EXPECT_NE(error_of([&] { tmpl.render_document(messages); }), "");
      ++checked;
      continue;
    }
    for (const auto& [key, gen] : {std::pair{"with_generation_prompt", true}, std::pair{"without_generation_prompt", false}}) {
      const std::string text = tmpl.render(messages, gen);
      EXPECT_EQ(text, c.at(key).at("text").as_string()) << key;
      EXPECT_EQ(tokenizer->encode(text), to_ids(c.at(key).at("ids"))) << key;
    }
    if (c.find("split_error")) {
      EXPECT_NE(error_of([&] { tmpl.render_document(messages); }).find("cannot be split at the last assistant message"),
                std::string::npos);
    } else if (c.find("prompt")) {
      const RenderedDocument doc = tmpl.render_document(messages);
      EXPECT_EQ(doc.prompt, c.at("prompt").at("text").as_string());
      EXPECT_EQ(doc.answer, c.at("answer").at("text").as_string());
      EXPECT_EQ(tokenizer->encode(doc.prompt), to_ids(c.at("prompt").at("ids")));
      EXPECT_EQ(tokenizer->encode(doc.answer), to_ids(c.at("answer").at("ids")));
    }
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

INSTANTIATE_TEST_SUITE_P(ChatTemplatePublished, ChatTemplateFixture, ::testing::ValuesIn(fixture_names()),
                         [](const auto& info) { return info.param; });

TEST(ChatTemplateFeatures, RenderAsJinja2) {
  const Json features = read_json(kFixtures + "/features.json");
  int n = 0;
  for (const Json& c : features.at("cases").as_array()) {
    const std::string name = c.at("name").as_string();
    SCOPED_TRACE(name);
    std::string error;
    std::string out;
    try {
      out = ChatTemplate(c.at("template").as_string(), name, {}).render(c.at("context"));
    } catch (const ConfigError& e) {
      error = e.what();
    }
    if (c.find("error")) {
      EXPECT_NE(error, "") << "jinja2 raised " << c.at("error").as_string() << "; trident rendered " << json_quote(out);
      EXPECT_EQ(error.rfind("chat template " + name + " line 1: ", 0), 0u) << error;
    } else {
      EXPECT_EQ(error, "");
      EXPECT_EQ(out, c.at("output").as_string());
    }
    ++n;
  }
  EXPECT_GE(n, 80);
}

}  // namespace
}  // namespace trident::data
