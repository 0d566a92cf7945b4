// Where a micro-batch's tokens sit, as the attention layers need it. positions: each token's
// position in its document (the rotary embedding, GPT-2's position table, and the attention
// mask: Ops::attention_forward lets query t see keys t - positions[t] .. t). window: the mask of
// sliding-window layers, min(position, window - 1), so a query sees the window's keys or its
// document's, whichever start later; undefined when no layer needs it (no window, or a window
// at least seq_len wide).
#pragma once
#include "trident/core/tensor.hpp"

namespace trident::model {

struct TokenPositions {
  Tensor positions, window;  // int32 [B*T] on the device
  TokenPositions(const Tensor& p) : positions(p) {}  // NOLINT(google-explicit-constructor)
  TokenPositions(const Tensor& p, const Tensor& w) : positions(p), window(w) {}
  // The attention mask of a layer.
  const Tensor& mask(bool windowed) const { return windowed && window.defined() ? window : positions; }
};

}  // namespace trident::model
