// ShardSet: a set of shards reads exactly like the concatenation of its documents written as
// one shard (documents, tokens, loss starts, token windows across boundaries, document_of),
// empty shards included; a single prefix opens as a set of one; missing shards and mixed
// vocabularies are errors naming the file.
#include <gtest/gtest.h>

#include <filesystem>

#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/data/shard_set.hpp"

namespace trident::data {
namespace {

using testing::TempDir;

std::vector<uint32_t> doc_tokens(int d) {
  std::vector<uint32_t> t;
  for (int i = 0; i < 1 + (d * 7) % 5; ++i) t.push_back(static_cast<uint32_t>((d * 31 + i) % 300));
  return t;
}

TEST(ShardSet, EqualsTheConcatenation) {
  TempDir dir;
  // Documents 0..11 spread over 4 shards (shard 2 empty), and all of them in one shard.
  const int of_shard[12] = {0, 0, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3};
  ShardWriter whole(dir / "whole", 300);
  std::vector<std::unique_ptr<ShardWriter>> parts;
  for (int s = 0; s < 4; ++s) parts.push_back(std::make_unique<ShardWriter>(shard_file_prefix(dir / "set", s, 4), 300));
  for (int d = 0; d < 12; ++d) {
    whole.add_document(doc_tokens(d), d % 2);
    parts[of_shard[d]]->add_document(doc_tokens(d), d % 2);
  }
  whole.finish();
  for (auto& p : parts) p->finish();
  EXPECT_TRUE(std::filesystem::exists(dir / "set-00002-of-00004.idx"));

  const ShardReader one(dir / "whole");
  const ShardSet set(dir / "set");
  ASSERT_EQ(set.num_shards(), 4);
  EXPECT_EQ(set.num_documents(), one.num_documents());
  EXPECT_EQ(set.num_tokens(), one.num_tokens());
  EXPECT_EQ(set.vocab(), 300u);
  EXPECT_EQ(set.has_loss_starts(), one.has_loss_starts());
  for (uint64_t d = 0; d < one.num_documents(); ++d) {
    EXPECT_EQ(set.document(d).begin, one.document(d).begin) << d;
    EXPECT_EQ(set.document(d).end, one.document(d).end) << d;
    EXPECT_EQ(set.document(d).loss_start, one.document(d).loss_start) << d;
  }
  for (uint64_t t = 0; t < one.num_tokens(); ++t) {
    EXPECT_EQ(set.token(t), one.token(t)) << t;
    EXPECT_EQ(set.document_of(t), one.document_of(t)) << t;
  }
  for (uint64_t begin = 0; begin < one.num_tokens(); begin += 3) {
    const uint64_t count = std::min<uint64_t>(11, one.num_tokens() - begin);
    std::vector<int32_t> a(count), b(count);
    one.copy_tokens(begin, count, a.data());
    set.copy_tokens(begin, count, b.data());
    EXPECT_EQ(a, b) << begin;
  }
  const ShardSet single(dir / "whole");
  EXPECT_EQ(single.num_shards(), 1);
  EXPECT_EQ(single.num_tokens(), one.num_tokens());
}

TEST(ShardSet, MissingShardOrMixedVocabIsAnError) {
  TempDir dir;
  for (int s = 0; s < 3; ++s) {
    ShardWriter w(shard_file_prefix(dir / "set", s, 3), s == 1 ? 70000 : 300);
    w.add_document(std::vector<uint32_t>{1, 2});
    w.finish();
  }
  try {
    ShardSet set(dir / "set");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("set-00001-of-00003.idx: vocab 70000"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir / "set-00001-of-00003.idx");
  try {
    ShardSet set(dir / "set");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("shard 1 of 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ShardSet(dir / "nothing"), ConfigError);
}

}  // namespace
}  // namespace trident::data
