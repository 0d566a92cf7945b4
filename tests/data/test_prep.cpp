// Tests of prep: the JSONL line parser (escapes, surrogate pairs, errors), deduplication,
// prompt loss starts, the content-hash valid split and malformed-line locations.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "trident/core/error.hpp"
#include "temp_dir.hpp"
#include "trident/data/byte_tokenizer.hpp"
#include "trident/data/prep.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

std::string write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string decode_document(const ShardReader& reader, uint64_t d) {
  const DocumentSpan doc = reader.document(d);
  std::vector<uint32_t> ids;
  for (uint64_t t = doc.begin; t < doc.end; ++t) ids.push_back(reader.token(t));
  return ByteTokenizer::decode(ids);
}

TEST(JsonLine, ParsesEscapes) {
  const PromptExample e = parse_prompt_example(
      R"( { "input" : "q\"\\\/\b\f\n\r\t" , "output":"\u00e9\u20AC\ud83d\ude00\u0000x" } )");
  EXPECT_EQ(e.input, "q\"\\/\b\f\n\r\t");
  EXPECT_EQ(e.output, std::string("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9) + std::string(1, '\0') + "x");
}

TEST(JsonLine, IgnoresOtherKeysAndKeepsRawUtf8) {
  const PromptExample e = parse_prompt_example(
      R"({"id": -1.5e+3, "meta": {"a": [1, true, null, false, {"b": "c"}], "d": []},)"
      R"( "output": "h\u00e9 h)" "\xC3\xA9" R"(", "input": ""})");
  EXPECT_EQ(e.input, "");
  EXPECT_EQ(e.output, "h\xC3\xA9 h\xC3\xA9");
}

TEST(JsonLine, RejectsMalformedLines) {
  const char* bad[] = {
      R"({"input": "a", "output": "b")",            // no closing brace
      R"({"input": "a, "output": "b"})",            // string ends early
      R"({"input": "a", "output": "b"} x)",         // trailing text
      R"({"input": "\ud83d", "output": "b"})",      // high surrogate alone
      R"({"input": "\ude00", "output": "b"})",      // low surrogate alone
      R"({"input": "\q", "output": "b"})",          // unknown escape
      R"({"input": "\u12g4", "output": "b"})",      // bad hex
      R"({"input": 3, "output": "b"})",             // not a string
      R"({"input": "a"})",                          // no output
      R"({"input": "a", "output": "b", "n": 01x})", // bad number
      "{\"input\": \"a\tb\", \"output\": \"b\"}",   // raw control character
      R"(["input", "output"])",                     // not an object
  };
  for (const char* line : bad) EXPECT_THROW(parse_prompt_example(line), ConfigError) << line;
  try {
    parse_prompt_example(R"({"input": "a", "output": "b")");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("column 29"), std::string::npos) << e.what();
  }
}

TEST(Prep, MalformedLineNamesFileAndLine) {
  TempDir dir;
  const std::string path = write_file(dir / "data.jsonl",
                                      "{\"input\": \"a\", \"output\": \"b\"}\n\n{\"input\": \"c\", \"output\": 7}\n");
  try {
    prepare_shards(PrepOptions{{path}, dir / "out", "byte", 0});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3:"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out.bin"));
  EXPECT_FALSE(fs::exists(dir / "out.bin.tmp"));
}

TEST(Prep, DropsEmptyAndDuplicateDocuments) {
  TempDir dir;
  const std::vector<std::string> inputs = {
      write_file(dir / "a.txt", "hello world"), write_file(dir / "b.txt", ""),
      write_file(dir / "c.txt", "hello world"), write_file(dir / "d.txt", "other"),
      // The same text as a JSONL record with an empty prompt is the same document.
      write_file(dir / "e.jsonl", "{\"input\": \"\", \"output\": \"other\"}\r\n"
                                  "{\"input\": \"\", \"output\": \"\"}\n"),
  };
  const PrepSummary s = prepare_shards(PrepOptions{inputs, dir / "out", "byte", 0});
  EXPECT_EQ(s.documents_in, 6);
  EXPECT_EQ(s.empty_dropped, 2);
  EXPECT_EQ(s.duplicates_dropped, 2);
  EXPECT_EQ(s.train_documents, 2);
  EXPECT_EQ(s.valid_documents, 0);
  EXPECT_EQ(s.train_tokens, 12 + 6);
  EXPECT_FALSE(fs::exists(dir / "out-valid.idx"));
  const ShardReader reader(dir / "out");
  ASSERT_EQ(reader.num_documents(), 2u);
  EXPECT_EQ(reader.vocab(), ByteTokenizer::kVocabSize);
  EXPECT_EQ(decode_document(reader, 0), "hello world<|endoftext|>");
  EXPECT_EQ(decode_document(reader, 1), "other<|endoftext|>");
  EXPECT_FALSE(reader.has_loss_starts());
}

TEST(Prep, JsonlLossStartsAfterInput) {
  TempDir dir;
  const std::string path = write_file(dir / "ft.jsonl",
                                      "{\"input\": \"Q: 2+2?\\n\", \"output\": \"A: 4\"}\n"
                                      "{\"input\": \"caf\\u00e9 \", \"output\": \"ok\"}\n");
  prepare_shards(PrepOptions{{path}, dir / "sub/dir/ft", "byte", 0});  // creates sub/dir
  const ShardReader reader(dir / "sub/dir/ft");
  ASSERT_EQ(reader.num_documents(), 2u);
  EXPECT_EQ(decode_document(reader, 0), "Q: 2+2?\nA: 4<|endoftext|>");
  EXPECT_EQ(reader.document(0).loss_start, 8u);
  EXPECT_EQ(reader.document(1).loss_start, 6u);  // "café " is 6 bytes
}

TEST(Prep, ValidSplitFollowsContentHash) {
  TempDir dir;
  std::string jsonl;
  for (int i = 0; i < 400; ++i) jsonl += "{\"input\": \"\", \"output\": \"document " + std::to_string(i) + "\"}\n";
  const std::string path = write_file(dir / "many.jsonl", jsonl);
  const PrepSummary s = prepare_shards(PrepOptions{{path}, dir / "out", "byte", 250});
  EXPECT_EQ(s.documents_out(), 400);
  EXPECT_GT(s.valid_documents, 50);  // expected 100
  EXPECT_LT(s.valid_documents, 150);
  const ShardReader train(dir / "out"), valid(dir / "out-valid");
  EXPECT_EQ(static_cast<int64_t>(valid.num_documents()), s.valid_documents);
  for (uint64_t d = 0; d < valid.num_documents(); ++d) {
    std::string text = decode_document(valid, d);
    text.resize(text.size() - ByteTokenizer::kEndOfTextText.size());
    EXPECT_LT(document_content_hash("", text) % 1000, 250u);
  }
  EXPECT_EQ(static_cast<int64_t>(train.num_tokens() + valid.num_tokens()), s.tokens());
}

TEST(Prep, RejectsBadOptions) {
  TempDir dir;
  const std::string path = write_file(dir / "a.txt", "x");
  EXPECT_THROW(prepare_shards(PrepOptions{{path}, dir / "o", "gpt2", 0}), ConfigError);
  EXPECT_THROW(prepare_shards(PrepOptions{{path}, dir / "o", "byte", 1001}), ConfigError);
  EXPECT_THROW(prepare_shards(PrepOptions{{dir / "missing.txt"}, dir / "o", "byte", 0}), ConfigError);
  EXPECT_THROW(prepare_shards(PrepOptions{{write_file(dir / "e.txt", "")}, dir / "o", "byte", 0}),
               ConfigError);
}

}  // namespace
}  // namespace trident::data
