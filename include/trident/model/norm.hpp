// Normalisation layer: LayerNorm (gpt2: weight + bias) or RMSNorm (llama: weight only).
// x, y: [N, C]; the saved statistics mean/rstd are [N].
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "trident/model/param_store.hpp"

namespace trident::model {

struct NormActivations {
  Tensor y;     // [N, C] normalised output (input of the next matmul)
  Tensor mean;  // [N] (LayerNorm only)
  Tensor rstd;  // [N]
};

class Norm {
 public:
  Norm(ParamStore& store, const std::string& name, int hidden, bool layernorm, double eps);
  // y (a GEMM input) in `stored` (16 bits under mixed precision), the statistics in dtype.
  NormActivations make_activations(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored = {}) const;
  void forward(Ops& ops, const Tensor& x, NormActivations& a) const;
  // dx += d(norm)/dx applied to dy; parameter gradients accumulate.
  void backward(Ops& ops, const Tensor& x, const NormActivations& a, const Tensor& dy, Tensor& dx) const;
  std::vector<Tensor> grads() const;  // weight (and bias) gradients

 private:
  // Differential privacy's norm pass: each unit's squared gradient norms of the gain (and bias).
  void unit_squares(Ops& ops, const Tensor& x, const NormActivations& a, const Tensor& dy, UnitGradients& units) const;

 public:
 private:
  Parameter* weight_;
  Parameter* bias_ = nullptr;
  int hidden_;
  double eps_;
};

}  // namespace trident::model
