// The rewriting model of evalgen --paraphrase (paraphrase_model.hpp).
#include "paraphrase_model.hpp"

#include <algorithm>
#include <filesystem>

#include "trident/cli/config_parser.hpp"
#include "trident/core/error.hpp"
#include "trident/data/evalgen/paraphrase_prompt.hpp"
#include "trident/data/prep.hpp"
#include "trident/interop/hf_config.hpp"
#include "trident/train/eval/generator.hpp"

namespace trident::cli {
namespace {

namespace eg = data::evalgen;

// The HF directory's own; for a checkpoint that of the HF model its run started from, else the
// one its training shards' prep.json names, else (a model of byte data) byte. A model whose
// tokenizer cannot be found is a ConfigError, never another tokenizer.
std::string model_tokenizer(const std::string& source, const interop::CheckpointModel* checkpoint) {
  if (!checkpoint) {
    const std::string own = interop::model_tokenizer_path(source);
    TRIDENT_CONFIG_CHECK(!own.empty(), "--paraphrase ", source,
                         " has no tokenizer.json: the model's tokenizer must be in its directory");
    return own;
  }
  if (!checkpoint->hf_base.empty()) {
    const std::string own = interop::model_tokenizer_path(checkpoint->hf_base);
    TRIDENT_CONFIG_CHECK(!own.empty(), "--paraphrase ", source, ": the Hugging Face model its run started from, ",
                         checkpoint->hf_base, ", has no tokenizer.json");
    return own;
  }
  if (!checkpoint->train_data.empty())
    if (std::string named = data::prep_json_field(checkpoint->train_data, "tokenizer"); !named.empty()) return named;
  TRIDENT_CONFIG_CHECK(checkpoint->init_from.empty(), "--paraphrase ", source, ": its run started from ",
                       checkpoint->init_from, ", which is no longer there: its tokenizer cannot be found");
  return "byte";
}

}  // namespace

struct ParaphraseModel::Prepared {
  size_t index;  // in the requests
  const eg::RewriteRequest* request;
  std::vector<int32_t> prompt;
  int max_new;
};

ParaphraseModel::ParaphraseModel(const std::string& source, const eg::SamplingOptions& sampling, int threads,
                                 const dist::ReductionOps* reductions, const Logger& log)
    : model_(source, {.option = "--paraphrase", .max_seq_len = 4096, .micro_batch = {}, .threads = threads}),
      sampling_(sampling) {
  const train::RunConfig& cfg = model_.config();
  const std::string tokenizer = model_tokenizer(source, model_.checkpoint());
  tokenizer_ = data::load_tokenizer(tokenizer);
  TRIDENT_CONFIG_CHECK(tokenizer_->vocab_size() <= static_cast<uint64_t>(cfg.model.vocab), "--paraphrase ", source,
                       ": its tokenizer ", tokenizer_->describe(), " has ", tokenizer_->vocab_size(),
                       " ids; the model's vocabulary is ", cfg.model.vocab);
  if (tokenizer != "byte" && eg::has_chat_template(tokenizer))
    chat_ = std::make_unique<data::ChatTemplate>(data::load_chat_template(tokenizer));
  turn_end_ = eg::assistant_turn_end(chat_.get());
  stop_.push_back(static_cast<int32_t>(tokenizer_->end_of_text()));
  for (const std::string& end : {std::string("<|im_end|>"), turn_end_})
    if (auto id = end.empty() ? std::nullopt : tokenizer_->special_token(end))
      if (std::find(stop_.begin(), stop_.end(), static_cast<int32_t>(*id)) == stop_.end())
        stop_.push_back(static_cast<int32_t>(*id));

  model_.load(reductions, log);
  description_ = detail::concat(model_.describe(), ", tokenizer ", tokenizer_->describe(),
                                chat_ ? ", its chat template" : ", no chat template (plain prompt)");
}

ParaphraseModel::~ParaphraseModel() = default;

std::vector<eg::Rewrite> ParaphraseModel::rewrite(const std::vector<eg::RewriteRequest>& requests) {
  std::vector<eg::Rewrite> out(requests.size());
  const int context = model_.config().model.seq_len;
  // Each request's prompt: the document prefix (none under a chat template, which renders its
  // own) and the rendered request; its budget from the original's length.
  std::vector<Prepared> ready;
  for (size_t i = 0; i < requests.size(); ++i) {
    const eg::EvalCase& c = *requests[i].source_case;
    Prepared p{i, &requests[i], {}, 0};
    if (!chat_)
      for (uint32_t id : data::document_prefix(*tokenizer_)) p.prompt.push_back(static_cast<int32_t>(id));
    for (uint32_t id : tokenizer_->encode(eg::paraphrase_request(c.prompt, chat_.get())))
      p.prompt.push_back(static_cast<int32_t>(id));
    const int original = static_cast<int>(tokenizer_->encode(c.prompt).size());
    p.max_new = std::min(2 * original + 16, context - static_cast<int>(p.prompt.size()));
    if (p.prompt.empty() || p.max_new < original + 1) {
      out[i].too_long = true;
      continue;
    }
    ready.push_back(std::move(p));
  }
  // Batches in request order: up to kBatch, while the longest prompt and the largest budget
  // fit the context together.
  std::vector<Prepared> batch;
  int longest = 0, budget = 0;
  for (Prepared& p : ready) {
    const int length = static_cast<int>(p.prompt.size());
    if (!batch.empty() && (static_cast<int>(batch.size()) == kBatch ||
                           std::max(longest, length) + std::max(budget, p.max_new) > context)) {
      generate_batch(batch, out);
      batch.clear();
      longest = budget = 0;
    }
    longest = std::max(longest, length);
    budget = std::max(budget, p.max_new);
    batch.push_back(std::move(p));
  }
  if (!batch.empty()) generate_batch(batch, out);
  return out;
}

void ParaphraseModel::generate_batch(const std::vector<Prepared>& batch, std::vector<eg::Rewrite>& out) {
  int longest = 0, budget = 0;
  std::vector<std::vector<int32_t>> prompts;
  for (const Prepared& p : batch) {
    longest = std::max<int>(longest, static_cast<int>(p.prompt.size()));
    budget = std::max(budget, p.max_new);
    prompts.push_back(p.prompt);
  }
  train::Generator generator(model_.model(), model_.model().ops(), nullptr, static_cast<int>(batch.size()), longest,
                             longest + budget);
  // Sequence b's token t is its stream's draw t: the batch is no input.
  std::vector<int64_t> position(batch.size(), 0);
  const int64_t vocab = static_cast<int64_t>(tokenizer_->vocab_size());
  const train::TokenSampler sampler = [&](int b, const float* logits, int64_t model_vocab) -> int32_t {
    if (b >= static_cast<int>(batch.size())) return 0;  // an unused row of the batch
    const double u = eg::sample_uniform(batch[size_t(b)].request->stream, position[size_t(b)]++);
    return eg::sample_token(logits, std::min(vocab, model_vocab), sampling_, u);
  };
  const auto ids = generator.generate(prompts, budget, stop_, sampling_.temperature > 0 ? &sampler : nullptr);
  for (size_t b = 0; b < batch.size(); ++b) {
    std::vector<uint32_t> kept;  // its own budget; ids past the tokenizer's vocabulary decode to nothing
    for (size_t t = 0; t < ids[b].size() && static_cast<int>(t) < batch[b].max_new; ++t)
      if (static_cast<uint64_t>(ids[b][t]) < tokenizer_->vocab_size()) kept.push_back(static_cast<uint32_t>(ids[b][t]));
    out[batch[b].index].text =
        eg::cut_rewrite(tokenizer_->decode(kept), turn_end_, batch[b].request->source_case->prompt);
  }
}

}  // namespace trident::cli
