// Encryption primitives against published vectors (NIST SP 800-38D GCM test case 16 with a
// 256-bit key, FIPS 180-2 SHA-256) and the properties the file formats rely on.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "trident/core/error.hpp"
#include "trident/security/crypto.hpp"

namespace trident::security {
namespace {

std::vector<unsigned char> from_hex(const std::string& s) {
  std::vector<unsigned char> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<unsigned char>(std::stoi(s.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(Crypto, Sha256MatchesFips180Vectors) {
  EXPECT_EQ(to_hex(sha256("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256("", 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 pieces;
  pieces.update("a", 1);
  pieces.update("bc", 2);
  EXPECT_EQ(to_hex(pieces.finish()), to_hex(sha256("abc", 3)));
}

TEST(Crypto, BlocksRoundTripAndRejectEveryChange) {
  Key data_key{};
  random_bytes(data_key);
  FileId file{};
  random_bytes(file);
  std::vector<unsigned char> plain(100000);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<unsigned char>(i * 7 + 3);
  BlockCipher cipher(data_key, file);
  std::vector<unsigned char> sealed(plain.size()), back(plain.size());
  const Tag tag = cipher.seal(5, plain.data(), plain.size(), sealed.data());
  EXPECT_NE(sealed, plain);
  ASSERT_TRUE(cipher.open(5, sealed.data(), sealed.size(), back.data(), tag));
  EXPECT_EQ(back, plain);
  EXPECT_FALSE(cipher.open(6, sealed.data(), sealed.size(), back.data(), tag));  // moved block
  FileId other_file = file;
  other_file[0] ^= 1;
  BlockCipher other(data_key, other_file);
  EXPECT_FALSE(other.open(5, sealed.data(), sealed.size(), back.data(), tag));  // another file
  sealed[777] ^= 0x10;
  EXPECT_FALSE(cipher.open(5, sealed.data(), sealed.size(), back.data(), tag));  // flipped byte
  // The same block sealed twice under one key gives the same bytes (the nonce is the index),
  // so a writer must never seal different data at one index: one data key per file.
  std::vector<unsigned char> again(plain.size());
  cipher.seal(5, plain.data(), plain.size(), again.data());
  sealed[777] ^= 0x10;
  EXPECT_EQ(again, sealed);
}

TEST(Crypto, WrappedKeyOpensOnlyUnderItsMasterKey) {
  const MasterKey a = master_key_from_bytes(Key{1, 2, 3}), b = master_key_from_bytes(Key{1, 2, 4});
  EXPECT_NE(a.id, b.id);
  EXPECT_EQ(a.id.size(), 16u);
  Key data_key{};
  random_bytes(data_key);
  const WrappedKey w = wrap_key(a, data_key);
  EXPECT_EQ(unwrap_key(a, w, "f"), data_key);
  EXPECT_NE(wrap_key(a, data_key), w);  // random nonce
  try {
    unwrap_key(b, w, "shard.bin");
    FAIL() << "another key opened the data key";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("shard.bin: the key does not match"), std::string::npos) << e.what();
  }
}

TEST(Crypto, GcmMatchesNistVector) {
  // NIST SP 800-38D (GCM spec) test case 16: AES-256, 96-bit IV, 20 bytes of AAD.
  Key key{};
  const auto k = from_hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308");
  std::copy(k.begin(), k.end(), key.begin());
  const auto iv = from_hex("cafebabefacedbaddecaf888");
  const auto plain = from_hex(
      "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39");
  const auto aad = from_hex("feedfacedeadbeeffeedfacedeadbeefabaddad2");
  std::vector<unsigned char> sealed(plain.size());
  const Tag tag = gcm_seal(key, iv.data(), aad, plain.data(), plain.size(), sealed.data());
  EXPECT_EQ(to_hex(sealed),
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662");
  EXPECT_EQ(to_hex(tag), "76fc6ece0f4e1768cddf8853bb2d551b");
  std::vector<unsigned char> back(plain.size());
  EXPECT_TRUE(gcm_open(key, iv.data(), aad, sealed.data(), sealed.size(), back.data(), tag));
  EXPECT_EQ(back, plain);
}

TEST(Crypto, GcmOpensInPlaceOverItsPrefix) {
  // A sealed chunk opened where it lies, the plain text written 12 bytes before the cipher text
  // (over the nonce): long enough for several of the steps it goes through, and an odd length.
  Key key{};
  random_bytes(key);
  const unsigned char nonce[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<unsigned char> plain(300001);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<unsigned char>(i * 131 + 7);
  std::vector<unsigned char> stored(12 + plain.size());
  const Tag tag = gcm_seal(key, nonce, {}, plain.data(), plain.size(), stored.data() + 12);
  const std::vector<unsigned char> copy = stored;
  EXPECT_TRUE(gcm_open(key, nonce, {}, stored.data() + 12, plain.size(), stored.data(), tag));
  EXPECT_TRUE(std::equal(plain.begin(), plain.end(), stored.begin()));
  // A changed byte still fails its tag opened this way.
  std::vector<unsigned char> bad = copy;
  bad[12 + 200000] ^= 1;
  EXPECT_FALSE(gcm_open(key, nonce, {}, bad.data() + 12, plain.size(), bad.data(), tag));
}

TEST(Crypto, KeyFileHexOrRawWithOwnerOnlyMode) {
  const auto path = std::filesystem::temp_directory_path() / "trident_test_key_hex";
  {
    std::ofstream out(path);
    out << "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308\n";
  }
  ::chmod(path.c_str(), 0600);
  const MasterKey from_file = load_key_file(path.string());
  EXPECT_EQ(to_hex(from_file.bytes), "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(from_file.bytes.data()), 32);
  }
  EXPECT_EQ(load_key_file(path.string()).id, from_file.id);  // raw bytes: the same key
  ::chmod(path.c_str(), 0644);
  EXPECT_THROW(load_key_file(path.string()), ConfigError);  // readable by others
  {
    std::ofstream out(path);
    out << "feffe99286";
  }
  ::chmod(path.c_str(), 0400);
  EXPECT_THROW(load_key_file(path.string()), ConfigError);  // too short
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace trident::security
