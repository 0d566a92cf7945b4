// Mixture-of-experts routing on the host: softmax, top-k, capacity, dispatch order, losses.
#include "trident/model/moe_router.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace trident::model {

void route(const double* logits, int64_t tokens, const RouterOptions& options, Routing& out) {
  const int E = options.experts, k = options.top_k;
  const int64_t N = tokens;
  out.tokens = N, out.experts = E, out.top_k = k, out.normalized = options.normalize;
  out.probs.resize(size_t(N * E));
  out.lse.resize(size_t(N));
  out.choice.resize(size_t(N * k));
  out.weight.resize(size_t(N * k));
  out.slot.assign(size_t(N * k), -1);
  out.assigned.assign(size_t(E), 0);
  std::vector<int32_t>& order = out.order;
  order.resize(size_t(E));
  double z = 0;
  for (int64_t n = 0; n < N; ++n) {
    const double* l = logits + n * E;
    double* p = out.probs.data() + n * E;
    const double top = *std::max_element(l, l + E);
    double sum = 0;
    for (int e = 0; e < E; ++e) sum += p[e] = std::exp(l[e] - top);
    for (int e = 0; e < E; ++e) p[e] /= sum;
    out.lse[size_t(n)] = top + std::log(sum);
    z += out.lse[size_t(n)] * out.lse[size_t(n)];
    // The k most probable experts; equal probabilities go to the lower index.
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [p](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    double chosen = 0;
    for (int j = 0; j < k; ++j) chosen += p[order[size_t(j)]];
    for (int j = 0; j < k; ++j) {
      const int32_t e = order[size_t(j)];
      out.choice[size_t(n * k + j)] = e;
      out.weight[size_t(n * k + j)] = options.normalize ? p[e] / chosen : p[e];
      ++out.assigned[size_t(e)];
    }
  }
  out.z = N > 0 ? z / double(N) : 0.0;

  // Capacity: assignments claim places in order of choice rank, then token (all first choices
  // before any second choice, as GShard), so what is dropped depends on the micro-batch only.
  std::vector<int64_t>& count = out.fill;  // places taken per expert, then rows filled
  count.assign(size_t(E), 0);
  const int64_t capacity = options.capacity_factor > 0
                               ? static_cast<int64_t>(std::ceil(options.capacity_factor * double(N * k) / E))
                               : N * k;
  std::vector<char>& kept = out.kept_flags;
  kept.assign(size_t(N * k), 0);
  out.dropped = 0;
  for (int j = 0; j < k; ++j)
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = size_t(n * k + j);
      int64_t& c = count[size_t(out.choice[i])];
      if (c < capacity) ++c, kept[i] = 1;
      else ++out.dropped;
    }
  // Rows in expert order, each expert's tokens in token order.
  out.offsets.assign(size_t(E) + 1, 0);
  for (int e = 0; e < E; ++e) out.offsets[size_t(e) + 1] = out.offsets[size_t(e)] + count[size_t(e)];
  const int64_t M = out.offsets[size_t(E)];
  out.rows.resize(size_t(M));
  out.row_weight.resize(size_t(M));
  std::vector<int64_t>& fill = out.fill;
  fill.assign(out.offsets.begin(), out.offsets.end() - 1);
  for (int64_t n = 0; n < N; ++n)
    for (int j = 0; j < k; ++j) {
      const size_t i = size_t(n * k + j);
      if (!kept[i]) continue;
      const int64_t row = fill[size_t(out.choice[i])]++;
      out.slot[i] = static_cast<int32_t>(row);
      out.rows[size_t(row)] = static_cast<int32_t>(n);
      out.row_weight[size_t(row)] = out.weight[i];
    }

  double aux = 0;
  if (N > 0)
    for (int e = 0; e < E; ++e) {
      double mean = 0;
      for (int64_t n = 0; n < N; ++n) mean += out.probs[size_t(n * E + e)];
      aux += double(out.assigned[size_t(e)]) / double(N) * (mean / double(N));
    }
  out.aux = double(E) * aux;
}

void route_backward(const Routing& r, const double* dweight, double* dlogits) {
  const int E = r.experts, k = r.top_k;
  const int64_t N = r.tokens;
  std::vector<double> dprob(static_cast<size_t>(E));
  for (int64_t n = 0; n < N; ++n) {
    const double* p = r.probs.data() + n * E;
    std::fill(dprob.begin(), dprob.end(), 0.0);
    // Weights: w_j = p_{c_j} / S with S = sum_i p_{c_i} (normalised), else w_j = p_{c_j}.
    const int32_t* c = r.choice.data() + n * k;
    const double* dw = dweight + n * k;
    const double* w = r.weight.data() + n * k;
    double chosen = 0, dot = 0;
    for (int j = 0; j < k; ++j) chosen += p[c[j]], dot += dw[j] * w[j];
    for (int j = 0; j < k; ++j) dprob[size_t(c[j])] += r.normalized ? (dw[j] - dot) / chosen : dw[j];
    // Load balancing: d aux / d p[n, e] = E * (assigned_e / N) / N.
    if (r.aux_scale != 0)
      for (int e = 0; e < E; ++e)
        dprob[size_t(e)] += r.aux_scale * double(E) * double(r.assigned[size_t(e)]) / (double(N) * double(N));
    // Softmax: dl_e = p_e * (dp_e - sum_i p_i dp_i); z-loss: d lse^2 / N = 2 lse p_e / N.
    double mean = 0;
    for (int e = 0; e < E; ++e) mean += p[e] * dprob[size_t(e)];
    const double dz = r.z_scale * 2.0 * r.lse[size_t(n)] / double(N);
    double* dl = dlogits + n * E;
    for (int e = 0; e < E; ++e) dl[e] = p[e] * (dprob[size_t(e)] - mean) + dz * p[e];
  }
}

}  // namespace trident::model
