// mpi-ranks: 2
// Hugging Face fixtures (utils/make_hf_fixtures.py) loaded under tensor and pipeline
// parallelism, each rank reading only its shards: tp=2 logits (vocabulary padded to a multiple
// of 2 where odd) and the pp=2 loss equal transformers' within 1e-4 relative; and
// `convert --from hf` then `--to hf` gives back every tensor.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <iostream>

#include "hf_fixture.hpp"
#include "temp_dir.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/cli/config_parser.hpp"
#include "trident/dist/communicator.hpp"
#include "trident/train/eval/generator.hpp"
#include "trident/interop/hf_convert.hpp"
#include "trident/interop/hf_weights.hpp"
#include "trident/interop/model_keys.hpp"

namespace trident::train {
using namespace ::trident::interop;  // the conversions under test
namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

class HfParallel : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Ops> ops_ = make_cpu_ops(1);
};

TEST_P(HfParallel, TensorParallelLogits) {
  const testing::HfFixture f = testing::load_hf_fixture(GetParam());
  if (f.config.qk_norm_whole) GTEST_SKIP() << "q/k norms over the whole projection (OLMoE) run at tp = 1 only";
  dist::Communicator world(MPI_COMM_WORLD);
  model::TensorParallel tp{.comm = &world};
  model::GPTModel model(f.config, *ops_, DType::kF32, int(f.batch), 1, tp);
  load_hf_model(model.params(), *ops_, f.config, f.dir);
  const Tensor& logits = model.forward_logits(f.tokens, f.positions);  // [B*T, Vp/2]: this rank's columns
  const int64_t rows = logits.dim(0), local = logits.dim(1);
  std::vector<float> mine(logits.data<float>(), logits.data<float>() + logits.numel());
  std::vector<float> both(mine.size() * 2);
  MPI_Allgather(mine.data(), int(mine.size()), MPI_FLOAT, both.data(), int(mine.size()), MPI_FLOAT, MPI_COMM_WORLD);
  std::vector<float> full(size_t(rows * local * 2));  // [B*T, Vp]
  for (int r = 0; r < 2; ++r)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t c = 0; c < local; ++c) full[size_t(i * 2 * local + r * local + c)] = both[size_t((r * rows + i) * local + c)];
  const double err = testing::logits_error(full, 2 * local, f.logits, f.vocab);
  if (world_rank() == 0) std::cout << "[hf] " << GetParam() << " tp=2: max relative logits error " << err << "\n";
  EXPECT_LT(err, 1e-4);
}

// Stage 0 holds layer 0 and the embedding, stage 1 layer 1 and the head (with its copy of a
// tied table, loaded from the same HF tensor); the activation goes over MPI.
TEST_P(HfParallel, PipelineLoss) {
  const testing::HfFixture f = testing::load_hf_fixture(GetParam());
  ASSERT_EQ(f.config.layers, 2);
  const int stage = world_rank();
  model::StagePlan plan{.chunks = {model::StagePlan::blocks(stage, stage + 1)}, .embedding = stage == 0, .head = stage == 1};
  model::GPTModel model(f.config, *ops_, DType::kF32, int(f.batch), 1, {}, plan);
  load_hf_model(model.params(), *ops_, f.config, f.dir);
  double loss = 0;
  if (stage == 0) {
    model.forward(0, 0, f.tokens, f.targets, f.positions, 1.0);
    Tensor& out = model.output(0, 0);
    MPI_Send(out.data<float>(), int(out.numel()), MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
  } else {
    Tensor& in = model.input(0, 0);
    MPI_Recv(in.data<float>(), int(in.numel()), MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    model.forward(0, 0, f.tokens, f.targets, f.positions, 1.0);
    loss = model.take_loss_sum() / double(f.batch * f.seq);
  }
  MPI_Bcast(&loss, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  const double err = std::abs(loss - f.loss) / f.loss;
  if (stage == 0) std::cout << "[hf] " << GetParam() << " pp=2: loss " << loss << " vs " << f.loss << ", relative error " << err << "\n";
  EXPECT_LT(err, 1e-4);
}

// Greedy generation with the KV cache under tp = 2 (heads, MLP and vocabulary split; the argmax
// combined over the shards) and under pp = 2 (hidden rows passed between the stages, tokens
// broadcast back) equals transformers' generate, on both ranks.
TEST_P(HfParallel, TensorParallelGeneration) {
  const testing::HfFixture f = testing::load_hf_fixture(GetParam());
  if (f.config.qk_norm_whole) GTEST_SKIP() << "q/k norms over the whole projection (OLMoE) run at tp = 1 only";
  const testing::HfGeneration g = testing::load_hf_generation(GetParam());
  dist::Communicator world(MPI_COMM_WORLD);
  model::TensorParallel tp{.comm = &world};
  model::GPTModel model(f.config, *ops_, DType::kF32, 1, 1, tp);
  load_hf_model(model.params(), *ops_, f.config, f.dir);
  Generator gen(model, *ops_, nullptr, int(g.prompts.size()), 7, 7 + g.max_new);
  EXPECT_EQ(gen.generate(g.prompts, g.max_new, {}), g.outputs);
}

TEST_P(HfParallel, PipelineGeneration) {
  const testing::HfFixture f = testing::load_hf_fixture(GetParam());
  const testing::HfGeneration g = testing::load_hf_generation(GetParam());
  const int stage = world_rank();
  model::StagePlan plan{.chunks = {model::StagePlan::blocks(stage, stage + 1)}, .embedding = stage == 0, .head = stage == 1};
  model::GPTModel model(f.config, *ops_, DType::kF32, 1, 1, {}, plan);
  load_hf_model(model.params(), *ops_, f.config, f.dir);
  dist::Communicator world(MPI_COMM_WORLD);
  Generator gen(model, *ops_, &world, int(g.prompts.size()), 7, 7 + g.max_new);
  EXPECT_EQ(gen.generate(g.prompts, g.max_new, {}), g.outputs);
}

// HF -> trident checkpoint -> HF on each rank alone (MPI_COMM_SELF): the same tensors.
TEST_P(HfParallel, ConvertRoundTrip) {
  const std::string dir = std::string(TRIDENT_TEST_DATA) + "/hf/" + GetParam();
  testing::TempDir tmp;
  const std::string h5 = tmp / "model.h5";
  const std::string back = tmp / "hf";
  hf_to_checkpoint(dir, h5, MPI_COMM_SELF);
  checkpoint_to_hf(h5, cli::checkpoint_model(h5), back);
  const io::SafetensorsModel original(dir), converted(back);
  const interop::HfModelInfo info = interop::read_hf_config(dir);
  for (const std::string& name : original.names()) {
    if (name == "lm_head.weight" && info.config.tie_embeddings) continue;
    const io::SafetensorsView& a = original.at(name, original.find(name)->shape);
    const io::SafetensorsView* b = converted.find(name);
    ASSERT_NE(b, nullptr) << name;
    ASSERT_EQ(b->shape, a.shape) << name;
    const int64_t rows = a.shape.size() == 2 ? a.shape[0] : 1;
    std::vector<float> va(size_t(a.numel())), vb(size_t(a.numel()));
    io::read_block(a, 0, rows, 0, a.shape.back(), false, va.data());
    io::read_block(*b, 0, rows, 0, a.shape.back(), false, vb.data());
    EXPECT_EQ(va, vb) << name;
  }
  EXPECT_EQ(converted.names().size(), original.names().size() - (info.config.tie_embeddings && original.find("lm_head.weight")));
  const interop::HfModelInfo again = interop::read_hf_config(back);
  EXPECT_EQ(interop::model_key_texts(again.config), interop::model_key_texts(info.config));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfParallel, ::testing::ValuesIn(testing::hf_fixture_names()));

// The mixtures of experts with their experts split over the two ranks (ep = 2): each rank
// loads only its experts, routes the whole batch and trades tokens with the other; every rank's
// logits equal transformers'.
class HfExpertParallel : public HfParallel {};

TEST_P(HfExpertParallel, ExpertParallelLogits) {
  const testing::HfFixture f = testing::load_hf_fixture(GetParam());
  dist::Communicator world(MPI_COMM_WORLD);
  model::GPTModel model(f.config, *ops_, DType::kF32, int(f.batch), 1, {}, {}, std::nullopt,
                        model::ExpertParallel{.comm = &world});
  int experts = 0;
  for (const auto& p : model.params().all()) experts += p->spec.expert && p->spec.name.ends_with("up.weight");
  EXPECT_EQ(experts, f.config.moe_layers() * f.config.moe.experts / 2) << "each rank holds half the experts";
  load_hf_model(model.params(), *ops_, f.config, f.dir);
  const Tensor& logits = model.forward_logits(f.tokens, f.positions);
  const std::vector<float> mine(logits.data<float>(), logits.data<float>() + logits.numel());
  const double err = testing::logits_error(mine, logits.dim(1), f.logits, f.vocab);
  if (world_rank() == 0) std::cout << "[hf] " << GetParam() << " ep=2: max relative logits error " << err << "\n";
  EXPECT_LT(err, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfExpertParallel,
                         ::testing::ValuesIn(std::vector<std::string>(std::begin(testing::kHfMoeFixtures),
                                                                      std::end(testing::kHfMoeFixtures))));

}  // namespace
}  // namespace trident::train
