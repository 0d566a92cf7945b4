// Feed-forward block part: gpt2 down(gelu(up(x))), llama down(silu(gate(x)) * up(x)), the output
// added onto the residual stream. Tensor-parallel: up/gate column-parallel, down row-parallel,
// so each rank holds F/tp hidden features. x: [N, C], hidden activations [N, F/tp].
#pragma once
#include <array>
#include <optional>
#include <string>

#include "trident/model/dropout_site.hpp"
#include "trident/model/linear.hpp"
#include "trident/model/model_config.hpp"

namespace trident::model {

struct MlpActivations {
  Tensor up;    // [N, F] up projection (gpt2: GELU input)
  Tensor gate;  // [N, F] gate projection (llama only)
  Tensor act;   // [N, F] input of the down projection
};

struct MlpScratch {
  Tensor dact, dgate;  // [N, F]
};

class Mlp {
 public:
  // ffn_hidden: the hidden features of this MLP (0: cfg.ffn_hidden; an expert's or the shared
  // MLP's size in MoE layers).
  Mlp(ParamStore& store, const std::string& prefix, const ModelConfig& cfg, TensorParallel tp = {}, int ffn_hidden = 0);
  // All in `stored` (16 bits under mixed precision) when given, else dtype.
  MlpActivations make_activations(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored = {}) const;
  MlpScratch make_scratch(Ops& ops, int64_t rows, DType dtype) const;

  // out = mlp(x), or out += mlp(x) when accumulate (onto the residual stream). Under tensor
  // parallelism out is this rank's partial sum [N, C]: finish_output completes it.
  void forward(Ops& ops, const Tensor& x, MlpActivations& a, Tensor& out, bool accumulate,
               const DropoutSite& lora = {}) const;
  // Generation (whole rows, no sequence parallelism): out = the complete mlp(x), summed over
  // the tensor-parallel group.
  void decode(Ops& ops, const Tensor& x, MlpActivations& a, Tensor& out) const;
  // Sums the partial outputs over the group into this rank's rows and adds the bias.
  Tensor& finish_output(Ops& ops, Tensor& partial, Tensor& rows) const;
  // The down projection's bias (gpt2), which a row-parallel forward leaves out: added to the
  // partial output of one tensor-parallel rank (MoE experts, whose outputs are weighted before
  // the group sums them).
  void add_output_bias(Ops& ops, Tensor& out) const { down_.add_bias(ops, out); }
  // dx = d(x) from dout (overwritten; under tensor parallelism this rank's partial sum);
  // parameter gradients accumulate.
  void backward(Ops& ops, const Tensor& x, const MlpActivations& a, const Tensor& dout, MlpScratch& s,
                Tensor& dx, const DropoutSite& lora = {}) const;

 private:
  TensorParallel tp_;
  int ffn_;  // hidden features on this rank
  std::array<Parameter*, 2> gate_up_weights_;  // SwiGLU: gate and up weights, registered side by side
  Linear up_, down_;
  std::unique_ptr<Linear> gate_;
};

}  // namespace trident::model
