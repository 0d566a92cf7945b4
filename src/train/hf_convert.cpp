// Conversion between HF model directories and trident checkpoint files.
#include "trident/train/hf_convert.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "trident/core/error.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/io/hdf5_file.hpp"
#include "trident/model/hf_config.hpp"
#include "trident/model/hf_names.hpp"
#include "trident/train/hf_weights.hpp"

namespace trident::train {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::string model_section(const model::ModelConfig& m, const std::string& init_from) {
  std::ostringstream os;
  os << "[model]\n";
  for (const auto& [key, value] : model::hf_model_keys({.config = m})) os << key.substr(6) << " = " << value << "\n";
  os << "seq_len = " << m.seq_len << "\ninit_from = " << init_from << "\n";
  return os.str();
}

}  // namespace

model::ModelConfig model_config_from_ini(const std::string& ini, std::string* init_from) {
  model::ModelConfig m;
  model::LoraConfig lora;
  lora.r = 8;  // the [lora] defaults of config_schema
  bool lora_enabled = false;
  std::istringstream in(ini);
  std::string line, section;
  auto number = [](const std::string& key, const std::string& v) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    TRIDENT_CONFIG_CHECK(!v.empty() && *end == '\0', "model.", key, ": expected a number, got '", v, "'");
    return d;
  };
  // Converting a double outside int's range (1e300, nan) to int is undefined: reject it.
  auto integer = [&](const std::string& key, const std::string& v) {
    const double d = number(key, v);
    TRIDENT_CONFIG_CHECK(d == std::floor(d) && d >= INT32_MIN && d <= INT32_MAX, "model.", key,
                         ": expected a whole number in int32 range, got '", v, "'");
    return static_cast<int>(d);
  };
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      section = line;
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq)), v = trim(line.substr(eq + 1));
    if (section == "[lora]") {
      if (key == "enabled") lora_enabled = v == "true" || v == "1";
      else if (key == "r") lora.r = integer(key, v);
      else if (key == "alpha") lora.alpha = number(key, v);
      else if (key == "targets") lora.targets = v;
      continue;
    }
    if (section != "[model]") continue;
    if (key == "arch") m.arch = model::arch_from_name(v);
    else if (key == "layers") m.layers = integer(key, v);
    else if (key == "hidden") m.hidden = integer(key, v);
    else if (key == "heads") m.heads = integer(key, v);
    else if (key == "kv_heads") m.kv_heads = integer(key, v);
    else if (key == "ffn_hidden") m.ffn_hidden = integer(key, v);
    else if (key == "vocab") m.vocab = integer(key, v);
    else if (key == "seq_len") m.seq_len = integer(key, v);
    else if (key == "tie_embeddings") m.tie_embeddings = v == "true" || v == "1";
    else if (key == "qkv_bias") m.qkv_bias = v == "true" || v == "1";
    else if (key == "norm_eps") m.norm_eps = number(key, v);
    else if (key == "rope_theta") m.rope_theta = number(key, v);
    else if (key == "init_from" && init_from) *init_from = v;
  }
  if (lora_enabled) m.lora = lora;
  m.resolve();
  return m;
}

void hf_to_checkpoint(const std::string& hf_dir, const std::string& checkpoint, MPI_Comm comm, int seq_len) {
  model::HfModelInfo info = model::read_hf_config(hf_dir);
  model::ModelConfig& m = info.config;
  m.seq_len = seq_len > 0 ? seq_len : int(std::min<int64_t>(info.max_positions, INT32_MAX));
  m.resolve();
  check_hf_matches(m, info, hf_dir + "/config.json");
  const io::SafetensorsModel weights(hf_dir);
  std::map<std::string, Shape> datasets;
  std::vector<io::ShardPiece> pieces;
  Tensor zeros;  // one buffer of zeros serves every optimizer moment
  const auto shapes = model::stored_parameter_shapes(m);
  int64_t largest = 1;
  for (const auto& [name, shape] : shapes) largest = std::max(largest, shape.numel());
  zeros = Tensor::zeros(Shape{largest}, DType::kF32);
  for (const auto& [name, shape] : shapes) {
    const std::vector<float> values = read_hf_whole(info, weights, name, shape);
    Tensor t = Tensor::zeros(Shape{shape.numel()}, DType::kF32);
    std::copy(values.begin(), values.end(), t.data<float>());
    for (const char* group : {"/model/", "/optim/exp_avg/", "/optim/exp_avg_sq/"}) {
      io::ShardPiece p;
      p.dataset = group + name;
      p.local_cols = shape.ndim() == 2 ? shape[1] : shape[0];
      p.end = shape.numel();
      p.stored_rows = shape.ndim() == 2 ? shape[0] : 1;
      p.data = std::string(group) == "/model/" ? t : zeros.narrow(0, shape.numel());
      datasets[p.dataset] = shape;
      pieces.push_back(std::move(p));
    }
  }
  io::CheckpointAttributes attrs;
  attrs.numbers = {{"step", 0.0},       {"tokens", 0.0},    {"sampler_step", 0.0}, {"layout_dp", 1.0},
                   {"layout_tp", 1.0},  {"layout_pp", 1.0}, {"layout_zero", 0.0}};
  attrs.texts = {{"config", model_section(m, fs::absolute(hf_dir).string())},
                 {"converted_from", std::string("hf ") + model::hf_family_name(info.family)}};
  const fs::path parent = fs::path(checkpoint).parent_path();
  if (!parent.empty()) fs::create_directories(parent);
  io::write_checkpoint(checkpoint, comm, datasets, pieces, attrs);
}

std::vector<WholeTensor> merge_lora(const model::ModelConfig& cfg, std::vector<WholeTensor> tensors) {
  std::map<std::string, WholeTensor*> by_name;
  for (WholeTensor& t : tensors) by_name[t.name] = &t;
  const double scale = cfg.lora.scale();
  for (WholeTensor& a : tensors) {
    const std::string suffix = ".lora_A.weight";
    if (!a.name.ends_with(suffix)) continue;
    const std::string base = a.name.substr(0, a.name.size() - suffix.size());
    WholeTensor* b = by_name.at(base + ".lora_B.weight");
    WholeTensor* w = by_name.at(base + ".weight");
    const int64_t out = w->shape[0], in = w->shape[1], r = a.shape[0];
    for (int64_t i = 0; i < out; ++i)
      for (int64_t j = 0; j < in; ++j) {
        double delta = 0;
        for (int64_t k = 0; k < r; ++k) delta += double(b->values[i * r + k]) * double(a.values[k * in + j]);
        w->values[i * in + j] = float(double(w->values[i * in + j]) + scale * delta);
      }
  }
  std::erase_if(tensors, [](const WholeTensor& t) { return t.name.find(".lora_") != std::string::npos; });
  return tensors;
}

void checkpoint_to_hf(const std::string& checkpoint, const std::string& out_dir, const std::string& tokenizer) {
  const io::CheckpointListing listing = io::list_checkpoint(checkpoint);
  const auto config = listing.attributes.texts.find("config");
  TRIDENT_CONFIG_CHECK(config != listing.attributes.texts.end(), checkpoint,
                       " has no config text: not a trident checkpoint");
  std::string init_from;
  model::ModelConfig m = model_config_from_ini(config->second, &init_from);
  const io::H5File file = io::H5File::open_read(checkpoint);
  std::vector<WholeTensor> tensors;
  for (const auto& [name, shape] : model::stored_parameter_shapes(m)) {
    const std::string dataset = "/model/" + name;
    const auto found = listing.datasets.find(dataset);
    TRIDENT_CONFIG_CHECK(found != listing.datasets.end(), checkpoint, " has no tensor ", dataset,
                         " (its config text describes another model)");
    TRIDENT_CONFIG_CHECK(found->second == shape, checkpoint, ": tensor ", dataset, " has shape ", found->second.str(),
                         " but its config describes ", shape.str());
    const std::vector<double> values = file.read(dataset);
    tensors.push_back({name, shape, std::vector<float>(values.begin(), values.end())});
  }
  if (m.lora.enabled()) {  // a LoRA run: its adapters merged into the base weights
    tensors = merge_lora(m, std::move(tensors));
    m.lora = {};
  }
  const std::vector<io::SafetensorsTensor> hf = hf_tensors_from(model::hf_info_for(m), tensors);
  fs::create_directories(out_dir);
  io::write_safetensors((fs::path(out_dir) / "model.safetensors").string(), hf);
  {
    std::ofstream out(fs::path(out_dir) / "config.json");
    out << model::hf_config_json(m).dump() << "\n";
    TRIDENT_CONFIG_CHECK(out.good(), "cannot write ", (fs::path(out_dir) / "config.json").string());
  }
  const std::string tok = !tokenizer.empty() ? tokenizer : model::model_tokenizer_path(init_from);
  if (!tok.empty()) {
    const fs::path from = fs::is_directory(tok) ? fs::path(tok) / "tokenizer.json" : fs::path(tok);
    TRIDENT_CONFIG_CHECK(fs::is_regular_file(from), "tokenizer ", from.string(), " not found");
    fs::copy_file(from, fs::path(out_dir) / "tokenizer.json", fs::copy_options::overwrite_existing);
    const fs::path tok_cfg = from.parent_path() / "tokenizer_config.json";  // special tokens, chat template
    if (fs::is_regular_file(tok_cfg))
      fs::copy_file(tok_cfg, fs::path(out_dir) / "tokenizer_config.json", fs::copy_options::overwrite_existing);
  }
}

}  // namespace trident::train
