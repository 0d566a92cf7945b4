// trident's model against PyTorch references (utils/make_fixtures.py): the initialiser equals an
// independent numpy port of it, and logits, loss and every parameter gradient match within
// 1e-5 relative in fp32, for a tiny GPT-2 and a tiny Llama (GQA).
#include <gtest/gtest.h>

#include "fixture.hpp"
#include "trident/backend/cpu_ops.hpp"

namespace trident::model {
namespace {

class PyTorchFixture : public ::testing::TestWithParam<std::string> {
 protected:
  io::H5File file_ = io::H5File::open_read(testing::fixture_path(GetParam()));
  std::unique_ptr<Ops> ops_ = make_cpu_ops(2);

  // Largest relative error (per tensor, against its largest element) of the gradients of a
  // model run in dtype against the fp64 reference.
  void compare_gradients(DType dtype, double tolerance) {
    GPTModel model(testing::fixture_config(file_), *ops_, dtype, 4);
    testing::load_parameters(file_, "/params", model.params());
    const int64_t t = model.config().seq_len;
    Tensor tokens = testing::fixture_rows(file_, "/tokens", 0, 4);
    Tensor targets = testing::fixture_rows(file_, "/targets", 0, 4);
    Tensor positions = testing::positions_for(4, t);
    int64_t valid = 0;
    for (int64_t i = 0; i < targets.numel(); ++i) valid += targets.data<int32_t>()[i] >= 0;
    model.params().zero_grads(*ops_);
    const double loss = model.forward_backward(tokens, targets, positions, 1.0 / double(valid)) / double(valid);
    EXPECT_NEAR(loss, file_.read("/loss")[0], tolerance * file_.read("/loss")[0]);
    for (auto& p : model.params().all())
      EXPECT_LT(testing::relative_error(testing::to_vector(p->grad), file_.read("/grads/" + p->spec.name),
                                        kGradientFloor),
                tolerance)
          << p->spec.name;
  }
  // Gradients that are exactly zero in exact arithmetic (a key bias shifts every score of a
  // query equally, which softmax ignores) are compared on this absolute scale.
  static constexpr double kGradientFloor = 1e-3;
};

TEST_P(PyTorchFixture, InitialiserEqualsIndependentImplementation) {
  GPTModel model(testing::fixture_config(file_), *ops_, DType::kF32, 4);
  model.initialize(static_cast<uint64_t>(file_.read_attribute("seed")));
  for (auto& p : model.params().all()) {
    const std::vector<double> expected = file_.read("/init/" + p->spec.name);
    EXPECT_EQ(testing::to_vector(p->value), expected) << p->spec.name;
  }
}

TEST_P(PyTorchFixture, Logits) {
  GPTModel model(testing::fixture_config(file_), *ops_, DType::kF32, 4);
  testing::load_parameters(file_, "/params", model.params());
  Tensor tokens = testing::fixture_rows(file_, "/tokens", 0, 4);
  Tensor positions = testing::positions_for(4, model.config().seq_len);
  const std::vector<double> logits = testing::to_vector(model.forward_logits(tokens, positions));
  EXPECT_LT(testing::relative_error(logits, file_.read("/logits")), 1e-5);
}

// In fp64 trident computes the same function as PyTorch to rounding.
TEST_P(PyTorchFixture, LossAndGradientsFp64) { compare_gradients(DType::kF64, 1e-10); }
TEST_P(PyTorchFixture, LossAndGradientsFp32) { compare_gradients(DType::kF32, 1e-5); }

INSTANTIATE_TEST_SUITE_P(Models, PyTorchFixture, ::testing::Values("gpt2", "llama"));

}  // namespace
}  // namespace trident::model
