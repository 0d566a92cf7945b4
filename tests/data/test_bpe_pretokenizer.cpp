// The pre-tokenisation matchers and NFC on cases whose answers were taken from the `tokenizers`
// library's regex engine and Python's unicodedata.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "trident/core/json.hpp"

#include "trident/data/pretokenizer.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data {
namespace {

std::vector<std::string> split(SplitPattern p, std::string_view text) {
  std::vector<std::string> out;
  for_each_pretoken(p, text, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}

using V = std::vector<std::string>;

TEST(Pretokenizer, Gpt2) {
  EXPECT_EQ(split(SplitPattern::kGpt2, "Hello world! It's 2024."),
            (V{"Hello", " world", "!", " It", "'s", " 2024", "."}));
  EXPECT_EQ(split(SplitPattern::kGpt2, "a   b  \n\nc  "), (V{"a", "  ", " b", "  \n", "\n", "c", "  "}));
  EXPECT_EQ(split(SplitPattern::kGpt2, "I'M 'sup"), (V{"I", "'", "M", " '", "sup"}));
  EXPECT_EQ(split(SplitPattern::kGpt2, " \t x"), (V{" \t", " x"}));
}

TEST(Pretokenizer, Llama3) {
  EXPECT_EQ(split(SplitPattern::kLlama3, "I'M 12345 \"quoted\"\n\n  x"),
            (V{"I", "'M", " ", "123", "45", " \"", "quoted", "\"\n\n", " ", " x"}));
  EXPECT_EQ(split(SplitPattern::kLlama3, "a \n \n b"), (V{"a", " \n \n", " b"}));
  EXPECT_EQ(split(SplitPattern::kLlama3, "\tword\nword"), (V{"\tword", "\n", "word"}));
  EXPECT_EQ(split(SplitPattern::kQwen2, "x 123"), (V{"x", " ", "1", "2", "3"}));
  EXPECT_EQ(split_pattern_from_regex(split_pattern_regex(SplitPattern::kQwen2)), SplitPattern::kQwen2);
  EXPECT_EQ(split_pattern_from_regex("\\w+"), std::nullopt);
}

Json read_expected() {
  std::ifstream in(std::string(TRIDENT_TEST_DATA) + "/tokenizers/expected.json", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

TEST(Pretokenizer, RandomStringsAsTheRegexEngineCutsThem) {
  const Json expected = read_expected();
  const Json& cases = expected.at("pretokens");
  const Json::Array& texts = cases.at("texts").as_array();
  for (auto [name, pattern] : {std::pair{"gpt2", SplitPattern::kGpt2}, std::pair{"llama3", SplitPattern::kLlama3},
                               std::pair{"qwen2", SplitPattern::kQwen2}}) {
    const Json::Array& want = cases.at(name).as_array();
    ASSERT_EQ(want.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      V pieces;
      for (const Json& p : want[i].as_array()) pieces.push_back(p.as_string());
      EXPECT_EQ(split(pattern, texts[i].as_string()), pieces) << name << " case " << i;
    }
  }
}

TEST(Unicode, Nfc) {
  EXPECT_EQ(unicode::nfc("cafe\xCC\x81"), "caf\xC3\xA9");                       // e + acute -> é
  EXPECT_EQ(unicode::nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> 각
  EXPECT_EQ(unicode::nfc("\xE2\x84\xAB"), "\xC3\x85");                          // Angstrom sign -> Å
  EXPECT_EQ(unicode::nfc("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");            // reordered, no composite
  EXPECT_EQ(unicode::nfc("d\xCC\x87\xCC\xA3"), "\xE1\xB8\x8D\xCC\x87");         // ḍ + dot above
  EXPECT_EQ(unicode::nfc("abc \xFF"), "abc \xFF");                              // invalid bytes kept
  EXPECT_TRUE(unicode::is_nfc_quick("plain ascii"));
}

TEST(Unicode, NfcEqualsPython) {  // random strings of combining marks, Hangul, singletons, ...
  const Json expected = read_expected();
  int wrong = 0;
  for (const Json& c : expected.at("nfc").as_array()) {
    const std::string& input = c.as_array().at(0).as_string();
    const std::string& want = c.as_array().at(1).as_string();
    EXPECT_EQ(unicode::nfc(input), want);
    EXPECT_EQ(unicode::nfc("ab " + input + " cd"), "ab " + want + " cd");
    wrong += unicode::nfc(input) != want;
  }
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace trident::data
