// BPE tokenizers against the `tokenizers` library: for every fixture of
// utils/make_tokenizer_fixtures.py (byte-level GPT-2 / Llama-3 / Qwen2 style, BOS post-processor,
// added-token flags, NFKC, SentencePiece style with byte fallback) the ids with and without the
// post-processor's special tokens and the decoded text of every hard-case and random text, and
// the pair template; caching and threads; special tokens and end of text.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "prep_test_util.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/tokenizer.hpp"

namespace trident::data {
namespace {

const std::string kFixtures = std::string(TRIDENT_TEST_DATA) + "/tokenizers";

using prep_test::read_file;  // the whole file as bytes

const Json& texts_json() {  // the texts and cases every fixture shares
  static const Json json = Json::parse(read_file(kFixtures + "/expected.json"));
  return json;
}

Json expected_of(const std::string& name) { return Json::parse(read_file(kFixtures + "/" + name + "/expected.json")); }

std::vector<uint32_t> to_ids(const Json& array) {
  std::vector<uint32_t> ids;
  for (const Json& v : array.as_array()) ids.push_back(static_cast<uint32_t>(v.as_int()));
  return ids;
}

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '\n') ? std::string("\\n") : (c == '\r') ? std::string("\\r") : std::string(1, c);
  return out;
}

// Every fixture: byte-level ones first, then the SentencePiece-style ones.
const std::vector<std::string> kAllFixtures = {
    "gpt2",   "llama3",  "qwen2", "fallback",         "unk",             "llama3_bos",     "added_flags",
    "nfkc",   "llama2",  "mistral", "gemma",          "metaspace_always", "metaspace_never", "metaspace_split"};

class TokenizerFixture : public ::testing::TestWithParam<std::string> {};
class TokenizerRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerFixture, EncodesAndDecodesLikeTokenizers) {
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(kFixtures + "/" + GetParam() + "/tokenizer.json");
  const Json mine = expected_of(GetParam());
  const Json::Array& texts = texts_json().at("texts").as_array();
  const Json::Array& ids = mine.at("ids").as_array();
  ASSERT_EQ(texts.size(), ids.size());
  int wrong = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string& text = texts[i].as_string();
    const std::string where = "text " + std::to_string(i) + ": \"" + printable(text) + "\"";
    const std::vector<uint32_t> want = to_ids(ids[i]), want_special = to_ids(mine.at("ids_special").as_array()[i]);
    const std::vector<uint32_t> got = tok->encode(text);
    EXPECT_EQ(got, want) << where;
    EXPECT_EQ(tok->encode_with_specials(text), want_special) << where;
    EXPECT_EQ(tok->decode(want), mine.at("decoded").as_array()[i].as_string()) << where;
    EXPECT_EQ(tok->decode(want_special), mine.at("decoded_special").as_array()[i].as_string()) << where;
    wrong += got != want;
  }
  EXPECT_EQ(wrong, 0) << "of " << texts.size() << " texts";

  const Json::Array& random = texts_json().at("random_texts").as_array();
  const Json& random_want = mine.at("random");
  for (size_t i = 0; i < random.size(); ++i) {
    const std::string& text = random[i].as_string();
    const std::vector<uint32_t> want = to_ids(random_want.at("ids").as_array()[i]);
    EXPECT_EQ(tok->encode(text), want) << "random text " << i << ": \"" << printable(text) << "\"";
    EXPECT_EQ(tok->decode(want), random_want.at("decoded").as_array()[i].as_string()) << "random text " << i;
  }

  const Json::Array& pairs = texts_json().at("pairs").as_array();
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Json::Array& pair = pairs[i].as_array();
    EXPECT_EQ(tok->encode_pair_with_specials(pair[0].as_string(), pair[1].as_string()),
              to_ids(mine.at("pairs").as_array()[i]))
        << "pair " << i;
  }
}

TEST_P(TokenizerFixture, CachedAndThreadedEncodingAgree) {
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(kFixtures + "/" + GetParam() + "/tokenizer.json");
  std::string text;
  for (const Json& t : texts_json().at("texts").as_array()) text += t.as_string() + "\n";
  const std::vector<uint32_t> first = tok->encode(text);
  EXPECT_EQ(tok->encode(text), first);  // now from the cache
  std::vector<std::vector<uint32_t>> results(3);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&] {
    for (int k = 0; k < 5; ++k) r = tok->encode(text);
  });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, first);
}

INSTANTIATE_TEST_SUITE_P(Styles, TokenizerFixture, ::testing::ValuesIn(kAllFixtures));

TEST(BpeTokenizer, TextsJoinedByEndOfTextEncodeAsTheTextsOneByOne) {
  // Each text joined with an end-of-text token: the same ids as the texts one by one (none ends
  // inside a pre-token that the next would continue). Not for gpt2 ([MASK] strips spaces across
  // texts) nor the tokenizers that add a prefix space to each piece.
  for (const char* name : {"llama3", "qwen2", "llama3_bos"}) {
    const auto tok = load_tokenizer(kFixtures + "/" + name);
    const Json mine = expected_of(name);
    const Json::Array& texts = texts_json().at("texts").as_array();
    std::string all;
    std::vector<uint32_t> want_all;
    const uint32_t eot = tok->end_of_text();
    const std::string eot_text = tok->decode(std::vector<uint32_t>{eot});
    for (size_t i = 0; i < texts.size(); ++i) {
      all += texts[i].as_string() + eot_text;
      for (uint32_t id : to_ids(mine.at("ids").as_array()[i])) want_all.push_back(id);
      want_all.push_back(eot);
    }
    EXPECT_EQ(tok->encode(all), want_all) << name;
  }
}

TEST_P(TokenizerRoundTrip, DecodeInvertsEncode) {
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(kFixtures + "/" + GetParam());  // the directory
  for (const char* text : {"Plain text, with  spaces\tand\nlines.\r\n", "\xC3\xB1" "and\xC3\xBA \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80",
                                 "   ", "x", "1234567 numbers 89"}) {
    EXPECT_EQ(tok->decode(tok->encode(text)), text);
  }
  // Valid UTF-8 survives; here a mix of the hard cases (qwen2 normalises to NFC, so not there).
  const Json::Array& texts = texts_json().at("texts").as_array();
  std::string mixed;
  for (size_t i = 0; i < texts.size(); i += 3) mixed += texts[i].as_string();
  if (GetParam() != "qwen2") {
    EXPECT_EQ(tok->decode(tok->encode(mixed)), mixed);
  }
  EXPECT_EQ(tok->encode(""), std::vector<uint32_t>{});
  if (GetParam() == "qwen2") {
    // As in `tokenizers`, the ByteLevel decoder also maps added tokens' characters to bytes, so
    // the added token "café" decodes to "caf" + byte 0xE9 (shown as U+FFFD).
    EXPECT_EQ(tok->decode(tok->encode("caf\xC3\xA9")), "caf\xEF\xBF\xBD");
  }
}

INSTANTIATE_TEST_SUITE_P(Styles, TokenizerRoundTrip, ::testing::Values("gpt2", "llama3", "qwen2"));

TEST(BpeTokenizer, SpecialTokensAndEndOfText) {
  const auto gpt2 = load_tokenizer(kFixtures + "/gpt2/tokenizer.json");
  EXPECT_EQ(gpt2->special_token("<|endoftext|>"), std::optional<uint32_t>(0));
  EXPECT_EQ(gpt2->end_of_text(), 0u);
  EXPECT_EQ(gpt2->vocab_size(), 704u);
  EXPECT_EQ(gpt2->special_token("<|nope|>"), std::nullopt);
  EXPECT_EQ(gpt2->encode("a<|endoftext|>b").at(1), 0u);
  EXPECT_EQ(gpt2->describe(), kFixtures + "/gpt2/tokenizer.json");
  const auto llama = load_tokenizer(kFixtures + "/llama3/tokenizer.json");
  EXPECT_EQ(llama->end_of_text(), *llama->special_token("<|end_of_text|>"));
  EXPECT_EQ(llama->decode(llama->encode("<|eot_id|>")), "<|eot_id|>");
  const auto qwen = load_tokenizer(kFixtures + "/qwen2/tokenizer.json");
  EXPECT_EQ(qwen->end_of_text(), *qwen->special_token("<|endoftext|>"));
  // "café" is a normalised added token: matched after NFC, so also when written decomposed.
  EXPECT_EQ(qwen->encode("caf\xC3\xA9"), qwen->encode("cafe\xCC\x81"));
  EXPECT_EQ(qwen->encode("cafe\xCC\x81").size(), 1u);
}

TEST(BpeTokenizer, PostProcessorSpecials) {
  const auto none = load_tokenizer(kFixtures + "/gpt2");
  EXPECT_TRUE(none->specials().prefix.empty() && none->specials().suffix.empty());
  EXPECT_EQ(none->encode_with_specials("hi"), none->encode("hi"));

  const auto llama3 = load_tokenizer(kFixtures + "/llama3_bos");  // Sequence[ByteLevel, TemplateProcessing]
  const uint32_t bos = *llama3->special_token("<|begin_of_text|>");
  EXPECT_EQ(llama3->specials().prefix, std::vector<uint32_t>{bos});
  EXPECT_TRUE(llama3->specials().suffix.empty());
  EXPECT_EQ(llama3->encode_with_specials(""), std::vector<uint32_t>{bos});
  EXPECT_EQ(llama3->specials().pair_middle, std::vector<uint32_t>{bos});

  const auto llama2 = load_tokenizer(kFixtures + "/llama2");
  EXPECT_EQ(llama2->specials().prefix, std::vector<uint32_t>{1});  // <s>
  EXPECT_EQ(llama2->end_of_text(), 2u);                            // </s>

  const auto roberta = load_tokenizer(kFixtures + "/added_flags");  // RobertaProcessing
  const uint32_t cls = *roberta->special_token("<s>"), sep = *roberta->special_token("</s>");
  EXPECT_EQ(roberta->specials().prefix, std::vector<uint32_t>{cls});
  EXPECT_EQ(roberta->specials().suffix, std::vector<uint32_t>{sep});
  EXPECT_EQ(roberta->specials().pair_middle, (std::vector<uint32_t>{sep, sep}));
  EXPECT_EQ(roberta->end_of_text(), sep);

  const auto bytes = load_tokenizer("byte");
  EXPECT_TRUE(bytes->specials().prefix.empty() && bytes->specials().suffix.empty());
}

TEST(BpeTokenizer, ByteSpecIsTheByteTokenizer) {
  const auto tok = load_tokenizer("byte");
  EXPECT_EQ(tok->vocab_size(), 257u);
  EXPECT_EQ(tok->end_of_text(), 256u);
  EXPECT_EQ(tok->encode("hi"), (std::vector<uint32_t>{'h', 'i'}));
  EXPECT_EQ(tok->special_token("<|endoftext|>"), std::optional<uint32_t>(256));
  EXPECT_EQ(tok->describe(), "byte");
}

}  // namespace
}  // namespace trident::data
