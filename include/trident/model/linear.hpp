// Linear layer y = x @ W^T + b with W stored [out, in] (PyTorch's layout), and its backward.
// x: [N, in], y: [N, out]. The tensor-parallel variants split W along out (column-parallel) or
// in (row-parallel); this class holds whichever shard its ParamSpec describes.
#pragma once
#include <string>

#include "trident/model/param_store.hpp"

namespace trident::model {

class Linear {
 public:
  Linear(ParamStore& store, const std::string& name, int in, int out, bool bias, double init_std,
         bool weight_decay = true);

  // y = x W^T + b, or y += x W^T + b when accumulate (fuses a residual add).
  void forward(Ops& ops, const Tensor& x, Tensor& y, bool accumulate = false) const;
  // dW += dy^T x, db += colsum(dy); dx = dy W (or dx += dy W when accumulate_dx).
  // dx may be nullptr when the input needs no gradient.
  void backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx, bool accumulate_dx = false) const;

  Parameter& weight() const { return *weight_; }
  Parameter* bias() const { return bias_; }

 private:
  Parameter* weight_;
  Parameter* bias_ = nullptr;
};

}  // namespace trident::model
