// Tests of token shards: writer/reader round trip at both token widths, every corrupt-file case
// reported as a ConfigError that says what is wrong, and atomic replacement on a failed write.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>

#include "trident/core/error.hpp"
#include "temp_dir.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

struct Doc {
  std::vector<uint32_t> tokens;
  uint64_t loss_start;
};

// Documents of assorted lengths (one empty) with ids spread over [0, vocab).
std::vector<Doc> sample_documents(uint64_t vocab) {
  std::vector<Doc> docs;
  const int lengths[] = {5, 0, 1, 17, 64, 3};
  uint64_t next = 0;
  for (int d = 0; d < 6; ++d) {
    Doc doc{{}, static_cast<uint64_t>(lengths[d] / 2)};
    for (int i = 0; i < lengths[d]; ++i) doc.tokens.push_back(static_cast<uint32_t>((next++ * 7919) % vocab));
    docs.push_back(doc);
  }
  docs.back().tokens.back() = static_cast<uint32_t>(vocab - 1);  // the largest id survives
  return docs;
}

void write_shard(const std::string& prefix, uint64_t vocab, const std::vector<Doc>& docs) {
  ShardWriter writer(prefix, vocab);
  for (const Doc& d : docs) writer.add_document(d.tokens, d.loss_start);
  writer.finish();
}

void check_round_trip(uint64_t vocab, uint32_t expected_bytes) {
  TempDir dir;
  const std::string prefix = dir / "shard";
  const std::vector<Doc> docs = sample_documents(vocab);
  write_shard(prefix, vocab, docs);
  EXPECT_FALSE(fs::exists(prefix + ".bin.tmp"));
  EXPECT_FALSE(fs::exists(prefix + ".idx.tmp"));

  const ShardReader reader(prefix);
  ASSERT_EQ(reader.num_documents(), docs.size());
  EXPECT_EQ(reader.vocab(), vocab);
  EXPECT_EQ(reader.token_bytes(), expected_bytes);
  EXPECT_TRUE(reader.has_loss_starts());
  uint64_t offset = 0;
  for (size_t d = 0; d < docs.size(); ++d) {
    const DocumentSpan span = reader.document(d);
    EXPECT_EQ(span.begin, offset);
    EXPECT_EQ(span.size(), docs[d].tokens.size());
    EXPECT_EQ(span.loss_start, docs[d].loss_start);
    for (size_t i = 0; i < docs[d].tokens.size(); ++i) {
      EXPECT_EQ(reader.token(offset + i), docs[d].tokens[i]);
      EXPECT_EQ(reader.document_of(offset + i), d);  // skips the empty document
    }
    offset += docs[d].tokens.size();
  }
  EXPECT_EQ(reader.num_tokens(), offset);
  std::vector<int32_t> copy(offset);
  reader.copy_tokens(0, offset, copy.data());
  for (uint64_t t = 0; t < offset; ++t) EXPECT_EQ(static_cast<uint32_t>(copy[t]), reader.token(t));
}

TEST(Shard, RoundTripUint16) { check_round_trip(257, 2); }
TEST(Shard, RoundTripUint16AtLimit) { check_round_trip(65536, 2); }
TEST(Shard, RoundTripUint32) { check_round_trip(100000, 4); }

TEST(Shard, ReaderIsMovable) {
  TempDir dir;
  write_shard(dir / "s", 257, sample_documents(257));
  ShardReader a(dir / "s");
  ShardReader b(std::move(a));
  EXPECT_EQ(b.token(0), sample_documents(257)[0].tokens[0]);
}

// --- corrupt shards --------------------------------------------------------------------------

void patch(const std::string& path, size_t at, const void* bytes, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(n));
}

void expect_config_error(const std::string& prefix, std::initializer_list<const char*> needles) {
  try {
    ShardReader reader(prefix);
    ADD_FAILURE() << "no error for " << prefix;
  } catch (const ConfigError& e) {
    for (const char* needle : needles)
      EXPECT_NE(std::strstr(e.what(), needle), nullptr) << "'" << needle << "' not in: " << e.what();
  }
}

class CorruptShard : public ::testing::Test {
 protected:
  void SetUp() override { write_shard(prefix, 257, sample_documents(257)); }
  TempDir dir;
  std::string prefix = dir / "bad";
};

TEST_F(CorruptShard, WrongMagic) {
  patch(prefix + ".idx", 0, "XXXXXXXX", 8);
  expect_config_error(prefix, {"bad.idx", "bad magic", "re-run trident prep"});
}

TEST_F(CorruptShard, NewerVersion) {
  const uint32_t version = 3;
  patch(prefix + ".idx", 8, &version, 4);
  expect_config_error(prefix, {"bad.idx", "version 3", "reads versions 1 and 2"});
}

TEST_F(CorruptShard, UnknownDtype) {
  const uint32_t dtype = 3;
  patch(prefix + ".idx", 12, &dtype, 4);
  expect_config_error(prefix, {"bad.idx", "dtype code 3"});
}

TEST_F(CorruptShard, TruncatedBin) {
  fs::resize_file(prefix + ".bin", fs::file_size(prefix + ".bin") - 2);
  expect_config_error(prefix, {"bad.bin", "truncated", "re-run trident prep"});
}

TEST_F(CorruptShard, TruncatedIdx) {
  fs::resize_file(prefix + ".idx", fs::file_size(prefix + ".idx") - 8);
  expect_config_error(prefix, {"bad.idx", "truncated", "re-run trident prep"});
}

TEST_F(CorruptShard, IdxShorterThanHeader) {
  fs::resize_file(prefix + ".idx", 20);
  expect_config_error(prefix, {"bad.idx", "truncated index"});
}

TEST_F(CorruptShard, NonMonotoneOffsets) {
  const uint64_t offsets_1_2[2] = {30, 10};  // document 1 would end before it begins
  patch(prefix + ".idx", ShardIndexLayout{}.offset_position(1), offsets_1_2, sizeof(offsets_1_2));
  expect_config_error(prefix, {"bad.idx", "not monotone at document 1"});
}

TEST_F(CorruptShard, LossStartBeyondDocument) {
  const uint64_t loss_start = 6;  // document 0 has 5 tokens; loss starts follow 7 offsets
  patch(prefix + ".idx", ShardIndexLayout{}.offset_position(7), &loss_start, 8);
  expect_config_error(prefix, {"bad.idx", "document 0 has loss start 6"});
}

TEST_F(CorruptShard, MissingFile) {
  fs::remove(prefix + ".bin");
  expect_config_error(prefix, {"cannot open", "bad.bin"});
}

// --- atomic replacement ------------------------------------------------------------------------

TEST(Shard, FailedWriteLeavesExistingShardIntact) {
  TempDir dir;
  const std::string prefix = dir / "keep";
  const std::vector<Doc> original = sample_documents(257);
  write_shard(prefix, 257, original);
  // The index's temporary cannot be created (a directory is in the way): finish() must throw
  // before touching <prefix>.bin / .idx.
  fs::create_directory(prefix + ".idx.tmp");
  {
    ShardWriter writer(prefix, 257);
    writer.add_document(std::vector<uint32_t>{1, 2, 3}, 0);
    EXPECT_THROW(writer.finish(), ConfigError);
  }
  fs::remove(prefix + ".idx.tmp");
  EXPECT_FALSE(fs::exists(prefix + ".bin.tmp"));
  // A writer abandoned halfway (an exception in prep) leaves it intact too.
  {
    ShardWriter writer(prefix, 257);
    writer.add_document(std::vector<uint32_t>{4, 5}, 0);
  }
  EXPECT_FALSE(fs::exists(prefix + ".bin.tmp"));
  const ShardReader reader(prefix);
  ASSERT_EQ(reader.num_documents(), original.size());
  EXPECT_EQ(reader.token(0), original[0].tokens[0]);
}

TEST(Shard, UnwritableDirectoryIsConfigError) {
  EXPECT_THROW(ShardWriter("/nonexistent_dir_for_trident_tests/x", 257), ConfigError);
}

}  // namespace
}  // namespace trident::data
