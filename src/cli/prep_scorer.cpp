// The perplexity scorer of prep (prep_scorer.hpp).
#include "prep_scorer.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "trident/cli/config_parser.hpp"
#include "trident/core/error.hpp"
#include "trident/data/prep.hpp"
#include "trident/interop/hf_config.hpp"

namespace trident::cli {
namespace {

// checkpoint: the model a checkpoint source holds, nullptr for an HF directory.
std::string scorer_tokenizer(const std::string& source, const interop::CheckpointModel* checkpoint,
                             const std::string& requested) {
  if (requested != "auto") return requested;
  if (!checkpoint) {
    const std::string own = interop::model_tokenizer_path(source);
    TRIDENT_CONFIG_CHECK(!own.empty(), "--ppl-model ", source, " has no tokenizer.json: name one with --ppl-tokenizer");
    return own;
  }
  const interop::CheckpointModel& m = *checkpoint;
  if (!m.hf_base.empty())
    if (std::string own = interop::model_tokenizer_path(m.hf_base); !own.empty()) return own;
  if (!m.train_data.empty())
    if (std::string named = data::prep_json_field(m.train_data, "tokenizer"); !named.empty()) return named;
  return "byte";
}

int checked_max_tokens(int max_tokens) {
  TRIDENT_CONFIG_CHECK(max_tokens >= 2, "--ppl-max-tokens must be at least 2 (got ", max_tokens, ")");
  return max_tokens;
}

// Windows per forward: up to 16, fewer when their logits would pass 2^26 floats (256 MB).
int scoring_rows(int64_t seq_len, int64_t vocab) {
  return static_cast<int>(std::clamp<int64_t>((int64_t(1) << 26) / std::max<int64_t>(seq_len * vocab, 1), 1, 16));
}

}  // namespace

PrepScorer::PrepScorer(const std::string& source, const std::string& tokenizer, int max_tokens,
                       const dist::ReductionOps* reductions, const Logger& log)
    : model_(source, {.option = "--ppl-model", .max_seq_len = checked_max_tokens(max_tokens), .micro_batch = scoring_rows,
                      .threads = 0}),
      max_tokens_(max_tokens) {
  const train::RunConfig& cfg = model_.config();
  tokenizer_ = data::load_tokenizer(scorer_tokenizer(source, model_.checkpoint(), tokenizer));
  TRIDENT_CONFIG_CHECK(tokenizer_->vocab_size() <= static_cast<uint64_t>(cfg.model.vocab), "--ppl-tokenizer ",
                       tokenizer_->describe(), " has ", tokenizer_->vocab_size(), " ids; the model's vocabulary is ",
                       cfg.model.vocab);
  model_.load(reductions, log);
  description_ = detail::concat(model_.describe(), ", tokenizer ", tokenizer_->describe());
}

PrepScorer::~PrepScorer() = default;

std::vector<double> PrepScorer::perplexities(const std::vector<std::string>& texts) {
  model::GPTModel& model = model_.model();
  const train::RunConfig& cfg = model_.config();
  const int64_t B = cfg.train.micro_batch, T = cfg.model.seq_len, V = cfg.model.vocab;
  // Each text's first max_tokens tokens, cut into windows of T (scored without context across
  // windows); windows of all texts fill rows of B.
  struct Window {
    size_t text;
    std::vector<uint32_t> ids;
  };
  std::vector<Window> windows;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<uint32_t> ids = data::document_prefix(*tokenizer_);
    tokenizer_->encode_append(texts[i], ids);
    if (static_cast<int64_t>(ids.size()) > max_tokens_) ids.resize(static_cast<size_t>(max_tokens_));
    for (size_t at = 0; at + 1 < ids.size(); at += static_cast<size_t>(T))
      windows.push_back({i, std::vector<uint32_t>(ids.begin() + static_cast<std::ptrdiff_t>(at),
                                                  ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), at + static_cast<size_t>(T))))});
  }
  std::vector<double> loss(texts.size(), 0.0);
  std::vector<int64_t> targets(texts.size(), 0);
  Tensor tokens = Tensor::zeros(Shape{B, T}, DType::kI32), positions = Tensor::zeros(Shape{B, T}, DType::kI32);
  for (int64_t k = 0; k < B * T; ++k) positions.data<int32_t>()[k] = static_cast<int32_t>(k % T);
  for (size_t first = 0; first < windows.size(); first += static_cast<size_t>(B)) {
    const size_t rows = std::min(windows.size() - first, static_cast<size_t>(B));
    std::fill_n(tokens.data<int32_t>(), B * T, 0);
    for (size_t r = 0; r < rows; ++r)
      for (size_t t = 0; t < windows[first + r].ids.size(); ++t)
        tokens.data<int32_t>()[static_cast<int64_t>(r) * T + static_cast<int64_t>(t)] = static_cast<int32_t>(windows[first + r].ids[t]);
    const Tensor& device_logits = model.forward_logits(tokens, positions);  // [B*T, V]
    Tensor logits = Tensor::zeros(device_logits.shape(), DType::kF32);
    model.ops().copy(device_logits, logits);
    const int64_t stride = logits.dim(1);
    for (size_t r = 0; r < rows; ++r) {
      const Window& w = windows[first + r];
      for (size_t t = 0; t + 1 < w.ids.size(); ++t) {  // row t predicts token t + 1
        const float* z = logits.data<float>() + (static_cast<int64_t>(r) * T + static_cast<int64_t>(t)) * stride;
        const float top = *std::max_element(z, z + V);
        double sum = 0;
        for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v] - top));
        loss[w.text] += std::log(sum) + top - z[w.ids[t + 1]];
        ++targets[w.text];
      }
    }
  }
  std::vector<double> out;
  for (size_t i = 0; i < texts.size(); ++i)
    out.push_back(targets[i] > 0 ? std::exp(loss[i] / static_cast<double>(targets[i])) : 0.0);
  return out;
}

}  // namespace trident::cli
