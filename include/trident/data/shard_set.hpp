// ShardSet: the token shards `trident prep --shards N` wrote under one prefix, read as one
// virtual concatenation with ShardReader's API. Naming (shard_file_prefix):
//   N = 1:  <prefix>.bin / <prefix>.idx
//   N > 1:  <prefix>-00000-of-0000N.bin/.idx ... <prefix>-0000(N-1)-of-0000N.bin/.idx
// Document d of the set is document d - first(s) of shard s, shards in index order; token
// offsets likewise. Every shard must exist and all must share one vocabulary, else ConfigError
// naming the file. Movable, not copyable.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/data/shard_format.hpp"

namespace trident::data {

// The file prefix of shard `index` of `count` (count = 1: `prefix` itself).
std::string shard_file_prefix(const std::string& prefix, int index, int count);
// The .idx and .bin files of the shards under prefix that exist (none when there are none).
std::vector<std::string> shard_files(const std::string& prefix);

class ShardSet {
 public:
  // Opens <prefix>.bin/.idx when <prefix>.idx exists, else every <prefix>-*-of-N shard; key:
  // the key of encrypted shards (not owned; nullptr: every shard must be plain).
  explicit ShardSet(std::string prefix, const security::MasterKey* key = nullptr);

  const std::string& prefix() const { return prefix_; }
  uint64_t num_documents() const { return doc_begin_.back(); }
  uint64_t num_tokens() const { return token_begin_.back(); }
  uint64_t vocab() const { return shards_.front().vocab(); }
  uint32_t token_bytes() const { return shards_.front().token_bytes(); }
  bool has_loss_starts() const { return has_loss_starts_; }

  // Span of document d in the set's token offsets (begin/end shifted by the shard's base).
  DocumentSpan document(uint64_t d) const;
  uint64_t document_of(uint64_t t) const;
  uint32_t token(uint64_t t) const;
  // out[0, count) = tokens [begin, begin + count) of the concatenation, across shard boundaries.
  void copy_tokens(uint64_t begin, uint64_t count, int32_t* out) const;

  int num_shards() const { return static_cast<int>(shards_.size()); }
  const ShardReader& shard(int s) const { return shards_[static_cast<size_t>(s)]; }

 private:
  size_t shard_of_token(uint64_t t) const;

  std::string prefix_;
  std::vector<ShardReader> shards_;
  std::vector<uint64_t> doc_begin_{0};    // shard s holds documents [doc_begin_[s], doc_begin_[s+1])
  std::vector<uint64_t> token_begin_{0};  // and tokens [token_begin_[s], token_begin_[s+1])
  bool has_loss_starts_ = false;
};

}  // namespace trident::data
