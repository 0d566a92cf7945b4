// The token losses of a step's micro-batches, kept on the device and read back once per step:
// a GPU never waits for a host copy between micro-batches. Each micro-batch's [N] losses get
// their own slice of one buffer (grown on demand); sum() adds them micro-batch by micro-batch
// in double, in the order they were produced (as a per-micro-batch read-back would).
#pragma once
#include <cstdint>
#include <vector>

#include "trident/backend/ops.hpp"

namespace trident::model {

class StepLosses {
 public:
  // Where the next micro-batch writes its `rows` per-token losses ([rows], device, dtype).
  Tensor next(Ops& ops, int64_t rows, DType dtype);
  // A loss sum known on the host (the vocabulary-parallel path computes it there).
  void add_host(double loss_sum) { host_sum_ += loss_sum; }
  // The sum of everything recorded since the last take(), and a fresh start.
  double take(Ops& ops);

 private:
  Tensor device_;                   // [capacity]
  Tensor host_;                     // [capacity] fp64 read-back
  std::vector<int64_t> ends_;       // end of each micro-batch's slice
  double host_sum_ = 0;
};

}  // namespace trident::model
