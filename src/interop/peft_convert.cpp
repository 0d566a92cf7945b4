// LoRA adapters to and from Hugging Face PEFT's adapter directory.
#include "trident/core/file_policy.hpp"
#include "trident/interop/peft_convert.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/io/hdf5_file.hpp"
#include "trident/io/safetensors.hpp"
#include "trident/interop/hf_convert.hpp"

namespace trident::interop {

namespace fs = std::filesystem;

namespace {
constexpr const char* kProjections[] = {"q", "k", "v", "o", "gate", "up", "down"};
constexpr const char* kPrefix = "base_model.model.";

std::string adapter_name(int layer, const std::string& proj, char which) {
  const bool attention = proj == "q" || proj == "k" || proj == "v" || proj == "o";
  return "blocks." + std::to_string(layer) + (attention ? ".attn." : ".mlp.") + proj + ".lora_" + which + ".weight";
}

// [out, in] of projection proj.
std::pair<int64_t, int64_t> projection_shape(const model::ModelConfig& m, const std::string& proj) {
  const int64_t c = m.hidden, q = int64_t(m.heads) * m.head_size(), kv = int64_t(m.kv_heads) * m.head_size();
  if (proj == "q") return {q, c};
  if (proj == "k" || proj == "v") return {kv, c};
  if (proj == "o") return {c, q};
  if (proj == "down") return {c, m.ffn_hidden};
  return {m.ffn_hidden, c};  // up, gate
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in.good(), "cannot read ", path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

PeftModule peft_module(const model::ModelConfig& cfg, int layer, const std::string& proj) {
  const std::string l = std::to_string(layer);
  if (cfg.arch == model::Arch::kGPT2) {
    const std::string h = "transformer.h." + l;
    if (proj == "q" || proj == "k" || proj == "v") return {h + ".attn.c_attn", proj == "q" ? 0 : proj == "k" ? 1 : 2};
    if (proj == "o") return {h + ".attn.c_proj"};
    if (proj == "up") return {h + ".mlp.c_fc"};
    if (proj == "down") return {h + ".mlp.c_proj"};
    throw ConfigError("GPT-2 has no " + proj + " projection");
  }
  const std::string m = "model.layers." + l;
  if (proj == "q" || proj == "k" || proj == "v" || proj == "o") return {m + ".self_attn." + proj + "_proj"};
  return {m + ".mlp." + proj + "_proj"};
}

void checkpoint_to_peft(const std::string& checkpoint, const CheckpointModel& model, const std::string& out_dir,
                        const security::MasterKey* key) {
  const io::CheckpointListing listing = io::list_checkpoint(checkpoint);
  const io::CheckpointDecryption decryption(checkpoint, listing.attributes, key);
  const model::ModelConfig& m = model.config;
  TRIDENT_CONFIG_CHECK(m.lora.enabled(), checkpoint, " was not trained with LoRA (lora.enabled = false): ",
                       "no adapters to write; `convert --to hf` writes the whole model");
  const io::H5File file = io::H5File::open_read(checkpoint);
  auto read = [&](const std::string& name, int64_t rows, int64_t cols) {
    const std::string dataset = "/model/" + name;
    const auto found = listing.datasets.find(dataset);
    TRIDENT_CONFIG_CHECK(found != listing.datasets.end() && found->second == (Shape{rows, cols}), checkpoint,
                         ": no adapter tensor ", dataset, " of shape [", rows, ", ", cols, "]");
    const std::vector<double> v = file.read(dataset);
    decryption.check(dataset);
    return std::vector<float>(v.begin(), v.end());
  };
  const int64_t r = m.lora.r;
  std::vector<io::SafetensorsTensor> out;
  std::set<std::string> targets;
  Json rank_pattern = Json::object(), alpha_pattern = Json::object();
  for (int layer = 0; layer < m.layers; ++layer) {
    struct Part {
      int slot;  // q 0, k 1, v 2 within c_attn
      std::vector<float> a, b;
    };
    std::vector<Part> fused;  // GPT-2's q, k, v adapters, joined into one c_attn adapter below
    for (const char* proj : kProjections) {
      if (m.lora.rank_for(proj) == 0) continue;
      const auto [outs, ins] = projection_shape(m, proj);
      std::vector<float> a = read(adapter_name(layer, proj, 'A'), r, ins);
      std::vector<float> b = read(adapter_name(layer, proj, 'B'), outs, r);
      const PeftModule mod = peft_module(m, layer, proj);
      if (mod.fused_index >= 0) {
        fused.push_back({mod.fused_index, std::move(a), std::move(b)});
        continue;
      }
      targets.insert(mod.name.substr(mod.name.rfind('.', mod.name.rfind('.') - 1) + 1));  // "self_attn.q_proj"
      out.push_back({kPrefix + mod.name + ".lora_A.weight", {r, ins}, std::move(a)});
      out.push_back({kPrefix + mod.name + ".lora_B.weight", {outs, r}, std::move(b)});
    }
    if (fused.empty()) continue;
    // c_attn = [q; k; v] rows (hidden each): A_f = the parts' A stacked [n*r, C]; B_f [3C, n*r]
    // holds part i's B in its rows and columns i*r .. (i+1)*r, zero elsewhere.
    const int64_t c = m.hidden, n = static_cast<int64_t>(fused.size());
    std::vector<float> a_f, b_f(size_t(3 * c * n * r), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const Part& part = fused[size_t(i)];
      a_f.insert(a_f.end(), part.a.begin(), part.a.end());
      for (int64_t row = 0; row < c; ++row)
        for (int64_t k = 0; k < r; ++k)
          b_f[size_t((part.slot * c + row) * n * r + i * r + k)] = part.b[size_t(row * r + k)];
    }
    const std::string name = peft_module(m, layer, "q").name;
    out.push_back({kPrefix + name + ".lora_A.weight", {n * r, c}, std::move(a_f)});
    out.push_back({kPrefix + name + ".lora_B.weight", {3 * c, n * r}, std::move(b_f)});
    targets.insert("attn.c_attn");
    if (n > 1) {  // rank n*r with the same scale alpha / r
      rank_pattern.set("c_attn", Json(n * r));
      alpha_pattern.set("c_attn", Json(m.lora.alpha * double(n)));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  make_directories(out_dir);
  io::write_safetensors((fs::path(out_dir) / "adapter_model.safetensors").string(), out);

  Json cfg = Json::object();
  cfg.set("peft_type", Json("LORA"));
  cfg.set("task_type", Json("CAUSAL_LM"));
  // The base peft loads the adapter onto: the HF directory the run started from, else the
  // checkpoint's own base weights, written next to the adapter.
  std::string base = model.hf_base;
  if (base.empty()) {
    CheckpointModel frozen = model;
    frozen.config.lora = {};
    const fs::path dir = fs::path(out_dir) / "base";
    checkpoint_to_hf(checkpoint, frozen, dir.string(), "", io::StoredFloat::kF32, key);
    base = fs::absolute(dir).lexically_normal().string();
  }
  cfg.set("base_model_name_or_path", Json(base));
  cfg.set("r", Json(int64_t(r)));
  cfg.set("lora_alpha", Json(m.lora.alpha));
  cfg.set("lora_dropout", Json(0.0));
  cfg.set("bias", Json("none"));
  cfg.set("fan_in_fan_out", Json(m.arch == model::Arch::kGPT2));  // GPT-2's Conv1D weights are [in, out]
  cfg.set("inference_mode", Json(true));
  cfg.set("init_lora_weights", Json(true));
  cfg.set("use_rslora", Json(false));
  cfg.set("use_dora", Json(false));
  Json modules = Json::array();
  for (const std::string& t : targets) modules.push_back(Json(t));
  cfg.set("target_modules", std::move(modules));
  cfg.set("rank_pattern", std::move(rank_pattern));
  cfg.set("alpha_pattern", std::move(alpha_pattern));
  std::ofstream json = create_file((fs::path(out_dir) / "adapter_config.json").string());
  json << cfg.dump() << "\n";
  TRIDENT_CONFIG_CHECK(json.good(), "cannot write ", (fs::path(out_dir) / "adapter_config.json").string());
}

namespace {

// peft's rank_pattern / alpha_pattern: the value of the first key that names the module
// (the module's name, or its name's last dotted parts), else fallback. Keys that are regular
// expressions beyond a plain name are refused.
double pattern_value(const Json* pattern, const std::string& module, double fallback, const std::string& where,
                     const char* what) {
  if (!pattern || pattern->is_null()) return fallback;
  TRIDENT_CONFIG_CHECK(pattern->is_object(), where, ": ", what, " must be an object");
  for (const auto& [key, value] : pattern->as_object()) {
    TRIDENT_CONFIG_CHECK(std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(uint8_t(c)) || c == '_' || c == '.'; }),
                         where, ": ", what, " key \"", key, "\" is a regular expression; trident matches module names only");
    TRIDENT_CONFIG_CHECK(value.is_number(), where, ": ", what, "[\"", key, "\"] must be a number");
    if (module == key || module.ends_with("." + key)) return value.as_number();
  }
  return fallback;
}

// GPT-2's q, k, v adapters of one layer live in one c_attn adapter: the adapted parts in q, k, v
// order; part i of a trident export holds rows i*r .. of A and the matching columns of B.
std::vector<std::string> fused_parts(const model::ModelConfig& cfg) {
  std::vector<std::string> parts;
  if (cfg.arch != model::Arch::kGPT2) return parts;
  for (const char* p : {"q", "k", "v"})
    if (cfg.lora.rank_for(p)) parts.emplace_back(p);
  return parts;
}

}  // namespace

void load_peft_adapter(model::ParamStore& store, Ops& ops, const model::ModelConfig& cfg, const std::string& dir) {
  TRIDENT_CONFIG_CHECK(cfg.lora.enabled(), "lora.init_from needs lora.enabled = true");
  const std::string where = dir + "/adapter_config.json";
  Json config;
  try {
    config = Json::parse(read_text(where));
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": not valid JSON: " + e.what());
  }
  TRIDENT_CONFIG_CHECK(config.is_object() && config.find("r") && config.find("lora_alpha"), where,
                       ": not a LoRA adapter_config.json (needs r and lora_alpha)");
  const double r = config.at("r").as_number(), alpha = config.at("lora_alpha").as_number();
  const Json* ranks = config.find("rank_pattern");
  const Json* alphas = config.find("alpha_pattern");
  const std::vector<std::string> fused = fused_parts(cfg);
  const int64_t lr = cfg.lora.r;
  const io::SafetensorsModel weights(dir + "/adapter_model.safetensors");
  for (auto& p : store.all()) {
    if (!p->spec.adapter) continue;
    // "blocks.L.attn.q.lora_A.weight" -> layer, projection, A or B
    const std::string& name = p->spec.name;
    const size_t dot1 = name.find('.', 7), part = name.find(".lora_");
    const int layer = std::stoi(name.substr(7, dot1 - 7));
    const std::string proj = name.substr(name.rfind('.', part - 1) + 1, part - name.rfind('.', part - 1) - 1);
    const bool is_a = name[part + 6] == 'A';
    const PeftModule mod = peft_module(cfg, layer, proj);
    // The module's rank and alpha; their scale alpha / rank must be trident's.
    const double rank = pattern_value(ranks, mod.name, r, where, "rank_pattern");
    const double mod_alpha = pattern_value(alphas, mod.name, alpha, where, "alpha_pattern");
    // A trident GPT-2 export joins n rank-r adapters into one of rank n*r; peft's own c_attn
    // adapter (rank r) serves q, k and v alike.
    const int64_t n = int64_t(fused.size());
    const bool joined = mod.fused_index >= 0 && n > 1 && rank == double(n * lr);
    const int64_t slot = joined ? int64_t(std::find(fused.begin(), fused.end(), proj) - fused.begin()) : 0;
    TRIDENT_CONFIG_CHECK(rank == double(joined ? n * lr : lr) && mod_alpha * double(lr) == cfg.lora.alpha * rank, where,
                         ": ", mod.name, " has r = ", rank, ", lora_alpha = ", mod_alpha, " but lora.r = ", lr,
                         ", lora.alpha = ", cfg.lora.alpha);
    const std::string key = kPrefix + mod.name + (is_a ? ".lora_A.weight" : ".lora_B.weight");
    const io::SafetensorsView* view = weights.find(key);
    TRIDENT_CONFIG_CHECK(view != nullptr, dir, "/adapter_model.safetensors has no ", key, " (for ", name, ")");
    const Shape& global = p->spec.global_shape;
    const int64_t width = joined ? n * lr : lr;
    // A fused c_attn B holds q, k, v in row blocks of hidden rows each.
    const int64_t row0 = (!is_a && mod.fused_index >= 0 ? mod.fused_index * int64_t(cfg.hidden) : 0) +
                         (is_a && joined ? slot * lr : 0);
    const int64_t col0 = !is_a && joined ? slot * lr : 0;
    const std::vector<int64_t> expect = is_a ? std::vector<int64_t>{width, global[1]}
                                        : mod.fused_index >= 0 ? std::vector<int64_t>{3 * int64_t(cfg.hidden), width}
                                                               : std::vector<int64_t>{global[0], width};
    TRIDENT_CONFIG_CHECK(view->shape == expect, key, " has shape [", view->shape[0], ", ",
                         view->shape.size() > 1 ? view->shape[1] : 0, "], expected [", expect[0], ", ", expect[1], "]");
    if (joined && !is_a) {  // the other parts' columns of this part's rows must be zero
      std::vector<float> rows(size_t(cfg.hidden * width));
      io::read_block(*view, mod.fused_index * int64_t(cfg.hidden), cfg.hidden, 0, width, false, rows.data());
      for (int64_t i = 0; i < cfg.hidden; ++i)
        for (int64_t c = 0; c < width; ++c)
          TRIDENT_CONFIG_CHECK(rows[size_t(i * width + c)] == 0.0f || (c >= col0 && c < col0 + lr), key,
                               ": a rank-", width, " c_attn adapter that is not ", n, " separate rank-", lr,
                               " adapters for ", cfg.lora.targets, " (trident adapts each projection apart)");
    }
    // This rank's block of the global tensor.
    const int64_t rows = p->local_shape[0], cols = p->local_shape[1];
    const int64_t r0 = p->spec.split_dim == 0 ? rows * p->spec.split_index : 0;
    const int64_t c0 = p->spec.split_dim == 1 ? cols * p->spec.split_index : 0;
    Tensor staged = Tensor::zeros(p->local_shape, DType::kF32);
    io::read_block(*view, row0 + r0, rows, col0 + c0, cols, false, staged.data<float>());
    ops.copy(staged, p->value);
  }
}

}  // namespace trident::interop
