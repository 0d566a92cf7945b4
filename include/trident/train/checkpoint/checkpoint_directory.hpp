// CheckpointDirectory: the files of the global tier and which of them count. A checkpoint is
// <dir>/step_<8 digits>.h5; `latest` names the newest complete one of this run's timeline and
// is replaced atomically after the file itself is complete; checkpoint.keep bounds the files
// kept: after a save the oldest at or below its step go, never the one just written and never
// one of a higher step (another run's, in a directory it shares). No collectives here: the
// caller decides which rank acts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident::train {

class CheckpointDirectory {
 public:
  explicit CheckpointDirectory(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  // step_00000012.h5
  static std::string file_name(int64_t step);
  // step_<8 digits>.h5 (never a .tmp, never a path)
  static bool is_step_file(const std::string& name);
  // <dir>/step_<8 digits>.h5
  std::string file(int64_t step) const;

  // The newest complete checkpoint ("" if none): `latest` when it names an existing step file,
  // else the highest step file.
  std::string newest() const;
  // The checkpoints checkpoint.resume = `mode` names, in the order to try: auto: the file
  // `latest` names, then its older step files, newest first (without a valid `latest`: every
  // step file, newest first); none: none; else the path given.
  std::vector<std::string> resume_candidates(const std::string& mode) const;

  // Creates the directory (an Error naming it when that fails).
  void create() const;
  // Points `latest` at step's file (an Error when it cannot be written: `latest` then still
  // names the one before), then removes the oldest step files at or below it beyond `keep`
  // (0: keep all).
  void publish(int64_t step, int keep) const;

 private:
  std::vector<std::string> step_files() const;  // names, unsorted
  void prune(int64_t written, int keep) const;

  std::string path_;
};

}  // namespace trident::train
