// The rewriting model of `trident evalgen --paraphrase`: a trident checkpoint or a Hugging Face
// model directory built on this rank alone (MPI_COMM_SELF, no parallelism, the train.backend
// default, as prep's scorer), with the model's tokenizer (the directory's tokenizer.json; for a
// checkpoint the one of the HF model its run started from, else the one its training shards'
// prep.json names, else byte) and its chat template when the tokenizer's directory has one
// (data/evalgen/paraphrase_prompt.hpp renders the request either way). Requests are generated
// in batches of up to kBatch with a KV cache (train::Generator), each token drawn by
// data::evalgen::sample_token from its request's stream at its position, so a rewrite does not
// depend on the batch it is in; up to 2 x the original prompt's tokens + 16 new
// tokens, fewer where the context ends (a request whose prompt leaves no room for as many new
// tokens as the original has is not generated: too_long).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "standalone_model.hpp"
#include "trident/core/log.hpp"
#include "trident/data/chat_template.hpp"
#include "trident/data/evalgen/paraphrase.hpp"
#include "trident/data/evalgen/token_sampling.hpp"
#include "trident/data/tokenizer.hpp"
#include "trident/train/run_builder.hpp"
#include "trident/train/run_config.hpp"

namespace trident::cli {

class ParaphraseModel {
 public:
  static constexpr int kBatch = 8;

  // ConfigError naming --paraphrase when the source is neither an HF directory nor a
  // checkpoint, an HF directory has no tokenizer.json, or the tokenizer does not fit the model.
  // threads: compute threads (0: as train.threads = 0, the cores of the node).
  ParaphraseModel(const std::string& source, const data::evalgen::SamplingOptions& sampling, int threads,
                  const dist::ReductionOps* reductions, const Logger& log);
  ~ParaphraseModel();

  std::vector<data::evalgen::Rewrite> rewrite(const std::vector<data::evalgen::RewriteRequest>& requests);
  // "model DIR (llama, 3 layers, hidden 96, context 512), tokenizer DIR/tokenizer.json, its chat template"
  const std::string& description() const { return description_; }

 private:
  struct Prepared;  // one request's prompt ids and token budget
  void generate_batch(const std::vector<Prepared>& batch, std::vector<data::evalgen::Rewrite>& out);

  StandaloneModel model_;
  std::unique_ptr<data::Tokenizer> tokenizer_;
  std::unique_ptr<data::ChatTemplate> chat_;
  std::string turn_end_;
  std::vector<int32_t> stop_;
  data::evalgen::SamplingOptions sampling_;
  std::string description_;
};

}  // namespace trident::cli
