// Three AdamW steps with warmup, clipping, weight decay and gradient accumulation over two
// micro-batches against torch.optim.AdamW + clip_grad_norm_ (utils/make_fixtures.py):
// per-step loss, gradient norm, learning rate and the final parameters within 1e-5 relative.
#include <gtest/gtest.h>

#include "fixture.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/train/optim/lr_schedule.hpp"
#include "trident/train/training_step.hpp"

namespace trident::train {
namespace {

class PyTorchTraining : public ::testing::TestWithParam<std::string> {
 protected:
  void run_three_steps(DType dtype, double tolerance, double param_tolerance);
};

// In fp64 every number equals PyTorch's to rounding: the optimizer math is the same.
TEST_P(PyTorchTraining, ThreeAdamWStepsFp64) { run_three_steps(DType::kF64, 1e-10, 1e-10); }

// In fp32, losses, norms and learning rates agree within 1e-5. Parameters get a looser bound:
// Adam divides each update by the gradient's own magnitude, so an element whose gradient is
// close to zero turns fp32 rounding of that gradient into an O(lr) change of its update.
TEST_P(PyTorchTraining, ThreeAdamWStepsFp32) { run_three_steps(DType::kF32, 1e-5, 3e-4); }

void PyTorchTraining::run_three_steps(DType dtype, double tolerance, double param_tolerance) {
  io::H5File f = io::H5File::open_read(testing::fixture_path(GetParam()));
  auto ops = make_cpu_ops(2);
  TrainConfig cfg;
  cfg.steps = static_cast<int64_t>(f.read_attribute("steps"));
  cfg.warmup = static_cast<int64_t>(f.read_attribute("warmup"));
  cfg.lr = f.read_attribute("lr");
  cfg.min_lr = f.read_attribute("min_lr");
  cfg.beta1 = f.read_attribute("beta1");
  cfg.beta2 = f.read_attribute("beta2");
  cfg.eps = f.read_attribute("eps");
  cfg.weight_decay = f.read_attribute("weight_decay");
  cfg.clip = f.read_attribute("clip");
  cfg.micro_batch = static_cast<int>(f.read_attribute("micro_batch"));
  cfg.global_batch = static_cast<int>(f.read_attribute("global_batch"));
  const int micro_batches = cfg.global_batch / cfg.micro_batch;

  model::GPTModel model(testing::fixture_config(f), *ops, dtype, cfg.micro_batch);
  testing::load_parameters(f, "/params", model.params());
  dist::Topology topology(dist::Layout{}, MPI_COMM_SELF);
  GradReducer reducer(model.params(), *ops, topology.dp(), ReducerOptions{});
  AdamW optimizer(model.params(), *ops, cfg, reducer.optimizer_segments());
  PipelineExecutor pipeline(model, topology.pp(), ScheduleKind::kOneFOneB, micro_batches, 1);
  LossScaler scaler("dynamic", /*enabled=*/false);
  TrainingStep training_step(cfg, model, pipeline, reducer, optimizer, scaler, topology);
  model.set_grad_ready_hook([&](int64_t offset) { reducer.grads_final_from(offset); });

  const int64_t t = model.config().seq_len;
  Tensor all_targets = testing::fixture_rows(f, "/targets", 0, cfg.global_batch);
  int64_t valid = 0;
  for (int64_t i = 0; i < all_targets.numel(); ++i) valid += all_targets.data<int32_t>()[i] >= 0;
  std::vector<data::Batch> batches(static_cast<size_t>(micro_batches));
  for (int k = 0; k < micro_batches; ++k) {
    batches[k].tokens = testing::fixture_rows(f, "/tokens", int64_t(k) * cfg.micro_batch, cfg.micro_batch);
    batches[k].targets = testing::fixture_rows(f, "/targets", int64_t(k) * cfg.micro_batch, cfg.micro_batch);
    batches[k].positions = testing::positions_for(cfg.micro_batch, t);
  }
  const std::vector<double> losses = f.read("/train/losses"), norms = f.read("/train/grad_norms"),
                            lrs = f.read("/train/lrs");
  data::GlobalBatchStats stats;
  stats.valid_targets = valid;
  stats.computed_tokens = int64_t(cfg.global_batch) * t;
  for (int64_t step = 0; step < cfg.steps; ++step) {
    const StepResult r = training_step.run(step, batches, stats);
    EXPECT_NEAR(r.loss, losses[step], tolerance * losses[step]) << "step " << step;
    EXPECT_NEAR(r.grad_norm, norms[step], tolerance * norms[step]) << "step " << step;
    EXPECT_DOUBLE_EQ(r.lr, lrs[step]) << "step " << step;
  }
  for (auto& p : model.params().all())
    EXPECT_LT(testing::relative_error(testing::to_vector(p->value), f.read("/train/params/" + p->spec.name)),
              param_tolerance)
        << p->spec.name;
}

INSTANTIATE_TEST_SUITE_P(Models, PyTorchTraining, ::testing::Values("gpt2", "llama"));

}  // namespace
}  // namespace trident::train

// MPI_COMM_SELF needs MPI: this binary's main initialises it.
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
