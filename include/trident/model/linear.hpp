// Linear layer y = x @ W^T + b with W stored [out, in] (PyTorch's layout), and its backward.
// x: [N, in], y: [N, out]. The tensor-parallel variants split W along out (column-parallel) or
// in (row-parallel); this class holds whichever shard its ParamSpec describes.
#pragma once
#include <string>

#include "trident/model/param_store.hpp"
#include "trident/model/tensor_parallel.hpp"

namespace trident::model {

// How a weight is split over the tensor-parallel group.
//   kColumn: output features split; y holds this rank's features, x is whole. The input
//            gradient is partial: the caller sums it over the group.
//   kRow:    input features split; x holds this rank's features, the output is partial: the
//            caller sums it over the group, then adds the replicated bias (add_bias).
enum class Split { kNone, kColumn, kRow };

class Linear {
 public:
  // in, out: global feature counts.
  Linear(ParamStore& store, const std::string& name, int in, int out, bool bias, double init_std,
         Split split = Split::kNone, TensorParallel tp = {});

  // y = x W^T + b, or y += x W^T + b when accumulate (fuses a residual add). Row split over
  // tp > 1: y = x W^T only, a partial sum (no accumulate).
  void forward(Ops& ops, const Tensor& x, Tensor& y, bool accumulate = false) const;
  // The bias a row-parallel forward left out, added once the output is summed.
  void add_bias(Ops& ops, Tensor& y) const;
  bool row_parallel() const { return split_ == Split::kRow; }
  // dW += dy^T x, db += colsum(dy); dx = dy W (or dx += dy W when accumulate_dx).
  // dx may be nullptr when the input needs no gradient.
  void backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx, bool accumulate_dx = false) const;

  Parameter& weight() const { return *weight_; }
  Parameter* bias() const { return bias_; }

 private:
  Parameter* weight_;
  Parameter* bias_ = nullptr;
  Split split_;
  TensorParallel tp_;
};

}  // namespace trident::model
