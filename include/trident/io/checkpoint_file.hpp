// Parallel HDF5 checkpoint files (docs/design.md section 7): every tensor stored once in its global,
// unsharded shape under its global name; each rank writes or reads only its pieces, as
// hyperslabs, through the MPI-IO driver with collective transfers. Every rank creates every
// dataset in the same (sorted) order. A file is written under a temporary name, fsynced and
// renamed, so a partial file never carries a checkpoint's name.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "trident/core/tensor.hpp"

namespace trident::io {

inline constexpr int kCheckpointFormatVersion = 1;

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
// global shape. Writes path + ".tmp", fsyncs, renames to path. before_rename (optional) runs on
// every rank once the temporary file is complete, before the rename.
void write_checkpoint(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                      const std::vector<ShardPiece>& pieces, const CheckpointAttributes& attributes,
                      const std::function<void()>& before_rename = {});

// Collective over comm. Checks the format version and that each piece's dataset exists with
// the expected global shape (ConfigError naming the tensor otherwise), then reads the pieces.
CheckpointAttributes read_checkpoint(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& expected,
                                     std::vector<ShardPiece>& pieces);

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
