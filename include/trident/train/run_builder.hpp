// RunBuilder: builds the pieces of a run from its configuration and the grid, each on first
// request together with what it needs, and owns them for the run's lifetime. `trident eval`
// asks for the model, its weights and the evaluation (no optimizer state is allocated, no
// record opened); `trident bench step` for the training step on its data; `trident train`
// (the Trainer) for everything. Nothing here writes to the run directory.
//
//   train_data ─────────────┐
//   model ── pipeline ──────┼── step (TrainingStep)
//     └──── reducer ── optimizer ── checkpointer
//                           └─ lisa        evaluation (model, pipeline)
#pragma once
#include <memory>
#include <string>

#include "trident/backend/ops.hpp"
#include "trident/core/log.hpp"
#include "trident/dist/topology.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/checkpoint/checkpointer.hpp"
#include "trident/train/data_source.hpp"
#include "trident/train/eval/run_evaluation.hpp"
#include "trident/train/optim/adamw.hpp"
#include "trident/train/optim/grad_reducer.hpp"
#include "trident/train/optim/lisa_switch.hpp"
#include "trident/train/optim/loss_scaler.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"
#include "trident/train/privacy/private_training.hpp"
#include "trident/train/run_config.hpp"
#include "trident/train/run_hooks.hpp"
#include "trident/train/training_step.hpp"

namespace trident::train {

class RunBuilder {
 public:
  // Every argument outlives the builder. ops: its GEMM precision already set from
  // train.precision (cli's select_backend decides it). hooks (nullptr: none) reach the step and
  // checkpoints.
  RunBuilder(const RunConfig& cfg, Ops& ops, dist::Topology& topology, const Logger& log, RunHooks* hooks = nullptr);
  ~RunBuilder();
  RunBuilder(const RunBuilder&) = delete;
  RunBuilder& operator=(const RunBuilder&) = delete;

  const RunConfig& config() const { return cfg_; }
  Ops& ops() const { return ops_; }
  dist::Topology& topology() const { return topology_; }
  const Logger& log() const { return log_; }
  RunHooks* hooks() const { return hooks_; }

  // data.train: this rank's micro-batches of each step.
  DataSource& train_data();
  // This rank's stages of the model (the GEMM precision set on the backend first), initialised
  // from train.seed.
  model::GPTModel& model();
  // The pipeline schedule over the model.
  PipelineExecutor& pipeline();
  // The data-parallel reduction; the model's gradient-ready hook starts its buckets (overlap)
  // and the tied table is summed over its two stages.
  GradReducer& reducer();
  AdamW& optimizer();
  LossScaler& scaler();
  // nullptr without lisa.enabled.
  LisaSwitch* lisa();
  // One whole optimizer step over the pieces above.
  TrainingStep& step();
  // Differentially private steps (privacy.enabled; else nullptr), over the step's pieces.
  PrivateTraining* privacy();
  // Collective: optimizer step `step` (0-based) on its data: DP-SGD's (privacy()) when on,
  // else the plain step on this rank's micro-batches.
  StepResult train_step(int64_t step);
  // Saves and resumes the training state (model, optimizer, compression state).
  Checkpointer& checkpointer();
  // Reads model weights only (no optimizer is built): evaluation of a checkpoint.
  Checkpointer& weights_reader();
  // Validation perplexity and generation tasks.
  RunEvaluation& evaluation();

  // Collective: the pretrained weights model.init_from names (a Hugging Face directory or a
  // trident checkpoint) and the PEFT adapters of lora.init_from, when set.
  void load_initial_weights();
  // The pipeline's partition in words (pp > 1), for the banner.
  const std::string& pipeline_description() const { return pipeline_text_; }
  // The dtype GEMMs compute in (train.precision, or fp32 where the processor has no faster
  // 16-bit GEMM): the backend's.
  DType matmul_dtype() const { return ops_.matmul_precision(); }
  // The arithmetic MFU is measured against: bf16 where the GEMMs compute in bf16, else fp32.
  DType peak_dtype() const { return matmul_dtype() == DType::kBF16 ? DType::kBF16 : DType::kF32; }
  // This rank's peak FLOP/s in peak_dtype() (the backend measures it once): the MFU denominator.
  double peak_flops_per_rank() const { return ops_.peak_flops(peak_dtype()); }
  // The dtype of the activations kept for backward: train.precision (16-bit storage even where
  // GEMMs compute in fp32), or under auto what the GEMMs compute in; known once the model is built.
  DType activation_dtype() const { return activation_dtype_; }

 private:
  const RunConfig& cfg_;
  Ops& ops_;
  dist::Topology& topology_;
  const Logger& log_;
  RunHooks* hooks_;
  std::string pipeline_text_;
  DType activation_dtype_ = DType::kF32;
  std::unique_ptr<DataSource> train_data_;
  std::unique_ptr<model::GPTModel> model_;
  std::unique_ptr<PipelineExecutor> pipeline_;
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<LisaSwitch> lisa_;
  std::unique_ptr<TrainingStep> step_;
  std::unique_ptr<PrivateTraining> privacy_;
  std::unique_ptr<Checkpointer> checkpointer_, weights_reader_;
  std::unique_ptr<RunEvaluation> evaluation_;
};

}  // namespace trident::train
