// Per-rank loading of HF safetensors into parameter shards, and export of whole tensors.
#include "trident/interop/hf_weights.hpp"

#include <algorithm>
#include <map>

#include "trident/core/error.hpp"

namespace trident::interop {

namespace {

const io::SafetensorsView& find_source(const io::SafetensorsModel& weights, const HfModelInfo& info,
                                       const HfSource& src) {
  for (const std::string& name : hf_name_candidates(info, src.name))
    if (weights.find(name)) return weights.at(name, src.shape);
  return weights.at(src.name, src.shape);  // ConfigError: no such tensor
}

// This rank's block of p from the HF tensor: local [rows, cols] (a vector: one row), global
// rows >= stored_rows (vocabulary padding) left at zero.
void read_shard(const model::Parameter& p, const HfSource& src, const io::SafetensorsView& view, float* out) {
  const model::ParamSpec& s = p.spec;
  const Shape& local = p.local_shape;
  if (local.ndim() == 1) {
    const int64_t cols = local[0], col0 = s.split_dim == 0 ? int64_t(s.split_index) * cols : 0;
    io::read_block(view, 0, 1, col0 + src.offset, cols, false, out);
    return;
  }
  TRIDENT_CHECK(local.ndim() == 2, s.name, ": ", local.ndim(), " dims");
  const int64_t lr = local[0], lc = local[1];
  const int64_t row0 = s.split_dim == 0 ? int64_t(s.split_index) * lr : 0;
  const int64_t col0 = s.split_dim == 1 ? int64_t(s.split_index) * lc : 0;
  const int64_t stored = s.init_rows >= 0 ? s.init_rows : s.global_shape[0];
  const int64_t rows = std::clamp<int64_t>(stored - row0, 0, lr);
  if (rows == 0) return;
  if (src.transpose) io::read_block(view, col0, lc, row0 + src.offset, rows, true, out);  // out: [rows, lc]
  else io::read_block(view, row0 + src.offset, rows, col0, lc, false, out);
}

}  // namespace

void check_hf_matches(const model::ModelConfig& cfg, const HfModelInfo& info, const std::string& where) {
  const model::ModelConfig& h = info.config;
  auto same = [&](const char* key, auto mine, auto theirs) {
    TRIDENT_CONFIG_CHECK(mine == theirs, key, " = ", mine, " but ", where, " describes ", theirs);
  };
  same("model.arch", std::string(model::arch_name(cfg.arch)), std::string(model::arch_name(h.arch)));
  same("model.layers", cfg.layers, h.layers);
  same("model.hidden", cfg.hidden, h.hidden);
  same("model.heads", cfg.heads, h.heads);
  same("model.kv_heads", cfg.kv_heads, h.kv_heads);
  same("model.ffn_hidden", cfg.ffn_hidden, h.ffn_hidden);
  same("model.vocab", cfg.vocab, h.vocab);
  same("model.tie_embeddings", cfg.tie_embeddings, h.tie_embeddings);
  same("model.qkv_bias", cfg.qkv_bias, h.qkv_bias);
  same("model.o_bias", cfg.o_bias, h.o_bias);
  same("model.qk_norm", cfg.qk_norm, h.qk_norm);
  same("model.head_dim", cfg.head_size(), h.head_size());
  same("model.norm_eps", cfg.norm_eps, h.norm_eps);
  same("model.max_positions", cfg.positions(), h.positions());
  if (cfg.arch == model::Arch::kLlama) {
    same("model.rope_theta", cfg.rope_theta, h.rope_theta);
    same("model.rope_scaling", cfg.rope_scaling.str(), h.rope_scaling.str());
    same("model.sliding_window", cfg.sliding_window, h.sliding_window);
    if (cfg.sliding_window > 0) same("model.window_from", cfg.window_from, h.window_from);
  }
  if (cfg.learned_positions())
    TRIDENT_CONFIG_CHECK(cfg.seq_len <= h.positions(), "model.seq_len = ", cfg.seq_len, " exceeds the ",
                         h.positions(), " learned positions of ", where);
}

void load_hf_weights(model::ParamStore& store, Ops& ops, const HfModelInfo& info,
                     const io::SafetensorsModel& weights) {
  for (auto& p : store.all()) {
    if (p->spec.adapter) continue;  // LoRA adapters keep their initialisation
    const HfSource src = hf_source(info, p->spec.name);
    const io::SafetensorsView& view = find_source(weights, info, src);
    Tensor staged = Tensor::zeros(p->local_shape, DType::kF32);
    read_shard(*p, src, view, staged.data<float>());
    ops.copy(staged, p->value);
  }
}

void load_hf_model(model::ParamStore& store, Ops& ops, const model::ModelConfig& cfg, const std::string& dir) {
  const HfModelInfo info = read_hf_config(dir);
  check_hf_matches(cfg, info, dir + "/config.json");
  const io::SafetensorsModel weights(dir);
  load_hf_weights(store, ops, info, weights);
}

std::vector<float> read_hf_whole(const HfModelInfo& info, const io::SafetensorsModel& weights,
                                 const std::string& name, const Shape& shape) {
  model::Parameter whole;  // unsplit, no padding rows
  whole.spec.name = name;
  whole.spec.global_shape = shape;
  whole.local_shape = shape;
  const HfSource src = hf_source(info, name);
  std::vector<float> out(size_t(shape.numel()), 0.0f);
  read_shard(whole, src, find_source(weights, info, src), out.data());
  return out;
}

std::vector<io::SafetensorsTensor> hf_tensors_from(const HfModelInfo& info,
                                                   const std::vector<WholeTensor>& tensors) {
  std::map<std::string, io::SafetensorsTensor> out;
  std::map<std::string, int64_t> covered;  // elements written per HF tensor
  for (const WholeTensor& t : tensors) {
    const HfSource src = hf_source(info, t.name);
    io::SafetensorsTensor& hf = out[src.name];
    if (hf.name.empty()) {
      hf.name = src.name;
      hf.shape = src.shape;
      int64_t n = 1;
      for (int64_t d : src.shape) n *= d;
      hf.values.assign(size_t(n), 0.0f);
    }
    const int64_t hf_cols = src.shape.back();
    const int64_t rows = t.shape.ndim() == 2 ? t.shape[0] : 1, cols = t.shape.ndim() == 2 ? t.shape[1] : t.shape[0];
    // The HF rows (or, transposed, columns) this tensor fills must exist.
    const int64_t hf_rows = src.shape.size() == 2 ? src.shape[0] : 1;
    const bool fits = t.shape.ndim() == 1 ? src.offset + cols <= hf_cols
                      : src.transpose    ? cols <= hf_rows && src.offset + rows <= hf_cols
                                         : src.offset + rows <= hf_rows && cols == hf_cols;
    TRIDENT_CONFIG_CHECK(fits, "tensor ", t.name, " of shape ", t.shape.str(), " does not fit ", src.name);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float v = t.values[size_t(r * cols + c)];
        const int64_t at = t.shape.ndim() == 1 ? src.offset + c
                           : src.transpose    ? c * hf_cols + r + src.offset
                                              : (r + src.offset) * hf_cols + c;
        hf.values[size_t(at)] = v;
      }
    covered[src.name] += rows * cols;
  }
  std::vector<io::SafetensorsTensor> result;
  for (auto& [name, t] : out) {
    TRIDENT_CONFIG_CHECK(covered[name] == int64_t(t.values.size()), "HF tensor ", name, ": only ", covered[name], " of ",
                         t.values.size(), " elements come from the checkpoint (a tensor is missing)");
    result.push_back(std::move(t));
  }
  return result;
}

}  // namespace trident::interop
