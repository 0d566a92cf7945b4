// The tiny Hugging Face fixtures of tests/data/hf/ (utils/make_hf_fixtures.py): a model
// directory with expected.json (input ids, targets, mean cross-entropy) and
// expected_logits.safetensors ([B, T, V] float32 logits computed by transformers).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trident/core/json.hpp"
#include "trident/io/safetensors.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/interop/hf_config.hpp"

namespace trident::testing {

struct HfFixture {
  std::string dir;
  model::ModelConfig config;  // from config.json, seq_len = T
  int64_t batch = 0, seq = 0, vocab = 0;
  Tensor tokens, targets, positions;  // int32 [B, T]
  std::vector<float> logits;          // [B*T, V]
  double loss = 0;                    // mean cross-entropy over every position
};

inline Tensor int_rows(const Json& rows, int64_t b, int64_t t) {
  Tensor out = Tensor::zeros(Shape{b, t}, DType::kI32);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < t; ++j) out.data<int32_t>()[i * t + j] = int32_t(rows.as_array()[i].as_array()[j].as_int());
  return out;
}

inline HfFixture load_hf_fixture(const std::string& name) {
  HfFixture f;
  f.dir = std::string(TRIDENT_TEST_DATA) + "/hf/" + name;
  std::ifstream in(f.dir + "/expected.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json expected = Json::parse(text.str());
  const Json& ids = expected.at("input_ids");
  f.batch = int64_t(ids.as_array().size());
  f.seq = int64_t(ids.as_array()[0].as_array().size());
  f.config = interop::read_hf_config(f.dir).config;
  f.config.seq_len = int(f.seq);
  f.vocab = f.config.vocab;
  f.tokens = int_rows(ids, f.batch, f.seq);
  f.targets = int_rows(expected.at("targets"), f.batch, f.seq);
  f.positions = Tensor::zeros(Shape{f.batch, f.seq}, DType::kI32);
  for (int64_t i = 0; i < f.batch * f.seq; ++i) f.positions.data<int32_t>()[i] = int32_t(i % f.seq);
  f.loss = expected.at("loss").as_number();
  const io::SafetensorsModel logits(f.dir + "/expected_logits.safetensors");
  const io::SafetensorsView& v = logits.at("logits", {f.batch, f.seq, f.vocab});
  f.logits.resize(size_t(v.numel()));
  std::memcpy(f.logits.data(), v.data, v.bytes);
  return f;
}

// max |a - b| / max |b| over the first `vocab` of every row's `cols` columns of a.
inline double logits_error(const std::vector<float>& a, int64_t cols, const std::vector<float>& b, int64_t vocab) {
  double diff = 0, scale = 0;
  const int64_t rows = int64_t(b.size()) / vocab;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < vocab; ++c) {
      diff = std::max(diff, double(std::abs(a[size_t(r * cols + c)] - b[size_t(r * vocab + c)])));
      scale = std::max(scale, double(std::abs(b[size_t(r * vocab + c)])));
    }
  return diff / scale;
}

// generate.json: prompts of different lengths and transformers' greedy continuations.
struct HfGeneration {
  std::vector<std::vector<int32_t>> prompts, outputs;
  int max_new = 0;
};

inline HfGeneration load_hf_generation(const std::string& name) {
  std::ifstream in(std::string(TRIDENT_TEST_DATA) + "/hf/" + name + "/generate.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json j = Json::parse(text.str());
  auto rows = [](const Json& a) {
    std::vector<std::vector<int32_t>> out;
    for (const Json& row : a.as_array()) {
      out.emplace_back();
      for (const Json& id : row.as_array()) out.back().push_back(int32_t(id.as_int()));
    }
    return out;
  };
  return {rows(j.at("prompts")), rows(j.at("outputs")), int(j.at("max_new_tokens").as_int())};
}

// Written by transformers 4.44 (gpt2 .. qwen2) and 5.24 (llama3_rope ..): both config forms; the
// last four are mixtures of experts.
inline const char* const kHfFixtures[] = {"gpt2",         "llama",   "llama_sharded", "qwen2",     "llama3_rope",
                                          "llama_linear", "qwen3",   "mistral",       "qwen2_window", "mixtral",
                                          "qwen2_moe",    "qwen3_moe", "olmoe"};
// The mixtures of experts among them.
inline const char* const kHfMoeFixtures[] = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe"};
inline std::vector<std::string> hf_fixture_names() { return {std::begin(kHfFixtures), std::end(kHfFixtures)}; }

}  // namespace trident::testing
