// A model on this rank alone, from a checkpoint or an HF directory (standalone_model.hpp).
#include "standalone_model.hpp"

#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "trident/cli/config_parser.hpp"
#include "trident/core/error.hpp"
#include "trident/interop/hf_config.hpp"

namespace trident::cli {

StandaloneModel::StandaloneModel(const std::string& source, const StandaloneModelOptions& o) : source_(source) {
  std::error_code ec;
  checkpoint_ = !interop::is_hf_model_dir(source);
  TRIDENT_CONFIG_CHECK(!checkpoint_ || std::filesystem::is_regular_file(source, ec), o.option, " ", source,
                       ": neither a Hugging Face model directory (config.json) nor a trident checkpoint file");
  int64_t seq_len = 0, vocab = 0;
  if (checkpoint_) {  // the context it was trained with
    held_ = checkpoint_model(source);
    seq_len = held_.config.seq_len, vocab = held_.config.vocab;
  } else {  // as long as the model's positions allow, up to max_seq_len
    const model::ModelConfig m = interop::read_hf_config(source).config;
    seq_len = o.max_seq_len > 0 ? std::min<int64_t>(m.positions(), o.max_seq_len) : m.positions();
    vocab = m.vocab;
  }
  std::vector<std::string> args = {"trident",
                                   checkpoint_ ? "--checkpoint.resume=" + source : "--model.init_from=" + source,
                                   "--model.seq_len=" + std::to_string(seq_len),
                                   "--train.micro_batch=" + std::to_string(o.micro_batch ? o.micro_batch(seq_len, vocab) : 1)};
  if (o.threads > 0) args.push_back("--train.threads=" + std::to_string(o.threads));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  try {
    cfg_ = parse_run_config(static_cast<int>(argv.size()), argv.data(), 1, checkpoint_ ? source : "");
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(o.option, " ", source, ": ", e.what()));
  }
  cfg_.data.train.clear();  // no shards are read
  cfg_.data.mix = {};
  cfg_.data.valid.clear();
}

StandaloneModel::~StandaloneModel() = default;

train::RunBuilder& StandaloneModel::load(const dist::ReductionOps* reductions, const Logger& log) {
  if (run_) return *run_;
  session_ = std::make_unique<RunSession>(cfg_, MPI_COMM_SELF, reductions, log, /*describe=*/false);
  run_ = std::make_unique<train::RunBuilder>(cfg_, session_->backend(), session_->topology(), log);
  run_->load_initial_weights();
  std::string loaded;
  if (checkpoint_) run_->weights_reader().load_resume_model(/*adapters=*/true, &loaded);
  return *run_;
}

std::string StandaloneModel::describe() const {
  const model::ModelConfig& m = cfg_.model;
  return detail::concat(checkpoint_ ? "checkpoint " : "model ", source_, " (", model::arch_name(m.arch), ", ", m.layers,
                        " layers, hidden ", m.hidden, ", context ", m.seq_len, ")");
}

}  // namespace trident::cli
