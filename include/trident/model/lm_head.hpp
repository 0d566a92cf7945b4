// Final norm, output projection to the vocabulary and fused softmax cross-entropy.
// x: [N, C], logits: [N, V], targets: [N] int32 (-1 = not trained on).
// Forward and backward run back to back: the logits buffer turns into its own gradient, so
// [N, V] is held once, never per micro-batch.
#pragma once
#include "trident/model/norm.hpp"
#include "trident/model/model_config.hpp"

namespace trident::model {

struct HeadBuffers {
  NormActivations norm;
  Tensor logits;       // [N, V], then dlogits
  Tensor losses;       // [N] per-token loss
  Tensor host_losses;  // [N] host copy for the sum
};

class LMHead {
 public:
  // tied: the projection is the token embedding (its gradient accumulates there).
  LMHead(ParamStore& store, const ModelConfig& cfg, Parameter* tied);
  HeadBuffers make_buffers(Ops& ops, int64_t rows, DType dtype) const;

  // logits = norm(x) @ W^T into b.logits.
  void forward(Ops& ops, const Tensor& x, HeadBuffers& b) const;
  // Loss and backward after forward(): returns the loss summed over valid targets; dx is
  // overwritten with grad_scale * dL/dx; parameter gradients accumulate.
  double loss_backward(Ops& ops, const Tensor& x, const Tensor& targets, double grad_scale, HeadBuffers& b,
                       Tensor& dx) const;

 private:
  Norm norm_;
  Parameter* weight_;
};

}  // namespace trident::model
