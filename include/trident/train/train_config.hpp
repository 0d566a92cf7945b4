// TrainConfig: the [train] section (steps, batch sizes, AdamW, learning-rate schedule,
// precision), apart from the rest of the run's configuration so that the optimizer and the
// schedule include no more than they use.
#pragma once
#include <cstdint>
#include <string>

#include "trident/core/dtype.hpp"

namespace trident::train {

enum class Decay { kCosine, kLinear, kConst };

struct TrainConfig {
  int64_t steps = 100;
  int micro_batch = 2;
  int global_batch = 16;
  double lr = 3e-4;
  double min_lr = 3e-5;
  int64_t warmup = 10;
  Decay decay = Decay::kCosine;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double clip = 1.0;        // 0: no clipping
  uint64_t seed = 1234;
  DType precision = DType::kF32;   // GEMM inputs: fp32, bf16 or fp16 (fp32 accumulation)
  bool precision_auto = false;     // train.precision = auto: bf16 (precision) where it measures faster, else fp32
  std::string loss_scale = "dynamic";
  int threads = 0;          // 0: cores of the node / ranks on the node
  std::string backend = "auto";  // auto (cuda when this rank sees a GPU, else cpu) | cpu | cuda
  int max_bad_steps = 5;
  // Every N steps, and before every checkpoint, the dp replicas' parameters are compared
  // (train/replica_check.hpp); 0 = off.
  int replica_check_interval = 0;
  // A step whose loss or gradient norm is non-finite, or a loss spike, runs again before the
  // update (TrainingStep::run).
  bool rerun_bad_steps = false;
  int straggler_exit = 0;  // checkpoint and exit 4 after this many straggler reports of one host in a row (0 = never)
};

Decay decay_from_name(const std::string& name);

}  // namespace trident::train
