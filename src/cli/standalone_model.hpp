// A model named on a command line and run on this rank alone (prep --ppl-model, evalgen
// --paraphrase): a trident checkpoint file or a Hugging Face model directory, configured for one
// process (MPI_COMM_SELF, no parallelism, the train.backend default, no data), then built with
// its weights. Two steps, so that a command checks everything cheap (the source, its tokenizer)
// before it builds the model.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "run_session.hpp"
#include "trident/core/log.hpp"
#include "trident/interop/hf_convert.hpp"
#include "trident/train/run_builder.hpp"
#include "trident/train/run_config.hpp"

namespace trident::cli {

struct StandaloneModelOptions {
  const char* option = "";   // the command-line option naming the source (messages)
  int64_t max_seq_len = 0;   // an HF directory's context: its positions, at most this; a checkpoint's: its own
  std::function<int(int64_t seq_len, int64_t vocab)> micro_batch;  // rows per forward (unset: 1)
  int threads = 0;           // train.threads (0: the cores of the node)
};

class StandaloneModel {
 public:
  // ConfigError naming the option when the source is neither an HF directory (config.json) nor
  // a checkpoint file, or its configuration does not parse.
  StandaloneModel(const std::string& source, const StandaloneModelOptions& options);
  ~StandaloneModel();

  // The model of a checkpoint source (nullptr for an HF directory).
  const interop::CheckpointModel* checkpoint() const { return checkpoint_ ? &held_ : nullptr; }
  const train::RunConfig& config() const { return cfg_; }
  // Builds the model and loads its weights (once).
  train::RunBuilder& load(const dist::ReductionOps* reductions, const Logger& log);
  // After load(): the model and its backend.
  model::GPTModel& model() { return run_->model(); }
  // "checkpoint runs/x/step_00000100.h5 (gpt2, 8 layers, hidden 64, context 512)"
  std::string describe() const;

 private:
  std::string source_;
  bool checkpoint_ = false;
  interop::CheckpointModel held_;
  train::RunConfig cfg_;
  std::unique_ptr<RunSession> session_;  // MPI_COMM_SELF: this rank's own model
  std::unique_ptr<train::RunBuilder> run_;
};

}  // namespace trident::cli
