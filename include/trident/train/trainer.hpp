// Trainer: the optimizer-step loop (DESIGN.md section 10). Per step it takes this rank's
// micro-batches from the sampler, runs forward/backward on each (gradients accumulate),
// sums gradients over the dp group, clips by the global norm, applies AdamW, and logs.
#pragma once
#include <memory>

#include "trident/core/log.hpp"
#include "trident/data/sampler.hpp"
#include "trident/dist/topology.hpp"
#include "trident/io/metrics_writer.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/adamw.hpp"
#include "trident/train/checkpointer.hpp"
#include "trident/train/evaluator.hpp"
#include "trident/train/task_evaluator.hpp"
#include "trident/train/fault_injection.hpp"
#include "trident/train/optimizer_step.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

class Trainer {
 public:
  Trainer(const RunConfig& cfg, Ops& ops, dist::Topology& topology, const Logger& log,
          FaultInjection fault = {});
  ~Trainer();

  // Runs the optimizer steps from the resumed step to train.steps, writing metrics on rank 0 and
  // checkpoints every checkpoint.interval steps (and on preemption, then returns early).
  // Returns the last step's result.
  StepResult run();  // needs data.train
  int64_t start_step() const { return start_step_; }
  // run() stopped early on a preemption signal (after writing a checkpoint); steps_done() is
  // the optimizer steps completed, resumed ones included.
  bool preempted() const { return preempted_; }
  int64_t steps_done() const { return steps_done_; }
  Checkpointer& checkpointer() { return *checkpointer_; }
  // One optimizer step (exposed for tests).
  StepResult train_step(int64_t step);
  model::GPTModel& model() { return *model_; }
  // Evaluates at optimizer step `step` (collective): perplexity on data.valid and exact match /
  // F1 on eval.task, whichever are set; prints the tables and appends to <run_dir>/eval.jsonl on
  // rank 0. Returns the validation result (empty without data.valid); last_task() the task's.
  EvalResult evaluate(int64_t step);
  const TaskResult& last_task() const { return last_task_; }
  // Seconds spent building micro-batches so far (the data phase of `trident bench step`).
  double data_seconds() const { return data_seconds_; }
  // Memory the run holds per rank, as the trainer accounts it (bytes).
  size_t parameter_bytes() const;
  size_t optimizer_state_bytes() const;
  // Parameters the optimizer trains, over the whole model (the adapters under LoRA).
  int64_t trainable_params() const;
  // Training FLOPs per token as this run computes them (MFU): fewer under LoRA and LISA.
  double flops_per_token() const;

 private:
  void log_step(int64_t step, const StepResult& r);
  // LISA: at the first step run and every lisa.interval steps, the drawn blocks become trained,
  // the rest idle (their optimizer state released).
  void apply_lisa(int64_t step);
  // Counts consecutive skipped (non-finite) steps, stops after train.max_bad_steps of them, and
  // logs loss spikes.
  void check_health(int64_t step, const StepResult& r);

  const RunConfig& cfg_;
  Ops& ops_;
  dist::Topology& topology_;
  const Logger& log_;
  std::unique_ptr<data::ShardSet> reader_;
  std::unique_ptr<data::BatchSampler> sampler_;
  data::Batch batch_;
  std::unique_ptr<model::GPTModel> model_;
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<PipelineExecutor> pipeline_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<StepParts> parts_;
  std::unique_ptr<Checkpointer> checkpointer_;
  int64_t start_step_ = 0;    // optimizer steps done before this run (resumed)
  double ckpt_stall_s_ = 0;   // training time the last checkpoint took (the whole write when sync)
  int bad_steps_ = 0;
  double loss_mean_ = 0;  // running mean of recent losses (spike detection)
  double bubble_theory_ = 0;
  double data_seconds_ = 0;
  bool preempted_ = false;
  int64_t steps_done_ = 0;
  std::unique_ptr<Evaluator> evaluator_;  // built on first use
  std::unique_ptr<TaskEvaluator> task_evaluator_;
  std::unique_ptr<LisaSchedule> lisa_;
  bool lisa_applied_ = false;
  size_t lisa_full_state_bytes_ = 0;  // the optimizer state with every layer trained
  TaskResult last_task_;
  std::unique_ptr<io::MetricsWriter> metrics_;
  FaultInjection fault_;
  double peak_flops_ = 0;
  double elapsed_ = 0;
};

}  // namespace trident::train
