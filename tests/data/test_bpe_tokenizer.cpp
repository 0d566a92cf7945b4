// Byte-level BPE against the `tokenizers` library: the ids of every hard-case text for the
// GPT-2, Llama-3 and Qwen2 style fixtures (utils/make_tokenizer_fixtures.py), decoding, added
// tokens, and the refusal of unsupported or malformed tokenizer.json files.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/tokenizer.hpp"

namespace trident::data {
namespace {

const std::string kFixtures = std::string(TRIDENT_TEST_DATA) + "/tokenizers";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const Json& expected() {
  static const Json json = Json::parse(read_text(kFixtures + "/expected.json"));
  return json;
}

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

class FixtureTokenizer : public ::testing::TestWithParam<std::string> {};
class FixtureEncoding : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureEncoding, EncodesLikeTokenizers) {
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(kFixtures + "/" + GetParam() + "/tokenizer.json");
  const Json::Array& texts = expected().at("texts").as_array();
  const Json& mine = expected().at("tokenizers").at(GetParam());
  const Json::Array& ids = mine.at("ids").as_array();
  const Json::Array& decoded = mine.at("decoded").as_array();
  ASSERT_EQ(texts.size(), ids.size());
  int wrong = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string& text = texts[i].as_string();
    const std::vector<uint32_t> want = to_ids(ids[i]);
    const std::vector<uint32_t> got = tok->encode(text);
    EXPECT_EQ(got, want) << "text " << i << ": \"" << printable(text) << "\"";
    EXPECT_EQ(tok->decode(want), decoded[i].as_string()) << "text " << i;
    wrong += got != want;
  }
  EXPECT_EQ(wrong, 0) << "of " << texts.size() << " texts";
  // All texts as one document: the same ids as the texts one by one (none ends inside a
  // pre-token that the next would continue, since each is joined with an end-of-text token).
  std::string all;
  std::vector<uint32_t> want_all;
  const uint32_t eot = tok->end_of_text();
  const std::string eot_text = tok->decode(std::vector<uint32_t>{eot});
  for (size_t i = 0; i < texts.size(); ++i) {
    all += texts[i].as_string() + eot_text;
    for (uint32_t id : to_ids(ids[i])) want_all.push_back(id);
    want_all.push_back(eot);
  }
  // (gpt2's [MASK] strips spaces across texts; the hand-built ones add a prefix space.)
  if (GetParam() == "llama3" || GetParam() == "qwen2") {
    EXPECT_EQ(tok->encode(all), want_all);
  }
}

TEST_P(FixtureTokenizer, DecodeInvertsEncode) {
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(kFixtures + "/" + GetParam());  // the directory
  for (const char* text : {"Plain text, with  spaces\tand\nlines.\r\n", "\xC3\xB1" "and\xC3\xBA \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80",
                                 "   ", "x", "1234567 numbers 89"}) {
    EXPECT_EQ(tok->decode(tok->encode(text)), text);
  }
  // Valid UTF-8 survives; here a mix of the hard cases (qwen2 normalises to NFC, so not there).
  const Json::Array& texts = expected().at("texts").as_array();
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

TEST_P(FixtureTokenizer, CachedAndThreadedEncodingAgree) {
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(kFixtures + "/" + GetParam() + "/tokenizer.json");
  std::string text;
  for (const Json& t : expected().at("texts").as_array()) text += t.as_string() + "\n";
  const std::vector<uint32_t> first = tok->encode(text);
  EXPECT_EQ(tok->encode(text), first);  // now from the cache
  std::vector<std::vector<uint32_t>> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&] {
    for (int k = 0; k < 20; ++k) r = tok->encode(text);
  });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, first);
}

INSTANTIATE_TEST_SUITE_P(Styles, FixtureTokenizer, ::testing::Values("gpt2", "llama3", "qwen2"));
// "fallback" and "unk": hand-built BPEs lacking most non-ASCII bytes, with byte_fallback, and
// with a fused unknown token; both with add_prefix_space.
INSTANTIATE_TEST_SUITE_P(Styles, FixtureEncoding, ::testing::Values("gpt2", "llama3", "qwen2", "fallback", "unk"));

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

TEST(BpeTokenizer, ByteSpecIsTheByteTokenizer) {
  const auto tok = load_tokenizer("byte");
  EXPECT_EQ(tok->vocab_size(), 257u);
  EXPECT_EQ(tok->end_of_text(), 256u);
  EXPECT_EQ(tok->encode("hi"), (std::vector<uint32_t>{'h', 'i'}));
  EXPECT_EQ(tok->special_token("<|endoftext|>"), std::optional<uint32_t>(256));
  EXPECT_EQ(tok->describe(), "byte");
}

// Writes the gpt2 fixture with `edit` applied to its text and expects load_tokenizer to fail
// with a message naming the file and containing `what`.
void expect_rejected(const std::string& name, const std::function<std::string(std::string)>& edit,
                     const std::string& what) {
  testing::TempDir dir;
  const std::string path = dir / (name + ".json");
  std::ofstream(path, std::ios::binary) << edit(read_text(kFixtures + "/gpt2/tokenizer.json"));
  try {
    load_tokenizer(path);
    ADD_FAILURE() << name << ": loaded";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << name << ": " << message;
    EXPECT_NE(message.find(what), std::string::npos) << name << ": " << message;
  }
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(BpeTokenizer, RejectsUnsupportedKinds) {
  expect_rejected("wordpiece", [](std::string t) { return replace(t, "\"type\":\"BPE\"", "\"type\":\"WordPiece\""); },
                  "model type \"WordPiece\" is not supported");
  expect_rejected("unigram", [](std::string t) { return replace(t, "\"type\":\"BPE\"", "\"type\":\"Unigram\""); },
                  "model type \"Unigram\" is not supported");
  expect_rejected("metaspace",
                  [](std::string t) { return replace(t, "\"pre_tokenizer\":{\"type\":\"ByteLevel\"", "\"pre_tokenizer\":{\"type\":\"Metaspace\""); },
                  "pre-tokenizer \"Metaspace\" is not supported");
  expect_rejected("lowercase", [](std::string t) { return replace(t, "\"normalizer\":null", "\"normalizer\":{\"type\":\"Lowercase\"}"); },
                  "normalizer \"Lowercase\" is not supported");
  expect_rejected("no_pretokenizer",
                  [](std::string t) {
                    return replace(t, "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}", "null");
                  },
                  "no pre_tokenizer");
  expect_rejected("other_regex",
                  [](std::string t) {
                    return replace(t, "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}",
                                   "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
                                   "{\"Regex\":\"\\\\w+\"},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","
                                   "\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]}");
                  },
                  "Split regex \"\\\\w+\" is not supported");
  expect_rejected("wordpiece_decoder",
                  [](std::string t) { return replace(t, "\"decoder\":{\"type\":\"ByteLevel\"", "\"decoder\":{\"type\":\"WordPiece\""); },
                  "decoder \"WordPiece\" is not supported");
}

TEST(BpeTokenizer, RejectsMalformedFiles) {
  expect_rejected("bad_json", [](std::string t) { return t.substr(0, t.size() / 2); }, "line ");
  expect_rejected("not_object", [](std::string) { return std::string("[1, 2]"); }, "top level is not an object");
  expect_rejected("no_model", [](std::string t) { return replace(t, "\"model\":", "\"modell\":"); }, "no \"model\"");
  expect_rejected("unknown_merge_token", [](std::string t) { return replace(t, "\"merges\":[", "\"merges\":[\"zzqq a\","); },
                  "not in the vocabulary");
  expect_rejected("merge_not_pair", [](std::string t) { return replace(t, "\"merges\":[", "\"merges\":[[\"a\"],"); },
                  "merge 0 is not a pair");
  expect_rejected("no_end_of_text", [](std::string t) { return replace(replace(t, "<|endoftext|>", "<|x|>"), "<|endoftext|>", "<|x|>"); },
                  "no end-of-text token");
  EXPECT_THROW(load_tokenizer("/nonexistent/tokenizer.json"), ConfigError);
  try {
    load_tokenizer("/nonexistent/dir");
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trident::data
