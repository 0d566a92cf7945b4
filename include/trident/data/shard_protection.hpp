// What protects a version-2 shard (shard_format.hpp): every block of the .bin is either hashed
// (SHA-256) or encrypted (AES-256-GCM under a per-file data key wrapped by the user's key,
// security/crypto.hpp), and the .idx ends in a trailer over all its bytes, so a flipped byte in
// either file is found before its tokens are used.
//
// The 104 protection bytes (.idx bytes 40..143):
//   0..3    uint32 flags (1 = encrypted)
//   4..7    uint32 block size S in bytes (a multiple of 4)
//   8..23   key id (16 hex digits; zeros when plain)
//   24..83  the wrapped data key (zeros when plain)
//   84..87  zero
//   88..103 file id (16 random bytes; zeros when plain): the associated data of every block
// Trailer (48 bytes): plain: SHA-256 of the .idx bytes before it, then 16 zeros; encrypted:
// that digest sealed as block 2^64 - 1 under the data key (32 bytes) and its tag.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "trident/data/shard_format.hpp"
#include "trident/security/crypto.hpp"

namespace trident::data {

inline constexpr uint32_t kShardBlockBytes = 64 * 1024;  // small: a sampled row decrypts ~1 block
using ShardBlockEntry = std::array<unsigned char, kShardBlockEntryBytes>;
using ShardTrailer = std::array<unsigned char, kShardTrailerBytes>;

class ShardProtection {
 public:
  // A new file's protection: hashed blocks, or encrypted under a fresh data key and file id.
  static ShardProtection make(const security::MasterKey* key, uint32_t block_bytes = kShardBlockBytes);
  // From an index's protection bytes; `what` names the file in errors. An encrypted file needs
  // `key` (ConfigError when it is missing or is not the key the file was written with).
  static ShardProtection read(const unsigned char* bytes, const security::MasterKey* key, const std::string& what);

  bool encrypted() const { return cipher_.has_value(); }
  uint32_t block_bytes() const { return block_bytes_; }
  const std::string& key_id() const { return key_id_; }
  std::array<unsigned char, kShardProtectionBytes> bytes() const;

  // A writer's block b, in place: encrypted (same size) when the file is; returns its entry.
  ShardBlockEntry seal_block(uint64_t block, unsigned char* data, size_t size);
  // A reader's block b: in -> out (decrypted or copied) if its entry holds; false if not.
  bool open_block(uint64_t block, const unsigned char* in, size_t size, unsigned char* out, const ShardBlockEntry& entry);
  ShardTrailer seal_index(const unsigned char* idx, size_t size);
  bool index_holds(const unsigned char* idx, size_t size, const ShardTrailer& trailer);

  // The state every rank of a parallel writer must share (rank 0 makes it, the others take it).
  std::array<unsigned char, kShardProtectionBytes + 32> shared_state() const;
  static ShardProtection from_shared_state(const unsigned char* state);

 private:
  uint32_t block_bytes_ = kShardBlockBytes;
  std::string key_id_;
  security::WrappedKey wrapped_{};
  security::FileId file_{};
  security::Key data_key_{};
  std::optional<security::BlockCipher> cipher_;
};

}  // namespace trident::data
