// Trainer: the training loop (docs/design.md section 10). It takes the pieces of the run from a
// RunBuilder; per step it loads this rank's micro-batches from the data source and hands them
// to the TrainingStep (pipeline schedule, gradient reduction, AdamW), then logs the step,
// checkpoints every checkpoint.interval steps, evaluates every log.eval_interval steps, and
// stops at train.steps, after train.max_bad_steps non-finite steps in a row, or on a
// preemption signal (after a checkpoint).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "trident/train/eval/run_evaluation.hpp"
#include "trident/train/preemption.hpp"
#include "trident/train/replica_check.hpp"
#include "trident/train/straggler_watch.hpp"
#include "trident/train/run_builder.hpp"
#include "trident/train/run_record.hpp"
#include "trident/train/training_step.hpp"

namespace trident::train {

// The exit code of a run stopped because its replicas' parameters differ (silent corruption).
inline constexpr int kReplicaMismatchExit = 5;
// The exit code of a run stopped by train.straggler_exit (a checkpoint written first).
inline constexpr int kStragglerExit = 4;

class Trainer {
 public:
  // Collective: loads the initial weights (model.init_from, lora.init_from), resumes per
  // checkpoint.resume, and opens the run's record (RunRecord: a fresh start in a directory
  // holding an earlier run's metrics is a ConfigError unless log.overwrite).
  // signals (nullptr: none watched) ends the run with a checkpoint when a preemption signal
  // arrives (SignalWatch).
  explicit Trainer(RunBuilder& run, SignalWatch* signals = nullptr);
  ~Trainer();

  // Runs the optimizer steps from the resumed step to train.steps. Returns the last step's
  // result.
  StepResult run();
  // Optimizer steps done before this start (the resumed checkpoint's).
  int64_t start_step() const { return start_step_; }
  // run() stopped early on a preemption signal (after writing a checkpoint); steps_done() is
  // the optimizer steps completed, resumed ones included.
  bool preempted() const { return preempted_; }
  int64_t steps_done() const { return steps_done_; }
  // Collective: evaluates at optimizer step `step` (RunEvaluation).
  void evaluate(int64_t step) { run_.evaluation().evaluate(step); }

 private:
  void log_step(int64_t step, const StepResult& r);
  void log_moe_load(const StepResult& r);  // the expert load line of an MoE run
  // Counts consecutive skipped (non-finite) steps, stops after train.max_bad_steps of them, and
  // logs loss spikes.
  void check_health(int64_t step, const StepResult& r);
  // Collective: a checkpoint after `steps_done` steps, with rank 0's training time.
  void save(int64_t steps_done);
  // The local tier's save of `steps_done` (checkpoint.local_interval).
  void save_local(int64_t steps_done);
  // Collective: the scalars a checkpoint after `steps_done` steps carries (rank 0's time).
  RunScalars scalars_at(int64_t steps_done);
  // Collective: compares the dp replicas' parameters after `steps_done` steps; a difference
  // waits for any checkpoint in flight (an earlier, good state) and stops every rank with
  // exit code kReplicaMismatchExit.
  void verify_replicas(int64_t steps_done);
  // Collective: scores the ranks' work since the last check (StragglerWatch); logs and records
  // the stragglers (rank 0) and counts one host's reports in a row for train.straggler_exit.
  void check_stragglers(int64_t steps_done);
  // Runs checkpoint I/O; a failure stops the run, or is logged when checkpoint.on_error = warn.
  void guarded_save(const std::function<void()>& io);

  RunBuilder& run_;
  SignalWatch* signals_;
  const RunConfig& cfg_;
  dist::Topology& topology_;
  const Logger& log_;
  Checkpointer& checkpointer_;
  std::unique_ptr<RunRecord> record_;  // rank 0
  std::unique_ptr<ReplicaCheck> replica_check_;  // train.replica_check_interval > 0
  std::unique_ptr<StragglerWatch> stragglers_;   // log.straggler_interval > 0
  StragglerCheck straggler_check_;               // the last check's (metrics of its step)
  std::string straggler_host_;                   // the host named by the last reports in a row ...
  int straggler_repeats_ = 0;                    // ... and how many
  int64_t start_step_ = 0;
  int64_t steps_done_ = 0;
  bool preempted_ = false;
  double peak_flops_ = 0;    // MFU denominator per rank
  double bubble_theory_ = 0;
  double ckpt_local_s_ = 0;  // training time the last local-tier save took
  double ckpt_stall_s_ = 0;  // training time the last checkpoint took (the whole write when sync)
  double elapsed_ = 0;       // training seconds of the run, earlier starts included
  double tokens_ = 0;        // input positions trained on, earlier starts included
  std::vector<int64_t> source_documents_;  // a mixture's documents started per source, earlier starts included
  double start_elapsed_ = 0; // ... when this start began (ETA: this start's pace)
  int bad_steps_ = 0;
  bool replica_checked_ = false;  // the first check's time is logged
  double loss_mean_ = 0;     // running mean of recent losses (spike detection)
};

}  // namespace trident::train
