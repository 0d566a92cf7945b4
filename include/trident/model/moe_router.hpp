// Token routing of a mixture-of-experts layer for one micro-batch, computed on the host in
// double: softmax over the router logits [N, E], top-k per token, routing weights, the rows
// in expert order (the dispatch permutation), capacity dropping, the auxiliary losses and
// the gradient of all of it with respect to the logits. Every rule is deterministic: ties
// between equal probabilities go to the lower expert index, and which assignments an expert
// over capacity drops depends only on the micro-batch, so any layout routes alike.
#pragma once
#include <cstdint>
#include <vector>

namespace trident::model {

struct RouterOptions {
  int experts = 0;
  int top_k = 1;
  bool normalize = true;         // weights renormalised over the chosen k (Mixtral, norm_topk_prob)
  double capacity_factor = 0;    // 0: dropless
};

struct Routing {
  int64_t tokens = 0;            // N
  int experts = 0, top_k = 0;    // E, k
  bool normalized = true;        // weights renormalised over the k chosen
  std::vector<double> probs;     // [N, E] softmax of the logits
  std::vector<double> lse;       // [N] logsumexp of each token's logits
  std::vector<int32_t> choice;   // [N, k] chosen experts, most probable first
  std::vector<double> weight;    // [N, k] routing weights
  std::vector<int32_t> slot;     // [N, k] the assignment's row in expert order; -1: dropped
  std::vector<int32_t> rows;     // [M] token of each row in expert order (by expert, then token)
  std::vector<double> row_weight;  // [M] the routing weight of each row
  std::vector<int64_t> offsets;  // [E + 1] first row of each expert
  std::vector<int64_t> assigned; // [E] assignments per expert before dropping (the load)
  int64_t dropped = 0;           // assignments dropped for capacity
  double aux = 0;                // load balancing: E * sum_e (assigned_e / N) * mean_n probs[n, e]
  double z = 0;                  // z-loss: mean_n lse[n]^2
  double aux_scale = 0, z_scale = 0;  // their weights in the objective (set by the layer)

  // Host buffers reused by every call (no allocation once they have grown): the logits as read
  // back, the gradients of the weights and logits, the shared expert gate's sigmoid [N], and
  // route()'s own temporaries.
  std::vector<double> logits, dweight, dlogits, gate;
  std::vector<int32_t> order;
  std::vector<int64_t> fill;
  std::vector<char> kept_flags;

  int64_t kept() const { return static_cast<int64_t>(rows.size()); }  // M
  int64_t count(int e) const { return offsets[e + 1] - offsets[e]; }
};

// Routes N tokens by their logits [N, E] (row-major). Buffers of `out` are reused.
void route(const double* logits, int64_t tokens, const RouterOptions& options, Routing& out);

// dlogits [N, E] = d/dlogits of sum_{n, j} dweight[n, j] * weight[n, j] + aux_scale * aux +
// z_scale * z, with dweight [N, k] the gradient of the routing weights (0 for dropped ones).
// The assignments (choice, assigned) are held fixed: they are piecewise constant.
void route_backward(const Routing& r, const double* dweight, double* dlogits);

}  // namespace trident::model
