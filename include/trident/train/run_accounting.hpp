// A run in numbers, as it trains: the parameters the optimizer updates and the model FLOPs per
// token (fewer under LoRA and LISA: frozen and idle weights compute no weight gradients), and
// the bytes this rank's parameters and gradients hold.
#pragma once
#include <cstddef>
#include <cstdint>

#include "trident/model/model_config.hpp"
#include "trident/model/param_store.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

// Over the whole model: the adapters under LoRA, the drawn blocks (and embedding / head) under
// LISA, else every parameter. m: the model's resolved configuration.
int64_t trainable_params(const RunConfig& cfg, const model::ModelConfig& m);
// Training FLOPs per token as this run computes them (MFU).
double train_flops_per_token(const RunConfig& cfg, const model::ModelConfig& m);
// Model FLOPs utilisation: the training FLOP rate at tokens_per_s (whole run) over the peak of
// `ranks` ranks of peak_flops_per_rank each.
double model_flops_utilization(const RunConfig& cfg, const model::ModelConfig& m, double tokens_per_s,
                               double peak_flops_per_rank, int ranks);
// Values (frozen ones too) and the gradients of the trainable ones, on this rank.
size_t parameter_bytes(const model::ParamStore& params);

}  // namespace trident::train
