// FaultInjection: the failures trident's end-to-end tests plant, from environment variables
// read once by the CLI, acted out through the run's hooks (train::RunHooks):
//   TRIDENT_TEST_FAIL="rank=R,step=S": rank R throws at the start of step S (a failure on any
//     rank must end the whole job with its message, not leave the others in a collective);
//   TRIDENT_TEST_PREEMPT=S: after step S the run behaves as if SIGTERM had arrived
//     (checkpoint, exit 0), at a step chosen exactly;
//   TRIDENT_TEST_HANG="rank=R,step=S": rank R stops responding at the start of step S (the
//     others' watchdogs must report it and end the job);
//   TRIDENT_TEST_NONFINITE="rank=R,step=S,count=C,value=nan|inf": one of rank R's gradients is
//     NaN or inf (an fp16 overflow) in its first C gradient passes from step S on (steps
//     S..S+C-1; with train.rerun_bad_steps a re-run is a pass too: count=1 is a transient fault,
//     count=2 one that the re-run meets again); every rank must skip those steps together;
//   TRIDENT_TEST_CHECKPOINT_DELAY="SECONDS:FILE_NAME": that checkpoint's finished .tmp file is
//     held before its rename, so a test can kill the job mid-checkpoint;
//   TRIDENT_TEST_SLOW="rank=R,ms=M[,from=S]": rank R sleeps M ms in its compute every step from
//     step S on (a slow node: the straggler watch must name it);
//   TRIDENT_TEST_BITFLIP="rank=R,step=S[,expert=1]": after step S's update one bit of one
//     parameter value on rank R flips (the first parameter's, or the first expert parameter's),
//     as silent data corruption would; train.replica_check_interval must catch it.
#pragma once
#include <cstdint>
#include <string>

#include "trident/train/run_hooks.hpp"

namespace trident::cli {

class FaultInjection : public train::RunHooks {
 public:
  // Parses the variables (an unset one plants nothing; a malformed one is a ConfigError).
  static FaultInjection from_environment(int world_rank);

  void step_starting(int64_t step) override;
  void gradients_zeroed(int64_t step, Ops& ops, Tensor grads) override;
  bool stop_after(int64_t step) override { return preempt_after_ == step; }
  void checkpoint_written(const std::string& path) override;
  void parameters_updated(int64_t step, Ops& ops, model::ParamStore& params) override;
  void computing(int64_t step) override;

 private:
  int world_rank_ = 0;
  int fail_rank_ = -1;
  int64_t fail_step_ = -1;
  int64_t preempt_after_ = -1;
  int nan_rank_ = -1;
  int64_t nan_step_ = -1, nan_count_ = 0, nan_injected_ = 0;
  double nan_value_ = 0;
  int hang_rank_ = -1;
  int64_t hang_step_ = -1;
  double checkpoint_delay_s_ = 0;
  std::string checkpoint_delayed_;  // the file name held
  int slow_rank_ = -1;
  int64_t slow_ms_ = 0, slow_from_ = 1;
  int flip_rank_ = -1;
  int64_t flip_step_ = -1;
  bool flip_expert_ = false;
};

}  // namespace trident::cli
