// One rank's own training state in one file on node-local storage: the local checkpoint tier
// (checkpoint.local_dir, train/checkpoint/local_tier.hpp). Unlike the parallel HDF5 checkpoints it holds
// the rank's pieces as they lie in memory, so only the same layout reads it back, and it needs
// no collective I/O. Layout (little-endian):
//   "TRDLOCAL" | uint64 header bytes | header (JSON) | each piece's bytes, in the header's order |
//   uint64 checksum of everything before it (magic, length, header, then each piece in blocks
//   of 16 MiB, chained: a reader verifies the whole file before it writes into any tensor)
// Header: {"version": 1, "attributes": {"numbers": {...}, "texts": {...}},
//          "pieces": [[dataset, begin, elements, dtype], ...]}.
// Encrypted (a master key given; version 2): the header gains "encryption" (cipher, key id, the
// file's data key wrapped, file id, block size), the pieces' bytes are sealed in blocks
// (AES-256-GCM, security::BlockCipher), the blocks' 16-byte tags follow them, and the checksum
// covers magic, length, header and tags (the tags cover the payload):
//   "TRDLOCAL" | uint64 header bytes | header | sealed payload | tags | uint64 checksum
// (io/local_state_crypto.hpp). Version 1 files are still read; plain files are still version 1.
// Written as <path>.tmp, fsync-ed and renamed: a file under its name is complete.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/core/tensor.hpp"
#include "trident/io/checkpoint_file.hpp"

namespace trident::io {

// A piece as the local tier stores it: a dataset's local elements [begin, begin + numel) in
// data (host memory, contiguous).
struct LocalPiece {
  std::string dataset;
  int64_t begin = 0;
  Tensor data;
};

// Writes path atomically, encrypted under key (nullptr: plain); an Error naming the file when it
// cannot (disk full, no directory).
void write_local_state(const std::string& path, const CheckpointAttributes& attributes,
                       const std::vector<LocalPiece>& pieces, const security::MasterKey* key);

// The attributes of a complete file without reading its pieces (ConfigError when the header
// is not one: a truncated or foreign file).
CheckpointAttributes read_local_attributes(const std::string& path);

// Checks that the file holds exactly these pieces (dataset, begin, elements, dtype) in this
// order and that its checksum (and, encrypted, every block's tag) holds, writing no tensor; a
// ConfigError naming the file and the difference (or block) otherwise, a CheckpointKeyError for
// an encrypted file without `key` or with another key. A plain file needs no key. Returns the
// attributes.
CheckpointAttributes verify_local_state(const std::string& path, const std::vector<LocalPiece>& pieces,
                                        const security::MasterKey* key);
// Reads the pieces into `pieces`' tensors (the same checks of the header, not the checksum:
// verify_local_state first, on every rank, so that no rank loads a step another cannot).
CheckpointAttributes read_local_state(const std::string& path, const std::vector<LocalPiece>& pieces,
                                      const security::MasterKey* key);

// The checksum the files carry (4 lanes of 64-bit multiply-rotate over 8-byte words, the tail
// zero-padded), chained across calls by `seed`: several GB/s, no CPU-specific instructions.
uint64_t local_checksum(const void* data, size_t bytes, uint64_t seed);

}  // namespace trident::io
