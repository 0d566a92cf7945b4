// Hugging Face weights in and out of a trident model (names and layouts: model/hf_names.hpp).
// Loading is per rank and needs no communication: each parameter shard copies just its block
// (tensor-parallel rows or columns, its pipeline stage's layers) out of the memory-mapped
// safetensors files, converted to fp32, so no rank materialises the whole model.
#pragma once
#include <string>
#include <vector>

#include "trident/backend/ops.hpp"
#include "trident/io/safetensors.hpp"
#include "trident/interop/hf_config.hpp"
#include "trident/interop/hf_names.hpp"
#include "trident/model/param_store.hpp"

namespace trident::interop {

// ConfigError unless config.json's model (info) is the model cfg describes (every shape key,
// norm_eps, rope_theta; GPT-2: seq_len within its learned positions).
void check_hf_matches(const model::ModelConfig& cfg, const HfModelInfo& info, const std::string& where);

// Fills every parameter of store (this rank's shards) from weights. Vocabulary padding rows
// become zeros.
void load_hf_weights(model::ParamStore& store, Ops& ops, const HfModelInfo& info,
                     const io::SafetensorsModel& weights);
// Reads DIR/config.json, checks it against cfg, maps DIR's safetensors and loads them.
void load_hf_model(model::ParamStore& store, Ops& ops, const model::ModelConfig& cfg, const std::string& dir);

// The whole trident tensor `name` (stored global shape `shape`, e.g. from
// stored_parameter_shapes) read from weights: import without a model.
std::vector<float> read_hf_whole(const HfModelInfo& info, const io::SafetensorsModel& weights,
                                 const std::string& name, const Shape& shape);

// A whole (unsharded) tensor in its stored global shape.
struct WholeTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;
};
// The HF tensors of a model given all its trident parameters (export), sorted by name.
// ConfigError when a trident tensor is missing or the HF tensors are not fully covered.
std::vector<io::SafetensorsTensor> hf_tensors_from(const HfModelInfo& info,
                                                   const std::vector<WholeTensor>& tensors);

}  // namespace trident::interop
