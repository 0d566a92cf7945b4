// Greedy generation: prefill the right-padded prompts in one call, then one row per sequence
// per call, each call walked through the virtual stages in order.
#include "trident/train/eval/generator.hpp"

#include <algorithm>

namespace trident::train {

Generator::Generator(const model::GPTModel& model, Ops& ops, dist::Communicator* pp, int batch, int max_prompt,
                     int length)
    : decoder_(model, ops, batch, length, max_prompt), pp_(pp), chunks_(model.num_chunks()),
      vocab_(model.config().vocab) {}

void run_decoder_stages(model::Decoder& decoder, dist::Communicator* pp_group, int chunks) {
  const int pp = pp_group ? pp_group->size() : 1, me = pp_group ? pp_group->rank() : 0, stages = chunks * pp;
  // Virtual stage v lives on pipeline rank v % pp as its chunk v / pp.
  for (int v = me; v < stages; v += pp) {
    if (v == 0) decoder.embed();
    else if (pp > 1) pp_group->recv(decoder.hidden(), (v - 1) % pp, v);
    decoder.run_chunk(v / pp);
    if (v + 1 < stages && pp > 1) pp_group->send(decoder.hidden(), (v + 1) % pp, v + 1);
  }
}

std::vector<int32_t> Generator::step(const std::vector<int32_t>& tokens, const std::vector<int32_t>& start, int rows,
                                     const std::vector<int32_t>& pick, const TokenSampler* sampler) {
  decoder_.begin(tokens, start, rows);
  run_decoder_stages(decoder_, pp_, chunks_);
  const int pp = pp_ ? pp_->size() : 1, me = pp_ ? pp_->rank() : 0;
  std::vector<int32_t> next(decoder_.batch());
  if (me == pp - 1 && !sampler) next = decoder_.greedy(pick);
  if (me == pp - 1 && sampler) {
    const Tensor& logits = decoder_.logits(pick);
    TRIDENT_CHECK(logits.dim(1) >= vocab_, "generate: sampling needs the whole vocabulary on the rank (tp = 1)");
    std::vector<float> row(static_cast<size_t>(vocab_), 0.0f);
    for (int b = 0; b < decoder_.batch(); ++b) {
      for (int64_t j = 0; j < vocab_; ++j)
        row[size_t(j)] = logits.dtype() == DType::kF64 ? float(logits.data<double>()[b * logits.dim(1) + j])
                                                       : logits.data<float>()[b * logits.dim(1) + j];
      next[size_t(b)] = (*sampler)(b, row.data(), vocab_);
    }
  }
  if (pp > 1) pp_->broadcast(next.data(), next.size() * sizeof(int32_t), pp - 1);
  return next;
}

std::vector<std::vector<int32_t>> Generator::generate(const std::vector<std::vector<int32_t>>& prompts, int max_new,
                                                      const std::vector<int32_t>& stop, const TokenSampler* sampler) {
  const int batch = decoder_.batch(), real = static_cast<int>(prompts.size());
  TRIDENT_CHECK(real >= 1 && real <= batch && max_new >= 1, "generate: ", real, " prompts for batch ", batch,
                ", max_new ", max_new);
  int longest = 0;
  for (const auto& p : prompts) {
    TRIDENT_CHECK(!p.empty() && int(p.size()) + max_new <= decoder_.length(), "generate: a prompt of ", p.size(),
                  " tokens + ", max_new, " new ones passes the decoder's length ", decoder_.length());
    longest = std::max<int>(longest, static_cast<int>(p.size()));
  }
  // Prefill: prompts right-padded to the longest (unused batch rows repeat prompt 0); each
  // sequence's next token comes from its last prompt row.
  std::vector<int32_t> tokens(size_t(batch) * longest, 0), start(batch, 0), pick(batch);
  std::vector<int32_t> length(batch);
  for (int b = 0; b < batch; ++b) {
    const auto& p = prompts[b < real ? b : 0];
    std::copy(p.begin(), p.end(), tokens.begin() + size_t(b) * longest);
    length[b] = static_cast<int32_t>(p.size());
    pick[b] = length[b] - 1;
    if (b < real) tokens_processed_ += length[b];
  }
  std::vector<int32_t> next = step(tokens, start, longest, pick, sampler);

  std::vector<std::vector<int32_t>> out(real);
  std::vector<bool> done(real, false);
  const std::vector<int32_t> first_row(batch, 0);
  for (int produced = 1;; ++produced) {
    int active = 0;
    for (int b = 0; b < real; ++b) {
      if (done[b]) continue;
      if (std::find(stop.begin(), stop.end(), next[b]) != stop.end()) done[b] = true;
      else out[b].push_back(next[b]);
      if (produced == max_new) done[b] = true;
      active += !done[b];
    }
    if (active == 0) break;
    // The token just chosen goes in at the sequence's next position.
    for (int b = 0; b < batch; ++b) start[b] = length[b] + produced - 1;
    tokens_processed_ += active;
    next = step(next, start, 1, first_row, sampler);
  }
  return out;
}

}  // namespace trident::train
