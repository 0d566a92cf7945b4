// Encryption at rest (docs/design.md section 12): the user's key file, per-file data keys
// wrapped by it, AES-256-GCM over numbered blocks, and SHA-256 digests, through OpenSSL's EVP.
//
// Key hierarchy: the key file holds the master key K (32 bytes). Every encrypted file gets a
// fresh random data key D, stored wrapped: AES-256-GCM(K, random 96-bit nonce, aad =
// "trident data key v1") -> nonce | E(D) | tag (60 bytes). Blocks of a file are sealed under D
// with nonce = "TBLK" | uint64 block index (little-endian) and aad = file id (16 random bytes) |
// block index, so a nonce never repeats under a key (one D per file, one nonce per block) and
// a block moved to another index or file fails its tag.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace trident::security {

using Key = std::array<unsigned char, 32>;
using Digest = std::array<unsigned char, 32>;
using FileId = std::array<unsigned char, 16>;
using Tag = std::array<unsigned char, 16>;
inline constexpr size_t kWrappedKeyBytes = 12 + 32 + 16;
using WrappedKey = std::array<unsigned char, kWrappedKeyBytes>;

// The user's master key and its public identity: the first 8 bytes of SHA-256("trident key
// id" | key) in hex, recorded in every file it protects so a wrong key is named as such.
struct MasterKey {
  Key bytes{};
  std::string id;
};

// Reads a key file: 32 raw bytes, or 64 hex digits (a trailing newline allowed). The file must
// be a regular file owned by this user with mode 0600 or 0400; anything else is a ConfigError
// naming the file and what is wrong.
MasterKey load_key_file(const std::string& path);
MasterKey master_key_from_bytes(const Key& bytes);

Digest sha256(const void* data, size_t bytes);
std::string to_hex(std::span<const unsigned char> bytes);
// Exactly 2 * out.size() hex digits into out; false (out unspecified) for anything else.
bool from_hex(std::string_view hex, std::span<unsigned char> out);
// Cryptographically random bytes (OpenSSL's DRBG); Error if it fails.
void random_bytes(std::span<unsigned char> out);

// A fresh data key wrapped under the master key, and back. unwrap throws ConfigError "the key
// does not match" (naming `what`, the file) when the tag fails: another key or a changed file.
WrappedKey wrap_key(const MasterKey& master, const Key& data_key);
Key unwrap_key(const MasterKey& master, const WrappedKey& wrapped, const std::string& what);

// One AES-256-GCM message: out = E(in) and its tag; open returns false when the tag fails.
// The caller owns nonce uniqueness under the key. out may be in, or (open) lie before in and
// overlap it (a message opened in place, past a prefix).
Tag gcm_seal(const Key& key, const unsigned char nonce[12], std::span<const unsigned char> aad, const void* in,
             size_t bytes, void* out);
bool gcm_open(const Key& key, const unsigned char nonce[12], std::span<const unsigned char> aad, const void* in,
              size_t bytes, void* out, const Tag& tag);

// AES-256-GCM over the numbered blocks of one file under its data key. Not thread-safe (one
// OpenSSL context): one per thread.
class BlockCipher {
 public:
  BlockCipher(const Key& data_key, const FileId& file);
  ~BlockCipher();
  BlockCipher(const BlockCipher&) = delete;
  BlockCipher& operator=(const BlockCipher&) = delete;
  BlockCipher(BlockCipher&&) noexcept;
  BlockCipher& operator=(BlockCipher&&) noexcept;

  // out[0, bytes) = E(in[0, bytes)); in and out may be the same buffer.
  Tag seal(uint64_t block, const void* in, size_t bytes, void* out);
  // out = D(in) if the tag holds; false (out unspecified) if the block, its index, the file id
  // or the key differ from what sealed it.
  bool open(uint64_t block, const void* in, size_t bytes, void* out, const Tag& tag);

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
  Key key_;
  FileId file_;
};

// Incremental SHA-256 (a digest over data given in pieces).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t bytes);
  Digest finish();

 private:
  void* ctx_;
};

}  // namespace trident::security
