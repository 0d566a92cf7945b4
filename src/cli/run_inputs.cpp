// The files a train or eval run reads, for security.inputs and the audit log: the config, the
// key file, every shard file, the task, the tokenizer, the model and adapter it starts from and
// the checkpoints it may resume from.
#include <filesystem>

#include "run_inputs.hpp"
#include "trident/data/mix_spec.hpp"
#include "trident/data/shard_set.hpp"

namespace trident::cli {
namespace fs = std::filesystem;

namespace {

void add_path(RunInputs& out, const std::string& what, const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(fs::symlink_status(path, ec))) return;
  if (!fs::is_directory(path, ec)) {
    out.push_back({what, path});
    return;
  }
  for (const auto& entry : fs::directory_iterator(path, ec))  // a model directory's own files
    if (!entry.is_directory(ec)) out.push_back({what, entry.path().string()});
}

void add_shards(RunInputs& out, const std::string& what, const std::string& prefix) {
  for (const std::string& file : data::shard_files(prefix)) out.push_back({what, file});
}

}  // namespace

RunInputs run_inputs(const train::RunConfig& cfg, const std::string& config_path) {
  RunInputs out;
  add_path(out, "config", config_path);
  add_path(out, "security.key_file", cfg.security.key_file);
  for (const data::MixSource& s : cfg.data.mix.sources) add_shards(out, "data.train", s.prefix);
  if (cfg.data.mix.sources.empty() && !cfg.data.train.empty()) add_shards(out, "data.train", cfg.data.train);
  if (!cfg.data.valid.empty())
    for (const std::string& prefix : data::valid_prefixes(cfg.data.valid)) add_shards(out, "data.valid", prefix);
  if (!cfg.eval.ood.empty()) add_shards(out, "eval.ood", cfg.eval.ood);
  add_path(out, "eval.task", cfg.eval.task);
  if (cfg.eval.tokenizer != "auto" && cfg.eval.tokenizer != "byte") add_path(out, "eval.tokenizer", cfg.eval.tokenizer);
  add_path(out, "model.init_from", cfg.init_from);
  add_path(out, "lora.init_from", cfg.lora_init_from);
  if (cfg.checkpoint.resume != "auto" && cfg.checkpoint.resume != "none") {
    add_path(out, "checkpoint.resume", cfg.checkpoint.resume);
  } else if (cfg.checkpoint.resume == "auto") {
    const fs::path dir = cfg.checkpoint.dir.empty() ? fs::path(cfg.log.run_dir) / "checkpoints" : fs::path(cfg.checkpoint.dir);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name == "latest" || (name.starts_with("step_") && name.ends_with(".h5")))
        out.push_back({"checkpoint", entry.path().string()});
    }
  }
  return out;
}

}  // namespace trident::cli
