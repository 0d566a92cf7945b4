// Prep's output shards, written by all ranks at once: each rank's documents of a shard follow
// those of the ranks below it (prefix sums of the counts), so the files equal what one rank
// would write (but for the random file id and data key). The .bin is protected in blocks
// (shard_protection.hpp): a block is sealed by the rank that holds its first byte, which gets
// the block's other bytes from the ranks above it in memory, so no plain token of an encrypted
// shard ever reaches the disk. Everything goes to <file>.bin.tmp / <file>.idx.tmp first; publish() renames
// only after every rank has written and synced its part, and an unpublished output removes its
// temporaries, so existing shards survive any failure.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trident/data/prep_comm.hpp"
#include "trident/data/shard_protection.hpp"

namespace trident::data {

// This rank's documents of one output shard, in order (views of the rank's token buffer).
struct LocalShardPart {
  std::vector<std::span<const uint32_t>> documents;
  std::vector<uint64_t> loss_starts;
  uint64_t tokens = 0;
};

class ParallelShardOutput {
 public:
  // files: the shard file prefixes (shard_file_prefix), the same list on every rank.
  // key: encrypt the shards under it (nullptr: hashed blocks only).
  ParallelShardOutput(std::vector<std::string> files, uint64_t vocab, const PrepComm& comm,
                      const security::MasterKey* key);
  ~ParallelShardOutput();
  ParallelShardOutput(const ParallelShardOutput&) = delete;
  ParallelShardOutput& operator=(const ParallelShardOutput&) = delete;

  // Collective: writes parts[i] of every rank into files[i]'s temporaries and syncs them;
  // returns the documents and tokens of each file (the same on every rank). Any rank's error
  // is thrown on every rank.
  struct FileTotals {
    int64_t documents, tokens;
  };
  std::vector<FileTotals> write(const std::vector<LocalShardPart>& parts);

  // Rank 0: renames the temporaries over the final names (.bin first, then .idx).
  void publish();

 private:
  struct FileState;  // one file's protection, layout and this rank's bytes
  void share_protections();
  void create_temporaries(const std::vector<FileTotals>& totals) const;
  void write_part(FileState& file, const LocalShardPart& part, int64_t first_doc) const;
  void exchange_block_heads(std::vector<FileState>& files) const;
  void seal_blocks(FileState& file) const;
  void seal_indexes(const std::vector<FileState>& files) const;
  void remove_temporaries() const;

  std::vector<std::string> files_;
  uint64_t vocab_;
  const PrepComm& comm_;
  const security::MasterKey* key_;
  std::vector<ShardProtection> protections_;
  bool published_ = false;
};

}  // namespace trident::data
