// mpi-ranks: 2
// The loss head split over the vocabulary (tp = 2) and computed over chunks of rows equals the
// whole head on one rank: the same loss, input gradient, and the head gradient's slice of each
// rank, for chunks of 1, 3 and all rows, with and without sequence parallelism (fp64).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <map>

#include "test_util.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/dist/communicator.hpp"
#include "trident/model/lm_head.hpp"

namespace trident::model {
namespace {

constexpr int64_t kRows = 10;

ModelConfig head_config() {
  ModelConfig c;
  c.hidden = 8;
  c.heads = 2;
  c.vocab = 13;  // padded to 14 for tp = 2: a padding row on rank 1
  c.seq_len = kRows;
  c.resolve();
  return c;
}

struct Result {
  double loss = 0;
  std::vector<double> dx;                       // [rows, C] of the rows this rank holds
  std::vector<std::pair<int64_t, double>> dw;   // (global element, value) of the head weight
};

Result run(dist::Communicator* comm, bool sequence_parallel, int64_t chunk) {
  auto ops = make_cpu_ops(1);
  const ModelConfig cfg = head_config();
  TensorParallel tp{comm, sequence_parallel};
  ParamStore store;
  LMHead head(store, cfg, nullptr, tp);
  store.allocate(*ops, DType::kF64);
  store.initialize(*ops, 7);  // by global element: shards hold the whole model's slices
  HeadBuffers b = head.make_buffers(*ops, kRows, DType::kF64, {}, chunk);
  Tensor targets = Tensor::zeros(Shape{kRows}, DType::kI32);
  for (int64_t i = 0; i < kRows; ++i) targets.data<int32_t>()[i] = i % 4 == 3 ? -1 : static_cast<int32_t>((i * 5) % cfg.vocab);
  const int64_t rows = tp.local_rows(kRows), first = tp.first_row(kRows);
  Tensor x = Tensor::zeros(Shape{rows, cfg.hidden}, DType::kF64);
  for (int64_t i = 0; i < rows * cfg.hidden; ++i) x.data<double>()[i] = std::sin(0.37 * double(first * cfg.hidden + i));
  Tensor dx = Tensor::zeros(x.shape(), DType::kF64);
  store.zero_grads(*ops);
  head.forward(*ops, x, b);
  Result r;
  model::StepLosses losses;
  head.loss_backward(*ops, x, targets, 0.5, b, dx, losses);
  r.loss = losses.take(*ops);
  r.dx = testing::to_vector(dx);
  for (const auto& p : store.all())
    if (p->spec.name == "head.weight")
      for (int64_t i = 0; i < p->grad.numel(); ++i)
        if (ParamStore::global_index(*p, i) < int64_t(cfg.vocab) * cfg.hidden)  // not the padding row
          r.dw.emplace_back(ParamStore::global_index(*p, i), p->grad.data<double>()[i]);
  return r;
}

TEST(VocabParallelHead, ChunkedEqualsTheWholeHead) {
  dist::Communicator world(MPI_COMM_WORLD);
  int rank = world.rank();
  const Result whole = run(nullptr, false, kRows);
  std::map<int64_t, double> whole_dw(whole.dw.begin(), whole.dw.end());
  for (bool sp : {false, true})
    for (int64_t chunk : {int64_t(1), int64_t(3), kRows}) {
      const Result got = run(&world, sp, chunk);
      const std::string what = std::string(sp ? "sequence parallel, " : "") + "chunk " + std::to_string(chunk);
      EXPECT_NEAR(got.loss, whole.loss, 1e-12 * std::abs(whole.loss)) << what;
      const int64_t first = sp ? kRows / 2 * rank * head_config().hidden : 0;
      for (size_t i = 0; i < got.dx.size(); ++i)
        EXPECT_NEAR(got.dx[i], whole.dx[first + i], 1e-12) << what << " dx " << i;
      for (const auto& [g, v] : got.dw) EXPECT_NEAR(v, whole_dw.at(g), 1e-12) << what << " dW " << g;
    }
}

}  // namespace
}  // namespace trident::model
