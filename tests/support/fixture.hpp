// Loading the PyTorch reference fixtures (tests/data/fixture_<arch>.h5, made by
// utils/make_fixtures.py) into trident's config, model and batches.
#pragma once
#include <string>

#include "test_util.hpp"
#include "trident/io/hdf5_file.hpp"
#include "trident/model/gpt_model.hpp"

namespace trident::testing {

inline std::string fixture_path(const std::string& arch) {
  return std::string(TRIDENT_TEST_DATA) + "/fixture_" + arch + ".h5";
}

inline model::ModelConfig fixture_config(const io::H5File& f) {
  model::ModelConfig c;
  c.arch = model::arch_from_name(f.read_string_attribute("arch"));
  c.layers = static_cast<int>(f.read_attribute("layers"));
  c.hidden = static_cast<int>(f.read_attribute("hidden"));
  c.heads = static_cast<int>(f.read_attribute("heads"));
  c.kv_heads = static_cast<int>(f.read_attribute("kv_heads"));
  c.ffn_hidden = static_cast<int>(f.read_attribute("ffn_hidden"));
  c.vocab = static_cast<int>(f.read_attribute("vocab"));
  c.seq_len = static_cast<int>(f.read_attribute("seq_len"));
  c.tie_embeddings = c.arch == model::Arch::kGPT2;
  return c;
}

// Copies /<group>/<name> into every parameter of the model (values in the model's dtype).
inline void load_parameters(const io::H5File& f, const std::string& group, model::ParamStore& store) {
  for (auto& p : store.all()) {
    Shape shape;
    const std::vector<double> v = f.read(group + "/" + p->spec.name, &shape);
    TRIDENT_CHECK(shape == p->local_shape, p->spec.name, ": fixture ", shape.str(), " vs model ", p->local_shape.str());
    for (int64_t i = 0; i < p->value.numel(); ++i) set_element(p->value, i, v[i]);
  }
}

// Sequences [first, first + count) of /tokens or /targets as an int32 [count, T] tensor.
inline Tensor fixture_rows(const io::H5File& f, const std::string& name, int64_t first, int64_t count) {
  Shape shape;
  const std::vector<double> v = f.read(name, &shape);
  const int64_t t = shape[1];
  Tensor out = Tensor::zeros(Shape{count, t}, DType::kI32);
  for (int64_t i = 0; i < count * t; ++i) out.data<int32_t>()[i] = static_cast<int32_t>(v[first * t + i]);
  return out;
}

inline Tensor positions_for(int64_t count, int64_t t) {
  Tensor out = Tensor::zeros(Shape{count, t}, DType::kI32);
  for (int64_t i = 0; i < count * t; ++i) out.data<int32_t>()[i] = static_cast<int32_t>(i % t);
  return out;
}

}  // namespace trident::testing
