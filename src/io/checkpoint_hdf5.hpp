// What the checkpoint files' parts share (private to src/io): HDF5 property lists for
// collective MPI-IO, the hyperslab selection of a rank's pieces, root attributes, checksums.
#pragma once
#include <hdf5.h>
#include <mpi.h>

#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trident/core/error.hpp"
#include "trident/dist/agreement.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/io/hdf5_file.hpp"

namespace trident::io::detail {

// An I/O failure is the environment's, not a bug: a plain message, no statement or file:line.
template <typename... Args>
void require_io(bool ok, const Args&... args) {
  if (!ok) throw Error(::trident::detail::concat(args...));
}

// One phase of a collective read or write: a failure on any rank (an exception) is agreed on by
// every rank before the next collective HDF5 call, so no rank goes on into a collective the
// others left (a full disk fails H5Dwrite on some ranks only). Every rank then throws the first
// failing rank's error.
template <typename Phase>
void agreed(MPI_Comm comm, Phase&& phase) {
  std::exception_ptr error;
  try {
    phase();
  } catch (...) {
    error = std::current_exception();
  }
  dist::throw_if_any_failed(comm, error);
}

// File access through the MPI-IO driver over comm (collective metadata, stripe alignment).
H5Handle file_access(MPI_Comm comm);
// Collective data transfers.
H5Handle collective_transfer();

// Elements of the piece that are stored (rows below stored_rows): a prefix of [begin, end).
int64_t stored_count(const ShardPiece& p);
hid_t memory_type(const Tensor& t);

// One collective transfer of this rank's pieces of a dataset: their blocks selected in the file
// dataspace, and on the memory side a dataspace the shape of the blocks' bounding box selecting
// the same blocks, over a buffer in the box's row-major layout. (With a flat memory space HDF5
// maps a chunked dataset's selection to its chunks element by element, measured ~30x slower
// than block by block for a shape-alike memory selection.) Pieces spread far apart (a box over
// twice their size) fall back to a flat buffer in the pieces' order.
class PieceTransfer {
 public:
  // Selects the pieces in file_space (a dataset of `rank` dimensions); none selects nothing.
  PieceTransfer(hid_t file_space, int rank, const std::vector<const ShardPiece*>& mine);
  hid_t memspace() const { return memspace_.get(); }
  hid_t type() const { return type_; }
  void* buffer() { return count_ > 0 ? buffer_.get() : nullptr; }
  void pack(const std::vector<const ShardPiece*>& mine);          // pieces -> buffer
  void unpack(const std::vector<const ShardPiece*>& mine) const;  // buffer -> pieces

 private:
  struct Block {
    int64_t row, col, rows, cols;  // global coordinates (a vector: row 0)
  };
  // Calls f(piece, block, offset in the piece's data) for every block, in the pieces' order.
  template <typename F>
  void each_block(const std::vector<const ShardPiece*>& mine, F&& f) const;
  size_t box_offset(const Block& b, int64_t row, size_t flat_at) const;

  H5Handle memspace_;
  std::unique_ptr<char[]> buffer_;  // not zeroed: every selected element is packed or read
  hid_t type_ = H5T_NATIVE_FLOAT;
  size_t elem_ = sizeof(float);
  int64_t count_ = 0;
  bool flat_ = false;
  int64_t box_row_ = 0, box_col_ = 0, box_width_ = 0;
};
// This rank's pieces of one dataset (the written ones when writing), in increasing local order.
std::vector<const ShardPiece*> pieces_of(const std::string& name, const std::vector<ShardPiece>& pieces, bool writing);
// A dataset's shape, which in a checkpoint is a vector or a matrix (ConfigError otherwise).
Shape dataset_shape(hid_t dataset, const std::string& path, const std::string& name);

// Root attributes (checkpoint_attributes.cpp): every one given plus format_version (1 unless
// given), and
// kAttributesChecksum over them all, checked by read_attributes (ConfigError on a mismatch).
inline constexpr const char* kAttributesChecksum = "attributes_checksum";
void write_attributes(hid_t file, const CheckpointAttributes& attributes);
void write_string_attribute(hid_t file, const std::string& name, const std::string& text);
void write_number_attribute(hid_t file, const std::string& name, double value);
uint64_t attributes_checksum(const CheckpointAttributes& attributes);
CheckpointAttributes read_attributes(hid_t file, const std::string& path);

// Checksums (checkpoint_checksum.cpp): this rank's share of a dataset's checksum of `cols`
// columns from its written pieces; the attribute that stores the sum; and the check on load.
// verify_checksums reads every tensor, so with encryption it is also where every chunk's tag is
// checked (tags: null for a plain file).
class CheckpointTagCheck;
uint64_t partial_checksum(const std::vector<const ShardPiece*>& mine, int64_t cols);
void write_checksum_attribute(hid_t dataset, uint64_t checksum);
void verify_checksums(hid_t file, const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& expected,
                      const CheckpointTagCheck* tags);
// A dataset's stored checksum attribute (ConfigError naming the tensor when it has none).
uint64_t stored_checksum(hid_t dataset, const std::string& path, const std::string& name);
// Collective: sums every rank's computed shares and compares them with the stored checksums, in
// the datasets' order (ConfigError naming the first tensor that fails).
void compare_checksums(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                       std::vector<uint64_t>& computed, const std::vector<uint64_t>& stored);
// Collective: the datasets whose pieces marked `write`, over every rank, hold each stored element
// once (as a layout's pieces do): their checksums can be summed from the pieces themselves.
std::map<std::string, Shape> covered_once(MPI_Comm comm, const std::map<std::string, Shape>& expected,
                                          const std::vector<ShardPiece>& pieces);

}  // namespace trident::io::detail
