// One place in the model where dropout applies (the embedding, or a block's attention or MLP
// branch before it joins the residual stream). Its mask is keyed by (seed, site name), the
// step, and the global index of the element, so backward recomputes it and every layout
// drops the same elements (docs/design.md section 2).
#pragma once
#include <cstdint>

#include "trident/backend/ops.hpp"

namespace trident::model {

// LoRA's dropout cannot mask its input in place (the base weight reads it unmasked): the masked
// copies of an adapter's input and of its input gradient go here. One per model, shared by
// every adapter (their calls never overlap), grown on demand.
struct LoraScratch {
  Tensor masked_input, masked_grad;
};

struct DropoutSite {
  double p = 0;
  uint64_t key = 0;
  uint64_t stream = 0;       // the optimizer step
  int64_t first_index = 0;   // global index of this micro-batch's first element (LoRA: its first row)
  LoraScratch* lora_scratch = nullptr;  // LoRA's site: the model's scratch (needed when active)

  bool active() const { return p > 0; }
  // Forward on activations and backward on their gradient are the same call.
  void apply(Ops& ops, Tensor& x) const {
    if (active()) ops.dropout(x, p, key, stream, first_index);
  }
};

}  // namespace trident::model
