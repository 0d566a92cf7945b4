// Tests of prep as a whole (one process): dedup of normalised text, empty and filtered drops,
// loss starts under templates and chats, the content-hash valid split, hash sharding (balance,
// stability, the set equal to the one-shard output), malformed and skipped lines, a failed prep
// leaving the old shards, stale layouts removed, prep.json; documents framed with the
// tokenizer's BOS / EOS.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "prep_test_util.hpp"
#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/prep_record.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;
using namespace prep_test;
using testing::TempDir;

TEST(Prep, DropsEmptyAndDuplicateDocuments) {
  TempDir dir;
  const std::vector<std::string> inputs = {
      write_file(dir / "a.txt", "hello world"), write_file(dir / "b.txt", ""),
      write_file(dir / "c.txt", "hello   world\n"),  // the same after whitespace normalisation
      write_file(dir / "d.txt", "other"),
      write_file(dir / "f.txt", "Hello world"),  // case is kept: not a duplicate
      // The same text as a JSONL record is the same document.
      write_file(dir / "e.jsonl", "{\"text\": \"other\"}\r\n{\"input\": \"\", \"output\": \"\"}\n"),
  };
  const PrepSummary s = prep(options_for(inputs, dir / "out"));
  EXPECT_EQ(s.documents_in, 7);
  EXPECT_EQ(s.empty_dropped, 2);
  EXPECT_EQ(s.duplicates_dropped, 2);
  EXPECT_EQ(s.train_documents, 3);
  EXPECT_EQ(s.valid_documents, 0);
  EXPECT_EQ(s.train_tokens, 12 + 6 + 12);
  EXPECT_FALSE(fs::exists(dir / "out-valid.idx"));
  const ShardReader reader(dir / "out");
  ASSERT_EQ(reader.num_documents(), 3u);
  EXPECT_EQ(reader.vocab(), ByteTokenizer::kVocabSize);
  EXPECT_EQ(decode_document(reader, 0), "hello world<|endoftext|>");  // the first one is kept
  EXPECT_EQ(decode_document(reader, 1), "other<|endoftext|>");
  EXPECT_EQ(decode_document(reader, 2), "Hello world<|endoftext|>");
  EXPECT_FALSE(reader.has_loss_starts());
}

TEST(Prep, LossStartsAfterThePromptUnderEachTemplate) {
  TempDir dir;
  const std::string path = write_file(dir / "ft.jsonl",
                                      "{\"input\": \"Q: 2+2?\\n\", \"output\": \"A: 4\"}\n"
                                      "{\"input\": \"caf\\u00e9 \", \"output\": \"ok\"}\n");
  PrepOptions o = options_for({path}, dir / "sub/dir/ft");  // creates sub/dir
  prep(o);
  const ShardReader plain(dir / "sub/dir/ft");
  ASSERT_EQ(plain.num_documents(), 2u);
  EXPECT_EQ(decode_document(plain, 0), "Q: 2+2?\nA: 4<|endoftext|>");
  EXPECT_EQ(plain.document(0).loss_start, 8u);
  EXPECT_EQ(plain.document(1).loss_start, 6u);  // "café " is 6 bytes

  o.prompt_template = "alpaca";
  prep(o);
  const ShardReader alpaca(dir / "sub/dir/ft");
  const std::string prompt = "### Instruction:\nQ: 2+2?\n\n\n### Response:\n";
  EXPECT_EQ(decode_document(alpaca, 0), prompt + "A: 4<|endoftext|>");
  EXPECT_EQ(alpaca.document(0).loss_start, prompt.size());
}

TEST(Prep, ChatLossStartsAtTheLastAssistantMessage) {
  TempDir dir;
  const std::string path = write_file(
      dir / "chat.jsonl",
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},)"
      R"( {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "2+2?"},)"
      R"( {"role": "assistant", "content": "4"}]})"
      "\n");
  prep(options_for({path}, dir / "chat"));
  const ShardReader reader(dir / "chat");
  const std::string prompt =
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
      "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(decode_document(reader, 0), prompt + "4<|im_end|>\n<|endoftext|>");
  EXPECT_EQ(reader.document(0).loss_start, prompt.size());
}

TEST(Prep, ValidSplitFollowsContentHash) {
  TempDir dir;
  std::string jsonl;
  for (int i = 0; i < 400; ++i) jsonl += "{\"input\": \"\", \"output\": \"document " + std::to_string(i) + "\"}\n";
  PrepOptions o = options_for({write_file(dir / "many.jsonl", jsonl)}, dir / "out");
  o.valid_permille = 250;
  const PrepSummary s = prep(o);
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

TEST(Prep, HashShardingIsEvenAndStable) {
  std::vector<int> per_shard(8, 0);
  for (int i = 0; i < 8000; ++i) ++per_shard[shard_of_hash(document_content_hash("", "doc " + std::to_string(i)), 8)];
  for (int n : per_shard) EXPECT_NEAR(n, 1000, 150);
  // Fixed values: a change here moves every user's documents to other shards and splits.
  EXPECT_EQ(document_content_hash("", "hello"), 0xcf5cacb475d2ee3dull);
  std::string shards;
  for (int i = 0; i < 16; ++i) shards += std::to_string(shard_of_hash(document_content_hash("", std::to_string(i)), 4));
  EXPECT_EQ(shards, "2323333112311300");
}

TEST(Prep, ShardsTogetherHoldTheOneShardDocuments) {
  TempDir dir;
  std::string jsonl;
  for (int i = 0; i < 200; ++i) jsonl += "{\"input\": \"q" + std::to_string(i) + "\", \"output\": \"answer " + std::to_string(i * 7) + "\"}\n";
  PrepOptions o = options_for({write_file(dir / "d.jsonl", jsonl)}, dir / "one");
  prep(o);
  o.output = dir / "four";
  o.shards = 4;
  const PrepSummary s = prep(o);
  EXPECT_EQ(s.train_documents, 200);
  EXPECT_FALSE(fs::exists(dir / "four.idx"));
  const ShardReader one(dir / "one");
  const ShardSet four(dir / "four");
  ASSERT_EQ(four.num_shards(), 4);
  ASSERT_EQ(four.num_documents(), one.num_documents());
  EXPECT_EQ(four.num_tokens(), one.num_tokens());
  std::multiset<std::string> a, b;
  for (uint64_t d = 0; d < one.num_documents(); ++d) a.insert(decode_document(one, d));
  for (uint64_t d = 0; d < four.num_documents(); ++d) b.insert(decode_document(four, d));
  EXPECT_EQ(a, b);
  for (int sh = 0; sh < 4; ++sh) {
    EXPECT_GT(four.shard(sh).num_documents(), 30u);  // expected 50
    for (uint64_t d = 0; d < four.shard(sh).num_documents(); ++d) {
      const std::string text = decode_document(four.shard(sh), d);
      const size_t cut = text.find("answer");  // plain template: prompt "qN", answer "answer M"
      const std::string answer = text.substr(cut, text.size() - cut - ByteTokenizer::kEndOfTextText.size());
      EXPECT_EQ(shard_of_hash(document_content_hash(text.substr(0, cut), answer), 4), sh);
    }
  }
  // Re-running with one shard removes the four (one layout per prefix).
  o.shards = 1;
  prep(o);
  EXPECT_TRUE(fs::exists(dir / "four.idx"));
  EXPECT_FALSE(fs::exists(dir / "four-00000-of-00004.idx"));
}

TEST(Prep, ByteOrderMarksAreNotText) {
  TempDir dir;
  prep(options_for({write_file(dir / "a.jsonl", "\xEF\xBB\xBF{\"text\": \"x\"}\n"),
                    write_file(dir / "b.txt", "\xEF\xBB\xBFy")},
                   dir / "out"));
  const ShardReader reader(dir / "out");
  EXPECT_EQ(decode_document(reader, 0), "x<|endoftext|>");
  EXPECT_EQ(decode_document(reader, 1), "y<|endoftext|>");
}

TEST(Prep, MalformedLineNamesFileAndLine) {
  TempDir dir;
  const std::string path = write_file(dir / "data.jsonl",
                                      "{\"input\": \"a\", \"output\": \"b\"}\n\n{\"input\": \"c\", \"output\": 7}\n");
  try {
    prep(options_for({path}, dir / "out"));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"output\" must be a string"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out.bin"));
  EXPECT_FALSE(fs::exists(dir / "out.bin.tmp"));
}

TEST(Prep, SkipBadLinesCountsAndWarns) {
  TempDir dir;
  const std::string path = write_file(dir / "data.jsonl",
                                      "{\"input\": \"a\", \"output\": \"b\"}\nnot json\n{\"input\": \"c\"}\n"
                                      "{\"input\": \"a\", \"output\": \"\xff\"}\n{\"input\": \"d\", \"output\": \"e\"}\n");
  PrepOptions o = options_for({path}, dir / "out");
  o.skip_bad_lines = true;
  std::vector<std::string> warnings;
  o.warn = [&](const std::string& w) { warnings.push_back(w); };
  const PrepSummary s = prep(o);
  EXPECT_EQ(s.documents_in, 5);
  EXPECT_EQ(s.bad_lines, 3);
  EXPECT_EQ(s.train_documents, 2);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_NE(warnings[0].find(path + ":2:"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find(path + ":3: malformed JSONL line, missing key \"output\""), std::string::npos)
      << warnings[1];
  EXPECT_NE(warnings[2].find(path + ":4: invalid UTF-8 at column 27"), std::string::npos) << warnings[2];
}

TEST(Prep, FailedPrepLeavesTheOldShards) {
  TempDir dir;
  prep(options_for({write_file(dir / "a.txt", "old text")}, dir / "out"));
  const std::string old_bin = read_file(dir / "out.bin"), old_idx = read_file(dir / "out.idx");
  const std::string bad = write_file(dir / "bad.jsonl", "{\"input\": \"x\", \"output\": \"y\"}\n{oops\n");
  EXPECT_THROW(prep(options_for({dir / "a.txt", bad}, dir / "out")), ConfigError);
  EXPECT_EQ(read_file(dir / "out.bin"), old_bin);
  EXPECT_EQ(read_file(dir / "out.idx"), old_idx);
  EXPECT_FALSE(fs::exists(dir / "out.bin.tmp"));
}

TEST(Prep, FiltersAndPiiAreCountedInPrepJson) {
  TempDir dir;
  PrepOptions o = options_for({write_file(dir / "a.txt", "mail bob@example.com or call 415-555-2671 today"),
                               write_file(dir / "b.txt", "tiny"),
                               write_file(dir / "c.txt", std::string(300, '\x01'))},
                              dir / "out");
  o.scrub_pii = true;
  o.filters.min_chars = 10;
  const PrepSummary s = prep(o);
  EXPECT_EQ(s.filtered[static_cast<int>(DropReason::kTooShort)], 1);
  EXPECT_EQ(s.filtered[static_cast<int>(DropReason::kNonText)], 1);
  EXPECT_EQ(s.pii[PiiKind::kEmail], 1);
  EXPECT_EQ(s.pii[PiiKind::kPhone], 1);
  const ShardReader reader(dir / "out");
  EXPECT_EQ(decode_document(reader, 0), "mail <EMAIL> or call <PHONE> today<|endoftext|>");
  const Json j = Json::parse(read_file(prep_json_path(dir / "out")));
  EXPECT_EQ(j.at("tokenizer").as_string(), "byte");
  EXPECT_EQ(j.at("documents_in").as_int(), 3);
  EXPECT_EQ(j.at("documents_out").as_int(), 1);
  EXPECT_EQ(j.at("dropped").at("too_short").as_int(), 1);
  EXPECT_EQ(j.at("dropped").at("non_text").as_int(), 1);
  EXPECT_EQ(j.at("pii").at("email").as_int(), 1);
  EXPECT_EQ(j.at("train_tokens").as_int(), s.train_tokens);
}

TEST(Prep, RejectsBadOptionsAndEmptyInput) {
  TempDir dir;
  const std::string path = write_file(dir / "a.txt", "x");
  PrepOptions o = options_for({path}, dir / "o");
  o.valid_permille = 1001;
  EXPECT_THROW(prep(o), ConfigError);
  o.valid_permille = 0;
  o.shards = 0;
  EXPECT_THROW(prep(o), ConfigError);
  o.shards = 1;
  o.prompt_template = "Q: {output}";
  EXPECT_THROW(prep(o), ConfigError);
  EXPECT_THROW(prep(options_for({dir / "missing.txt"}, dir / "o")), ConfigError);
  EXPECT_THROW(prep(options_for({dir.path.string()}, dir / "o")), ConfigError);
  try {
    prep(options_for({write_file(dir / "e.txt", "")}, dir / "o"));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no documents to write"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "o.idx"));
}

// The ids of document d of a shard.
std::vector<uint32_t> document_ids(const ShardReader& reader, uint64_t d) {
  const DocumentSpan doc = reader.document(d);
  std::vector<uint32_t> ids;
  for (uint64_t t = doc.begin; t < doc.end; ++t) ids.push_back(reader.token(t));
  return ids;
}

TEST(Prep, DocumentsAreFramedAsTheTokenizerFramesASequence) {
  TempDir dir;
  const std::string path = write_file(dir / "mixed.jsonl",
                                      "{\"text\": \"Plain text.\"}\n{\"input\": \"Q: 2+2?\\n\", \"output\": \"A: 4\"}\n");
  const std::string fixtures = std::string(TRIDENT_TEST_DATA) + "/tokenizers/";
  // Llama 3 (TemplateProcessing "<|begin_of_text|> $A"): BOS first, counted as prompt.
  const auto llama3 = load_tokenizer(fixtures + "llama3_bos");
  const uint32_t bos = *llama3->special_token("<|begin_of_text|>"), eot = llama3->end_of_text();
  prepare_shards(options_for({path}, dir / "llama3"), *llama3, PrepComm::single_process());
  const ShardReader reader(dir / "llama3");
  ASSERT_EQ(reader.num_documents(), 2u);
  std::vector<uint32_t> want = llama3->encode_with_specials("Plain text.");
  want.push_back(eot);
  EXPECT_EQ(document_ids(reader, 0), want);
  EXPECT_EQ(reader.document(0).loss_start, 0u);  // plain text: trained from the start, as before
  want = llama3->encode_with_specials("Q: 2+2?\n");
  const size_t prompt_tokens = want.size();
  for (uint32_t id : llama3->encode("A: 4")) want.push_back(id);
  want.push_back(eot);
  EXPECT_EQ(document_ids(reader, 1), want);
  EXPECT_EQ(want.front(), bos);
  EXPECT_EQ(reader.document(1).loss_start, prompt_tokens);

  // RobertaProcessing "<s> $A </s>" whose </s> is also the end of text: one </s>, not two.
  const auto roberta = load_tokenizer(fixtures + "added_flags");
  prepare_shards(options_for({path}, dir / "roberta"), *roberta, PrepComm::single_process());
  const ShardReader framed(dir / "roberta");
  EXPECT_EQ(document_ids(framed, 0), roberta->encode_with_specials("Plain text."));
  EXPECT_EQ(framed.document(1).loss_start, 1 + roberta->encode("Q: 2+2?\n").size());
}

}  // namespace
}  // namespace trident::data
