// Fused softmax + cross-entropy forward and backward over the vocabulary, one row per task.
// logits, dlogits: [N, V] (may alias), each fp32, bf16 or fp16 (softmax and loss in fp32);
// targets: [N] int32 (< 0: ignored); losses: [N] fp32 (fp64 in an fp64 call).
#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

// losses[n] = lse(logits[n]) - logits[n, t]; dlogits[n] = grad_scale * (softmax(logits[n]) - onehot(t)).
void cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets, double grad_scale,
                                    Tensor& losses, Tensor& dlogits) {
  constexpr const char* op = "cross_entropy_forward_backward";
  const DType ct = compute_dtype(logits, op, "logits");
  const int64_t V = last_dim(logits), N = rows_of(logits);
  check_dtype(targets, DType::kI32, op, "targets");
  check_numel(targets, N, op, "targets");
  check_dtype(losses, ct, op, "losses");
  check_numel(losses, N, op, "losses");
  check_act(dlogits, ct, op, "dlogits");
  check_numel(dlogits, N * V, op, "dlogits");
  const int32_t* tgt = targets.data<int32_t>();
  for (int64_t n = 0; n < N; ++n)
    TRIDENT_CHECK(tgt[n] < V, op, ": targets[", n, "] = ", tgt[n], " is not below the vocabulary size ", V);
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    // dlogits may be logits: each element is read before it is written (16-bit rows are
    // widened whole before the rounded result is stored)
    const Act<T> la(logits), da(dlogits);
    T* ploss = losses.data<T>();
    const T gs = T(grad_scale);
#pragma omp parallel for if (N * V > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      T* dx = da.out(n * V, da.in_place() ? nullptr : thread_scratch<T, 1>(static_cast<size_t>(V)));
      const int32_t t = tgt[n];
      if (t < 0) {
        ploss[n] = T(0);
#pragma omp simd
        for (int64_t j = 0; j < V; ++j) dx[j] = T(0);
        da.commit(n * V, V, dx);
        continue;
      }
      const T* x = la.read(n * V, V, la.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(V)));
      T mx = -INFINITY;
#pragma omp simd reduction(max : mx)
      for (int64_t j = 0; j < V; ++j) mx = x[j] > mx ? x[j] : mx;  // not std::max: its reference blocks vectorisation
      const T x_target = x[t];  // read before dx (maybe x) is overwritten
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < V; ++j) {  // one exp per logit: keep exp(x - max) in dx (row fits in L2)
        const T e = exp_t<T>(x[j] - mx);
        dx[j] = e;
        sum += e;
      }
      ploss[n] = mx + std::log(sum) - x_target;
      const T f = gs / sum;
#pragma omp simd
      for (int64_t j = 0; j < V; ++j) dx[j] *= f;
      dx[t] -= gs;
      da.commit(n * V, V, dx);
    }
  });
}

}  // namespace trident::cpu

// --- vocabulary-parallel cross-entropy -----------------------------------------------------
// logits: [N, Vl] shard of global ids [vocab_offset, vocab_offset + Vl); columns from
// valid_columns on are padding; logits and dlogits fp32, bf16 or fp16. row_max, sum_exp,
// target_logit: [N] fp32 (fp64 in an fp64 call).
namespace trident::cpu::inline TRIDENT_CPU_PATH {

namespace {
void check_shard(const char* op, const Tensor& logits, const Tensor& targets, int64_t valid_columns,
                 std::initializer_list<const Tensor*> rows) {
  const DType ct = compute_dtype(logits, op, "logits");
  const int64_t V = last_dim(logits), N = rows_of(logits);
  check_dtype(targets, DType::kI32, op, "targets");
  check_numel(targets, N, op, "targets");
  TRIDENT_CHECK(valid_columns >= 0 && valid_columns <= V, op, ": valid_columns ", valid_columns, " of ", V);
  for (const Tensor* t : rows) {
    check_dtype(*t, ct, op, "row statistics");
    check_numel(*t, N, op, "row statistics");
  }
}
}  // namespace

void cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset, int64_t valid_columns,
                               Tensor& row_max, Tensor& sum_exp, Tensor& target_logit) {
  constexpr const char* op = "cross_entropy_shard_stats";
  check_shard(op, logits, targets, valid_columns, {&row_max, &sum_exp, &target_logit});
  const int64_t V = last_dim(logits), N = rows_of(logits), Vv = valid_columns;
  dispatch_float(compute_dtype(logits, op, "logits"), op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> la(logits);
    const int32_t* tgt = targets.data<int32_t>();
    T *pmax = row_max.data<T>(), *psum = sum_exp.data<T>(), *ptl = target_logit.data<T>();
#pragma omp parallel for if (N * V > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      // only the valid columns are read (and widened)
      const T* x = la.read(n * V, Vv, la.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(Vv)));
      T mx = -INFINITY;
#pragma omp simd reduction(max : mx)
      for (int64_t j = 0; j < Vv; ++j) mx = x[j] > mx ? x[j] : mx;
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < Vv; ++j) sum += exp_t<T>(x[j] - mx);
      pmax[n] = Vv > 0 ? mx : T(-INFINITY);
      psum[n] = sum;
      const int64_t local = int64_t(tgt[n]) - vocab_offset;
      ptl[n] = tgt[n] >= 0 && local >= 0 && local < Vv ? x[local] : T(0);
    }
  });
}

void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                  int64_t valid_columns, const Tensor& row_max, const Tensor& sum_exp,
                                  double grad_scale, Tensor& dlogits) {
  constexpr const char* op = "cross_entropy_shard_backward";
  check_shard(op, logits, targets, valid_columns, {&row_max, &sum_exp});
  const DType ct = compute_dtype(logits, op, "logits");
  check_act(dlogits, ct, op, "dlogits");
  check_numel(dlogits, logits.numel(), op, "dlogits");
  const int64_t V = last_dim(logits), N = rows_of(logits), Vv = valid_columns;
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> la(logits), da(dlogits);  // dlogits may be logits
    const int32_t* tgt = targets.data<int32_t>();
    const T *pmax = row_max.data<T>(), *psum = sum_exp.data<T>();
    const T gs = T(grad_scale);
#pragma omp parallel for if (N * V > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      T* dx = da.out(n * V, da.in_place() ? nullptr : thread_scratch<T, 1>(static_cast<size_t>(V)));
      if (tgt[n] < 0) {
#pragma omp simd
        for (int64_t j = 0; j < V; ++j) dx[j] = T(0);
        da.commit(n * V, V, dx);
        continue;
      }
      const T* x = la.read(n * V, Vv, la.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(Vv)));
      const T mx = pmax[n], f = gs / psum[n];
#pragma omp simd
      for (int64_t j = 0; j < Vv; ++j) dx[j] = exp_t<T>(x[j] - mx) * f;
      for (int64_t j = Vv; j < V; ++j) dx[j] = T(0);
      const int64_t local = int64_t(tgt[n]) - vocab_offset;
      if (local >= 0 && local < Vv) dx[local] -= gs;
      da.commit(n * V, V, dx);
    }
  });
}

}  // namespace trident::cpu
