// The byte-level BPE trainer: its tokenizer.json loads, round-trips text, is deterministic,
// has the promised layout, learns from JSONL string values, and rejects bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "prep_test_util.hpp"
#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/data/bpe_trainer.hpp"
#include "trident/data/tokenizer.hpp"

namespace trident::data {
namespace {

using prep_test::read_file;  // the whole file as bytes

std::string corpus() {
  std::string text;
  for (int i = 0; i < 50; ++i) {
    text += "The quick brown fox jumps over the lazy dog. It's what they've done; we'll see.\n";
    text += "def tokenize(text):\n    return [t for t in text.split() if t]  # ";
    text += std::to_string(i * 37);
    text += "\n";
    text += "Les na\xC3\xAFves caf\xC3\xA9s \xE4\xB8\xAD\xE6\x96\x87\xE6\xB5\x8B\xE8\xAF\x95 \xF0\x9F\x98\x80<|endoftext|>\n";
  }
  return text;
}

TEST(BpeTrainer, TrainsALoadableDeterministicTokenizer) {
  testing::TempDir dir;
  std::ofstream(dir / "a.txt") << corpus();
  const std::string first = dir / "first.json", second = dir / "second.json";
  const BpeTrainingReport report = train_bpe_tokenizer({dir / "a.txt"}, 330, first);
  EXPECT_EQ(report.vocab_size, 330u);
  EXPECT_GE(report.merges, 330u - 257u);
  EXPECT_GT(report.unique_words, 10u);
  EXPECT_EQ(report.bytes_read, corpus().size());
  train_bpe_tokenizer({dir / "a.txt"}, 330, second);
  EXPECT_EQ(read_file(first), read_file(second));

  const auto tok = load_tokenizer(first);
  EXPECT_EQ(tok->vocab_size(), 330u);
  EXPECT_EQ(tok->end_of_text(), 256u);
  EXPECT_EQ(tok->special_token("<|endoftext|>"), std::optional<uint32_t>(256));
  for (const std::string& text : {corpus(), std::string("unseen words: zyxwvut 98765 \xF0\x9F\x8E\x89\r\n\t end")}) {
    const std::vector<uint32_t> ids = tok->encode(text);
    EXPECT_EQ(tok->decode(ids), text);
    for (uint32_t id : ids) EXPECT_LT(id, 330u);
  }
  // Merges compress the training text well below one id per byte.
  EXPECT_LT(tok->encode(corpus()).size(), corpus().size() / 2);
  // Single bytes keep their byte values as ids.
  EXPECT_EQ(tok->encode("\x01"), std::vector<uint32_t>{1});
}

TEST(BpeTrainer, ReadsJsonlStringValues) {
  testing::TempDir dir;
  std::ofstream out(dir / "chat.jsonl");
  for (int i = 0; i < 30; ++i)
    out << R"({"input": "What is zebrafish?", "output": "A zebrafish is a fish.", "n": 3, "tags": ["zebrafish"]})" << "\n\n";
  out.close();
  train_bpe_tokenizer({dir / "chat.jsonl"}, 300, dir / "tok.json");
  const auto tok = load_tokenizer(dir / "tok.json");
  EXPECT_EQ(tok->encode(" zebrafish").size(), 1u);  // learned from the string values only
  EXPECT_GT(tok->encode("\"input\":").size(), 2u);  // keys and punctuation were not trained on
}

TEST(BpeTrainer, StopsWhenPairsRunOut) {
  testing::TempDir dir;
  std::ofstream(dir / "tiny.txt") << "ab ab ab";
  const BpeTrainingReport report = train_bpe_tokenizer({dir / "tiny.txt"}, 1000, dir / "tok.json");
  EXPECT_LT(report.vocab_size, 270u);
  EXPECT_EQ(load_tokenizer(dir / "tok.json")->encode("ab ab"), (std::vector<uint32_t>{257, 258}));
}

TEST(BpeTrainer, RejectsBadInput) {
  testing::TempDir dir;
  std::ofstream(dir / "ok.txt") << "text";
  EXPECT_THROW(train_bpe_tokenizer({dir / "ok.txt"}, 100, dir / "tok.json"), ConfigError);
  EXPECT_THROW(train_bpe_tokenizer({dir / "missing.txt"}, 300, dir / "tok.json"), ConfigError);
  std::ofstream(dir / "bad.jsonl") << "{\"a\": \"x\"}\n{\"a\": \n";
  try {
    train_bpe_tokenizer({dir / "bad.jsonl"}, 300, dir / "tok.json");
    ADD_FAILURE() << "bad JSONL accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2:"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "latin1.txt") << "caf\xE9";
  EXPECT_THROW(train_bpe_tokenizer({dir / "latin1.txt"}, 300, dir / "tok.json"), ConfigError);
  EXPECT_FALSE(std::filesystem::exists(dir / "tok.json"));
}

}  // namespace
}  // namespace trident::data
