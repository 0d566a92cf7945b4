// Parallel HDF5 checkpoint files (docs/design.md section 7): every tensor stored once in its global,
// unsharded shape under its global name; each rank writes or reads only its pieces, as
// hyperslabs, through the MPI-IO driver with collective transfers. Every rank creates every
// dataset in the same (sorted) order. A file is written under a temporary name, fsynced and
// renamed, so a partial file never carries a checkpoint's name.
//
// Encrypted checkpoints (a master key given): every tensor's chunks go through the private
// AES-256-GCM HDF5 filter under a data key drawn for the file and stored wrapped under the
// master key; names, shapes and attributes stay readable (docs/design.md section 7).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trident/core/error.hpp"
#include "trident/core/tensor.hpp"
#include "trident/security/crypto.hpp"

namespace trident::io {

// The newest format this trident reads: 1 plain, 2 encrypted (root attributes encryption and
// encryption_key_id). Plain checkpoints are still written as version 1.
inline constexpr int kCheckpointFormatVersion = 2;
inline constexpr int kPlainFormatVersion = 1, kEncryptedFormatVersion = 2;

// The checkpoint is encrypted and no key, or a key of another id, is given: no checkpoint of the
// run opens with it either, so a resume does not skip to an older one (a ConfigError: exit 2).
class CheckpointKeyError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// A rank's part of one dataset, seen as a matrix [rows, cols] (a vector is one row): local
// elements [begin, end) of a shard whose element (r, c) is global (row0 + r, col0 + c) and
// which is local_cols wide. Global rows >= stored_rows are padding: neither written nor read.
struct ShardPiece {
  std::string dataset;
  int64_t row0 = 0, col0 = 0, local_cols = 1;
  int64_t begin = 0, end = 0;
  int64_t stored_rows = 0;
  Tensor data;         // end - begin elements on the host (fp32 or fp64): source or destination
  bool write = true;   // false: another rank writes the same elements (replicas)
};

struct CheckpointAttributes {
  std::map<std::string, double> numbers;     // step, tokens, layout, ...
  std::map<std::string, std::string> texts;  // config, ...
};

// Collective over comm. datasets: every dataset of the checkpoint (all ranks' union) with its
// global shape. Writes path + ".tmp", fsyncs, renames to path. key: encrypts the tensors (nullptr:
// a plain file). before_rename (optional) runs on every rank once the temporary file is
// complete, before the rename.
void write_checkpoint(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                      const std::vector<ShardPiece>& pieces, const CheckpointAttributes& attributes,
                      const security::MasterKey* key, const std::function<void()>& before_rename = {});

// Collective over comm. Checks the format version, the key (an encrypted file without `key` or
// with a key of another id: CheckpointKeyError; a plain file is read whether or not a key is
// given) and that each piece's dataset exists with the expected global shape (ConfigError naming
// the tensor otherwise). Plain: then every tensor's checksum, then the pieces. Encrypted: every
// chunk's tag as it is read, before any of it reaches a piece (ConfigError naming the tensor and
// chunk), and the checksums summed from the pieces (of tensors whose `write` pieces cover them
// once; others are checked first) after the last tensor.
CheckpointAttributes read_checkpoint(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& expected,
                                     std::vector<ShardPiece>& pieces, const security::MasterKey* key);

// Checks that `key` opens a checkpoint with these root attributes (CheckpointKeyError naming
// path otherwise: an encrypted file without a key or with a key of another id). Returns whether
// the file is encrypted.
bool check_checkpoint_key(const CheckpointAttributes& attributes, const std::string& path, const security::MasterKey* key);

// Serial reads of a checkpoint's tensors through H5File (trident convert): while alive, an
// encrypted file's chunks are decrypted (check_checkpoint_key first); check() after each read.
class CheckpointDecryption {
 public:
  CheckpointDecryption(const std::string& path, const CheckpointAttributes& attributes, const security::MasterKey* key);
  ~CheckpointDecryption();
  CheckpointDecryption(const CheckpointDecryption&) = delete;
  CheckpointDecryption& operator=(const CheckpointDecryption&) = delete;
  // ConfigError naming the file and dataset when a chunk read since the last call failed its tag.
  void check(const std::string& dataset) const;

 private:
  struct Scope;
  std::string path_;
  std::unique_ptr<Scope> scope_;  // null for a plain file
};

// The training state in a checkpoint's root attributes, validated by checkpoint_state.
struct CheckpointState {
  int format_version = 0;
  int64_t step = 0;
  int64_t tokens = 0, sampler_step = 0;  // 0 when absent
  uint64_t seed = 0;                     // 0 when absent
  double loss_scale = 0;                 // 0 when absent
  double elapsed_s = 0;                  // training seconds of the run when written (0 when absent)
  int layout_dp = 1, layout_tp = 1, layout_pp = 1, layout_zero = 0;
  std::string config;                    // the resolved config text ("" when absent)
  std::map<std::string, double> privacy; // privacy_* attributes: the mechanism of a private run (else empty)
  std::map<std::string, double> data;    // data_* attributes: the data mixture's cursors (whole, >= 0)
  std::string data_mix;                  // the data mixture's description ("" when absent)
};

// The format version of a checkpoint's attributes: ConfigError when it is missing, not a whole
// number from 1 up, or newer than this trident reads. read_checkpoint checks it.
int checkpoint_format_version(const CheckpointAttributes& attributes, const std::string& path);

// Validates the root attributes a resume uses and returns them: the format version, step and
// layout_dp/tp/pp must be present; tokens, sampler_step, seed, loss_scale, layout_zero and
// config may be absent. Every one present must be in range (whole and non-negative counts,
// positive layout sizes, a positive finite loss scale); otherwise a ConfigError naming it.
CheckpointState checkpoint_state(const CheckpointAttributes& attributes, const std::string& path);

// Every dataset of a checkpoint with its shape, and the root attributes (serial; any process).
struct CheckpointListing {
  std::map<std::string, Shape> datasets;
  CheckpointAttributes attributes;
};
CheckpointListing list_checkpoint(const std::string& path);

// The union of every rank's datasets, identical on all ranks (collective over comm).
std::map<std::string, Shape> gather_datasets(MPI_Comm comm, const std::map<std::string, Shape>& mine);

}  // namespace trident::io
