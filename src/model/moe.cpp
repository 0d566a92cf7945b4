// Mixture-of-experts layer: router, dispatch into expert order, experts, combine, backward.
#include "trident/model/moe.hpp"

#include <algorithm>
#include <cmath>

namespace trident::model {

namespace {

// The first n of `of` rows of t (any buffer whose rows are proportional to the token count).
Tensor prefix_rows(const Tensor& t, int64_t n, int64_t of) {
  if (!t.defined() || n == of) return t;
  Shape s = t.shape();
  TRIDENT_CHECK(s[0] * n % of == 0, "cannot cut ", s.str(), " to ", n, " of ", of, " rows");
  s[0] = s[0] * n / of;
  return t.flat().narrow(0, s.numel()).view(s);
}

MlpActivations prefix_mlp(const MlpActivations& a, int64_t n, int64_t of) {
  return {prefix_rows(a.up, n, of), prefix_rows(a.gate, n, of), prefix_rows(a.act, n, of)};
}

// The host values of t's first n elements (fp32 or fp64) as doubles, copied from the device
// when t lives there.
void download(Ops& ops, const Tensor& t, int64_t n, std::vector<double>& out) {
  Tensor src = t.flat().narrow(0, n);
  Tensor host = src;
  if (t.device() != Device::kCPU) {
    host = Tensor::zeros(src.shape(), src.dtype());
    ops.copy(src, host);
  }
  out.resize(size_t(n));
  if (host.dtype() == DType::kF64) std::copy(host.data<double>(), host.data<double>() + n, out.begin());
  else {
    TRIDENT_CHECK(host.dtype() == DType::kF32, "moe: router values are ", dtype_name(host.dtype()), ", expected fp32");
    std::copy(host.data<float>(), host.data<float>() + n, out.begin());
  }
}

// values[0, n) into the first n elements of t (fp32, fp64 or int32), through the host.
template <typename V>
void upload(Ops& ops, const V* values, int64_t n, const Tensor& t) {
  Tensor dst = t.flat().narrow(0, n);
  Tensor host = t.device() == Device::kCPU ? dst : Tensor::zeros(dst.shape(), dst.dtype());
  switch (host.dtype()) {
    case DType::kF32: std::transform(values, values + n, host.data<float>(), [](V v) { return float(v); }); break;
    case DType::kF64: std::transform(values, values + n, host.data<double>(), [](V v) { return double(v); }); break;
    case DType::kI32: std::transform(values, values + n, host.data<int32_t>(), [](V v) { return int32_t(v); }); break;
    default: TRIDENT_CHECK(false, "moe: cannot upload to ", dtype_name(host.dtype()));
  }
  if (t.device() != Device::kCPU) ops.copy(host, dst);
}

double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }

}  // namespace

MoeActivations MoeActivations::prefix(int64_t n, int64_t of) const {
  MoeActivations p = *this;
  for (Tensor* t : {&p.logits, &p.slots, &p.weights, &p.rows, &p.row_weights, &p.x, &p.y, &p.shared_y,
                    &p.shared_logit, &p.shared_scale, &p.identity})
    *t = prefix_rows(*t, n, of);
  p.experts = prefix_mlp(experts, n, of);
  p.shared = prefix_mlp(shared, n, of);
  return p;
}

MoeScratch MoeScratch::prefix(int64_t n, int64_t of) const {
  MoeScratch p = *this;
  for (Tensor* t : {&p.dy, &p.dx, &p.dshared, &p.dweights, &p.dlogits, &p.dshared_logit})
    *t = prefix_rows(*t, n, of);
  p.experts = {prefix_rows(experts.dact, n, of), prefix_rows(experts.dgate, n, of)};
  p.shared = {prefix_rows(shared.dact, n, of), prefix_rows(shared.dgate, n, of)};
  return p;
}

MoeLayer::MoeLayer(ParamStore& store, const std::string& prefix, const ModelConfig& cfg, TensorParallel tp, int index,
                   ExpertParallel ep)
    : cfg_(cfg),
      tp_(tp),
      ep_(ep),
      first_expert_(cfg.moe.experts / ep.size() * ep.rank()),
      local_experts_(cfg.moe.experts / ep.size()),
      index_(index),
      options_{.experts = cfg.moe.experts, .top_k = cfg.moe.top_k, .normalize = cfg.moe.norm_topk_prob,
               .capacity_factor = cfg.moe.capacity_factor},
      router_(store, prefix + ".router", cfg.hidden, cfg.moe.experts, /*bias=*/false, 0.02) {
  TRIDENT_CONFIG_CHECK(cfg.moe.experts % ep.size() == 0, "moe.experts = ", cfg.moe.experts,
                       " must be divisible by parallel.ep = ", ep.size());
  store.experts(true);  // only this rank's experts, under their global names
  for (int e = first_expert_; e < first_expert_ + local_experts_; ++e)
    experts_.push_back(
        std::make_unique<Mlp>(store, prefix + ".experts." + std::to_string(e), cfg, tp, cfg.moe.ffn_hidden));
  store.experts(false);
  if (cfg.moe.shared_experts > 0) {
    shared_ = std::make_unique<Mlp>(store, prefix + ".shared", cfg, tp, cfg.moe.shared_experts * cfg.moe.ffn_hidden);
    shared_gate_ = std::make_unique<Linear>(store, prefix + ".shared_gate", cfg.hidden, 1, /*bias=*/false, 0.02);
  }
}

MoeActivations MoeLayer::make_activations(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored) const {
  const int64_t k = options_.top_k, M = rows * k, C = cfg_.hidden;
  MoeActivations a;
  a.routing = std::make_shared<Routing>();
  a.logits = ops.zeros(Shape{rows, options_.experts}, dtype);
  a.slots = ops.zeros(Shape{rows, k}, DType::kI32);
  a.weights = ops.zeros(Shape{rows, k}, dtype);
  a.rows = ops.zeros(Shape{M}, DType::kI32);
  a.row_weights = ops.zeros(Shape{M}, dtype);
  a.x = ops.zeros(Shape{M, C}, stored.value_or(dtype));
  a.y = ops.zeros(Shape{M, C}, dtype);
  if (ep_.size() > 1) a.remote = std::make_shared<ExpertRows>();  // grown by the first forward
  else a.experts = experts_.front()->make_activations(ops, M, dtype, stored);
  if (shared_) {
    a.shared = shared_->make_activations(ops, rows, dtype, stored);
    a.shared_y = ops.zeros(Shape{rows, C}, dtype);
    a.shared_logit = ops.zeros(Shape{rows, 1}, dtype);
    a.shared_scale = ops.zeros(Shape{rows, 1}, dtype);
    a.identity = ops.zeros(Shape{rows}, DType::kI32);
    std::vector<int32_t> iota(static_cast<size_t>(rows));
    for (int64_t n = 0; n < rows; ++n) iota[size_t(n)] = static_cast<int32_t>(n);
    upload(ops, iota.data(), rows, a.identity);
  }
  return a;
}

MoeScratch MoeLayer::make_scratch(Ops& ops, int64_t rows, DType dtype) const {
  const int64_t k = options_.top_k, M = rows * k, C = cfg_.hidden;
  MoeScratch s;
  s.dy = ops.zeros(Shape{M, C}, dtype);
  s.dx = ops.zeros(Shape{M, C}, dtype);
  if (ep_.size() > 1) s.remote = std::make_shared<ExpertRowsScratch>();
  else s.experts = experts_.front()->make_scratch(ops, M, dtype);
  s.dweights = ops.zeros(Shape{rows, k}, dtype);
  s.dlogits = ops.zeros(Shape{rows, options_.experts}, dtype);
  if (shared_) {
    s.shared = shared_->make_scratch(ops, rows, dtype);
    s.dshared = ops.zeros(Shape{rows, C}, dtype);
    s.dshared_logit = ops.zeros(Shape{rows, 1}, dtype);
  }
  return s;
}

void MoeLayer::run_experts(Ops& ops, const std::vector<int64_t>& offsets, const Tensor& x, MlpActivations& acts,
                           Tensor& y) const {
  for (int e = 0; e < local_experts_; ++e) {
    const int64_t first = offsets[size_t(e)], last = offsets[size_t(e) + 1];
    if (first == last) continue;
    MlpActivations rows = {expert_rows(acts.up, first, last), expert_rows(acts.gate, first, last),
                           expert_rows(acts.act, first, last)};
    Tensor out = expert_rows(y, first, last);
    experts_[size_t(e)]->forward(ops, expert_rows(x, first, last), rows, out, /*accumulate=*/false);
    if (tp_.size() > 1 && tp_.rank() == 0) experts_[size_t(e)]->add_output_bias(ops, out);
  }
}

void MoeLayer::backward_experts(Ops& ops, const std::vector<int64_t>& offsets, const Tensor& x,
                                const MlpActivations& acts, const Tensor& dy, MlpScratch& scratch, Tensor& dx) const {
  for (int e = 0; e < local_experts_; ++e) {
    const int64_t first = offsets[size_t(e)], last = offsets[size_t(e) + 1];
    if (first == last) continue;
    const MlpActivations rows = {expert_rows(acts.up, first, last), expert_rows(acts.gate, first, last),
                                 expert_rows(acts.act, first, last)};
    MlpScratch part = {expert_rows(scratch.dact, first, last), expert_rows(scratch.dgate, first, last)};
    Tensor dx_rows = expert_rows(dx, first, last);
    experts_[size_t(e)]->backward(ops, expert_rows(x, first, last), rows, expert_rows(dy, first, last), part, dx_rows);
  }
}

void MoeLayer::reserve(Ops& ops, ExpertRows& r, int64_t rows, DType dtype, DType stored) const {
  if (rows <= r.capacity() && r.x.defined()) return;
  const int64_t cap = std::max<int64_t>({rows, 2 * r.capacity(), 64});
  const int64_t C = cfg_.hidden;
  r.arrived = ops.zeros(Shape{cap, C}, stored);
  r.x = ops.zeros(Shape{cap, C}, stored);
  r.experts = experts_.front()->make_activations(ops, cap, dtype, stored);
  r.y = ops.zeros(Shape{cap, C}, dtype);
  r.leaving = ops.zeros(Shape{cap, C}, dtype);
  r.to_expert = ops.zeros(Shape{cap}, DType::kI32);
  r.to_source = ops.zeros(Shape{cap}, DType::kI32);
}

void MoeLayer::reserve(Ops& ops, ExpertRowsScratch& s, int64_t rows, DType dtype) const {
  if (rows <= s.capacity() && s.dy.defined()) return;
  const int64_t cap = std::max<int64_t>({rows, 2 * s.capacity(), 64});
  const int64_t C = cfg_.hidden;
  s.exchanged = ops.zeros(Shape{cap, C}, dtype);
  s.dy = ops.zeros(Shape{cap, C}, dtype);
  s.dx = ops.zeros(Shape{cap, C}, dtype);
  s.experts = experts_.front()->make_scratch(ops, cap, dtype);
}

void MoeLayer::dispatch_forward(Ops& ops, MoeActivations& a) const {
  const Routing& r = *a.routing;
  ExpertRows& x = *a.remote;
  const int ep = ep_.size(), El = local_experts_;
  // Rows per (destination, local expert): this rank's rows are in global expert order, so each
  // destination's rows are contiguous. The receivers learn their counts first.
  std::vector<int64_t>& counts = x.sent_counts;
  std::vector<int64_t>& arrived = x.arrived_counts;
  counts.resize(size_t(options_.experts));
  arrived.resize(size_t(options_.experts));
  for (int e = 0; e < options_.experts; ++e) counts[size_t(e)] = r.count(e);
  ep_.comm->all_to_all_bytes(counts.data(), arrived.data(), int64_t(El) * int64_t(sizeof(int64_t)));
  x.send_rows.assign(size_t(ep), 0);
  x.recv_rows.assign(size_t(ep), 0);
  for (int d = 0; d < ep; ++d)
    for (int e = 0; e < El; ++e) {
      x.send_rows[size_t(d)] += counts[size_t(d * El + e)];
      x.recv_rows[size_t(d)] += arrived[size_t(d * El + e)];
    }
  int64_t R = 0;
  for (const int64_t n : x.recv_rows) R += n;
  x.rows = R;
  // Arrival order is by source rank, then local expert; the experts want expert-major rows.
  std::vector<int64_t> source_start(size_t(ep) + 1, 0);
  for (int src = 0; src < ep; ++src) source_start[size_t(src) + 1] = source_start[size_t(src)] + x.recv_rows[size_t(src)];
  std::vector<int32_t>& to_expert = x.to_expert_host;
  std::vector<int32_t>& to_source = x.to_source_host;
  to_expert.resize(size_t(R));
  to_source.resize(size_t(R));
  x.offsets.assign(size_t(El) + 1, 0);
  int64_t at = 0;
  for (int e = 0; e < El; ++e) {
    for (int src = 0; src < ep; ++src) {
      int64_t begin = source_start[size_t(src)];
      for (int e2 = 0; e2 < e; ++e2) begin += arrived[size_t(src * El + e2)];
      for (int64_t j = 0; j < arrived[size_t(src * El + e)]; ++j, ++at) {
        to_expert[size_t(at)] = static_cast<int32_t>(begin + j);
        to_source[size_t(begin + j)] = static_cast<int32_t>(at);
      }
    }
    x.offsets[size_t(e) + 1] = at;
  }
  reserve(ops, x, R, a.y.dtype(), a.x.dtype());
  upload(ops, to_expert.data(), R, x.to_expert);
  upload(ops, to_source.data(), R, x.to_source);
  const int64_t M = r.kept();
  ep_.comm->all_to_all_rows(a.x.narrow(0, M), x.send_rows, x.arrived, x.recv_rows);
  Tensor xs = x.x.narrow(0, R), ys = x.y.narrow(0, R), leaving = x.leaving.narrow(0, R);
  ops.gather_rows(x.arrived.narrow(0, R), x.to_expert.narrow(0, R), Tensor(), xs);
  run_experts(ops, x.offsets, xs, x.experts, ys);
  ops.gather_rows(ys, x.to_source.narrow(0, R), Tensor(), leaving);
  Tensor y = a.y.narrow(0, M);
  ep_.comm->all_to_all_rows(leaving, x.recv_rows, y, x.send_rows);
}

void MoeLayer::dispatch_backward(Ops& ops, const MoeActivations& a, const Tensor& dy, MoeScratch& s, Tensor& dx) const {
  ExpertRows& x = *a.remote;
  ExpertRowsScratch& t = *s.remote;
  const int64_t R = x.rows;
  reserve(ops, t, R, dy.dtype());
  ep_.comm->all_to_all_rows(dy, x.send_rows, t.exchanged, x.recv_rows);
  Tensor dys = t.dy.narrow(0, R), dxs = t.dx.narrow(0, R), leaving = t.exchanged.narrow(0, R);
  ops.gather_rows(t.exchanged.narrow(0, R), x.to_expert.narrow(0, R), Tensor(), dys);
  backward_experts(ops, x.offsets, x.x.narrow(0, R), x.experts, dys, t.experts, dxs);
  ops.gather_rows(dxs, x.to_source.narrow(0, R), Tensor(), leaving);
  ep_.comm->all_to_all_rows(leaving, x.recv_rows, dx, x.send_rows);
}

void MoeLayer::forward(Ops& ops, const Tensor& x, MoeActivations& a, Tensor& out, bool accumulate,
                       const MoeStep& step) const {
  const int64_t N = x.dim(0), E = options_.experts, k = options_.top_k;
  Routing& r = *a.routing;
  router_.forward(ops, x, a.logits);
  download(ops, a.logits, N * E, r.logits);
  route(r.logits.data(), N, options_, r);
  r.aux_scale = tp_.rank() == 0 ? step.aux_scale * cfg_.moe.aux_loss_coef : 0.0;
  r.z_scale = tp_.rank() == 0 ? step.aux_scale * cfg_.moe.z_loss_coef : 0.0;
  if (step.stats) {
    double* row = step.stats + int64_t(index_) * (kMoeStatFields + E);
    row[0] += double(N);
    row[1] += r.aux * double(N);
    row[2] += r.z * double(N);
    row[3] += double(r.dropped);
    for (int64_t e = 0; e < E; ++e) row[kMoeStatFields + e] += double(r.assigned[size_t(e)]);
  }
  const int64_t M = r.kept();
  upload(ops, r.slot.data(), N * k, a.slots);
  upload(ops, r.weight.data(), N * k, a.weights);
  upload(ops, r.rows.data(), M, a.rows);
  upload(ops, r.row_weight.data(), M, a.row_weights);
  Tensor x_rows = a.x.narrow(0, M);
  ops.gather_rows(x, a.rows.narrow(0, M), Tensor(), x_rows);
  if (ep_.size() > 1) {
    dispatch_forward(ops, a);
  } else {
    Tensor y = a.y.narrow(0, M);
    run_experts(ops, r.offsets, x_rows, a.experts, y);
  }
  ops.combine_rows(a.y.narrow(0, M), a.slots, a.weights, out, accumulate);
  if (!shared_) return;
  shared_->forward(ops, x, a.shared, a.shared_y, /*accumulate=*/false);
  if (tp_.size() > 1 && tp_.rank() == 0) shared_->add_output_bias(ops, a.shared_y);
  shared_gate_->forward(ops, x, a.shared_logit);
  download(ops, a.shared_logit, N, r.gate);
  for (double& g : r.gate) g = sigmoid(g);  // kept for backward
  upload(ops, r.gate.data(), N, a.shared_scale);
  ops.combine_rows(a.shared_y, a.identity.view(Shape{N, 1}), a.shared_scale, out, /*accumulate=*/true);
}

void MoeLayer::decode(Ops& ops, const Tensor& x, MoeActivations& a, Tensor& out) const {
  // Each rank decodes its own prompts, which the experts' all-to-all would have to pair up.
  TRIDENT_CONFIG_CHECK(ep_.size() == 1, "generation (eval tasks) with parallel.ep > 1 is not supported yet; "
                       "evaluate the checkpoint with parallel.ep = 1");
  forward(ops, x, a, out, /*accumulate=*/false, MoeStep{});
  tp_.all_reduce(out);
}

void MoeLayer::backward(Ops& ops, const Tensor& x, const MoeActivations& a, const Tensor& dout, MoeScratch& s,
                        Tensor& dx) const {
  Routing& r = *a.routing;
  const int64_t N = x.dim(0), E = options_.experts, k = options_.top_k, M = r.kept();
  bool written = false;
  if (shared_) {
    // out += sigma(g) * shared(x): d shared = sigma * dout, dg = sigma' * (dout . shared(x)).
    const Tensor& identity = a.identity;
    ops.row_dots(dout, a.shared_y, identity.view(Shape{N, 1}), s.dshared_logit);
    std::vector<double>& dot = r.dweight;  // free until the routing weights' turn below
    download(ops, s.dshared_logit, N, dot);
    for (int64_t n = 0; n < N; ++n) dot[size_t(n)] *= r.gate[size_t(n)] * (1.0 - r.gate[size_t(n)]);
    upload(ops, dot.data(), N, s.dshared_logit);
    ops.gather_rows(dout, identity, a.shared_scale.view(Shape{N}), s.dshared);
    shared_->backward(ops, x, a.shared, s.dshared, s.shared, dx);
    shared_gate_->backward(ops, x, s.dshared_logit, &dx, /*accumulate_dx=*/true);
    written = true;
  }
  // out = sum_j w_j y_{slot_j}: dw_j = dout . y_{slot_j}, dy_{slot} = w * dout[token].
  ops.row_dots(dout, a.y.narrow(0, M), a.slots, s.dweights);
  Tensor dy = s.dy.narrow(0, M), dxe = s.dx.narrow(0, M);
  ops.gather_rows(dout, a.rows.narrow(0, M), a.row_weights.narrow(0, M), dy);
  if (ep_.size() > 1) dispatch_backward(ops, a, dy, s, dxe);
  else backward_experts(ops, r.offsets, a.x.narrow(0, M), a.experts, dy, s.experts, dxe);
  ops.combine_rows(dxe, a.slots, Tensor(), dx, /*accumulate=*/written);
  // The router: through the routing weights and the auxiliary losses.
  download(ops, s.dweights, N * k, r.dweight);
  r.dlogits.resize(size_t(N * E));
  route_backward(r, r.dweight.data(), r.dlogits.data());
  upload(ops, r.dlogits.data(), N * E, s.dlogits);
  router_.backward(ops, x, s.dlogits.narrow(0, N), &dx, /*accumulate_dx=*/true);
}

std::vector<Tensor> MoeLayer::replicated_grads() const {
  std::vector<Tensor> out = {router_.weight().grad_or_none()};
  if (shared_gate_) out.push_back(shared_gate_->weight().grad_or_none());
  return out;
}

}  // namespace trident::model
