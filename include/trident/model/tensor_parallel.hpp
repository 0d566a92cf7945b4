// The tensor-parallel group a layer splits its weights over (Megatron-style): a communicator
// to ask for rank and size, and the collectives layers need. Without a communicator the layer
// is whole (tp = 1). The layers hold a copy; the communicator belongs to the Topology.
//
// With sequence parallelism the residual stream, norms and dropout work on this rank's rows
// only ([N/tp, C], rows [rank*N/tp, (rank+1)*N/tp)); the input of a column-parallel layer is
// gathered from all ranks' rows, and a row-parallel output is reduce-scattered back to rows,
// instead of one all-reduce: the same bytes, ~tp times less activation memory in those regions.
#pragma once
#include "trident/backend/ops.hpp"
#include "trident/dist/communicator.hpp"

namespace trident::model {

struct TensorParallel {
  dist::Communicator* comm = nullptr;
  bool sequence_parallel = false;

  int rank() const { return comm ? comm->rank() : 0; }
  int size() const { return comm ? comm->size() : 1; }
  bool splits_rows() const { return sequence_parallel && size() > 1; }
  // Rows of the residual stream this rank holds, of n.
  int64_t local_rows(int64_t n) const { return splits_rows() ? n / size() : n; }
  int64_t first_row(int64_t n) const { return splits_rows() ? n / size() * rank() : 0; }

  // Sums partial results of the group's shards in place (call in the same order on every rank).
  void all_reduce(Tensor& x) const {
    if (size() > 1) comm->all_reduce_sum(x);
  }
  // Partial [N, C] results of the shards -> this rank's rows of their sum. Returns where the
  // result is: rows (reduce-scatter, sequence parallelism) or partial (all-reduced in place).
  Tensor& reduce_to_rows(Tensor& partial, Tensor& rows) const {
    if (!splits_rows()) {
      all_reduce(partial);
      return partial;
    }
    comm->reduce_scatter_sum(partial, rows);
    return rows;
  }
  // This rank's rows [N/tp, C] -> all rows [N, C] (with sequence parallelism; otherwise rows is
  // already whole and is returned as it is).
  const Tensor& gather_rows(Ops& ops, const Tensor& rows, Tensor& all) const {
    if (!splits_rows()) return rows;
    Tensor mine = all.narrow(first_row(all.dim(0)), first_row(all.dim(0)) + rows.dim(0));
    ops.copy(rows, mine);
    comm->all_gather_in_place(all);
    return all;
  }
};

}  // namespace trident::model
