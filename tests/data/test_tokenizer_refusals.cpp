// tokenizer.json files trident does not implement, or that are malformed: each is a ConfigError
// whose message names the file and the component (model, normalizer, pre-tokenizer, decoder,
// post-processor) and what is unsupported about it.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "prep_test_util.hpp"
#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/data/tokenizer.hpp"

namespace trident::data {
namespace {

const std::string kFixtures = std::string(TRIDENT_TEST_DATA) + "/tokenizers";

using prep_test::read_file;  // the whole file as bytes

// Writes fixture `base` with `edit` applied to its text and expects load_tokenizer to fail with
// a message naming the file and containing `what`.
void expect_rejected(const std::string& base, const std::string& name, const std::function<std::string(std::string)>& edit,
                     const std::string& what) {
  testing::TempDir dir;
  const std::string path = dir / (name + ".json");
  std::ofstream(path, std::ios::binary) << edit(read_file(kFixtures + "/" + base + "/tokenizer.json"));
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

// An edit of the gpt2 fixture replacing `from` by `to`.
std::function<std::string(std::string)> swap(const std::string& from, const std::string& to) {
  return [=](std::string t) { return replace(t, from, to); };
}

const std::string kByteLevelPre =
    "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}";
const std::string kLlama2Post = "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[";

TEST(TokenizerRefusal, Models) {
  for (const char* model : {"WordPiece", "Unigram", "WordLevel"})
    expect_rejected("gpt2", model, swap("\"type\":\"BPE\"", std::string("\"type\":\"") + model + "\""),
                    std::string("model type \"") + model + "\" is not supported");
  expect_rejected("gpt2", "dropout", swap("\"dropout\":null", "\"dropout\":0.1"), "BPE dropout is not supported");
  expect_rejected("gpt2", "prefix", swap("\"continuing_subword_prefix\":null", "\"continuing_subword_prefix\":\"##\""),
                  "BPE continuing_subword_prefix is not supported");
}

TEST(TokenizerRefusal, Normalizers) {
  for (const char* type : {"Lowercase", "NFD", "NFKD", "Strip", "BertNormalizer", "Precompiled"})
    expect_rejected("gpt2", type, swap("\"normalizer\":null", std::string("\"normalizer\":{\"type\":\"") + type + "\"}"),
                    std::string("normalizer \"") + type + "\" is not supported");
  expect_rejected("gpt2", "in_sequence",
                  swap("\"normalizer\":null",
                       "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},{\"type\":\"Lowercase\"}]}"),
                  "normalizer \"Lowercase\" is not supported");
  expect_rejected("gpt2", "replace_regex",
                  swap("\"normalizer\":null",
                       "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" {2,}\"},\"content\":\" \"}"),
                  "normalizer Replace with the regex pattern \" {2,}\" is not supported");
}

TEST(TokenizerRefusal, PreTokenizers) {
  expect_rejected("gpt2", "whitespace", swap(kByteLevelPre, "\"pre_tokenizer\":{\"type\":\"Whitespace\"}"),
                  "pre-tokenizer \"Whitespace\" is not supported");
  expect_rejected("gpt2", "other_regex",
                  swap(kByteLevelPre,
                       "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
                       "{\"Regex\":\"\\\\w+\"},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","
                       "\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]}"),
                  "Split regex \"\\\\w+\" is not supported");
  expect_rejected("llama2", "digits",
                  swap("\"pre_tokenizer\":null",
                       "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Metaspace\","
                       "\"replacement\":\"x\",\"prepend_scheme\":\"first\",\"split\":false},{\"type\":\"Digits\"}]}"),
                  "pre-tokenizer Sequence[Metaspace, Digits] is not supported");
  expect_rejected("llama2", "scheme",
                  swap("\"pre_tokenizer\":null",
                       "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"x\",\"prepend_scheme\":\"sometimes\"}"),
                  "pre-tokenizer Metaspace prepend_scheme \"sometimes\" is not one of");
  expect_rejected("llama2", "replacement",
                  swap("\"pre_tokenizer\":null", "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"xy\"}"),
                  "pre-tokenizer Metaspace \"replacement\" must be one character");
  expect_rejected("llama2", "invert",
                  swap("\"pre_tokenizer\":null",
                       "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Removed\","
                       "\"invert\":true}"),
                  "pre-tokenizer Split with invert=true is not supported");
  expect_rejected("llama2", "split_regex",
                  swap("\"pre_tokenizer\":null",
                       "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"behavior\":\"Removed\"}"),
                  "with the regex pattern \"\\\\s+\" is not supported");
}

TEST(TokenizerRefusal, Decoders) {
  expect_rejected("gpt2", "wordpiece_decoder", swap("\"decoder\":{\"type\":\"ByteLevel\"", "\"decoder\":{\"type\":\"WordPiece\""),
                  "decoder \"WordPiece\" is not supported");
  expect_rejected("llama2", "ctc", swap("{\"type\":\"Fuse\"}", "{\"type\":\"CTC\"}"), "decoder \"CTC\" is not supported");
  expect_rejected("llama2", "decoder_regex", swap("\"pattern\":{\"String\":\"\xE2\x96\x81\"},\"content\":\" \"",
                                                  "\"pattern\":{\"Regex\":\"_\"},\"content\":\" \""),
                  "decoder Replace with the regex pattern \"_\" is not supported");
}

TEST(TokenizerRefusal, PostProcessors) {
  expect_rejected("gpt2", "unknown_post", swap("\"post_processor\":null", "\"post_processor\":{\"type\":\"Fancy\"}"),
                  "post-processor \"Fancy\" is not supported");
  expect_rejected("llama2", "b_in_single",
                  swap(kLlama2Post + "{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\"",
                       kLlama2Post + "{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"B\""),
                  "single template with sequence $B here is not supported");
  expect_rejected("llama2", "missing_special", swap(kLlama2Post + "{\"SpecialToken\":{\"id\":\"<s>\"",
                                                    kLlama2Post + "{\"SpecialToken\":{\"id\":\"<bos>\""),
                  "names the special token \"<bos>\", which its special_tokens lacks");
  expect_rejected("llama2", "special_outside", swap("\"ids\":[1]", "\"ids\":[99999]"),
                  "post_processor special token id 99999 is outside the vocabulary");
  expect_rejected("gpt2", "two_templates",
                  swap("\"post_processor\":null",
                       "\"post_processor\":{\"type\":\"Sequence\",\"processors\":["
                       "{\"type\":\"BertProcessing\",\"sep\":[\"<|endoftext|>\",0],\"cls\":[\"<|endoftext|>\",0]},"
                       "{\"type\":\"RobertaProcessing\",\"sep\":[\"<|endoftext|>\",0],\"cls\":[\"<|endoftext|>\",0]}]}"),
                  "more than one processor that adds tokens is not supported");
}

TEST(TokenizerRefusal, MalformedFiles) {
  expect_rejected("gpt2", "bad_json", [](std::string t) { return t.substr(0, t.size() / 2); }, "line ");
  expect_rejected("gpt2", "not_object", [](std::string) { return std::string("[1, 2]"); }, "top level is not an object");
  expect_rejected("gpt2", "no_model", swap("\"model\":", "\"modell\":"), "no \"model\"");
  expect_rejected("gpt2", "unknown_merge_token", swap("\"merges\":[", "\"merges\":[\"zzqq a\","), "not in the vocabulary");
  expect_rejected("gpt2", "merge_not_pair", swap("\"merges\":[", "\"merges\":[[\"a\"],"), "merge 0 is not a pair");
  expect_rejected("gpt2", "no_end_of_text",
                  [](std::string t) { return replace(replace(t, "<|endoftext|>", "<|x|>"), "<|endoftext|>", "<|x|>"); },
                  "no end-of-text token");
  EXPECT_THROW(load_tokenizer("/nonexistent/tokenizer.json"), ConfigError);
  try {
    load_tokenizer("/nonexistent/dir");
    ADD_FAILURE() << "loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
  }
}

TEST(TokenizerRefusal, NoPreTokenizerIsNotRefused) {
  // Without a pre-tokenizer the model sees the text's characters (Llama 2 and Gemma write it so):
  // the gpt2 fixture then loads; its byte-level vocabulary has no " ", which the BPE model drops
  // (no unk_token), as `tokenizers` does.
  testing::TempDir dir;
  const std::string path = dir / "none.json";
  std::ofstream(path, std::ios::binary) << replace(read_file(kFixtures + "/gpt2/tokenizer.json"), kByteLevelPre,
                                                   "\"pre_tokenizer\":null");
  const auto tok = load_tokenizer(path);
  EXPECT_EQ(tok->encode("a b"), tok->encode("ab"));
  EXPECT_FALSE(tok->encode("ab").empty());
}

}  // namespace
}  // namespace trident::data
