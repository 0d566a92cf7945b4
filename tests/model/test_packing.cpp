// Document masking: three documents packed into one row (positions restarting at each
// document, the boundary-crossing targets masked) give the same loss and the same gradients,
// in fp64, as the three documents in rows of their own, padded (data.packing = false).
// Bucketing: a micro-batch cut to its longest row trains exactly like the same rows padded to
// seq_len.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/model/gpt_model.hpp"

namespace trident::model {
namespace {

ModelConfig tiny_config(Arch arch) {
  ModelConfig cfg;
  cfg.arch = arch;
  cfg.layers = 2;
  cfg.hidden = 16;
  cfg.heads = 4;
  cfg.kv_heads = arch == Arch::kLlama ? 2 : 4;
  cfg.ffn_hidden = 24;
  cfg.vocab = 37;
  cfg.seq_len = 16;
  cfg.tie_embeddings = arch == Arch::kGPT2;
  return cfg;
}

struct Rows {
  Tensor tokens, targets, positions;
  explicit Rows(int64_t batch, int64_t T)
      : tokens(Tensor::zeros(Shape{batch, T}, DType::kI32)),
        targets(Tensor::zeros(Shape{batch, T}, DType::kI32)),
        positions(Tensor::zeros(Shape{batch, T}, DType::kI32)) {}
};

class Packing : public ::testing::TestWithParam<Arch> {};

TEST_P(Packing, PackedRowEqualsOneRowPerDocument) {
  auto ops = make_cpu_ops(1);
  const ModelConfig cfg = tiny_config(GetParam());
  const int64_t T = cfg.seq_len;
  // Documents of 6, 6 and 4 tokens fill one row of 16 inputs.
  const std::vector<std::vector<int32_t>> docs = {{3, 9, 4, 1, 30, 2}, {7, 7, 12, 5, 20, 2}, {11, 6, 25, 2}};

  Rows packed(1, T);
  int64_t t = 0;
  for (const auto& doc : docs)
    for (size_t i = 0; i < doc.size(); ++i, ++t) {
      packed.tokens.data<int32_t>()[t] = doc[i];
      packed.positions.data<int32_t>()[t] = static_cast<int32_t>(i);
      // the last token of a document would predict the next document's first: not trained
      packed.targets.data<int32_t>()[t] = i + 1 < doc.size() ? doc[i + 1] : -1;
    }
  ASSERT_EQ(t, T);

  const int64_t batch = static_cast<int64_t>(docs.size());
  Rows separate(batch, T);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < T; ++i) {
      const auto& doc = docs[static_cast<size_t>(b)];
      const bool in_doc = i + 1 < static_cast<int64_t>(doc.size());
      separate.tokens.data<int32_t>()[b * T + i] = in_doc ? doc[static_cast<size_t>(i)] : 0;
      separate.targets.data<int32_t>()[b * T + i] = in_doc ? doc[static_cast<size_t>(i + 1)] : -1;
      separate.positions.data<int32_t>()[b * T + i] = static_cast<int32_t>(i);
    }

  GPTModel packed_model(cfg, *ops, DType::kF64, 1);
  GPTModel separate_model(cfg, *ops, DType::kF64, static_cast<int>(batch));
  for (GPTModel* m : {&packed_model, &separate_model}) {
    m->initialize(7);
    for (auto& p : m->params().all()) {  // larger values than the initialiser's: every path matters
      testing::fill_uniform(p->value, std::hash<std::string>{}(p->spec.name), 0.3);
      if (p->spec.init == Init::kOnes)
        for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data<double>()[i] += 1.0;
    }
    m->params().zero_grads(*ops);
  }
  const double packed_loss = packed_model.forward_backward(packed.tokens, packed.targets, packed.positions, 1.0);
  const double separate_loss =
      separate_model.forward_backward(separate.tokens, separate.targets, separate.positions, 1.0);
  EXPECT_NEAR(packed_loss, separate_loss, 1e-12 * std::abs(separate_loss));

  const auto& a = packed_model.params().all();
  const auto& b = separate_model.params().all();
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_LT(testing::relative_error(testing::to_vector(a[k]->grad), testing::to_vector(b[k]->grad), 1e-12), 1e-10)
        << a[k]->spec.name;
}

TEST_P(Packing, MicroBatchCutToItsLongestRowEqualsFullLength) {
  auto ops = make_cpu_ops(1);
  const ModelConfig cfg = tiny_config(GetParam());
  const int64_t T = cfg.seq_len, L = 8, batch = 2;
  const std::vector<std::vector<int32_t>> docs = {{3, 9, 4, 1, 30, 2, 8, 5, 2}, {7, 12, 5, 2}};  // <= L + 1 tokens
  auto rows = [&](int64_t length) {
    Rows r(batch, length);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < length; ++i) {
        const auto& doc = docs[static_cast<size_t>(b)];
        const bool in_doc = i + 1 < static_cast<int64_t>(doc.size());
        r.tokens.data<int32_t>()[b * length + i] = in_doc ? doc[static_cast<size_t>(i)] : 0;
        r.targets.data<int32_t>()[b * length + i] = in_doc ? doc[static_cast<size_t>(i + 1)] : -1;
        r.positions.data<int32_t>()[b * length + i] = static_cast<int32_t>(i);
      }
    return r;
  };
  GPTModel model(cfg, *ops, DType::kF64, static_cast<int>(batch));
  model.initialize(7);
  for (auto& p : model.params().all()) testing::fill_uniform(p->value, std::hash<std::string>{}(p->spec.name), 0.3);
  std::vector<std::vector<double>> grads[2];
  double losses[2];
  int k = 0;
  for (int64_t length : {T, L}) {
    const Rows r = rows(length);
    model.params().zero_grads(*ops);
    losses[k] = model.forward_backward(r.tokens, r.targets, r.positions, 1.0);
    for (auto& p : model.params().all()) grads[k].push_back(testing::to_vector(p->grad));
    ++k;
  }
  EXPECT_NEAR(losses[1], losses[0], 1e-12 * std::abs(losses[0]));
  for (size_t i = 0; i < grads[0].size(); ++i)
    // floor: attn.k.bias has a gradient of exactly zero (softmax ignores a shift of all scores)
    EXPECT_LT(testing::relative_error(grads[1][i], grads[0][i], 1e-6), 1e-10) << model.params().all()[i]->spec.name;
  // and back to full length: the cut left nothing behind
  const Rows full = rows(T);
  model.params().zero_grads(*ops);
  EXPECT_NEAR(model.forward_backward(full.tokens, full.targets, full.positions, 1.0), losses[0], 1e-12 * losses[0]);
}

INSTANTIATE_TEST_SUITE_P(Models, Packing, ::testing::Values(Arch::kGPT2, Arch::kLlama),
                         [](const auto& info) { return std::string(arch_name(info.param)); });

}  // namespace
}  // namespace trident::model
