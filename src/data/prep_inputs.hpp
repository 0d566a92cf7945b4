// Prep's input, split among ranks and read back as documents. Every rank computes the same
// plan: text files are one piece (one document) each; JSONL files are cut into pieces of about
// split_bytes, each line belonging to the piece holding its first byte. Rank r reads the
// pieces that start in its share [r*T/P, (r+1)*T/P) of the T input bytes, so ranks read
// contiguous runs of the input in order. Each document carries its order key
// (file index << 40 | byte offset of its line): the same under any rank count.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trident/data/prep_record.hpp"

namespace trident::data {

struct InputPiece {
  uint32_t file;   // index into the input list
  bool jsonl;      // *.jsonl: one document per non-blank line
  uint64_t begin;  // byte range [begin, end) of the file
  uint64_t end;
};

inline uint64_t document_order_key(uint32_t file, uint64_t offset) { return uint64_t(file) << 40 | offset; }

// Sizes of the inputs in bytes (rank 0 asks the file system once for all ranks). ConfigError
// for a missing or unreadable input, a directory, a file of 2^40 bytes or more.
std::vector<int64_t> input_file_sizes(const std::vector<std::string>& inputs);

// This rank's pieces, from every input's name and size.
std::vector<InputPiece> plan_rank_pieces(const std::vector<std::string>& inputs, const std::vector<int64_t>& sizes,
                                         uint64_t split_bytes, int rank, int size);

struct PieceCallbacks {
  std::function<void(uint64_t key, Example&& example)> document;
  // Set: a malformed line (or a text file that is not UTF-8) is passed here with its
  // "file:line: what" message and skipped; unset: it is a ConfigError.
  std::function<void(const std::string& message)> bad_line;
};

// Reads the documents of `piece` of file `path` in order.
void read_piece(const std::string& path, const InputPiece& piece, const PieceCallbacks& callbacks);

}  // namespace trident::data
