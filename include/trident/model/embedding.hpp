// Token embedding (and GPT-2's learned position embedding): out[n] = wte[tok[n]] (+ wpe[pos[n]]).
// Vocabulary-parallel: each tensor-parallel rank holds V/tp rows of wte (V padded to a
// multiple of tp), looks up the tokens it holds and the group sums the outputs.
// tokens, positions: [N] int32; out: [N, C].
#pragma once
#include "trident/model/model_config.hpp"
#include "trident/model/param_store.hpp"
#include "trident/model/tensor_parallel.hpp"

namespace trident::model {

class Embedding {
 public:
  Embedding(ParamStore& store, const ModelConfig& cfg, TensorParallel tp = {});
  // out: [R, C], this rank's rows under sequence parallelism; full: an [N, C] scratch buffer
  // for the shards' partial sums (used with sequence parallelism only).
  void forward(Ops& ops, const Tensor& tokens, const Tensor& positions, Tensor& out, Tensor& full) const;
  // Generation: all rows [N, C] on every rank (no sequence parallelism).
  void forward_whole(Ops& ops, const Tensor& tokens, const Tensor& positions, Tensor& out) const;
  void backward(Ops& ops, const Tensor& tokens, const Tensor& positions, const Tensor& dout, Tensor& full) const;
  Parameter& token_weight() const { return *tok_; }
  // Registers the token table "embed.tok.weight" (vocabulary-parallel under tp): the
  // embedding's own, or the copy a last pipeline stage holds for its tied output head.
  static Parameter& add_token_weight(ParamStore& store, const ModelConfig& cfg, TensorParallel tp);

 private:
  Parameter* tok_;
  Parameter* pos_ = nullptr;
  TensorParallel tp_;
  int64_t vocab_offset_ = 0;  // first id of this rank's rows
};

}  // namespace trident::model
