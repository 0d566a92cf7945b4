// Decoder: KV-cache generation over this rank's part of a GPTModel. Forward only, whole rows
// under tensor parallelism (a decode step has one row per sequence: sequence parallelism
// would not pay), the keys and values of every past position kept per layer, so each new
// token costs one row per sequence instead of the whole sequence again.
//
// A call handles S new tokens per sequence of a batch of B: the prompts (prefill, right-padded
// to the longest; the padding rows compute values nothing attends to before a real token
// overwrites them) or one generated token each. Pipeline stages run their chunks in order and
// pass the hidden rows on (train::Generator drives that); the last stage picks the tokens.
#pragma once
#include <vector>

#include "trident/model/gpt_model.hpp"

namespace trident::model {

class Decoder {
 public:
  // batch: sequences decoded together; length: the longest sequence (prompt + new tokens,
  // <= seq_len); max_new_rows: the most tokens one call adds per sequence (the longest prompt);
  // call_rows: the most rows of one call over all its sequences, which sizes the buffers
  // (0: batch x max_new_rows).
  Decoder(const GPTModel& model, Ops& ops, int batch, int length, int max_new_rows, int64_t call_rows = 0);

  int batch() const { return batch_; }
  int length() const { return length_; }

  // Sets the call's S new tokens per sequence at positions start[b] .. start[b] + S - 1
  // (tokens: [n*S] row-major; used by the first virtual stage, positions by all) for the n =
  // start.size() sequences first .. first + n - 1 of the batch (the others' caches are left as
  // they are).
  void begin(const std::vector<int32_t>& tokens, const std::vector<int32_t>& start, int new_rows, int first = 0);
  // The hidden rows [B*S, C] of the current call: received into by a stage that does not
  // embed, passed on after run_chunk.
  Tensor& hidden() { return hidden_view_; }
  // Embeds the tokens into hidden() (the first virtual stage).
  void embed();
  // The blocks of this rank's chunk on hidden(), adding their keys and values to the cache.
  void run_chunk(int chunk);
  // The last virtual stage: the greedy next token of each of the n sequences from its row pick[b] < S.
  std::vector<int32_t> greedy(const std::vector<int32_t>& pick);
  // The last virtual stage: the logits of each sequence's row pick[b] on the host, [B, V/tp]
  // (this rank's vocabulary shard, model::LMHead::host_logits; the first n rows are the call's).
  const Tensor& logits(const std::vector<int32_t>& pick);
  // The last virtual stage: log p(targets[i]) of the call's rows[i] (indices into its [n*S]
  // rows), with each row's largest probability and whether the target ranks first (ties count
  // as right); logits are computed for those rows only.
  TokenScores score(const std::vector<int32_t>& rows, const std::vector<int32_t>& targets);
  // Copies the cached keys and values of positions [0, positions) of sequence `from` to `to`
  // (a shared context computed once, continued differently by several sequences).
  void copy_sequence(int from, int to, int positions);

  size_t cache_bytes() const;

 private:
  const GPTModel& model_;
  Ops& ops_;
  int batch_, length_, max_rows_;
  int64_t call_rows_;
  int new_rows_ = 0, sequences_ = 0, first_ = 0;  // the current call's S, n and first sequence
  // The rows greedy(), logits() or score() read, gathered into picked_ / scored_.
  void gather_rows(const std::vector<int32_t>& rows, Tensor& into);
  std::vector<std::vector<KvCache>> caches_;  // [chunk][block]
  DecodeScratch scratch_;
  GreedyBuffers greedy_;
  Tensor hidden_, hidden_view_;  // [call_rows, C] and the current call's [n*S, C]
  Tensor tokens_, positions_;    // [call_rows] int32 on the device
  Tensor host_tokens_, host_positions_, start_;  // host int32; start_ [B]
  Tensor picked_;                // [B, C] the rows greedy() reads
  HeadBuffers scoring_;          // score(): the head's buffers for up to call_rows rows
  Tensor row_index_, host_row_index_;  // gather_rows' int32 indices, device and host
  Tensor scored_, targets_, host_targets_;  // [call_rows, C], [call_rows] device and host int32
};

}  // namespace trident::model
