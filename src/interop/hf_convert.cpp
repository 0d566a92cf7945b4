// Conversion between HF model directories and trident checkpoint files.
#include "trident/core/file_policy.hpp"
#include "trident/interop/hf_convert.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "trident/core/error.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/io/hdf5_file.hpp"
#include "trident/interop/hf_config.hpp"
#include "trident/interop/hf_names.hpp"
#include "trident/interop/model_keys.hpp"
#include "trident/interop/hf_weights.hpp"

namespace trident::interop {

namespace fs = std::filesystem;

namespace {

// The [model] section (and [moe] for a mixture of experts) of the checkpoint's config text.
std::string model_section(const model::ModelConfig& m, const std::string& init_from) {
  std::ostringstream model, moe;
  model << "[model]\n";
  moe << "\n[moe]\n";
  for (const auto& [key, value] : model_key_texts(m)) {
    const size_t dot = key.find('.');
    (key.substr(0, dot) == "moe" ? moe : model) << key.substr(dot + 1) << " = " << value << "\n";
  }
  model << "seq_len = " << m.seq_len << "\ninit_from = " << init_from << "\n";
  return model.str() + moe.str();
}

}  // namespace

void hf_to_checkpoint(const std::string& hf_dir, const std::string& checkpoint, MPI_Comm comm, int seq_len) {
  HfModelInfo info = read_hf_config(hf_dir);
  model::ModelConfig& m = info.config;
  m.seq_len = seq_len > 0 ? seq_len : int(std::min<int64_t>(m.max_positions, INT32_MAX));
  m.resolve();
  check_hf_matches(m, info, hf_dir + "/config.json");
  const io::SafetensorsModel weights(hf_dir);
  std::map<std::string, Shape> datasets;
  std::vector<io::ShardPiece> pieces;
  Tensor zeros;  // one buffer of zeros serves every optimizer moment
  const auto shapes = stored_parameter_shapes(m);
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
                 {"converted_from", std::string("hf ") + hf_family_name(info.family)}};
  const fs::path parent = fs::path(checkpoint).parent_path();
  if (!parent.empty()) make_directories(parent);
  io::write_checkpoint(checkpoint, comm, datasets, pieces, attrs, /*key=*/nullptr);
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

namespace {
void write_json(const fs::path& path, const Json& json) {
  std::ofstream out = create_file(path.string());
  out << json.dump() << "\n";
  TRIDENT_CONFIG_CHECK(out.good(), "cannot write ", path.string());
}
}  // namespace

void checkpoint_to_hf(const std::string& checkpoint, const CheckpointModel& model, const std::string& out_dir,
                      const std::string& tokenizer, io::StoredFloat stored, const security::MasterKey* key) {
  const io::CheckpointListing listing = io::list_checkpoint(checkpoint);
  const io::CheckpointDecryption decryption(checkpoint, listing.attributes, key);
  model::ModelConfig m = model.config;
  const std::string& init_from = model.init_from;
  const io::H5File file = io::H5File::open_read(checkpoint);
  std::vector<WholeTensor> tensors;
  for (const auto& [name, shape] : stored_parameter_shapes(m)) {
    const std::string dataset = "/model/" + name;
    const auto found = listing.datasets.find(dataset);
    TRIDENT_CONFIG_CHECK(found != listing.datasets.end(), checkpoint, " has no tensor ", dataset,
                         " (its config text describes another model)");
    TRIDENT_CONFIG_CHECK(found->second == shape, checkpoint, ": tensor ", dataset, " has shape ", found->second.str(),
                         " but its config describes ", shape.str());
    const std::vector<double> values = file.read(dataset);
    decryption.check(dataset);
    tensors.push_back({name, shape, std::vector<float>(values.begin(), values.end())});
  }
  if (m.lora.enabled()) {  // a LoRA run: its adapters merged into the base weights
    tensors = merge_lora(m, std::move(tensors));
    m.lora = {};
  }
  const std::vector<io::SafetensorsTensor> hf = hf_tensors_from(hf_info_for(m), tensors);
  make_directories(out_dir);
  io::write_safetensors((fs::path(out_dir) / "model.safetensors").string(), hf, {{"format", "pt"}}, stored);
  write_json(fs::path(out_dir) / "config.json",
             hf_config_json(m, stored == io::StoredFloat::kBF16 ? "bfloat16" : "float32"));
  write_json(fs::path(out_dir) / "generation_config.json", hf_generation_config_json(m));
  const std::string tok = !tokenizer.empty() ? tokenizer : model_tokenizer_path(init_from);
  if (!tok.empty()) {
    const fs::path from = fs::is_directory(tok) ? fs::path(tok) / "tokenizer.json" : fs::path(tok);
    TRIDENT_CONFIG_CHECK(fs::is_regular_file(from), "tokenizer ", from.string(), " not found");
    fs::copy_file(from, fs::path(out_dir) / "tokenizer.json", fs::copy_options::overwrite_existing);
    const fs::path tok_cfg = from.parent_path() / "tokenizer_config.json";  // special tokens, chat template
    if (fs::is_regular_file(tok_cfg))
      fs::copy_file(tok_cfg, fs::path(out_dir) / "tokenizer_config.json", fs::copy_options::overwrite_existing);
  }
}

}  // namespace trident::interop
