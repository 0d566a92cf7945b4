// One rank's own training state in one file on node-local storage: the local checkpoint tier
// (checkpoint.local_dir, train/checkpoint/local_tier.hpp). Unlike the parallel HDF5 checkpoints it holds
// the rank's pieces as they lie in memory, so only the same layout reads it back, and it needs
// no collective I/O. Layout (little-endian):
//   "TRDLOCAL" | uint64 header bytes | header (JSON) | each piece's bytes, in the header's order |
//   uint64 checksum of everything before it (magic, length, header, then each piece in blocks
//   of 16 MiB, chained: a reader verifies the whole file before it writes into any tensor)
// Header: {"version": 1, "attributes": {"numbers": {...}, "texts": {...}},
//          "pieces": [[dataset, begin, elements, dtype], ...]}.
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

// Writes path atomically; an Error naming the file when it cannot (disk full, no directory).
void write_local_state(const std::string& path, const CheckpointAttributes& attributes,
                       const std::vector<LocalPiece>& pieces);

// The attributes of a complete file without reading its pieces (ConfigError when the header
// is not one: a truncated or foreign file).
CheckpointAttributes read_local_attributes(const std::string& path);

// Checks that the file holds exactly these pieces (dataset, begin, elements, dtype) in this
// order and that its checksum holds, writing no tensor; a ConfigError naming the file and the
// difference otherwise. Returns the attributes.
CheckpointAttributes verify_local_state(const std::string& path, const std::vector<LocalPiece>& pieces);
// Reads the pieces into `pieces`' tensors (the same checks of the header, not the checksum:
// verify_local_state first, on every rank, so that no rank loads a step another cannot).
CheckpointAttributes read_local_state(const std::string& path, const std::vector<LocalPiece>& pieces);

// The checksum the files carry (4 lanes of 64-bit multiply-rotate over 8-byte words, the tail
// zero-padded), chained across calls by `seed`: several GB/s, no CPU-specific instructions.
uint64_t local_checksum(const void* data, size_t bytes, uint64_t seed);

}  // namespace trident::io
