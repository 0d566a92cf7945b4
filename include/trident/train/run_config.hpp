// RunConfig: every section of the configuration (docs/design.md section 5) as typed values, filled
// by the CLI's config parser and checked by validate() before any work starts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/core/dtype.hpp"
#include "trident/dist/compression.hpp"
#include "trident/data/document_stream.hpp"
#include "trident/data/mix_spec.hpp"
#include "trident/dist/topology.hpp"
#include "trident/model/model_config.hpp"
#include "trident/model/recompute.hpp"
#include "trident/security/security_config.hpp"
#include "trident/train/optim/lisa.hpp"
#include "trident/train/privacy/privacy_config.hpp"
#include "trident/train/pipeline/pipeline_schedule.hpp"
#include "trident/train/train_config.hpp"

namespace trident::train {

struct DataConfig {
  std::string train;        // shard prefix, or a mixture (data::MixSpec, parsed into `mix`)
  std::string valid;
  bool packing = true;      // document-masked packed rows; false: one document per row, padded
  bool bucket = false;
  data::Truncate truncate = data::Truncate::kLeft;  // fine-tuning documents longer than seq_len + 1
  data::MixSpec mix;        // data.train's sources and the mixture keys
};

struct CommConfig {
  double bucket_mb = 25;
  bool overlap = true;
  double timeout_s = 600;  // watchdog: abort when a communication waits longer (0: off)
  dist::CompressionKind compression = dist::CompressionKind::kNone;  // dp gradient compression
  double topk_ratio = 0.01;
  int topk_warmup = 0;     // steps of top-k's density warm-up (dist::CompressionOptions)
  int topk_dense_steps = 0;  // uncompressed steps before top-k; AdamW's variance frozen after them
  int powersgd_rank = 4;
  DType grad_dtype = DType::kF32;  // dtype gradients are reduced in across dp (fp32, bf16, fp16)
  enum class Hierarchical { kAuto, kOn, kOff } hierarchical = Hierarchical::kAuto;  // node-aware dp reduction
};

struct CheckpointConfig {
  std::string dir;               // default <run_dir>/checkpoints
  int interval = 0;              // steps between checkpoints (0: none, but preemption still saves)
  int keep = 3;
  bool async = false;
  std::string resume = "auto";   // auto | none | <path>
  bool warn_on_error = false;    // checkpoint.on_error = warn: a failed save is logged, training goes on
  // The local tier (train/checkpoint/local_tier.hpp): node-local directory, steps between its saves, and
  // whether each rank's file is copied to a partner on another node.
  std::string local_dir;
  int local_interval = 0;
  int local_replicas = 0;
};

struct LogConfig {
  std::string run_dir = "runs/default";
  int interval = 1;
  int eval_interval = 0;
  int eval_batches = 8;
  bool overwrite = false;  // a fresh start may move an earlier run's record aside (RunRecord)
  bool tensorboard = true;  // <run_dir>/tensorboard/ event files (RunRecord)
  int straggler_interval = 50;      // steps between straggler checks (0 = off): StragglerWatch
  double straggler_threshold = 0.75;  // a relative score below this names the rank
};

// Tasks (eval.*): JSONL prompt/answer or chat lines (greedy generation scored by exact match
// and token F1), multiple-choice or rolling log-likelihood lines; robustness perturbations and
// out-of-distribution detection.
struct EvalConfig {
  std::string task;                 // JSONL path ("" = none)
  std::string prompt_template = "auto";  // auto: the one data.train's prep.json names, else plain
  std::string tokenizer = "auto";   // auto: model.init_from's tokenizer.json, else data.train's prep.json, else byte
  int max_new_tokens = 32;
  int examples = 0;                 // the first N lines (0 = all)
  int batch = 8;                    // prompts generated together per dp rank
  std::string kind = "auto";        // generate | choice | rolling | auto (from the first line's keys)
  std::vector<std::string> perturb; // robustness perturbations (perturb.hpp)
  double perturb_rate = 0.05;       // per-character probability of typo / case / whitespace
  uint64_t perturb_seed = 1234;
  std::string ood;                  // shard prefix scored against data.valid as out-of-distribution ("" = none)
  int ood_samples = 512;            // pieces of seq_len + 1 tokens scored per side (spread over the set)
  std::string metrics = "em,f1";    // generate tasks: em, f1, rouge1, rouge2, rougeL, rougeLsum, bleu (task_metrics.hpp)
  bool rouge_stem = false;          // ROUGE with rouge-score's Porter stemming
  bool predictions = false;         // each example's prompt, prediction and reference to <run_dir>/predictions/
};

struct RunConfig {
  model::ModelConfig model;
  dist::Layout layout;
  int microbatches = 0;     // parallel.microbatches (0: derive from micro_batch)
  int zero = 0;             // parallel.zero: ZeRO stage (0 or 1)
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  int virtual_stages = 1;   // model chunks per pipeline rank (interleaved)
  Partition partition = Partition::kUniform;
  bool sequence_parallel = false;
  model::Recompute recompute = model::Recompute::kNone;
  std::string layout_note;  // parallel.layout = auto: what the planner chose ("" otherwise)
  TrainConfig train;
  DataConfig data;
  CommConfig comm;
  CheckpointConfig checkpoint;
  LogConfig log;
  EvalConfig eval;
  std::string init_from;    // model.init_from: HF model directory or trident checkpoint ("" = none)
  std::string lora_init_from;  // lora.init_from: a PEFT adapter directory ("" = PEFT's initialisation)
  LisaConfig lisa;
  PrivacyConfig privacy;
  security::SecurityConfig security;
  std::string resolved_ini; // the full configuration as written to <run_dir>/config.ini

  // Sequences per micro-batch per dp rank and micro-batches per step.
  int micro_batches_per_step() const { return train.global_batch / (train.micro_batch * layout.dp); }
  // Model chunks per pipeline rank: virtual_stages under the interleaved schedule, else 1.
  int chunks_per_rank() const { return schedule == ScheduleKind::kInterleaved ? virtual_stages : 1; }
};


}  // namespace trident::train
