// mpi-ranks: 2 4
// Training with comm.compression (int8, topk, powersgd) on real ranks: overlap on and off give
// bitwise the same run; ZeRO-1 gives the same run (topk, powersgd) or a close one (int8, whose
// ZeRO path skips the re-quantisation); every pipeline schedule trains (pp 2, on 4 ranks) close
// to the uncompressed run; a run resumed from a checkpoint continues the uninterrupted one
// bitwise (error-feedback residuals and PowerSGD's Q restored). Layout invariance is not
// expected under lossy compression.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "mpi_job_dir.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/train/trainer.hpp"

namespace trident::train {
namespace {

const dist::CompressionKind kKinds[] = {dist::CompressionKind::kInt8, dist::CompressionKind::kTopK,
                                        dist::CompressionKind::kPowerSGD};

RunConfig small_run(dist::Layout layout, dist::CompressionKind kind, const std::string& run_dir) {
  RunConfig c;
  c.model.arch = model::Arch::kLlama;  // untied head, GQA: matrices of several shapes, vectors
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.heads = 4;
  c.model.kv_heads = 2;
  c.model.vocab = 320;
  c.model.seq_len = 32;
  c.model.tie_embeddings = false;
  c.model.resolve();
  c.layout = layout;
  c.train.steps = 6;
  c.train.micro_batch = 2;
  c.train.global_batch = 16;
  c.train.lr = 2e-3;
  c.train.warmup = 2;
  c.comm.bucket_mb = 0.05;  // several buckets, some split inside a matrix
  c.comm.compression = kind;
  c.comm.topk_ratio = 0.05;
  c.comm.powersgd_rank = 2;
  c.data.train = std::string(TRIDENT_SOURCE_DIR) + "/input/data/pystdlib";
  c.log.run_dir = run_dir;
  c.log.interval = 1000;
  return c;
}

// The losses of the steps this trainer runs (from the resumed step, if any, to train.steps).
std::vector<double> losses(const RunConfig& cfg) {
  auto ops = make_cpu_ops(1);
  dist::Topology topology(cfg.layout, MPI_COMM_WORLD);
  Logger quiet(/*rank=*/1);
  RunBuilder builder(cfg, *ops, topology, quiet);
  Trainer trainer(builder);
  std::vector<double> out;
  for (int64_t s = trainer.start_step(); s < cfg.train.steps; ++s) out.push_back(builder.train_step(s).loss);
  return out;
}

class CompressionTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_size(MPI_COMM_WORLD, &world);
  }
  int world = 1;
  trident::testing::MpiJobDir job{"trident_compression"};  // resume finds what every rank wrote
  const std::string& dir = job.path;
};

TEST_F(CompressionTraining, OverlapOnAndOffAreIdenticalAndZeroAgrees) {
  const dist::Layout L{.dp = world, .tp = 1, .pp = 1};
  for (dist::CompressionKind kind : kKinds) {
    const std::string name = dist::compression_name(kind);
    RunConfig cfg = small_run(L, kind, dir + "/a");
    const std::vector<double> on = losses(cfg);
    cfg.comm.overlap = false;
    const std::vector<double> off = losses(cfg);
    EXPECT_EQ(on, off) << name << ": overlap must not change a compressed run";
    cfg.zero = 1;
    const std::vector<double> zero = losses(cfg);
    for (size_t s = 0; s < on.size(); ++s) {
      if (kind == dist::CompressionKind::kInt8) EXPECT_NEAR(zero[s], on[s], 1e-2 * on[s]) << name << " step " << s + 1;
      else EXPECT_EQ(zero[s], on[s]) << name << " ZeRO-1, step " << s + 1;
    }
    // Close to the uncompressed run over these few steps.
    const std::vector<double> exact = losses(small_run(L, dist::CompressionKind::kNone, dir + "/a"));
    for (size_t s = 0; s < on.size(); ++s) EXPECT_NEAR(on[s], exact[s], 0.05 * exact[s]) << name << " step " << s + 1;
  }
}

TEST_F(CompressionTraining, EveryPipelineScheduleTrains) {
  if (world < 4) GTEST_SKIP() << "pp 2 with dp 2 needs 4 ranks";
  const dist::Layout L{.dp = world / 2, .tp = 1, .pp = 2};
  const std::vector<double> exact = losses(small_run(L, dist::CompressionKind::kNone, dir + "/p"));
  for (ScheduleKind schedule : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved})
    for (dist::CompressionKind kind : kKinds) {
      RunConfig cfg = small_run(L, kind, dir + "/p");
      cfg.schedule = schedule;
      cfg.virtual_stages = schedule == ScheduleKind::kInterleaved ? 2 : 1;
      const std::vector<double> got = losses(cfg);
      for (size_t s = 0; s < got.size(); ++s)
        EXPECT_NEAR(got[s], exact[s], 0.05 * exact[s])
            << dist::compression_name(kind) << " schedule " << int(schedule) << " step " << s + 1;
    }
}

TEST_F(CompressionTraining, ResumeContinuesTheUninterruptedRun) {
  const dist::Layout L{.dp = world, .tp = 1, .pp = 1};
  for (dist::CompressionKind kind : kKinds) {
    const std::string run = dir + "/r_" + dist::compression_name(kind);
    RunConfig cfg = small_run(L, kind, run + "_whole");
    cfg.checkpoint.resume = "none";
    std::vector<double> whole = losses(cfg);
    whole.erase(whole.begin(), whole.begin() + 3);
    // Three steps and a checkpoint, then a new trainer resumes.
    RunConfig first = small_run(L, kind, run);
    first.train.steps = 3;
    first.checkpoint.interval = 3;
    {
      auto ops = make_cpu_ops(1);
      dist::Topology topology(first.layout, MPI_COMM_WORLD);
      Logger quiet(/*rank=*/1);
      RunBuilder builder(first, *ops, topology, quiet);
      Trainer(builder).run();
    }
    RunConfig second = small_run(L, kind, run);
    const std::vector<double> resumed = losses(second);
    EXPECT_EQ(resumed, whole) << dist::compression_name(kind) << ": steps 4..6 after a resume";
  }
}

}  // namespace
}  // namespace trident::train
