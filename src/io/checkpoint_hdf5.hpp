// What the checkpoint files' parts share (private to src/io): HDF5 property lists for
// collective MPI-IO, the hyperslab selection of a rank's pieces, root attributes, checksums.
#pragma once
#include <hdf5.h>
#include <mpi.h>

#include <exception>
#include <map>
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
// Adds the piece's stored elements to the file selection of a dataset of `rank` dimensions.
void select_piece(hid_t space, int rank, const ShardPiece& p);
hid_t memory_type(const Tensor& t);
// This rank's pieces of one dataset (the written ones when writing), in increasing local order.
std::vector<const ShardPiece*> pieces_of(const std::string& name, const std::vector<ShardPiece>& pieces, bool writing);
// A dataset's shape, which in a checkpoint is a vector or a matrix (ConfigError otherwise).
Shape dataset_shape(hid_t dataset, const std::string& path, const std::string& name);

// Root attributes (checkpoint_attributes.cpp): every one given plus format_version, and
// kAttributesChecksum over them all, checked by read_attributes (ConfigError on a mismatch).
inline constexpr const char* kAttributesChecksum = "attributes_checksum";
void write_attributes(hid_t file, const CheckpointAttributes& attributes);
void write_string_attribute(hid_t file, const std::string& name, const std::string& text);
void write_number_attribute(hid_t file, const std::string& name, double value);
uint64_t attributes_checksum(const CheckpointAttributes& attributes);
CheckpointAttributes read_attributes(hid_t file, const std::string& path);

// Checksums (checkpoint_checksum.cpp): this rank's share of a dataset's checksum of `cols`
// columns from its written pieces; the attribute that stores the sum; and the check on load.
uint64_t partial_checksum(const std::vector<const ShardPiece*>& mine, int64_t cols);
void write_checksum_attribute(hid_t dataset, uint64_t checksum);
void verify_checksums(hid_t file, const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& expected);

}  // namespace trident::io::detail
