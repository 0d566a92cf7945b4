// Output head: final norm, vocabulary projection, fused cross-entropy and their backward.
#include "trident/model/lm_head.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "trident/model/unit_gradients.hpp"

namespace trident::model {

LMHead::LMHead(ParamStore& store, const ModelConfig& cfg, Parameter* tied, TensorParallel tp)
    : norm_(store, "final_norm", cfg.hidden, cfg.arch == Arch::kGPT2, cfg.norm_eps), tp_(tp), vocab_(cfg.vocab) {
  const int padded = cfg.padded_vocab(tp.size());
  local_vocab_ = padded / tp.size();
  vocab_offset_ = local_vocab_ * tp.rank();
  weight_ = tied ? tied
                 : &store.add({.name = "head.weight", .global_shape = Shape{padded, cfg.hidden},
                               .init = Init::kNormal, .init_std = 0.02, .weight_decay = true,
                               .split_dim = tp.size() > 1 ? 0 : -1, .split_parts = tp.size(),
                               .split_index = tp.rank(), .init_rows = cfg.vocab});
  TRIDENT_CHECK(weight_->local_shape[0] == local_vocab_, "head rows ", weight_->local_shape[0], " vs ", local_vocab_);
}

int64_t logits_chunk_rows(int64_t rows, int64_t vocab, DType dtype) {
  const int64_t per_row = vocab * int64_t(dtype_size(dtype));
  return std::clamp<int64_t>(kLogitsChunkBytes / std::max<int64_t>(per_row, 1), 1, std::max<int64_t>(rows, 1));
}

HeadBuffers LMHead::make_buffers(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored,
                                 int64_t chunk_rows, std::optional<DType> gradients) const {
  HeadBuffers b;
  const int64_t local = tp_.local_rows(rows), hidden = weight_->local_shape[1];
  const int64_t k = chunk_rows > 0 ? std::min(chunk_rows, rows) : logits_chunk_rows(rows, local_vocab_ * tp_.size(), dtype);
  b.norm = norm_.make_activations(ops, local, dtype, stored);
  if (tp_.splits_rows()) b.gathered = ops.zeros(Shape{rows, hidden}, stored.value_or(dtype));
  b.dnorm = ops.zeros(Shape{rows, hidden}, dtype);
  b.dnorm_rows = tp_.splits_rows() ? ops.zeros(Shape{local, hidden}, dtype) : b.dnorm;
  b.logits = ops.zeros(Shape{k, weight_->local_shape[0]}, dtype);
  b.dlogits = gradients && *gradients != dtype ? ops.zeros(b.logits.shape(), *gradients) : b.logits;
  b.row_max = ops.zeros(Shape{k}, dtype);
  b.sum_exp = ops.zeros(Shape{k}, dtype);
  b.target_logit = ops.zeros(Shape{k}, dtype);
  b.host_stats = Tensor::zeros(Shape{4 * k}, DType::kF64);
  return b;
}

void LMHead::forward(Ops& ops, const Tensor& x, HeadBuffers& b) const {
  norm_.forward(ops, x, b.norm);
  tp_.gather_rows(ops, b.norm.y, b.gathered);
}

Tensor LMHead::chunk_logits(Ops& ops, const Tensor& x, HeadBuffers& b, int64_t r0, int64_t r1) const {
  Tensor logits = b.logits.narrow(0, r1 - r0);
  ops.gemm(false, true, 1.0, x.narrow(r0, r1), weight_->gemm_value(), 0.0, logits);
  return logits;
}

const Tensor& LMHead::logits(Ops& ops, HeadBuffers& b) const {
  const Tensor& x = normed(b);
  if (!b.full_logits.defined() || b.full_logits.dim(0) != x.dim(0))
    b.full_logits = ops.zeros(Shape{x.dim(0), local_vocab_}, b.logits.dtype());
  ops.gemm(false, true, 1.0, x, weight_->gemm_value(), 0.0, b.full_logits);
  return b.full_logits;
}

void LMHead::combine_stats(Ops& ops, const Tensor& logits, const Tensor& targets, HeadBuffers& b) const {
  const int64_t n = logits.dim(0), k = b.row_max.numel();
  const int64_t valid_columns = std::clamp<int64_t>(vocab_ - vocab_offset_, 0, local_vocab_);
  Tensor row_max = b.row_max.narrow(0, n), sum_exp = b.sum_exp.narrow(0, n), target_logit = b.target_logit.narrow(0, n);
  ops.cross_entropy_shard_stats(logits, targets, vocab_offset_, valid_columns, row_max, sum_exp, target_logit);
  // Combine over the group on the host ([n] values): global max, then each shard's sum
  // rescaled to it, and the target logit from the shard that holds the target.
  Tensor host_max = b.host_stats.narrow(0, n), host_sum = b.host_stats.narrow(k, k + n);
  Tensor host_tl = b.host_stats.narrow(2 * k, 2 * k + n);
  ops.copy(row_max, host_max);
  ops.copy(sum_exp, host_sum);
  ops.copy(target_logit, host_tl);
  double* mx = host_max.data<double>();
  double* sum = host_sum.data<double>();
  double* tl = host_tl.data<double>();
  double* local_max = b.host_stats.narrow(3 * k, 3 * k + n).data<double>();  // this shard's maxima, kept
  std::copy(mx, mx + n, local_max);
  if (tp_.size() == 1) return;
  tp_.comm->all_reduce_max(mx, static_cast<int>(n));
  for (int64_t i = 0; i < n; ++i) sum[i] = sum[i] == 0 ? 0 : sum[i] * std::exp(local_max[i] - mx[i]);
  tp_.comm->all_reduce_sum(sum, static_cast<int>(n));
  tp_.comm->all_reduce_sum(tl, static_cast<int>(n));
}

namespace {
// The targets as the host reads them (which rows count): in place on the CPU, else a copy.
const int32_t* host_targets(Ops& ops, const Tensor& targets, HeadBuffers& b) {
  if (targets.device() == Device::kCPU) return targets.data<int32_t>();
  if (!b.host_targets.defined() || b.host_targets.numel() != targets.numel())
    b.host_targets = Tensor::zeros(Shape{targets.numel()}, DType::kI32);
  ops.copy(targets, b.host_targets);
  return b.host_targets.data<int32_t>();
}
}  // namespace

EvalSums LMHead::evaluate(Ops& ops, const Tensor& targets, HeadBuffers& b, TokenScores* per_token) const {
  return evaluate_rows(ops, normed(b), targets, b, per_token);
}

HeadBuffers LMHead::make_scoring_buffers(Ops& ops, int64_t rows, DType dtype) const {
  HeadBuffers b;
  const int64_t k = logits_chunk_rows(rows, local_vocab_ * tp_.size(), dtype);
  b.norm = norm_.make_activations(ops, rows, dtype);
  b.logits = ops.zeros(Shape{k, local_vocab_}, dtype);
  b.row_max = ops.zeros(Shape{k}, dtype);
  b.sum_exp = ops.zeros(Shape{k}, dtype);
  b.target_logit = ops.zeros(Shape{k}, dtype);
  b.host_stats = Tensor::zeros(Shape{4 * k}, DType::kF64);
  return b;
}

void LMHead::score_rows(Ops& ops, const Tensor& x, const Tensor& targets, HeadBuffers& b, TokenScores& scores) const {
  const int64_t n = x.dim(0);
  NormActivations a{b.norm.y.narrow(0, n), b.norm.mean.defined() ? b.norm.mean.narrow(0, n) : Tensor(),
                    b.norm.rstd.narrow(0, n)};
  norm_.forward(ops, x, a);
  evaluate_rows(ops, a.y, targets, b, &scores);
}

EvalSums LMHead::evaluate_rows(Ops& ops, const Tensor& x, const Tensor& targets, HeadBuffers& b,
                               TokenScores* per_token) const {
  const int64_t n = x.dim(0), k = b.row_max.numel();
  const int32_t* all_targets = host_targets(ops, targets, b);
  EvalSums sums;
  if (per_token) {
    per_token->logprob.assign(size_t(n), 0.0);
    per_token->max_prob.assign(size_t(n), 0.0);
    per_token->greedy.assign(size_t(n), 0);
  }
  for (int64_t r0 = 0; r0 < n; r0 += k) {
    const int64_t r1 = std::min(n, r0 + k);
    const Tensor logits = chunk_logits(ops, x, b, r0, r1);
    combine_stats(ops, logits, targets.narrow(r0, r1), b);
    const double* mx = b.host_stats.data<double>();
    const double* sum = mx + k;
    const double* tl = mx + 2 * k;
    const int32_t* t = all_targets + r0;
    for (int64_t i = 0; i < r1 - r0; ++i) {
      if (t[i] < 0) continue;
      const double loss = mx[i] + std::log(sum[i]) - tl[i];
      sums.loss_sum += loss;
      sums.correct += tl[i] >= mx[i];
      ++sums.count;
      if (per_token) {  // sum is relative to the row's maximum: p_max = 1 / sum
        per_token->logprob[size_t(r0 + i)] = -loss;
        per_token->max_prob[size_t(r0 + i)] = 1.0 / sum[i];
        per_token->greedy[size_t(r0 + i)] = tl[i] >= mx[i];
      }
    }
  }
  return sums;
}

GreedyBuffers LMHead::make_greedy_buffers(Ops& ops, int64_t rows, DType dtype) const {
  return {norm_.make_activations(ops, rows, dtype), ops.zeros(Shape{rows, local_vocab_}, dtype),
          Tensor::zeros(Shape{rows, local_vocab_}, dtype)};
}

namespace {
// (best logit, its global id) of each row over columns [0, valid) of this shard.
template <typename T>
std::vector<double> row_argmax(const Tensor& logits, int64_t valid, int64_t id_offset) {
  const int64_t rows = logits.dim(0), width = logits.dim(1);
  const T* x = logits.data<T>();
  std::vector<double> best(2 * rows);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t arg = 0;
    for (int64_t j = 1; j < valid; ++j)
      if (x[r * width + j] > x[r * width + arg]) arg = j;
    best[2 * r] = valid > 0 ? double(x[r * width + arg]) : -INFINITY;
    best[2 * r + 1] = double(id_offset + arg);
  }
  return best;
}
}  // namespace

const Tensor& LMHead::host_logits(Ops& ops, const Tensor& x, GreedyBuffers& b) const {
  norm_.forward(ops, x, b.norm);
  ops.gemm(false, true, 1.0, b.norm.y, weight_->gemm_value(), 0.0, b.logits);
  ops.copy(b.logits, b.host_logits);
  return b.host_logits;
}

std::vector<int32_t> LMHead::greedy(Ops& ops, const Tensor& x, GreedyBuffers& b) const {
  host_logits(ops, x, b);
  const int64_t rows = x.dim(0);
  const int64_t valid = std::clamp<int64_t>(vocab_ - vocab_offset_, 0, local_vocab_);
  std::vector<double> best = b.host_logits.dtype() == DType::kF64
                                 ? row_argmax<double>(b.host_logits, valid, vocab_offset_)
                                 : row_argmax<float>(b.host_logits, valid, vocab_offset_);
  if (tp_.size() > 1) {
    // Shards hold ascending ids in rank order: a later shard wins only with a strictly larger logit.
    std::vector<double> all(best.size() * tp_.size());
    tp_.comm->all_gather_bytes(best.data(), all.data(), static_cast<int64_t>(best.size() * sizeof(double)));
    best.assign(all.begin(), all.begin() + 2 * rows);
    for (int r = 1; r < tp_.size(); ++r)
      for (int64_t i = 0; i < rows; ++i)
        if (all[r * 2 * rows + 2 * i] > best[2 * i]) {
          best[2 * i] = all[r * 2 * rows + 2 * i];
          best[2 * i + 1] = all[r * 2 * rows + 2 * i + 1];
        }
  }
  std::vector<int32_t> ids(rows);
  for (int64_t i = 0; i < rows; ++i) ids[i] = static_cast<int32_t>(best[2 * i + 1]);
  return ids;
}

void LMHead::vocab_parallel_loss(Ops& ops, const Tensor& logits, const Tensor& targets, const int32_t* t,
                                 double grad_scale, HeadBuffers& b, Tensor& dlogits, double* token_losses) const {
  const int64_t n = logits.dim(0), k = b.row_max.numel();
  const int64_t valid_columns = std::clamp<int64_t>(vocab_ - vocab_offset_, 0, local_vocab_);
  combine_stats(ops, logits, targets, b);
  Tensor host_max = b.host_stats.narrow(0, n), host_sum = b.host_stats.narrow(k, k + n);
  const double* mx = host_max.data<double>();
  const double* sum = host_sum.data<double>();
  const double* tl = b.host_stats.data<double>() + 2 * k;
  for (int64_t i = 0; i < n; ++i) token_losses[i] = t[i] >= 0 ? mx[i] + std::log(sum[i]) - tl[i] : 0.0;
  Tensor row_max = b.row_max.narrow(0, n), sum_exp = b.sum_exp.narrow(0, n);
  ops.copy(host_max, row_max);
  ops.copy(host_sum, sum_exp);
  ops.cross_entropy_shard_backward(logits, targets, vocab_offset_, valid_columns, row_max, sum_exp, grad_scale,
                                   dlogits);
}

void LMHead::loss_backward(Ops& ops, const Tensor& x, const Tensor& targets, double grad_scale, HeadBuffers& b,
                           Tensor& dx, StepLosses& losses, UnitGradients* units) const {
  const Tensor& in = normed(b);  // all rows, from forward
  const int64_t n = in.dim(0), k = units ? units->whole_rows(b.row_max.numel()) : b.row_max.numel();
  const int32_t* t = tp_.size() > 1 ? host_targets(ops, targets, b) : nullptr;
  Tensor token_losses = tp_.size() == 1 ? losses.next(ops, n, b.logits.dtype()) : Tensor();
  double* host_losses = tp_.size() > 1 ? losses.next_host(n) : nullptr;
  // One chunk of rows at a time: logits, their loss and gradient, and both GEMMs of it.
  for (int64_t r0 = 0; r0 < n; r0 += k) {
    const int64_t r1 = std::min(n, r0 + k);
    const Tensor logits = chunk_logits(ops, in, b, r0, r1);
    Tensor dlogits = b.dlogits.narrow(0, r1 - r0);
    const Tensor chunk_targets = targets.narrow(r0, r1);
    if (tp_.size() == 1) {
      Tensor chunk_losses = token_losses.narrow(r0, r1);
      ops.cross_entropy_forward_backward(logits, chunk_targets, grad_scale, chunk_losses, dlogits);
    } else {
      vocab_parallel_loss(ops, logits, chunk_targets, t + r0, grad_scale, b, dlogits, host_losses + r0);
    }
    if (units) units->scale_rows(ops, dlogits, r0);  // each unit's weight (differential privacy)
    if (weight_->per_unit) weight_->per_unit->add_outer(ops, *weight_, dlogits, in.narrow(r0, r1), 1.0, r0);
    else if (weight_->needs_grad()) ops.gemm(true, false, 1.0, dlogits, in.narrow(r0, r1), 1.0, weight_->grad);  // [V, K] @ [K, C]
    Tensor dnorm = b.dnorm.narrow(r0, r1);
    ops.gemm(false, false, 1.0, dlogits, weight_->gemm_value(), 0.0, dnorm);
  }
  // Each vocabulary shard contributes part of d(norm output).
  const Tensor& dnorm = tp_.reduce_to_rows(b.dnorm, b.dnorm_rows);
  ops.fill(dx, 0.0);
  norm_.backward(ops, x, b.norm, dnorm, dx);
}

}  // namespace trident::model
