// Mixture-of-experts feed-forward layer, in place of the MLP in MoE layers:
//   out = sum_j w[n, j] * expert_{c[n, j]}(x[n]) (+ sigmoid(g . x[n]) * shared(x[n]))
// with c, w the router's top-k choices and weights (moe_router.hpp). Tokens are gathered into
// expert order (rows [M, C], M = N*k when dropless), each expert's MLP runs on its rows with
// one GEMM per projection, and the outputs are combined back into token order.
//
// Tensor parallelism: each expert's MLP (and the shared one) is split like the dense MLP
// (up/gate column-, down row-parallel), the router and shared gate are replicated. The output
// is this rank's partial sum [N, C] (finish_output completes it); the down biases (gpt2) join
// the partial sums of tp rank 0. The router's gradient comes out partial too (it is linear in
// the expert outputs), and is summed over the group once per step (replicated_grads).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trident/model/linear.hpp"
#include "trident/model/mlp.hpp"
#include "trident/model/model_config.hpp"
#include "trident/model/moe_router.hpp"

namespace trident::model {

// The group of ranks that splits each MoE layer's experts (expert parallelism): rank r holds
// experts [r * E/ep, (r + 1) * E/ep). Without a communicator every expert is local (ep = 1).
struct ExpertParallel {
  dist::Communicator* comm = nullptr;
  int rank() const { return comm ? comm->rank() : 0; }
  int size() const { return comm ? comm->size() : 1; }
};

// Expert parallelism: the rows this rank's experts compute for one micro-batch, received from
// every rank of the ep group (R of them, at most ep * N * k; buffers grow on demand and live
// behind a shared pointer, so copies of the activations share them).
struct ExpertRows {
  int64_t rows = 0;                          // R
  std::vector<int64_t> send_rows, recv_rows;  // per rank of the group: rows sent, received
  std::vector<int64_t> offsets;              // [E/ep + 1] each local expert's first row
  Tensor to_expert, to_source;               // int32 [R]: received (rank-major) <-> expert-major
  Tensor arrived;                            // [R, C] inputs as they arrive (rank-major)
  Tensor x;                                  // [R, C] expert-major inputs
  MlpActivations experts;                    // [R, F]
  Tensor y;                                  // [R, C] expert-major outputs
  Tensor leaving;                            // [R, C] outputs as they leave (rank-major)
  // Host buffers of the exchange, reused: rows per global expert sent and per (source, local
  // expert) received, and the two permutations before they go to the device.
  std::vector<int64_t> sent_counts, arrived_counts;
  std::vector<int32_t> to_expert_host, to_source_host;
  int64_t capacity() const { return x.defined() ? x.dim(0) : 0; }
};
// ... and the backward's temporaries, shared by all layers and slots.
struct ExpertRowsScratch {
  Tensor exchanged;  // [R, C] gradient rows as they arrive or leave (rank-major)
  Tensor dy, dx;     // [R, C] expert-major gradients
  MlpScratch experts;  // [R, F]
  int64_t capacity() const { return dy.defined() ? dy.dim(0) : 0; }
};

// Activations of one MoE layer for one micro-batch of N rows (M = N*k rows in expert order).
struct MoeActivations {
  std::shared_ptr<Routing> routing;  // host; shared by copies (recompute, trimmed views)
  Tensor logits;                     // [N, E] router output
  Tensor slots, weights;             // [N, k] int32 / dtype: each assignment's row, its weight
  Tensor rows, row_weights;          // [M] int32 / dtype: each row's token and weight
  Tensor x;                          // [M, C] expert inputs (stored dtype)
  MlpActivations experts;            // [M, F] every expert's rows, in expert order
  Tensor y;                          // [M, C] expert outputs (partial under tensor parallelism)
  MlpActivations shared;             // [N, Fs] the shared MLP
  Tensor shared_y;                   // [N, C] its output
  Tensor shared_logit, shared_scale; // [N, 1] the gate's logit and sigmoid
  Tensor identity;                   // int32 [N]: 0 .. N-1 (the shared MLP's rows, as slots)
  std::shared_ptr<ExpertRows> remote;  // expert parallelism only
  // The first n of `of` rows of each buffer (shorter micro-batches, fewer decode rows).
  MoeActivations prefix(int64_t n, int64_t of) const;
};

struct MoeScratch {
  Tensor dy, dx;            // [M, C] gradients of the expert outputs and inputs
  MlpScratch experts;       // [M, F]
  MlpScratch shared;        // [N, Fs]
  Tensor dshared;           // [N, C] gradient of the shared MLP's output
  Tensor dweights;          // [N, k] gradient of the routing weights
  Tensor dlogits;           // [N, E]
  Tensor dshared_logit;     // [N, 1]
  std::shared_ptr<ExpertRowsScratch> remote;  // expert parallelism only
  MoeScratch prefix(int64_t n, int64_t of) const;
};

// What a forward pass records and how its auxiliary losses enter the objective.
struct MoeStep {
  // Weight of this micro-batch's auxiliary losses in the objective (0: none, evaluation);
  // multiplied by moe.aux_loss_coef / moe.z_loss_coef.
  double aux_scale = 0;
  // Statistics table of the model's MoE layers ([layer][kMoeStatFields + E], sums), or nullptr.
  double* stats = nullptr;
};

// Fields of a layer's statistics row: tokens, aux * tokens, z * tokens, dropped assignments,
// then the assignments per expert.
inline constexpr int kMoeStatFields = 4;

class MoeLayer {
 public:
  // index: the layer's place among the model's MoE layers (its statistics row); ep: the group
  // that splits the experts (this rank builds only its own).
  MoeLayer(ParamStore& store, const std::string& prefix, const ModelConfig& cfg, TensorParallel tp, int index,
           ExpertParallel ep = {});
  MoeActivations make_activations(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored = {}) const;
  MoeScratch make_scratch(Ops& ops, int64_t rows, DType dtype) const;

  // out = moe(x) (or += when accumulate); x [N, C] whole rows. Partial under tensor parallelism.
  void forward(Ops& ops, const Tensor& x, MoeActivations& a, Tensor& out, bool accumulate, const MoeStep& step) const;
  // Generation: out = the complete moe(x), summed over the tensor-parallel group.
  void decode(Ops& ops, const Tensor& x, MoeActivations& a, Tensor& out) const;
  // Sums the partial outputs over the group into this rank's rows (biases are already in).
  Tensor& finish_output(Tensor& partial, Tensor& rows) const { return tp_.reduce_to_rows(partial, rows); }
  // dx = d(x) from dout (overwritten; partial under tensor parallelism); parameter gradients
  // accumulate, and the auxiliary losses' gradient joins the router's (tp rank 0).
  void backward(Ops& ops, const Tensor& x, const MoeActivations& a, const Tensor& dout, MoeScratch& s,
                Tensor& dx) const;
  // Gradients of the replicated router and shared gate: partial sums over the tp group.
  std::vector<Tensor> replicated_grads() const;

 private:
  // Rows [first, last) of an expert-ordered buffer.
  static Tensor expert_rows(const Tensor& t, int64_t first, int64_t last) {
    return t.defined() ? t.narrow(first, last) : t;
  }
  // Runs each local expert's MLP over its rows [offsets[e], offsets[e + 1]) of x into y.
  void run_experts(Ops& ops, const std::vector<int64_t>& offsets, const Tensor& x, MlpActivations& acts,
                   Tensor& y) const;
  void backward_experts(Ops& ops, const std::vector<int64_t>& offsets, const Tensor& x, const MlpActivations& acts,
                        const Tensor& dy, MlpScratch& scratch, Tensor& dx) const;
  // Expert parallelism: sends this rank's rows in expert order (a.x) to the experts' ranks,
  // runs the local experts on what arrives, and returns their outputs into a.y.
  void dispatch_forward(Ops& ops, MoeActivations& a) const;
  // ... and the gradient: dy [M, C] out, dx [M, C] back.
  void dispatch_backward(Ops& ops, const MoeActivations& a, const Tensor& dy, MoeScratch& s, Tensor& dx) const;
  // Grow the remote buffers to hold `rows` rows (never shrinking).
  void reserve(Ops& ops, ExpertRows& r, int64_t rows, DType dtype, DType stored) const;
  void reserve(Ops& ops, ExpertRowsScratch& s, int64_t rows, DType dtype) const;

  const ModelConfig& cfg_;
  TensorParallel tp_;
  ExpertParallel ep_;
  int first_expert_ = 0, local_experts_ = 0;
  int index_;
  RouterOptions options_;
  Linear router_;
  std::vector<std::unique_ptr<Mlp>> experts_;
  std::unique_ptr<Mlp> shared_;
  std::unique_ptr<Linear> shared_gate_;
};

}  // namespace trident::model
