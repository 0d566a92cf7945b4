// Generator: greedy generation with a KV cache across the model-parallel group. Every rank of
// a pipeline stage runs its chunks for the call's rows (the tensor-parallel group in step),
// stages pass the hidden rows on in virtual-stage order by point-to-point messages, the last
// stage picks the tokens and broadcasts them over the pipeline group, so all ranks of the
// model-parallel group see the same sequences and stop together.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "trident/dist/communicator.hpp"
#include "trident/model/decoder.hpp"

namespace trident::train {

// One decoder call through the pipeline: the first virtual stage embeds, each stage runs its
// chunks on the rows received from the previous one and passes them on (pp: the pipeline
// group, nullptr when the model is whole on the rank or split only over tensor parallelism).
void run_decoder_stages(model::Decoder& decoder, dist::Communicator* pp, int chunks);

// Picks sequence b's next token from its logits over the real vocabulary ([vocab] floats).
// Its state (seeded random streams) is its own; the model must be whole on the rank (tp = 1).
using TokenSampler = std::function<int32_t(int sequence, const float* logits, int64_t vocab)>;

class Generator {
 public:
  // pp: the pipeline group (nullptr: the model is whole on this rank, or split only over
  // tensor-parallel ranks). batch: prompts generated together; max_prompt: the longest
  // prompt; length: the longest prompt + new tokens (<= seq_len). The KV cache holds batch x
  // length positions per layer.
  Generator(const model::GPTModel& model, Ops& ops, dist::Communicator* pp, int batch, int max_prompt, int length);

  // Continuations of up to batch prompts (collective over the model-parallel group, which must
  // pass the same prompts), greedy or by sampler: for each, the generated ids up to, not
  // including, the first id in stop, or max_new of them. Every prompt non-empty, its length +
  // max_new <= length.
  std::vector<std::vector<int32_t>> generate(const std::vector<std::vector<int32_t>>& prompts, int max_new,
                                             const std::vector<int32_t>& stop, const TokenSampler* sampler = nullptr);

  // Tokens computed so far (prompt rows and generated rows, real sequences only).
  int64_t tokens_processed() const { return tokens_processed_; }
  size_t cache_bytes() const { return decoder_.cache_bytes(); }

 private:
  // One call through the pipeline; returns the next token of every sequence on every rank.
  std::vector<int32_t> step(const std::vector<int32_t>& tokens, const std::vector<int32_t>& start, int rows,
                            const std::vector<int32_t>& pick, const TokenSampler* sampler);

  model::Decoder decoder_;
  dist::Communicator* pp_;
  int chunks_;
  int64_t vocab_;  // the real vocabulary (sampling)
  int64_t tokens_processed_ = 0;
};

}  // namespace trident::train
