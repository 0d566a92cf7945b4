// mpi-ranks: 2 4
// Compressed data-parallel reduction on real ranks against the exact sum of known data: int8
// within its quantisation bound, topk exact for what it keeps (and exact at ratio 1), PowerSGD
// exact for sums of rank <= r; every rank gets the same result; with ZeRO-1 each rank's block
// is the block of the full result (int8: the fp32 sum, within the first rounding only).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "trident/core/rng.hpp"
#include "trident/dist/compression_int8.hpp"
#include "trident/dist/compression_powersgd.hpp"
#include "trident/dist/compression_topk.hpp"

namespace trident::dist {
namespace {

constexpr int64_t kRows = 96, kCols = 128;  // one matrix, then a vector, then padding

// Rank r's gradient element i: the matrix part is U V_r^T (rank 2), so the sum is rank 2.
float value(int r, int64_t i) {
  if (i < kRows * kCols) {
    const int64_t row = i / kCols, col = i % kCols;
    double v = 0;
    for (int k = 0; k < 2; ++k)
      v += rng_normal(rng_key(1, "U"), uint64_t(row * 2 + k)) * rng_normal(rng_key(2 + r, "V"), uint64_t(col * 2 + k));
    return static_cast<float>(v);
  }
  return static_cast<float>(rng_normal(rng_key(9 + r, "vec"), uint64_t(i)));
}

struct Exchange {
  Communicator dp{MPI_COMM_WORLD};
  int64_t total = 0;
  Tensor flat;
  std::vector<GradBucket> buckets;
  std::vector<float> exact;  // sum over ranks

  Exchange(int64_t bucket, bool zero) {
    const int p = dp.size();
    total = (kRows * kCols + 1000 + 16 * p - 1) / (16 * p) * (16 * p);
    flat = Tensor::zeros(Shape{total}, DType::kF32);
    exact.assign(static_cast<size_t>(total), 0.0f);
    for (int64_t i = 0; i < kRows * kCols + 1000; ++i) {
      flat.data<float>()[i] = value(dp.rank(), i);
      for (int r = 0; r < p; ++r) exact[i] += value(r, i);
    }
    for (int64_t b = 0; b < total; b += bucket) {
      const int64_t e = std::min(total, b + bucket);
      buckets.push_back({b, e, flat.narrow(b, e), zero ? Tensor::zeros(Shape{(e - b) / p}, DType::kF32) : Tensor()});
    }
  }
  // Runs the three phases as GradReducer does (start from the last bucket down).
  void reduce(GradCompressor& c) {
    for (size_t i = c.num_buckets(); i-- > 0;) c.start(i);
    for (size_t i = 0; i < c.num_buckets(); ++i) c.advance(i);
    for (size_t i = 0; i < c.num_buckets(); ++i) c.complete(i);
  }
  // The reduced value of element i: from the flat buffer, or with ZeRO from this rank's block.
  bool mine(int64_t i) const {
    for (const GradBucket& b : buckets)
      if (i >= b.begin && i < b.end) {
        if (!b.shard.defined()) return true;
        const Communicator::Block k = dp.block(b.end - b.begin, dp.rank());
        return i - b.begin >= k.begin && i - b.begin < k.end;
      }
    return false;
  }
  float result(int64_t i) const {
    for (const GradBucket& b : buckets)
      if (i >= b.begin && i < b.end) {
        if (!b.shard.defined()) return flat.data<float>()[i];
        return b.shard.data<float>()[i - b.begin - dp.block(b.end - b.begin, dp.rank()).begin];
      }
    return 0;
  }
  // Every rank holds the same flat result (without ZeRO).
  void expect_same_on_every_rank() {
    std::vector<float> max(flat.numel()), min(flat.numel());
    MPI_Allreduce(flat.data<float>(), max.data(), int(flat.numel()), MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(flat.data<float>(), min.data(), int(flat.numel()), MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
    EXPECT_EQ(max, min);
  }
};

std::vector<GradMatrix> one_matrix() { return {{0, kRows, kCols, rng_key(1, "m")}}; }

TEST(CompressedReduce, Int8WithinTheQuantisationBound) {
  for (bool zero : {false, true}) {
    Exchange s(4096 * 2, zero);
    Int8Compressor c(s.dp, s.buckets);
    s.reduce(c);
    // Per block: each rank's rounding <= its scale / 2, the re-quantised sum's <= its scale / 2.
    float amax_ranks = 0, amax_sum = 0;
    for (int64_t i = 0; i < s.total; ++i) {
      for (int r = 0; r < s.dp.size(); ++r)
        amax_ranks = std::max(amax_ranks, std::fabs(i < kRows * kCols + 1000 ? value(r, i) : 0.0f));
      amax_sum = std::max(amax_sum, std::fabs(s.exact[i]));
    }
    const float bound = s.dp.size() * amax_ranks / 254 + (zero ? 0 : amax_sum / 254) + 1e-5f;
    for (int64_t i = 0; i < s.total; ++i)
      if (s.mine(i)) {
        ASSERT_NEAR(s.result(i), s.exact[i], bound) << "element " << i << " zero " << zero;
      }
    if (!zero) s.expect_same_on_every_rank();
  }
}

TEST(CompressedReduce, TopKExactAtRatioOneAndSendsOnlyK) {
  for (bool zero : {false, true}) {
    Exchange s(1 << 20, zero);
    TopKCompressor c(s.dp, s.buckets, 1.0);
    s.reduce(c);
    for (int64_t i = 0; i < s.total; ++i)
      if (s.mine(i)) {
        ASSERT_NEAR(s.result(i), s.exact[i], 1e-5 * (1 + std::fabs(s.exact[i]))) << i;
      }
  }
  // At 1%, and at the 1/4 a warm-up starts with: the sum of each rank's own top share.
  for (const auto& [warmup, share] : {std::pair{0, 0.01}, std::pair{8, 0.25}, std::pair{-8, 0.01}}) {
    Exchange s(1 << 20, false);
    TopKCompressor c(s.dp, s.buckets, 0.01, std::abs(warmup));
    c.begin_step(warmup < 0 ? 8 : 0);  // -8: a warm-up of 8 steps, over
    s.reduce(c);
    EXPECT_EQ(c.take_wire_bytes(), uint64_t(topk_count(s.total, share)) * 8 * uint64_t(s.dp.size() - 1));
    std::vector<float> expected(static_cast<size_t>(s.total), 0.0f), mine(expected.size()), residual(expected.size());
    std::vector<TopKPair> pairs(static_cast<size_t>(topk_count(s.total, share)));
    std::vector<float> scratch;
    for (int r = 0; r < s.dp.size(); ++r) {
      for (int64_t i = 0; i < s.total; ++i) mine[i] = i < kRows * kCols + 1000 ? value(r, i) : 0.0f;
      topk_select(mine.data(), s.total, int64_t(pairs.size()), pairs.data(), residual.data(), scratch);
      for (const TopKPair& p : pairs) expected[p.index] += p.value;
    }
    for (int64_t i = 0; i < s.total; ++i) ASSERT_EQ(s.flat.data<float>()[i], expected[i]) << i;
    s.expect_same_on_every_rank();
  }
}

// comm.topk_dense_steps: the first steps go uncompressed (exact sum, raw bytes on the wire, no
// residual kept); the step after them is top-k again.
TEST(CompressedReduce, TopKDenseStepsReduceExactlyThenSparsify) {
  Exchange s(1 << 20, false);
  TopKCompressor c(s.dp, s.buckets, 0.01, 0, 2);
  c.begin_step(1);  // the second of two dense steps
  s.reduce(c);
  for (int64_t i = 0; i < s.total; ++i) ASSERT_NEAR(s.result(i), s.exact[i], 1e-5 * (1 + std::fabs(s.exact[i]))) << i;
  EXPECT_EQ(c.take_wire_bytes(), c.take_raw_bytes());
  for (int64_t i = 0; i < c.state().numel(); ++i) ASSERT_EQ(c.state().data<float>()[i], 0.0f) << "residual " << i;
  Exchange t(1 << 20, false);
  TopKCompressor after(t.dp, t.buckets, 0.01, 0, 2);
  after.begin_step(2);
  t.reduce(after);
  EXPECT_EQ(after.take_wire_bytes(), uint64_t(topk_count(t.total, 0.01)) * 8 * uint64_t(t.dp.size() - 1));
}

TEST(CompressedReduce, PowerSGDExactForARankTwoSum) {
  for (bool zero : {false, true})
    for (int64_t bucket : {int64_t(1) << 20, int64_t(4096)}) {  // one bucket; the matrix over several
      Exchange s(bucket, zero);
      PowerSGDCompressor c(s.dp, s.flat, s.buckets, one_matrix(), 2);
      s.reduce(c);
      double err = 0, norm = 0;
      for (int64_t i = 0; i < s.total; ++i)
        if (s.mine(i)) {
          err += std::pow(double(s.result(i)) - s.exact[i], 2);
          norm += std::pow(double(s.exact[i]), 2);
        }
      EXPECT_LT(std::sqrt(err / norm), 1e-5) << "zero " << zero << " bucket " << bucket;
      for (int64_t i = kRows * kCols; i < s.total; ++i)  // the vector part goes uncompressed
        if (s.mine(i)) {
          ASSERT_NEAR(s.result(i), s.exact[i], 1e-5) << i;
        }
      if (!zero) s.expect_same_on_every_rank();
      // Rank 2 is within the approximation: nothing is left over on any rank.
      float left = 0;
      for (int64_t i = 0; i < kRows * kCols; ++i) left = std::max(left, std::fabs(c.state().data<float>()[i]));
      EXPECT_LT(left, 1e-3);
    }
}

TEST(Communicator, ByteAllToAllAndAllGatherDeliverAndCount) {
  Communicator c(MPI_COMM_WORLD);
  const int p = c.size(), me = c.rank();
  const int64_t bytes = 5;  // odd on purpose
  std::vector<uint8_t> send(size_t(p * bytes)), recv(send.size()), gathered(send.size());
  for (int r = 0; r < p; ++r)
    for (int64_t b = 0; b < bytes; ++b) send[r * bytes + b] = uint8_t(16 * me + r + b);  // for rank r
  c.all_to_all_bytes(send.data(), recv.data(), bytes);
  for (int r = 0; r < p; ++r)
    for (int64_t b = 0; b < bytes; ++b) ASSERT_EQ(recv[r * bytes + b], uint8_t(16 * r + me + b)) << "from rank " << r;
  c.all_gather_bytes(send.data(), gathered.data(), bytes);  // every rank's first segment
  for (int r = 0; r < p; ++r)
    for (int64_t b = 0; b < bytes; ++b) ASSERT_EQ(gathered[r * bytes + b], uint8_t(16 * r + b)) << "from rank " << r;
  EXPECT_EQ(c.bytes(CommOp::kAllToAll), uint64_t(p * bytes));
  EXPECT_EQ(c.bytes(CommOp::kAllGather), uint64_t(p * bytes));
}

TEST(CompressedReduce, WireBytesAgainstUncompressed) {
  Exchange s(1 << 20, false);
  Int8Compressor c(s.dp, s.buckets);
  s.reduce(c);
  const double cut = 1.0 - double(c.take_wire_bytes()) / double(c.take_raw_bytes());
  EXPECT_GT(cut, 0.74) << "int8 should send a quarter of fp32's bytes";
}

}  // namespace
}  // namespace trident::dist
