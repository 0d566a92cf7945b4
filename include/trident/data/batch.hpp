// One micro-batch of training data as the model consumes it: int32 host tensors of shape
// (B, T), B = micro_batch sequences of T = seq_len tokens.
#pragma once
#include <cstdint>
#include <vector>

#include "trident/core/tensor.hpp"

namespace trident::data {

// Differential privacy: one privacy unit's tokens in a micro-batch, rows [begin, begin + count)
// of its B*L tokens (row-major); a unit never crosses a row. unit: its index in the step's
// sample (train/privacy/private_batches.hpp).
struct UnitSpan {
  int64_t unit = 0;
  int64_t begin = 0;
  int64_t count = 0;
};

struct Batch {
  // With bucketing the three tensors below are (B, L) views, L <= T the micro-batch's length,
  // cut from these (B, T) allocations; otherwise they are the allocations themselves.
  Tensor tokens_buffer, targets_buffer, positions_buffer;
  Tensor tokens;     // (B, T) input token ids
  Tensor targets;    // (B, T) next token ids; -1 = no loss here (prompt tokens before loss start)
  Tensor positions;  // (B, T) position of each token within its document (restarts at 0 at a
                     // document start; attention masks by it: Ops::attention_forward)
  int64_t valid_tokens = 0;    // number of targets >= 0 in this micro-batch
  int64_t padding_tokens = 0;  // input positions holding no document token (unpacked rows)
  int64_t first_sequence = 0;  // index of row 0 within the step's global batch (dropout masks)
  std::vector<UnitSpan> units; // differential privacy: the privacy units of the micro-batch (else empty)
};

}  // namespace trident::data
