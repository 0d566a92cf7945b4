// trident's model against PyTorch references (utils/make_fixtures.py): the initialiser equals an
// independent numpy port of it, and logits, loss and every parameter gradient match within
// 1e-5 relative in fp32, for a tiny GPT-2 and a tiny Llama (GQA).
#include <gtest/gtest.h>

#include <optional>

#include "fixture.hpp"
#include "trident/backend/cpu_ops.hpp"

namespace trident::model {
namespace {

class PyTorchFixture : public ::testing::TestWithParam<std::string> {
 protected:
  io::H5File file_ = io::H5File::open_read(testing::fixture_path(GetParam()));
  std::unique_ptr<Ops> ops_ = make_cpu_ops(2);

  // Largest relative error (per tensor, against its largest element) of the gradients of a
  // model run in dtype (with its activations stored in `stored`, mixed precision) against the
  // fp64 reference.
  void compare_gradients(DType dtype, double tolerance, std::optional<DType> stored = {}) {
    GPTModel model(testing::fixture_config(file_), *ops_, dtype, 4, 1, {}, {}, stored);
    testing::load_parameters(file_, "/params", model.params());
    model.refresh_weights();
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

// Mixed precision, bf16 GEMMs (where they are the faster here): weights, activations and the
// branches' gradients rounded to bf16 (measured: at most 6.1e-3 gpt2, 8.4e-3 llama of each
// tensor's largest element, about two bf16 steps of 2^-8).
TEST_P(PyTorchFixture, LossAndGradientsBf16) {
  if (ops_->set_matmul_precision(DType::kBF16) != DType::kBF16) GTEST_SKIP() << ops_->matmul_precision_note();
  compare_gradients(DType::kF32, 2e-2, DType::kBF16);
  ops_->set_matmul_precision(DType::kF32);
}

// bf16 storage with fp32 GEMMs (a processor whose bf16 GEMMs are no faster): only the
// activations kept for backward are rounded, the GEMMs multiply the fp32 master weights (no
// 16-bit copies) and fp32 gradients, and the activations take less memory than in fp32
// (measured: at most 3.2e-3 gpt2, 5.5e-3 llama).
TEST_P(PyTorchFixture, LossAndGradientsBf16StorageFp32Gemms) {
  ASSERT_EQ(ops_->set_matmul_precision(DType::kF32), DType::kF32);
  compare_gradients(DType::kF32, 1.2e-2, DType::kBF16);
  GPTModel fp32(testing::fixture_config(file_), *ops_, DType::kF32, 4);
  GPTModel stored(testing::fixture_config(file_), *ops_, DType::kF32, 4, 1, {}, {}, DType::kBF16);
  for (auto& p : stored.params().all()) EXPECT_FALSE(p->value_low.defined()) << p->spec.name;
  EXPECT_LT(stored.activation_bytes(), fp32.activation_bytes());
}

INSTANTIATE_TEST_SUITE_P(Models, PyTorchFixture, ::testing::Values("gpt2", "llama"));

}  // namespace
}  // namespace trident::model
