// Output head: final norm, vocabulary projection, fused cross-entropy and their backward.
#include "trident/model/lm_head.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

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

HeadBuffers LMHead::make_buffers(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored) const {
  HeadBuffers b;
  const int64_t local = tp_.local_rows(rows), hidden = weight_->local_shape[1];
  b.norm = norm_.make_activations(ops, local, dtype, stored);
  if (tp_.splits_rows()) b.gathered = ops.zeros(Shape{rows, hidden}, stored.value_or(dtype));
  b.dnorm = ops.zeros(Shape{rows, hidden}, dtype);
  b.dnorm_rows = tp_.splits_rows() ? ops.zeros(Shape{local, hidden}, dtype) : b.dnorm;
  b.logits = ops.zeros(Shape{rows, weight_->local_shape[0]}, dtype);
  b.losses = ops.zeros(Shape{rows}, dtype);
  b.host_losses = Tensor::zeros(Shape{rows}, DType::kF64);
  b.row_max = ops.zeros(Shape{rows}, dtype);
  b.sum_exp = ops.zeros(Shape{rows}, dtype);
  b.target_logit = ops.zeros(Shape{rows}, dtype);
  b.host_stats = Tensor::zeros(Shape{4, rows}, DType::kF64);
  return b;
}

void LMHead::forward(Ops& ops, const Tensor& x, HeadBuffers& b) const {
  norm_.forward(ops, x, b.norm);
  ops.gemm(false, true, 1.0, tp_.gather_rows(ops, b.norm.y, b.gathered), weight_->gemm_value(), 0.0, b.logits);
}

void LMHead::combine_stats(Ops& ops, const Tensor& targets, HeadBuffers& b) const {
  const int64_t n = b.row_max.numel();
  const int64_t valid_columns = std::clamp<int64_t>(vocab_ - vocab_offset_, 0, local_vocab_);
  ops.cross_entropy_shard_stats(b.logits, targets, vocab_offset_, valid_columns, b.row_max, b.sum_exp,
                                b.target_logit);
  // Combine over the group on the host ([N] values): global max, then each shard's sum
  // rescaled to it, and the target logit from the shard that holds the target.
  Tensor host_max = b.host_stats.narrow(0, 1), host_sum = b.host_stats.narrow(1, 2), host_tl = b.host_stats.narrow(2, 3);
  ops.copy(b.row_max, host_max);
  ops.copy(b.sum_exp, host_sum);
  ops.copy(b.target_logit, host_tl);
  double* mx = host_max.data<double>();
  double* sum = host_sum.data<double>();
  double* local_max = b.host_stats.narrow(3, 4).data<double>();  // this shard's maxima, kept
  std::copy(mx, mx + n, local_max);
  if (tp_.size() == 1) return;
  tp_.comm->all_reduce_max(mx, static_cast<int>(n));
  for (int64_t i = 0; i < n; ++i) sum[i] = sum[i] == 0 ? 0 : sum[i] * std::exp(local_max[i] - mx[i]);
  tp_.comm->all_reduce_sum(sum, static_cast<int>(2 * n));  // sums and target logits together
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

EvalSums LMHead::evaluate(Ops& ops, const Tensor& targets, HeadBuffers& b) const {
  combine_stats(ops, targets, b);
  const int64_t n = b.row_max.numel();
  const double* mx = b.host_stats.narrow(0, 1).data<double>();
  const double* sum = b.host_stats.narrow(1, 2).data<double>();
  const double* tl = b.host_stats.narrow(2, 3).data<double>();
  const int32_t* t = host_targets(ops, targets, b);
  EvalSums sums;
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] < 0) continue;
    sums.loss_sum += mx[i] + std::log(sum[i]) - tl[i];
    sums.correct += tl[i] >= mx[i];
    ++sums.count;
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

std::vector<int32_t> LMHead::greedy(Ops& ops, const Tensor& x, GreedyBuffers& b) const {
  norm_.forward(ops, x, b.norm);
  ops.gemm(false, true, 1.0, b.norm.y, weight_->gemm_value(), 0.0, b.logits);
  ops.copy(b.logits, b.host_logits);
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

double LMHead::vocab_parallel_loss(Ops& ops, const Tensor& targets, double grad_scale, HeadBuffers& b) const {
  const int64_t n = b.row_max.numel();
  const int64_t valid_columns = std::clamp<int64_t>(vocab_ - vocab_offset_, 0, local_vocab_);
  combine_stats(ops, targets, b);
  Tensor host_max = b.host_stats.narrow(0, 1), host_sum = b.host_stats.narrow(1, 2), host_tl = b.host_stats.narrow(2, 3);
  const double* mx = host_max.data<double>();
  const double* sum = host_sum.data<double>();
  const double* tl = host_tl.data<double>();
  const int32_t* t = host_targets(ops, targets, b);
  double loss_sum = 0;
  for (int64_t i = 0; i < n; ++i)
    if (t[i] >= 0) loss_sum += mx[i] + std::log(sum[i]) - tl[i];
  ops.copy(host_max, b.row_max);
  ops.copy(host_sum, b.sum_exp);
  ops.cross_entropy_shard_backward(b.logits, targets, vocab_offset_, valid_columns, b.row_max, b.sum_exp, grad_scale,
                                   b.logits);
  return loss_sum;
}

double LMHead::loss_backward(Ops& ops, const Tensor& x, const Tensor& targets, double grad_scale,
                             HeadBuffers& b, Tensor& dx) const {
  double loss_sum = 0;
  if (tp_.size() == 1) {
    ops.cross_entropy_forward_backward(b.logits, targets, grad_scale, b.losses, b.logits);
    ops.copy(b.losses, b.host_losses);
    const double* l = b.host_losses.data<double>();
    for (int64_t i = 0; i < b.host_losses.numel(); ++i) loss_sum += l[i];
  } else {
    loss_sum = vocab_parallel_loss(ops, targets, grad_scale, b);
  }

  const Tensor& dlogits = b.logits;
  const Tensor& normed = tp_.splits_rows() ? b.gathered : b.norm.y;  // all rows, from forward
  if (weight_->needs_grad()) ops.gemm(true, false, 1.0, dlogits, normed, 1.0, weight_->grad);  // [V, N] @ [N, C]
  ops.gemm(false, false, 1.0, dlogits, weight_->gemm_value(), 0.0, b.dnorm);
  // Each vocabulary shard contributes part of d(norm output).
  const Tensor& dnorm = tp_.reduce_to_rows(b.dnorm, b.dnorm_rows);
  ops.fill(dx, 0.0);
  norm_.backward(ops, x, b.norm, dnorm, dx);
  return loss_sum;
}

}  // namespace trident::model
