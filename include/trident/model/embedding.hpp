// Token embedding (and GPT-2's learned position embedding): out[n] = wte[tok[n]] (+ wpe[pos[n]]).
// tokens, positions: [N] int32; out: [N, C].
#pragma once
#include "trident/model/model_config.hpp"
#include "trident/model/param_store.hpp"

namespace trident::model {

class Embedding {
 public:
  Embedding(ParamStore& store, const ModelConfig& cfg);
  void forward(Ops& ops, const Tensor& tokens, const Tensor& positions, Tensor& out) const;
  void backward(Ops& ops, const Tensor& tokens, const Tensor& positions, const Tensor& dout) const;
  Parameter& token_weight() const { return *tok_; }

 private:
  Parameter* tok_;
  Parameter* pos_ = nullptr;
};

}  // namespace trident::model
