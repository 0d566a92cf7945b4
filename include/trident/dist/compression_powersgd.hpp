// PowerSGD (Vogels, Karimireddy, Jaggi, NeurIPS 2019): rank-r approximation of each 2-D
// gradient with one step of subspace iteration, warm-started from the previous step's Q, with
// error feedback. Per matrix M (m x n, this rank's gradient plus its residual):
//   P = M Q (m x r); all-reduce P; orthonormalise P's columns;
//   Q_local = M^T P (n x r); residual = M - P Q_local^T; all-reduce Q (kept for the next step);
//   the reduced gradient is P Q^T (= P P^T sum_ranks M, identical on every rank).
// Sums of exactly rank <= r are reproduced exactly (up to rounding).
// A matrix is compressed when it has >= kMinCompressedElements elements and min(m, n) > 2r;
// vectors, small matrices and the padding are packed next to the P's and all-reduced as they
// are (no residual). Matrices are handled by the bucket holding their first element: the
// whole matrix is final when that bucket is (buckets start from the last one down).
// Wire per rank: 2 (p-1)/p * 4 * (r (m + n)) per matrix plus the uncompressed elements.
// State: residuals (flat-long) then every compressed matrix's Q (n x r), in flat order.
#pragma once
#include <cstdint>
#include <vector>

#include "trident/dist/compression.hpp"

namespace trident::dist {

// Row-major helpers, float storage, double accumulation where it matters.
void powersgd_multiply(const float* M, int64_t m, int64_t n, const float* Q, int r, float* P);    // P = M Q
void powersgd_multiply_t(const float* M, int64_t m, int64_t n, const float* P, int r, float* Q);  // Q = M^T P
// out = P Q^T (subtract: out -= P Q^T); P: m x r, Q: n x r, out: m x n.
void powersgd_low_rank(const float* P, const float* Q, int64_t m, int64_t n, int r, float* out, bool subtract);
// Gram-Schmidt on the r columns of P (m x r). A column that vanishes (rank-deficient sum) is
// replaced by a fixed random one keyed by key, so every rank makes the same choice.
void powersgd_orthonormalize(float* P, int64_t m, int r, uint64_t key);
// The first Q of a matrix: standard normal values keyed by (key, element), the same on every rank.
void powersgd_initial_q(float* Q, int64_t n, int r, uint64_t key);

class PowerSGDCompressor : public GradCompressor {
 public:
  PowerSGDCompressor(Communicator& dp, const Tensor& flat_grads, std::vector<GradBucket> buckets,
                     const std::vector<GradMatrix>& matrices, int rank);
  bool compresses(size_t i) const override { return !buffers_[i].matrices.empty() || buffers_[i].holds_tail; }
  void reset_state() override;

 protected:
  void start_compressed(size_t i) override;
  void advance_compressed(size_t i) override;
  void complete_compressed(size_t i) override;

 private:
  struct Matrix {
    GradMatrix at;
    int r = 0;
    int64_t p_begin = 0;  // in the bucket's exchange buffer
    float* q = nullptr;   // n x r, in state_
  };
  struct Buffers {
    std::vector<Matrix> matrices;                        // those starting in this bucket
    std::vector<std::pair<int64_t, int64_t>> plain;      // flat ranges sent uncompressed
    bool holds_tail = false;                             // a compressed matrix runs into it
    int64_t p_total = 0;                                 // floats of the P's
    Tensor exchange;                                     // P's, then the plain elements
    Tensor q;                                            // the matrices' Q's (a view of state_)
  };
  void copy_plain(Buffers& B, bool to_exchange);

  float* grads_ = nullptr;     // the flat gradient buffer
  float* residual_ = nullptr;  // flat-long, in state_
  std::vector<Buffers> buffers_;
};

}  // namespace trident::dist
