// The [model], [moe] and [lora] key table: the schema lists each of its keys once with its
// default, its writer and reader are inverse (every architecture key survives text and back),
// and a value that does not parse is refused naming its key.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "trident/cli/config_parser.hpp"
#include "trident/interop/model_keys.hpp"

namespace trident::cli {
namespace {

// Every table key's text: the schema's defaults, then `texts` over them.
std::map<std::string, std::string> with_defaults(const std::map<std::string, std::string>& texts) {
  std::map<std::string, std::string> all;
  for (const interop::ModelKey& k : interop::model_keys()) all[k.name] = k.fallback;
  for (const auto& [key, value] : texts) all[key] = value;
  return all;
}

model::ModelConfig read(const std::map<std::string, std::string>& all) {
  return interop::read_model_keys([&all](const std::string& key) -> const std::string& { return all.at(key); });
}

TEST(ModelKeys, TheSchemaListsEachOnceWithItsDefault) {
  std::map<std::string, std::string> schema;
  for (const ConfigKey& k : config_schema()) EXPECT_TRUE(schema.emplace(k.name, k.fallback).second) << k.name;
  std::set<std::string> seen;
  for (const interop::ModelKey& k : interop::model_keys()) {
    EXPECT_TRUE(seen.insert(k.name).second) << k.name;
    ASSERT_TRUE(schema.count(k.name)) << k.name;
    EXPECT_EQ(schema.at(k.name), k.fallback) << k.name;
  }
  EXPECT_EQ(read(with_defaults({})).hidden, 64);  // the defaults make the default model
}

TEST(ModelKeys, WrittenTextReadsBackToTheSameModel) {
  model::ModelConfig llama;
  llama.arch = model::Arch::kLlama;
  llama.tie_embeddings = false;
  llama.heads = 8;
  llama.kv_heads = 2;
  llama.head_dim = 16;
  llama.qkv_bias = llama.o_bias = llama.qk_norm = llama.qk_norm_whole = true;
  llama.norm_eps = 1e-6;
  llama.rope_theta = 500000;
  llama.rope_scaling = model::parse_rope_scaling("linear:factor=2");
  llama.max_positions = 256;
  llama.sliding_window = 16;
  llama.window_from = 2;
  llama.bos_token_id = 1;
  llama.eos_token_ids = {2, 7};
  llama.pad_token_id = 0;
  llama.moe = {.experts = 4, .top_k = 1, .ffn_hidden = 32, .every = 2, .shared_experts = 1, .norm_topk_prob = false};
  llama.lora = {.r = 4, .alpha = 8, .targets = "q,gate"};
  llama.resolve();
  model::ModelConfig gpt2;
  gpt2.resolve();
  for (const model::ModelConfig& m : {gpt2, llama}) {
    const std::map<std::string, std::string> texts = interop::model_key_texts(m, /*with_lora=*/true);
    EXPECT_EQ(texts.count("model.seq_len") + texts.count("model.dropout") + texts.count("moe.aux_loss_coef"), 0u)
        << "the run's own keys are not the architecture's";
    EXPECT_EQ(texts.count("moe.top_k"), size_t(m.moe.enabled()));
    EXPECT_EQ(texts.count("lora.r"), size_t(m.lora.enabled()));
    const model::ModelConfig back = read(with_defaults(texts));
    EXPECT_EQ(interop::model_key_texts(back, true), texts) << model::arch_name(m.arch);
    EXPECT_EQ(back.eos_token_ids, m.eos_token_ids);
    EXPECT_EQ(back.total_params(), m.total_params());
  }
  EXPECT_EQ(interop::model_key_texts(llama).count("lora.enabled"), 0u) << "adapters only with_lora";
}

TEST(ModelKeys, BadValuesAreRefusedNamingTheKey) {
  const std::pair<const char*, const char*> bad[] = {{"model.hidden", "wide"},       {"model.norm_eps", "0"},
                                                     {"model.eos_token_id", "2,x"}, {"model.qk_norm_scope", "all"},
                                                     {"model.tie_embeddings", "maybe"}};
  for (const auto& [key, value] : bad) {
    try {
      read(with_defaults({{key, value}}));
      ADD_FAILURE() << key << " = " << value << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  // [moe] keys beyond moe.experts are not read for a dense model, [lora] keys without lora.enabled.
  EXPECT_NO_THROW(read(with_defaults({{"moe.top_k", "x"}, {"lora.r", "x"}})));
  EXPECT_THROW(read(with_defaults({{"lora.enabled", "true"}, {"lora.r", "0"}})), ConfigError);
}

}  // namespace
}  // namespace trident::cli
