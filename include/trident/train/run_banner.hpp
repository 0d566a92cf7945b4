// The lines a run prints about its shape when it starts: the model, LoRA, memory per rank,
// tensor, pipeline and data parallelism, the data, mixed precision and the backend's peak.
#pragma once
#include "trident/train/run_builder.hpp"

namespace trident::train {

// What the model is and how it computes (every command that builds one).
void log_model_banner(RunBuilder& run);
// How it trains: memory, parallelism, data and the backend's peak FLOP/s per rank (needs the
// training pieces; `trident train` and `bench step`).
void log_training_banner(RunBuilder& run);

}  // namespace trident::train
