// Hugging Face models in trident (single rank): logits of the tiny transformers fixtures
// (utils/make_hf_fixtures.py) within 1e-4 relative, and export giving back the very tensors
// that were imported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>

#include "hf_fixture.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/train/eval/generator.hpp"
#include "trident/interop/hf_convert.hpp"
#include "trident/interop/hf_weights.hpp"
#include "trident/interop/model_keys.hpp"
#include "trident/interop/peft_convert.hpp"

namespace trident::train {
using namespace ::trident::interop;  // the conversions under test
namespace {

class HfModel : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Ops> ops_ = make_cpu_ops(2);
};

TEST_P(HfModel, LogitsMatchTransformers) {
  const testing::HfFixture f = testing::load_hf_fixture(GetParam());
  model::GPTModel model(f.config, *ops_, DType::kF32, int(f.batch));
  load_hf_model(model.params(), *ops_, f.config, f.dir);
  const Tensor& logits = model.forward_logits(f.tokens, f.positions);
  std::vector<float> got(logits.data<float>(), logits.data<float>() + logits.numel());
  const double err = testing::logits_error(got, logits.dim(1), f.logits, f.vocab);
  std::cout << "[hf] " << GetParam() << " tp=1: max relative logits error " << err << "\n";
  EXPECT_LT(err, 1e-4);
}

// Import then export: every HF tensor comes back with the values it had (fp16/bf16 weights
// widen to fp32 exactly).
TEST_P(HfModel, ExportGivesBackTheImportedTensors) {
  const std::string dir = std::string(TRIDENT_TEST_DATA) + "/hf/" + GetParam();
  interop::HfModelInfo info = interop::read_hf_config(dir);
  info.config.seq_len = int(info.config.max_positions);  // every learned position
  const io::SafetensorsModel weights(dir);
  std::vector<WholeTensor> tensors;
  for (const auto& [name, shape] : interop::stored_parameter_shapes(info.config))
    tensors.push_back({name, shape, read_hf_whole(info, weights, name, shape)});
  const std::vector<io::SafetensorsTensor> out = hf_tensors_from(info, tensors);
  size_t expected_count = 0;
  for (const std::string& name : weights.names()) expected_count += name != "lm_head.weight" || !info.config.tie_embeddings;
  EXPECT_EQ(out.size(), expected_count);
  for (const io::SafetensorsTensor& t : out) {
    const io::SafetensorsView& v = weights.at(t.name, t.shape);
    const int64_t rows = v.shape.size() == 2 ? v.shape[0] : 1;
    std::vector<float> original(size_t(v.numel()));
    io::read_block(v, 0, rows, 0, v.shape.back(), false, original.data());
    EXPECT_EQ(t.values, original) << t.name;
  }
}

// Greedy generation with the KV cache equals transformers' generate token for token: all
// prompts in one right-padded batch, and each alone.
TEST_P(HfModel, GreedyGenerationMatchesTransformers) {
  const testing::HfFixture f = testing::load_hf_fixture(GetParam());
  const testing::HfGeneration g = testing::load_hf_generation(GetParam());
  model::GPTModel model(f.config, *ops_, DType::kF32, 1);
  load_hf_model(model.params(), *ops_, f.config, f.dir);
  int longest = 0;
  for (const auto& p : g.prompts) longest = std::max(longest, int(p.size()));
  Generator together(model, *ops_, nullptr, int(g.prompts.size()), longest, longest + g.max_new);
  EXPECT_EQ(together.generate(g.prompts, g.max_new, {}), g.outputs);
  Generator alone(model, *ops_, nullptr, 1, longest, longest + g.max_new);
  for (size_t i = 0; i < g.prompts.size(); ++i)
    EXPECT_EQ(alone.generate({g.prompts[i]}, g.max_new, {}), std::vector<std::vector<int32_t>>{g.outputs[i]});
}

// A PEFT LoRA adapter (utils/make_peft_fixtures.py: peft's random adapters on every projection)
// loaded onto the base: trident's logits equal peft's. GPT-2's fused c_attn adapter becomes q, k
// and v adapters sharing its A.
class PeftAdapter : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Ops> ops_ = make_cpu_ops(2);
};

TEST_P(PeftAdapter, LogitsMatchPeft) {
  testing::HfFixture f = testing::load_hf_fixture(GetParam());
  const std::string peft = std::string(TRIDENT_TEST_DATA) + "/peft/" + GetParam();
  f.config.lora = {.r = 4, .alpha = 8,
                   .targets = f.config.arch == model::Arch::kGPT2 ? "q,k,v,o,up,down" : "q,k,v,o,gate,up,down"};
  model::GPTModel model(f.config, *ops_, DType::kF32, int(f.batch));
  load_hf_model(model.params(), *ops_, f.config, f.dir);
  load_peft_adapter(model.params(), *ops_, model.config(), peft);
  const io::SafetensorsModel expected(peft + "/expected_logits.safetensors");
  const io::SafetensorsView& v = expected.at("logits", {f.batch, f.seq, f.vocab});
  std::vector<float> want(size_t(v.numel()));
  std::memcpy(want.data(), v.data, v.bytes);
  const Tensor& logits = model.forward_logits(f.tokens, f.positions);
  std::vector<float> got(logits.data<float>(), logits.data<float>() + logits.numel());
  const double err = testing::logits_error(got, logits.dim(1), want, f.vocab);
  const double moved = testing::logits_error(f.logits, f.vocab, want, f.vocab);  // the adapter's own effect
  std::cout << "[peft] " << GetParam() << ": max relative logits error " << err << " (adapter moves them " << moved
            << ")\n";
  EXPECT_LT(err, 1e-4);
  EXPECT_GT(moved, 1e-2);
  // A wrong rank is a clear error.
  model::ModelConfig wrong = f.config;
  wrong.lora.r = 8;
  model::GPTModel other(wrong, *ops_, DType::kF32, int(f.batch));
  EXPECT_THROW(load_peft_adapter(other.params(), *ops_, other.config(), peft), ConfigError);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PeftAdapter, ::testing::Values("gpt2", "llama", "qwen2"));

INSTANTIATE_TEST_SUITE_P(Fixtures, HfModel, ::testing::ValuesIn(testing::hf_fixture_names()));

TEST(HfConfig, ReadsTransformers4And5Spellings) {
  auto parse = [](const std::string& text) { return interop::parse_hf_config(Json::parse(text), "config.json").config; };
  const std::string llama = R"({"model_type": "llama", "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100, "max_position_embeddings": 128)";
  // transformers 5 keeps rope_theta inside rope_parameters only.
  EXPECT_EQ(parse(llama + R"(, "rope_parameters": {"rope_type": "default", "rope_theta": 50000.0}})").rope_theta, 50000.0);
  EXPECT_EQ(parse(llama + R"(, "rope_theta": 50000.0})").rope_theta, 50000.0);
  // Scaling in both spellings, "type" (older) or "rope_type".
  const model::ModelConfig v4 = parse(llama + R"(, "rope_theta": 500000.0, "rope_scaling": {"type": "llama3",
      "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}})");
  const model::ModelConfig v5 = parse(llama + R"(, "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0,
      "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}})");
  EXPECT_EQ(v4.rope_scaling.str(), v5.rope_scaling.str());
  EXPECT_EQ(v4.rope_theta, v5.rope_theta);
  EXPECT_EQ(v5.rope_scaling.str(),
            "llama3:factor=8,low_freq_factor=1,high_freq_factor=4,original_max_positions=64");
  EXPECT_EQ(v4.rotary(), v5.rotary());
  // yarn without original_max_position_embeddings: max_position_embeddings, as transformers.
  EXPECT_EQ(parse(llama + R"(, "rope_parameters": {"rope_type": "yarn", "factor": 2.0}})").rope_scaling.original_max_positions,
            128);
  // Llama's attention_bias: q, k, v and o; head_dim apart from hidden / heads; token ids.
  const model::ModelConfig biased = parse(llama + R"(, "attention_bias": true, "head_dim": 16, "bos_token_id": 1,
      "eos_token_id": [2, 3], "pad_token_id": null})");
  EXPECT_TRUE(biased.qkv_bias && biased.o_bias);
  EXPECT_EQ(biased.head_size(), 16);
  EXPECT_EQ(biased.bos_token_id, 1);
  EXPECT_EQ(biased.eos_token_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(biased.pad_token_id, -1);
  // An id outside the vocabulary names no token (GPT2Config's 50256 in a small model): dropped.
  EXPECT_TRUE(parse(llama + R"(, "eos_token_id": [100, 5]})").eos_token_ids == std::vector<int64_t>{5});
  // Windows: Mistral on every layer, Qwen2 from max_window_layers (or layer_types) on.
  std::string mistral = llama + R"(, "sliding_window": 7})";
  mistral.replace(mistral.find("llama"), 5, "mistral");
  EXPECT_EQ(parse(mistral).sliding_window, 7);
  EXPECT_EQ(parse(mistral).window_from, 0);
  std::string qwen2 = llama + R"(, "use_sliding_window": true, "sliding_window": 9, "max_window_layers": 1})";
  qwen2.replace(qwen2.find("llama"), 5, "qwen2");
  EXPECT_EQ(parse(qwen2).sliding_window, 9);
  EXPECT_EQ(parse(qwen2).window_from, 1);
  qwen2 = llama + R"(, "use_sliding_window": false, "sliding_window": 9, "layer_types": ["full_attention",
      "full_attention"]})";
  qwen2.replace(qwen2.find("llama"), 5, "qwen2");
  EXPECT_EQ(parse(qwen2).sliding_window, 0);
}

TEST(HfConfig, RejectsWhatTridentWouldComputeDifferently) {
  auto parse = [](const std::string& text) { return interop::parse_hf_config(Json::parse(text), "config.json"); };
  const std::string llama = R"({"model_type": "llama", "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100)";
  EXPECT_NO_THROW(parse(llama + "}"));
  auto message = [&](const std::string& text) {
    try {
      parse(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto refused = [&](const std::string& text, const std::string& needle) {
    const std::string m = message(text);
    EXPECT_NE(m.find(needle), std::string::npos) << text << "\n -> " << m;
  };
  refused(llama + R"(, "rope_scaling": {"type": "dynamic", "factor": 2.0}})", "\"dynamic\" is not supported");
  refused(llama + R"(, "rope_parameters": {"rope_type": "longrope", "factor": 2.0}})", "\"longrope\" is not supported");
  refused(llama + R"(, "rope_parameters": {"rope_type": "linear"}})", "needs a factor");
  refused(llama + R"(, "rope_parameters": {"rope_type": "linear", "factor": 2, "beta_fast": 3}})", "\"beta_fast\"");
  refused(llama + R"(, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}})",
          "partial_rotary_factor");
  refused(llama + R"(, "rope_parameters": {"full_attention": {"rope_type": "default"}}})", "per layer type");
  refused(llama + R"(, "hidden_act": "gelu"})", "hidden_act");
  refused(llama + R"(, "mlp_bias": true})", "mlp_bias");
  refused(llama + R"(, "attention_dropout": 0.1})", "attention_dropout");
  refused(llama + R"(, "quantization_config": {"quant_method": "gptq"}})", "\"quantization_config\"");
  refused(llama + R"(, "sliding_window": 8})", "\"sliding_window\" is not a llama setting");
  std::string qwen2 = llama + R"(, "attention_bias": true})";
  qwen2.replace(qwen2.find("llama"), 5, "qwen2");
  refused(qwen2, "attention_bias");
  qwen2 = llama + R"(, "use_sliding_window": true, "sliding_window": 4, "layer_types": ["sliding_attention",
      "full_attention"]})";
  qwen2.replace(qwen2.find("llama"), 5, "qwen2");
  refused(qwen2, "must be the last ones");
  refused(R"({"model_type": "bert"})", "not supported");
  refused(R"({"model_type": "gpt2", "vocab_size": 10, "activation_function": "relu"})", "activation");
}

TEST(HfConfig, ExportedConfigReadsBack) {
  for (const char* name : testing::kHfFixtures) {
    interop::HfModelInfo info = interop::read_hf_config(std::string(TRIDENT_TEST_DATA) + "/hf/" + name);
    info.config.seq_len = int(info.config.max_positions);
    info.config.resolve();
    const interop::HfModelInfo back = interop::parse_hf_config(interop::hf_config_json(info.config), "exported");
    EXPECT_EQ(interop::model_key_texts(back.config), interop::model_key_texts(info.config)) << name;
    EXPECT_EQ(back.config.max_positions, info.config.max_positions) << name;
  }
}

// Which family a trident MoE model exports as, and what none describes.
TEST(HfConfig, MixtureOfExpertsFamilies) {
  model::ModelConfig m;
  m.arch = model::Arch::kLlama;
  m.layers = 2;
  m.hidden = 32;
  m.heads = 4;
  m.ffn_hidden = 48;
  m.moe = {.experts = 4, .top_k = 2, .ffn_hidden = 48};
  m.resolve();
  auto family = [](model::ModelConfig c) {
    c.resolve();
    return interop::hf_family_name(interop::hf_family_for(c));
  };
  EXPECT_STREQ(family(m), "mixtral");
  model::ModelConfig qwen2 = m;
  qwen2.qkv_bias = true;
  qwen2.moe.shared_experts = 2;
  qwen2.moe.every = 2;
  qwen2.moe.norm_topk_prob = false;
  EXPECT_STREQ(family(qwen2), "qwen2_moe");
  model::ModelConfig qwen3 = m;
  qwen3.qk_norm = true;
  EXPECT_STREQ(family(qwen3), "qwen3_moe");
  auto refused = [&](model::ModelConfig c, const std::string& why) {
    c.resolve();
    try {
      interop::hf_family_for(c);
      ADD_FAILURE() << "exported: " << why;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  model::ModelConfig raw = m;
  raw.moe.norm_topk_prob = false;  // neither Mixtral (renormalises) nor Qwen2-MoE (a shared expert)
  refused(raw, "has no Hugging Face family");
  model::ModelConfig gpt2 = m;
  gpt2.arch = model::Arch::kGPT2;
  gpt2.kv_heads = 0;
  refused(gpt2, "a gpt2 mixture-of-experts model has no Hugging Face family");
}

}  // namespace
}  // namespace trident::train
