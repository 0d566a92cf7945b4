// RunRecord: the record a training run keeps in its run directory (docs/design.md section 6):
// config.ini (the resolved configuration of its latest start), metrics.jsonl (one line per
// logged step) and, with log.tensorboard, tensorboard/ (a new event file each start, which
// gets every metrics line as scalars and the configuration as text), owned by world rank 0.
// Opening it is where a training start meets what the directory already holds, and nothing
// there is lost:
//   - a fresh start (no checkpoint resumed) refuses a metrics.jsonl that holds lines, with a
//     ConfigError saying what to do, unless log.overwrite = true, which first moves the old
//     record aside as metrics.jsonl.N, config.ini.N, eval.jsonl.N and tensorboard.N (the
//     first free N);
//   - a resumed start keeps the lines up to the resumed step and moves those after it (logged
//     after that checkpoint by a job that then died) to metrics.jsonl.lost-<step>;
//   - a partial last line (a crash mid-write) is dropped and reported;
//   - the directory is locked for the run's lifetime (an flock on <run_dir>/.lock, holding the
//     holder's host and PID; the kernel releases it when the process ends, however it ends):
//     a second run on the same directory is a ConfigError naming the holder.
// Only `trident train` opens one: evaluation, benchmarks and conversions never touch it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "trident/core/log.hpp"
#include "trident/dist/communicator.hpp"
#include "trident/io/jsonl_file.hpp"
#include "trident/io/tensorboard_writer.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

class RunRecord {
 public:
  // Collective over world: rank 0 examines and opens the record, every rank returns or throws
  // the same error (ConfigError for the user's mistakes). resumed_step: the optimizer steps of
  // the checkpoint this start resumed (0: a fresh start). Returns nullptr on ranks other than 0.
  static std::unique_ptr<RunRecord> open(const RunConfig& cfg, int64_t resumed_step, dist::Communicator& world,
                                         const Logger& log);

  ~RunRecord();
  RunRecord(const RunRecord&) = delete;
  RunRecord& operator=(const RunRecord&) = delete;

  // One metrics.jsonl line, and the same values (but "step") as TensorBoard scalars at its step
  // (text fields only in the line).
  void write(const io::MetricsRecord& record, const io::MetricsText& text = {});
  // The run's TensorBoard events, for further scalars (evaluations: add_scalar, then flush);
  // nullptr with log.tensorboard = false.
  io::TensorBoardWriter* tensorboard() { return tensorboard_.get(); }
  // elapsed_s of the last line kept from earlier starts (0: none).
  double last_elapsed() const { return last_elapsed_; }

 private:
  RunRecord(int lock_fd, const std::string& metrics_path, double last_elapsed,
            std::unique_ptr<io::TensorBoardWriter> tensorboard);
  struct Lock {
    int fd = -1;
    ~Lock();
  } lock_;
  io::JsonlAppender metrics_;
  double last_elapsed_ = 0;
  std::unique_ptr<io::TensorBoardWriter> tensorboard_;  // null: log.tensorboard = false
};

}  // namespace trident::train
