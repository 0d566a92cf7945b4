// Token shards (docs/design.md section 8): <prefix>.bin holds the token ids of all documents
// concatenated, <prefix>.idx the header, document offsets, per-document loss starts and, from
// version 2, what protects the .bin block by block.
//
// .idx layout (little-endian), version 2 (version 1 is the same without bytes 40..143, the
// block table and the trailer, so its offsets start at byte 40):
//   bytes  0..7   magic "TRDNTIDX"
//          8..11  uint32 version (2)
//         12..15  uint32 dtype code: 2 = uint16 tokens, 4 = uint32 tokens (= bytes per token)
//         16..23  uint64 vocab size (uint16 is used whenever vocab <= 65536)
//         24..31  uint64 document count D
//         32..39  uint64 total tokens N
//         40..143 protection (shard_protection.hpp): flags, block size S, key id, wrapped data
//                 key, file id
//        144..    (D+1) uint64 document start offsets in tokens (offsets[D] = N), then
//                 D uint64 loss starts: the token offset *within* document d at which the loss
//                 starts (prompt tokens before it are not trained on; 0 for plain text), then
//                 ceil(N * dtype / S) block entries of 32 bytes (SHA-256 of the block's bytes,
//                 or its AES-256-GCM tag and 16 zero bytes when encrypted), then the 48-byte
//                 trailer that protects every byte before it.
// .bin layout: N token ids of the dtype, nothing else (size = N * dtype code bytes), in blocks
// of S bytes (the last shorter); encrypted, each block is its ciphertext (the same size).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "trident/security/crypto.hpp"

namespace trident::data {

inline constexpr char kShardMagic[8] = {'T', 'R', 'D', 'N', 'T', 'I', 'D', 'X'};
inline constexpr uint32_t kShardVersion = 2;         // written; version 1 is still read
inline constexpr size_t kShardHeaderBytes = 40;       // the fields every version shares
inline constexpr size_t kShardProtectionBytes = 104;  // version 2's bytes 40..143
inline constexpr size_t kShardBlockEntryBytes = 32;
inline constexpr size_t kShardTrailerBytes = 48;

// Bytes per stored token id for a vocabulary: 2 when every id fits in uint16.
inline constexpr uint32_t shard_token_bytes(uint64_t vocab) { return vocab <= 65536 ? 2 : 4; }

// The .idx header above, and where its two arrays lie, for writers that fill an index in place.
struct ShardIndexHeader {
  unsigned char bytes[kShardHeaderBytes];
  ShardIndexHeader(uint64_t vocab, uint64_t documents, uint64_t tokens) {
    const uint32_t token_bytes = shard_token_bytes(vocab);
    const uint64_t counts[3] = {vocab, documents, tokens};
    std::memcpy(bytes, kShardMagic, 8);
    std::memcpy(bytes + 8, &kShardVersion, 4);
    std::memcpy(bytes + 12, &token_bytes, 4);
    std::memcpy(bytes + 16, counts, 24);
  }
};

// Where the parts of an index of `version` lie, for a shard of D documents and B blocks.
struct ShardIndexLayout {
  uint32_t version = kShardVersion;
  uint64_t documents = 0;
  uint64_t blocks = 0;  // version 2 only
  uint64_t arrays() const { return version == 1 ? kShardHeaderBytes : kShardHeaderBytes + kShardProtectionBytes; }
  uint64_t offset_position(uint64_t d) const { return arrays() + 8 * d; }
  uint64_t loss_start_position(uint64_t d) const { return arrays() + 8 * (documents + 1 + d); }
  uint64_t block_entry_position(uint64_t b) const { return arrays() + 8 * (2 * documents + 1) + kShardBlockEntryBytes * b; }
  uint64_t trailer_position() const { return block_entry_position(blocks); }
  uint64_t bytes() const { return version == 1 ? loss_start_position(documents) : trailer_position() + kShardTrailerBytes; }
};
// Blocks of S bytes covering a .bin of `bin_bytes`.
inline constexpr uint64_t shard_block_count(uint64_t bin_bytes, uint64_t block_bytes) {
  return (bin_bytes + block_bytes - 1) / block_bytes;
}

class ShardProtection;

// Streams documents into <prefix>.bin.tmp block by block (hashed, or encrypted under `key`) and,
// on finish(), writes <prefix>.idx.tmp, fsyncs both and renames them over <prefix>.bin /
// <prefix>.idx. Until finish() returns, existing shards under the prefix are untouched; a
// writer destroyed unfinished removes its .tmp files.
class ShardWriter {
 public:
  ShardWriter(std::string prefix, uint64_t vocab, const security::MasterKey* key = nullptr);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // tokens: ids < vocab; loss_start <= tokens.size() (0 = train on every token).
  void add_document(std::span<const uint32_t> tokens, uint64_t loss_start = 0);
  void finish();

  uint64_t num_documents() const { return loss_starts_.size(); }
  uint64_t num_tokens() const { return offsets_.back(); }

 private:
  void write_tokens(std::span<const uint32_t> tokens);
  void seal_block();  // block_ (full, or the last) to the .bin
  void discard_temporaries();

  std::string prefix_;
  uint64_t vocab_;
  uint32_t token_bytes_;
  std::FILE* bin_ = nullptr;  // <prefix>.bin.tmp while open
  std::vector<uint64_t> offsets_{0};
  std::vector<uint64_t> loss_starts_;
  std::vector<unsigned char> buffer_;  // tokens narrowed to the stored width
  std::unique_ptr<ShardProtection> protection_;
  std::vector<unsigned char> block_;   // the .bin block being filled (< block size bytes)
  std::vector<unsigned char> entries_; // the block table so far
  bool finished_ = false;
};

// A read-only memory mapping of a whole file: one RAII type per handle (STYLE.md rule 2).
class MappedFile {
 public:
  MappedFile() = default;
  // advice: an madvise() hint such as MADV_RANDOM (0 = none). Throws ConfigError if the file
  // cannot be opened or mapped.
  MappedFile(const std::string& path, int advice);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  const unsigned char* data() const { return static_cast<const unsigned char*>(data_); }
  size_t size() const { return size_; }
  // A new madvise() hint for the whole mapping (harmless if refused).
  void advise(int advice) const;

 private:
  void* data_ = nullptr;  // nullptr for an empty file (mmap of 0 bytes is not allowed)
  size_t size_ = 0;
};

// Where document d lies in the token stream: tokens [begin, end); the loss starts at the
// absolute token offset begin + loss_start.
struct DocumentSpan {
  uint64_t begin;
  uint64_t end;
  uint64_t loss_start;  // relative to begin
  uint64_t size() const { return end - begin; }
};

// Maps <prefix>.bin and <prefix>.idx read-only and validates them (magic, version, dtype,
// sizes, monotone offsets, loss starts inside their documents, the index trailer, every block's
// digest or tag and every token id below the header's vocab: one sequential pass over the .bin
// at open); every problem is a ConfigError naming the file and what is wrong. An encrypted
// shard needs `key` and is decrypted block by block as tokens are read (a small cache; the
// tag is checked on every decryption); a plain one is read from the mapping. Thread-safe reads.
// Movable, not copyable.
class ShardReader {
 public:
  explicit ShardReader(std::string prefix, const security::MasterKey* key = nullptr);
  ShardReader(ShardReader&&) noexcept;
  ShardReader& operator=(ShardReader&&) noexcept;
  ~ShardReader();

  const std::string& prefix() const { return prefix_; }
  uint64_t num_documents() const { return num_documents_; }
  uint64_t num_tokens() const { return num_tokens_; }
  uint64_t vocab() const { return vocab_; }
  uint32_t token_bytes() const { return token_bytes_; }
  uint32_t version() const { return layout_.version; }
  bool encrypted() const;
  // True if some document has a loss start > 0 (fine-tuning data with prompts).
  bool has_loss_starts() const { return has_loss_starts_; }

  DocumentSpan document(uint64_t d) const;
  // The document holding token offset t (t < num_tokens()), by binary search of the offsets.
  uint64_t document_of(uint64_t t) const;
  uint32_t token(uint64_t t) const;
  // out[0, count) = tokens [begin, begin + count), widened to int32 (batch building).
  void copy_tokens(uint64_t begin, uint64_t count, int32_t* out) const;

 private:
  struct Decrypted;  // the protection and the cache of decrypted blocks
  void validate_index(const security::MasterKey* key);
  void validate_tokens();
  uint64_t offset(uint64_t d) const;      // offsets[d], d in [0, D]
  uint64_t loss_start(uint64_t d) const;  // loss_starts[d], d in [0, D)
  // Calls visit(first token, count, bytes) over the plain bytes of tokens [begin, begin + count).
  template <typename Visit>
  void visit_tokens(uint64_t begin, uint64_t count, Visit&& visit) const;
  [[noreturn]] void block_failed(uint64_t block) const;

  std::string prefix_;
  MappedFile bin_;
  MappedFile idx_;
  ShardIndexLayout layout_;
  std::unique_ptr<Decrypted> decrypted_;
  uint64_t num_documents_ = 0;
  uint64_t num_tokens_ = 0;
  uint64_t vocab_ = 0;
  uint32_t token_bytes_ = 2;
  bool has_loss_starts_ = false;
};

}  // namespace trident::data
