// PowerSGD: P = M Q, all-reduce, orthonormalise, Q = M^T P, all-reduce, M ~ P Q^T.
#include "trident/dist/compression_powersgd.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "trident/core/rng.hpp"

namespace trident::dist {

// The kernels work on Q transposed (r x n, rows contiguous) so every inner loop runs over a
// contiguous row of M: dot products with 16 independent partial sums and axpys, both of which
// the compiler vectorises (a plain float reduction it may not reorder).
namespace {
std::vector<float> transposed(const float* Q, int64_t n, int r) {
  std::vector<float> t(static_cast<size_t>(n * r));
  for (int64_t j = 0; j < n; ++j)
    for (int k = 0; k < r; ++k) t[k * n + j] = Q[j * r + k];
  return t;
}

float dot(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float part[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] += a[j + l] * b[j + l];
  float sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += part[l];
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] += alpha * x[j];
}
}  // namespace

void powersgd_multiply(const float* M, int64_t m, int64_t n, const float* Q, int r, float* P) {
  const std::vector<float> Qt = transposed(Q, n, r);
  for (int64_t i = 0; i < m; ++i)
    for (int k = 0; k < r; ++k) P[i * r + k] = dot(M + i * n, Qt.data() + k * n, n);
}

void powersgd_multiply_t(const float* M, int64_t m, int64_t n, const float* P, int r, float* Q) {
  std::vector<float> Qt(static_cast<size_t>(n * r), 0.0f);
  for (int64_t i = 0; i < m; ++i)
    for (int k = 0; k < r; ++k) axpy(P[i * r + k], M + i * n, Qt.data() + k * n, n);
  for (int64_t j = 0; j < n; ++j)
    for (int k = 0; k < r; ++k) Q[j * r + k] = Qt[k * n + j];
}

void powersgd_low_rank(const float* P, const float* Q, int64_t m, int64_t n, int r, float* out, bool subtract) {
  const std::vector<float> Qt = transposed(Q, n, r);
  for (int64_t i = 0; i < m; ++i) {
    float* row = out + i * n;
    if (!subtract) std::fill_n(row, n, 0.0f);
    for (int k = 0; k < r; ++k) axpy(subtract ? -P[i * r + k] : P[i * r + k], Qt.data() + k * n, row, n);
  }
}

namespace {
// Removes from column c of P (m x r) its components along columns 0..c-1 (orthonormal), then
// normalises it; returns false when nothing is left of it.
bool orthonormalize_column(float* P, int64_t m, int r, int c) {
  double before = 0;
  for (int64_t i = 0; i < m; ++i) before += double(P[i * r + c]) * P[i * r + c];
  for (int k = 0; k < c; ++k) {
    double dot = 0;
    for (int64_t i = 0; i < m; ++i) dot += double(P[i * r + k]) * P[i * r + c];
    for (int64_t i = 0; i < m; ++i) P[i * r + c] -= static_cast<float>(dot * P[i * r + k]);
  }
  double norm = 0;
  for (int64_t i = 0; i < m; ++i) norm += double(P[i * r + c]) * P[i * r + c];
  norm = std::sqrt(norm);
  // Nothing left (relative to the column's size): it lay in the span of the previous ones.
  if (!(norm > 1e-6 * std::sqrt(before)) || norm < 1e-30) return false;
  for (int64_t i = 0; i < m; ++i) P[i * r + c] = static_cast<float>(P[i * r + c] / norm);
  return true;
}
}  // namespace

void powersgd_orthonormalize(float* P, int64_t m, int r, uint64_t key) {
  for (int c = 0; c < r; ++c) {
    if (orthonormalize_column(P, m, r, c)) continue;
    for (int64_t i = 0; i < m; ++i) P[i * r + c] = static_cast<float>(rng_normal(key, uint64_t(i), uint64_t(c) + 1));
    if (!orthonormalize_column(P, m, r, c))
      for (int64_t i = 0; i < m; ++i) P[i * r + c] = 0;
  }
}

void powersgd_initial_q(float* Q, int64_t n, int r, uint64_t key) {
  for (int64_t e = 0; e < n * r; ++e) Q[e] = static_cast<float>(rng_normal(key, uint64_t(e)));
}

PowerSGDCompressor::PowerSGDCompressor(Communicator& dp, const Tensor& flat_grads, std::vector<GradBucket> buckets,
                                       const std::vector<GradMatrix>& matrices, int rank)
    : GradCompressor(dp, std::move(buckets)), grads_(flat_grads.data<float>()), buffers_(buckets_.size()) {
  TRIDENT_CONFIG_CHECK(rank >= 1 && rank <= 64, "comm.powersgd_rank must be in 1..64 (got ", rank, ")");
  // Which matrices are compressed, in flat order, and the state layout.
  std::vector<Matrix> chosen;
  int64_t q_total = 0;
  for (const GradMatrix& g : matrices) {
    const int r = static_cast<int>(std::min<int64_t>({rank, g.rows, g.cols}));
    if (g.rows * g.cols < kMinCompressedElements || std::min(g.rows, g.cols) <= 2 * int64_t(rank)) continue;
    chosen.push_back({g, r, 0, nullptr});
    q_total += g.cols * r;
  }
  std::sort(chosen.begin(), chosen.end(), [](const Matrix& a, const Matrix& b) { return a.at.offset < b.at.offset; });
  const int64_t flat = flat_grads.numel();
  state_ = Tensor::zeros(Shape{flat + std::max<int64_t>(q_total, 1)}, DType::kF32);
  residual_ = state_.data<float>();
  int64_t q_at = flat;
  size_t next = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Buffers& B = buffers_[i];
    const GradBucket& b = buckets_[i];
    const int64_t q_begin = q_at;
    int64_t p_total = 0;
    for (; next < chosen.size() && chosen[next].at.offset < b.end; ++next) {
      Matrix m = chosen[next];
      TRIDENT_CHECK(m.at.offset >= b.begin, "powersgd: matrices out of order");
      m.p_begin = p_total;
      m.q = state_.data<float>() + q_at;
      p_total += m.at.rows * m.r;
      q_at += m.at.cols * m.r;
      B.matrices.push_back(m);
    }
    if (q_at > q_begin) B.q = state_.narrow(q_begin, q_at);
    // Plain ranges: the bucket minus every compressed matrix overlapping it.
    int64_t cursor = b.begin, plain_total = 0;
    for (const Matrix& m : chosen) {
      const int64_t lo = std::max(b.begin, m.at.offset), hi = std::min(b.end, m.at.offset + m.at.rows * m.at.cols);
      if (lo >= hi) continue;
      if (m.at.offset < b.begin) B.holds_tail = true;
      if (lo > cursor) B.plain.push_back({cursor, lo});
      cursor = hi;
    }
    if (cursor < b.end) B.plain.push_back({cursor, b.end});
    for (const auto& [lo, hi] : B.plain) plain_total += hi - lo;
    B.p_total = p_total;
    if (compresses(i)) B.exchange = Tensor::zeros(Shape{std::max<int64_t>(p_total + plain_total, 1)}, DType::kF32);
  }
  reset_state();
}

void PowerSGDCompressor::reset_state() {
  GradCompressor::reset_state();
  for (Buffers& B : buffers_)
    for (Matrix& m : B.matrices) powersgd_initial_q(m.q, m.at.cols, m.r, m.at.key);
}

void PowerSGDCompressor::copy_plain(Buffers& B, bool to_exchange) {
  float* x = B.exchange.data<float>() + B.p_total;
  for (const auto& [lo, hi] : B.plain) {
    if (to_exchange) std::copy(grads_ + lo, grads_ + hi, x);
    else std::copy(x, x + (hi - lo), grads_ + lo);
    x += hi - lo;
  }
}

void PowerSGDCompressor::start_compressed(size_t i) {
  Buffers& B = buffers_[i];
  float* P = B.exchange.data<float>();
  for (Matrix& m : B.matrices) {
    float* M = grads_ + m.at.offset;
    add_residual(M, residual_ + m.at.offset, m.at.rows * m.at.cols);
    powersgd_multiply(M, m.at.rows, m.at.cols, m.q, m.r, P + m.p_begin);
  }
  copy_plain(B, true);
  count_wire(wire_all_reduce(uint64_t(B.exchange.bytes()), p()));
  requests_[i] = dp_.iall_reduce_sum(B.exchange);
}

void PowerSGDCompressor::advance_compressed(size_t i) {
  Buffers& B = buffers_[i];
  requests_[i].wait();
  float* P = B.exchange.data<float>();
  for (Matrix& m : B.matrices) {
    float* M = grads_ + m.at.offset;
    float* Pm = P + m.p_begin;
    powersgd_orthonormalize(Pm, m.at.rows, m.r, m.at.key);
    powersgd_multiply_t(M, m.at.rows, m.at.cols, Pm, m.r, m.q);
    // What this rank's part of the sum loses: M - P (M^T P)^T.
    float* E = residual_ + m.at.offset;
    std::copy_n(M, m.at.rows * m.at.cols, E);
    powersgd_low_rank(Pm, m.q, m.at.rows, m.at.cols, m.r, E, /*subtract=*/true);
  }
  copy_plain(B, false);
  if (B.matrices.empty()) return;
  count_wire(wire_all_reduce(uint64_t(B.q.bytes()), p()));
  requests_[i] = dp_.iall_reduce_sum(B.q);
}

void PowerSGDCompressor::complete_compressed(size_t i) {
  Buffers& B = buffers_[i];
  GradBucket& b = buckets_[i];
  requests_[i].wait();
  const float* P = B.exchange.data<float>();
  for (Matrix& m : B.matrices)
    powersgd_low_rank(P + m.p_begin, m.q, m.at.rows, m.at.cols, m.r, grads_ + m.at.offset, /*subtract=*/false);
  if (b.shard.defined()) {
    // Matrices starting in an earlier bucket were written when it completed (ascending order).
    const Communicator::Block mine = dp_.block(b.end - b.begin, dp_.rank());
    std::copy(grads_ + b.begin + mine.begin, grads_ + b.begin + mine.end, b.shard.data<float>());
  }
}

}  // namespace trident::dist
