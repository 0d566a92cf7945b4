// The token losses of a step's micro-batches, kept on the device and read back once per step:
// a GPU never waits for a host copy between micro-batches. Each micro-batch's [N] losses get
// their own slice of one buffer (grown on demand); take() adds them micro-batch by micro-batch
// in double, in the order they were produced (as a per-micro-batch read-back would), and can
// also give each sequence's loss sum (per-source losses of a data mixture).
#pragma once
#include <cstdint>
#include <vector>

#include "trident/backend/ops.hpp"

namespace trident::model {

class StepLosses {
 public:
  // The sequences the next micro-batch holds: rows [first, first + count) of the global batch.
  void place(int64_t first_sequence, int64_t sequences) { first_ = first_sequence, sequences_ = sequences; }
  // Where the next micro-batch writes its `rows` per-token losses ([rows], device, dtype).
  Tensor next(Ops& ops, int64_t rows, DType dtype);
  // The same kept on the host (the vocabulary-parallel path computes losses there): [rows]
  // doubles, 0 where a target is masked.
  double* next_host(int64_t rows);
  // The sum of everything recorded since the last take(), and a fresh start. per_sequence
  // (optional): each placed sequence's loss sum is added at its global-batch row.
  double take(Ops& ops, std::vector<double>* per_sequence = nullptr);

 private:
  struct Slice {
    int64_t end = 0;  // end in device_ (or host_tokens_)
    int64_t first_sequence = 0, sequences = 1;
  };
  Tensor device_;                   // [capacity]
  Tensor host_;                     // [capacity] fp64 read-back
  std::vector<double> host_tokens_; // vocabulary-parallel losses
  std::vector<Slice> slices_;
  bool on_host_ = false;            // the slices live in host_tokens_
  int64_t first_ = 0, sequences_ = 1;
};

}  // namespace trident::model
