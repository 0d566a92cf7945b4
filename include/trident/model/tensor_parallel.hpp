// The tensor-parallel group a layer splits its weights over (Megatron-style): a communicator
// to ask for rank and size, and the one collective layers need. Without a communicator the
// layer is whole (tp = 1). The layers hold a copy; the communicator belongs to the Topology.
#pragma once
#include "trident/dist/communicator.hpp"

namespace trident::model {

struct TensorParallel {
  dist::Communicator* comm = nullptr;

  int rank() const { return comm ? comm->rank() : 0; }
  int size() const { return comm ? comm->size() : 1; }
  // Sums partial results of the group's shards (a row-parallel output, a column-parallel
  // input gradient). Call in the same order on every rank of the group.
  void all_reduce(Tensor& x) const {
    if (size() > 1) comm->all_reduce_sum(x);
  }
};

}  // namespace trident::model
