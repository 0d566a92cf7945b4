// The local tier's encrypted payload (format version 2, private to src/io): the pieces' bytes,
// concatenated in the header's order, sealed in numbered blocks of block_bytes (the last one
// shorter) by security::BlockCipher under a data key drawn for the file; the header's
// "encryption" object says how:
//   {"cipher": "aes-256-gcm", "key_id": 16 hex digits, "wrapped_key": 120 hex digits (the data
//    key wrapped under the master key), "file_id": 32 hex digits, "block_bytes": N}
// The tags (16 bytes per block) follow the payload, so a reader checks every block before it
// writes into any tensor (verify, then read).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "trident/core/json.hpp"
#include "trident/io/local_state_file.hpp"
#include "trident/security/crypto.hpp"

namespace trident::io::sealed {

inline constexpr uint64_t kSealedBlockBytes = uint64_t(16) << 20;

class LocalEncryption {
 public:
  // A new file: a fresh data key and file id, the data key wrapped under `master`.
  explicit LocalEncryption(const security::MasterKey& master);
  // A file's header: CheckpointKeyError naming path without `master` or with another key's
  // id; ConfigError when its data key does not unwrap or the fields are malformed.
  LocalEncryption(const Json& header, const std::string& path, const security::MasterKey* master);
  ~LocalEncryption();
  LocalEncryption(const LocalEncryption&) = delete;
  LocalEncryption& operator=(const LocalEncryption&) = delete;

  Json header() const;
  uint64_t blocks(uint64_t payload_bytes) const { return (payload_bytes + block_bytes_ - 1) / block_bytes_; }

  // Seals the pieces into f, block by block; the tags in block order. False on a short write.
  bool write(std::FILE* f, const std::vector<LocalPiece>& pieces, std::vector<security::Tag>& tags);
  // Reads the payload from f (at its start) and opens every block with its tag; into the pieces
  // when `into` is set, else into scratch (verification). ConfigError naming path and the block.
  void read(std::FILE* f, const std::string& path, const std::vector<LocalPiece>& pieces,
            const std::vector<security::Tag>& tags, bool into);

 private:
  std::string key_id_;
  security::WrappedKey wrapped_{};
  security::FileId file_{};
  uint64_t block_bytes_ = kSealedBlockBytes;
  security::Key data_key_{};
};

}  // namespace trident::io::sealed
