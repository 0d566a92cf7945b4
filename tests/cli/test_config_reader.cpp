// The one reader of a [model] section in INI text: a checkpoint's config attribute read as the
// run configuration reads its file (unknown keys passed over, absent ones defaulted).
#include <gtest/gtest.h>

#include "trident/cli/config_parser.hpp"
#include "trident/core/error.hpp"

namespace trident::cli {
namespace {

TEST(HfConfig, ModelSectionOfACheckpointConfig) {
  std::string init_from;
  const model::ModelConfig m = model_config_from_ini(
      "[model]\narch = llama\nlayers = 3\nhidden = 48\nheads = 6\nkv_heads = 2\nvocab = 77\nseq_len = 12\n"
      "norm_eps = 1e-06\nrope_theta = 500000\nqkv_bias = true\ninit_from = /m\n[train]\nlayers = 9\n",
      &init_from);
  EXPECT_EQ(m.layers, 3);
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.norm_eps, 1e-6);
  EXPECT_EQ(m.rope_theta, 500000.0);
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_EQ(init_from, "/m");
}

TEST(HfConfig, CheckpointConfigDefaultsAndErrors) {
  // A converted Hugging Face checkpoint's text holds [model] alone: [lora] takes its defaults.
  const model::ModelConfig m = model_config_from_ini("[model]\narch = gpt2\nlayers = 2\nhidden = 32\nheads = 2\n");
  EXPECT_EQ(m.ffn_hidden, 4 * 32);
  EXPECT_FALSE(m.lora.enabled());
  const model::ModelConfig lora = model_config_from_ini("[model]\nlayers = 2\n[lora]\nenabled = true\n");
  EXPECT_EQ(lora.lora.r, 8);
  EXPECT_EQ(lora.lora.targets, "q,v");
  EXPECT_THROW(model_config_from_ini("[model]\nlayers = many\n"), ConfigError);
  EXPECT_THROW(model_config_from_ini("[model]\nheads = 3\n"), ConfigError);  // does not divide hidden = 64
}

}  // namespace
}  // namespace trident::cli
