// Encrypted checkpoints, the global tier's side (private to src/io): the file's data key drawn
// and shared when writing, the tensors' chunked and filtered creation properties, the root
// attributes that say a file is encrypted, and the agreement after each collective read that no
// chunk failed its tag.
//
// Chunks: a few MiB (kChunkBytes at most), cut along the boundaries of the pieces the ranks
// write (a tensor-parallel rank's rows or columns), so a chunk is usually one rank's alone: HDF5
// writes a filtered chunk from one owner rank and ships other ranks' parts of it there first.
// HDF5 1.10 allocates every chunk of a parallel file when the dataset is created and writes it
// with a sealed fill chunk then (early allocation and fill are forced for filtered datasets);
// the data then overwrites it in place, the sealed size being the same.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint_hdf5.hpp"
#include "encryption_filter.hpp"

namespace trident::io::detail {

inline constexpr const char* kEncryptionAttribute = "encryption";            // text: kCipherName
inline constexpr const char* kEncryptionKeyAttribute = "encryption_key_id";  // text: the master key's id
inline constexpr const char* kCipherName = "aes-256-gcm";
// Below the 4 MiB alignment threshold (file_access): sealed chunks (+28 bytes) pack densely
// instead of each taking the next 1 MiB boundary.
inline constexpr int64_t kChunkBytes = int64_t(2) << 20;

// H5Zregister of the filter in this process (once; any thread that does HDF5 I/O).
void register_encryption_filter();

// Where the written pieces of one dataset put block boundaries, over every rank: the narrowest
// piece (columns of a column-split rank; the full width otherwise) and the fewest whole rows of
// a piece (kNoHint: none starts and ends on row boundaries).
struct ChunkHint {
  static constexpr int64_t kNoHint = INT64_MAX;
  int64_t cols = kNoHint, rows = kNoHint;
};
// Chunk dimensions of a dataset of this shape (empty: none, a dataset without elements).
std::vector<hsize_t> chunk_dims(const Shape& shape, const ChunkHint& hint);

// One encrypted checkpoint being written. Collective construction over comm.
class CheckpointEncryption {
 public:
  CheckpointEncryption(const security::MasterKey& key, MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                       const std::vector<ShardPiece>& pieces);
  // The root attributes: encryption, encryption_key_id, format_version 2.
  void add_attributes(CheckpointAttributes& attributes) const;
  // Chunked, filtered dataset creation properties of one tensor.
  H5Handle creation_properties(const std::string& name, const Shape& shape) const;
  // This rank, after the tensor's write: an Error when a chunk could not be sealed.
  void check_written(const std::string& tmp, const std::string& name) const;

 private:
  crypt::FilterKeyScope scope_;
  crypt::FileSecret secret_;
  std::map<std::string, ChunkHint> hints_;
};

// The check of every collective read of an encrypted checkpoint's tensors.
class CheckpointTagCheck {
 public:
  explicit CheckpointTagCheck(const security::MasterKey& key);
  // Collective over comm, after each read of tensor `name` (every rank, the same order): when a
  // chunk failed its tag on any rank, every rank throws a ConfigError naming the file, the tensor
  // and (found by its nonce among the tensor's chunks) the chunk.
  void agree(hid_t file, const std::string& path, const std::string& name, MPI_Comm comm) const;

 private:
  crypt::FilterKeyScope scope_;
};

// The check of an encrypted read that needs one (null for a plain file) after check_checkpoint_key.
std::unique_ptr<CheckpointTagCheck> tag_check_for(const CheckpointAttributes& attributes, const std::string& path,
                                                  const security::MasterKey* key);

}  // namespace trident::io::detail
