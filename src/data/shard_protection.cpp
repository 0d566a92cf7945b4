// ShardProtection: SHA-256 or AES-256-GCM per block of a shard, and the index trailer.
#include "trident/data/shard_protection.hpp"

#include <cstring>

#include "trident/core/error.hpp"

namespace trident::data {
namespace {
constexpr uint32_t kEncrypted = 1;
constexpr uint64_t kIndexBlock = ~uint64_t(0);  // the trailer's block number under the data key
}  // namespace

ShardProtection ShardProtection::make(const security::MasterKey* key, uint32_t block_bytes) {
  TRIDENT_CHECK(block_bytes > 0 && block_bytes % 4 == 0, "block_bytes=", block_bytes);
  ShardProtection p;
  p.block_bytes_ = block_bytes;
  if (key) {  // plain files keep a zero file id: they are then the same bytes on any rank count
    security::random_bytes(p.file_);
    security::random_bytes(p.data_key_);
    p.key_id_ = key->id;
    p.wrapped_ = security::wrap_key(*key, p.data_key_);
    p.cipher_.emplace(p.data_key_, p.file_);
  }
  return p;
}

std::array<unsigned char, kShardProtectionBytes> ShardProtection::bytes() const {
  std::array<unsigned char, kShardProtectionBytes> b{};
  const uint32_t flags = encrypted() ? kEncrypted : 0;
  std::memcpy(b.data(), &flags, 4);
  std::memcpy(b.data() + 4, &block_bytes_, 4);
  std::memcpy(b.data() + 8, key_id_.data(), std::min<size_t>(key_id_.size(), 16));
  std::memcpy(b.data() + 24, wrapped_.data(), wrapped_.size());
  std::memcpy(b.data() + 88, file_.data(), file_.size());
  return b;
}

ShardProtection ShardProtection::read(const unsigned char* bytes, const security::MasterKey* key, const std::string& what) {
  ShardProtection p;
  uint32_t flags = 0;
  std::memcpy(&flags, bytes, 4);
  std::memcpy(&p.block_bytes_, bytes + 4, 4);
  TRIDENT_CONFIG_CHECK((flags & ~kEncrypted) == 0, what, ": unknown protection flags ", flags, "; re-run trident prep");
  TRIDENT_CONFIG_CHECK(p.block_bytes_ > 0 && p.block_bytes_ % 4 == 0, what, ": block size ", p.block_bytes_,
                       " is not a positive multiple of 4 (corrupt); re-run trident prep");
  std::memcpy(p.file_.data(), bytes + 88, p.file_.size());
  if (!(flags & kEncrypted)) return p;
  p.key_id_.assign(reinterpret_cast<const char*>(bytes + 8), 16);
  std::memcpy(p.wrapped_.data(), bytes + 24, p.wrapped_.size());
  TRIDENT_CONFIG_CHECK(key != nullptr, what, " is encrypted (key id ", p.key_id_,
                       "): give its key (security.key_file, or --key-file)");
  TRIDENT_CONFIG_CHECK(key->id == p.key_id_, what, ": the key does not match (the file was encrypted under key id ",
                       p.key_id_, ", the key given has id ", key->id, ")");
  p.data_key_ = security::unwrap_key(*key, p.wrapped_, what);
  p.key_id_ = key->id;
  p.cipher_.emplace(p.data_key_, p.file_);
  return p;
}

std::array<unsigned char, kShardProtectionBytes + 32> ShardProtection::shared_state() const {
  std::array<unsigned char, kShardProtectionBytes + 32> s{};
  const auto b = bytes();
  std::memcpy(s.data(), b.data(), b.size());
  std::memcpy(s.data() + b.size(), data_key_.data(), data_key_.size());
  return s;
}

ShardProtection ShardProtection::from_shared_state(const unsigned char* state) {
  ShardProtection p;
  uint32_t flags = 0;
  std::memcpy(&flags, state, 4);
  std::memcpy(&p.block_bytes_, state + 4, 4);
  std::memcpy(p.file_.data(), state + 88, p.file_.size());
  if (flags & kEncrypted) {
    p.key_id_.assign(reinterpret_cast<const char*>(state + 8), 16);
    std::memcpy(p.wrapped_.data(), state + 24, p.wrapped_.size());
    std::memcpy(p.data_key_.data(), state + kShardProtectionBytes, p.data_key_.size());
    p.cipher_.emplace(p.data_key_, p.file_);
  }
  return p;
}

ShardBlockEntry ShardProtection::seal_block(uint64_t block, unsigned char* data, size_t size) {
  ShardBlockEntry entry{};
  if (cipher_) {
    const security::Tag tag = cipher_->seal(block, data, size, data);
    std::memcpy(entry.data(), tag.data(), tag.size());
  } else {
    const security::Digest d = security::sha256(data, size);
    std::memcpy(entry.data(), d.data(), d.size());
  }
  return entry;
}

bool ShardProtection::open_block(uint64_t block, const unsigned char* in, size_t size, unsigned char* out,
                                 const ShardBlockEntry& entry) {
  if (cipher_) {
    security::Tag tag{};
    std::memcpy(tag.data(), entry.data(), tag.size());
    return cipher_->open(block, in, size, out, tag);
  }
  const security::Digest d = security::sha256(in, size);
  if (std::memcmp(d.data(), entry.data(), d.size()) != 0) return false;
  if (out != in) std::memcpy(out, in, size);
  return true;
}

ShardTrailer ShardProtection::seal_index(const unsigned char* idx, size_t size) {
  ShardTrailer t{};
  security::Digest d = security::sha256(idx, size);
  if (cipher_) {
    const security::Tag tag = cipher_->seal(kIndexBlock, d.data(), d.size(), d.data());
    std::memcpy(t.data() + 32, tag.data(), tag.size());
  }
  std::memcpy(t.data(), d.data(), d.size());
  return t;
}

bool ShardProtection::index_holds(const unsigned char* idx, size_t size, const ShardTrailer& trailer) {
  const security::Digest d = security::sha256(idx, size);
  security::Digest stored{};
  std::memcpy(stored.data(), trailer.data(), stored.size());
  if (cipher_) {
    security::Tag tag{};
    std::memcpy(tag.data(), trailer.data() + 32, tag.size());
    if (!cipher_->open(kIndexBlock, stored.data(), stored.size(), stored.data(), tag)) return false;
  }
  return std::memcmp(d.data(), stored.data(), d.size()) == 0;
}

}  // namespace trident::data
