// One pre-norm transformer block: y = h + mlp(norm2(h)), h = x + attn(norm1(x)).
// x, h, y: [N, C]. GPT-2 (LayerNorm, GELU MLP) or Llama (RMSNorm, RoPE, GQA, SwiGLU).
#pragma once
#include <string>

#include "trident/model/attention.hpp"
#include "trident/model/dropout_site.hpp"
#include "trident/model/mlp.hpp"
#include "trident/model/norm.hpp"

namespace trident::model {

struct BlockActivations {
  NormActivations norm1;
  AttentionActivations attn;
  Tensor mid;  // [N, C] h, the residual stream between attention and MLP
  NormActivations norm2;
  MlpActivations mlp;
};

// Temporaries shared by all blocks.
struct BlockScratch {
  Tensor dnorm;   // [N, C]
  Tensor branch;  // [N, C] attention / MLP output (or its gradient) on its way through dropout
  AttentionScratch attn;
  MlpScratch mlp;
};

class TransformerBlock {
 public:
  TransformerBlock(ParamStore& store, int index, const ModelConfig& cfg, TensorParallel tp = {});
  BlockActivations make_activations(Ops& ops, int64_t batch, DType dtype) const;
  BlockScratch make_scratch(Ops& ops, int64_t batch, DType dtype) const;

  // Dropout applies to each branch before it joins the residual stream (when the site is active).
  struct Dropout {
    DropoutSite attn, mlp;
  };

  void forward(Ops& ops, const Tensor& x, const Tensor& positions, BlockActivations& a, Tensor& y, BlockScratch& s,
               const Dropout& dropout) const;
  // On entry dres = dL/dy; on return dres = dL/dx. Parameter gradients accumulate.
  void backward(Ops& ops, const Tensor& x, const Tensor& positions, const BlockActivations& a, Tensor& dres,
                BlockScratch& s, const Dropout& dropout) const;

 private:
  const ModelConfig& cfg_;
  bool tensor_parallel_;  // branch outputs are complete only after their all-reduce
  Norm norm1_;
  Attention attn_;
  Norm norm2_;
  Mlp mlp_;
};

}  // namespace trident::model
