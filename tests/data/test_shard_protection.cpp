// Shard protection: encrypted shards read back equal to plain ones, hide their tokens, and
// every changed byte of the .bin or the .idx, a missing key or another key is a ConfigError
// naming the file; plain version-2 shards find changed bytes by their SHA-256 digests.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/data/shard_format.hpp"
#include "trident/data/shard_protection.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const security::MasterKey kKey = security::master_key_from_bytes(security::Key{7, 7, 7});
const security::MasterKey kOtherKey = security::master_key_from_bytes(security::Key{8});

// A few documents spanning several 64 KiB blocks (uint16 ids: 32768 tokens per block), one of
// them a recognisable "secret" (ids spelling ASCII text).
std::vector<std::vector<uint32_t>> documents() {
  std::vector<std::vector<uint32_t>> docs;
  for (int d = 0; d < 5; ++d) {
    std::vector<uint32_t> doc(30000 + 7919 * size_t(d));
    for (size_t i = 0; i < doc.size(); ++i) doc[i] = uint32_t((i * 31 + size_t(d)) % 1000);
    docs.push_back(doc);
  }
  const std::string secret = "SECRET-PATIENT-4711";
  docs.push_back(std::vector<uint32_t>(secret.begin(), secret.end()));
  return docs;
}

void write(const std::string& prefix, const security::MasterKey* key) {
  ShardWriter writer(prefix, 1000, key);
  for (const auto& d : documents()) writer.add_document(d, 0);
  writer.finish();
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void flip(const std::string& path, uint64_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(long(at));
  char c = 0;
  f.get(c);
  f.seekp(long(at));
  f.put(char(c ^ 0x20));
}

void expect_error(const std::string& prefix, const security::MasterKey* key, std::vector<std::string> needles) {
  try {
    ShardReader reader(prefix, key);
    ADD_FAILURE() << "no error for " << prefix;
  } catch (const ConfigError& e) {
    for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(ShardProtection, EncryptedReadsEqualPlainAndHideTheTokens) {
  TempDir dir;
  write(dir / "plain", nullptr);
  write(dir / "secret", &kKey);
  const ShardReader plain(dir / "plain"), secret(dir / "secret", &kKey);
  EXPECT_FALSE(plain.encrypted());
  EXPECT_TRUE(secret.encrypted());
  EXPECT_EQ(secret.version(), 2u);
  ASSERT_EQ(secret.num_tokens(), plain.num_tokens());
  ASSERT_EQ(secret.num_documents(), plain.num_documents());
  std::vector<int32_t> a(plain.num_tokens()), b(plain.num_tokens());
  plain.copy_tokens(0, a.size(), a.data());
  secret.copy_tokens(0, b.size(), b.data());
  EXPECT_EQ(a, b);
  // Windows across block boundaries, in a shuffled order (the cache's two slots).
  for (uint64_t begin : {32760ull, 100ull, 65530ull, 32767ull, 131000ull}) {
    std::vector<int32_t> w(300);
    secret.copy_tokens(begin, w.size(), w.data());
    EXPECT_TRUE(std::equal(w.begin(), w.end(), a.begin() + long(begin))) << begin;
    EXPECT_EQ(secret.token(begin), plain.token(begin));
  }
  // The secret document, stored as uint16 ids, is in the plain .bin and not in the encrypted one.
  std::string needle;
  for (char c : std::string("SECRET-PATIENT")) needle += {c, '\0'};
  EXPECT_NE(contents(dir / "plain.bin").find(needle), std::string::npos);
  EXPECT_EQ(contents(dir / "secret.bin").find(needle), std::string::npos);
  EXPECT_EQ(contents(dir / "secret.idx").find(needle), std::string::npos);
}

TEST(ShardProtection, MissingOrOtherKeyIsAnError) {
  TempDir dir;
  write(dir / "secret", &kKey);
  expect_error(dir / "secret", nullptr, {"secret.bin is encrypted", "security.key_file"});
  expect_error(dir / "secret", &kOtherKey, {"secret.bin", "the key does not match", kKey.id});
}

class FlippedByte : public ::testing::TestWithParam<bool> {};

TEST_P(FlippedByte, InTheBinOrTheIdxIsFound) {
  const security::MasterKey* key = GetParam() ? &kKey : nullptr;
  TempDir dir;
  const std::string prefix = dir / "s";
  write(prefix, key);
  const uint64_t bin_bytes = fs::file_size(prefix + ".bin");
  for (const uint64_t at : {uint64_t(0), uint64_t(70000), bin_bytes - 1}) {
    flip(prefix + ".bin", at);
    expect_error(prefix, key, {"s.bin: block " + std::to_string(at / kShardBlockBytes), key ? "authentication tag" : "SHA-256",
                               "re-run trident prep"});
    flip(prefix + ".bin", at);
  }
  // Bytes of the index no structural check covers: a loss start, the block table, the trailer.
  const ShardIndexLayout layout{2, documents().size(), shard_block_count(bin_bytes, kShardBlockBytes)};
  flip(prefix + ".idx", layout.loss_start_position(2));
  expect_error(prefix, key, {"s.idx: fails its"});
  flip(prefix + ".idx", layout.loss_start_position(2));
  flip(prefix + ".idx", layout.block_entry_position(1) + 3);
  expect_error(prefix, key, {"s.idx: fails its"});
  flip(prefix + ".idx", layout.block_entry_position(1) + 3);
  flip(prefix + ".idx", layout.trailer_position() + 5);
  expect_error(prefix, key, {"s.idx: fails its"});
  flip(prefix + ".idx", layout.trailer_position() + 5);
  EXPECT_NO_THROW(ShardReader(prefix, key));
}

INSTANTIATE_TEST_SUITE_P(PlainAndEncrypted, FlippedByte, ::testing::Bool());

TEST(ShardProtection, ChangedAfterOpenIsFoundOnRead) {
  TempDir dir;
  const std::string prefix = dir / "s";
  write(prefix, &kKey);
  const ShardReader reader(prefix, &kKey);
  flip(prefix + ".bin", 3 * 65536 + 10);  // the mapping sees the change
  std::vector<int32_t> w(10);
  EXPECT_THROW(reader.copy_tokens(3 * 32768 + 2, w.size(), w.data()), ConfigError);
}

}  // namespace
}  // namespace trident::data
