// The perplexity scorer of `trident prep --ppl-model`: a trident model built on this rank alone
// (MPI_COMM_SELF, no parallelism, the train.backend default) from a trident checkpoint or a
// Hugging Face model directory, with the model's own tokenizer. Each text is the tokenizer's
// prefix (BOS) and its encoding, cut to --ppl-max-tokens and into windows of the model's seq_len
// (each scored on its own); up to 16 right-padded windows go through one forward (causal
// attention keeps the padding out of the real rows) and a text's perplexity is
// exp(mean next-token loss over all its windows' targets).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "standalone_model.hpp"
#include "trident/backend/ops.hpp"
#include "trident/core/log.hpp"
#include "trident/data/tokenizer.hpp"
#include "trident/train/run_builder.hpp"
#include "trident/train/run_config.hpp"

namespace trident::cli {

class PrepScorer {
 public:
  // source: a checkpoint file or an HF model directory; tokenizer: a spec, or "auto" (the HF
  // directory's, else the one of the HF model the checkpoint's run started from, else the one
  // its training shards' prep.json names, else byte). ConfigError naming --ppl-model or
  // --ppl-tokenizer when either does not fit.
  PrepScorer(const std::string& source, const std::string& tokenizer, int max_tokens,
             const dist::ReductionOps* reductions, const Logger& log);
  ~PrepScorer();

  // Perplexity of each text; 0 for one of fewer than two tokens.
  std::vector<double> perplexities(const std::vector<std::string>& texts);
  // "checkpoint runs/x/step_00000100.h5 (gpt2, 8 layers, hidden 64), tokenizer byte"
  const std::string& description() const { return description_; }

 private:
  StandaloneModel model_;
  std::unique_ptr<data::Tokenizer> tokenizer_;
  int max_tokens_;
  std::string description_;
};

}  // namespace trident::cli
