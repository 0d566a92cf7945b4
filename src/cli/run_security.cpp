// RunSecurity: input checks, the file policy and the audit log of a run.
#include "run_security.hpp"

#include <filesystem>
#include <string_view>

#include "run_inputs.hpp"
#include "trident/core/file_policy.hpp"
#include "trident/security/input_check.hpp"

namespace trident::cli {

namespace {
// The --config FILE (or --config=FILE) argument, "" without one.
std::string config_path(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--config" && i + 1 < argc) return argv[i + 1];
    if (a.starts_with("--config=")) return std::string(a.substr(9));
  }
  return "";
}
}  // namespace

RunSecurity::RunSecurity(const train::RunConfig& cfg, int argc, char** argv, int rank, const Logger& log) {
  const RunInputs inputs = run_inputs(cfg, config_path(argc, argv));
  security::check_inputs(inputs, cfg.security.inputs, [&](const std::string& w) {
    if (rank == 0) log.warn(w);
  });
  FilePolicy policy = cfg.security.files;
  if (cfg.security.audit) {
    audit_ = std::make_unique<security::AuditLog>((std::filesystem::path(cfg.log.run_dir) / "audit.jsonl").string(), rank,
                                                  cfg.security.key ? cfg.security.key->id : "");
    security::AuditLog* audit = audit_.get();
    policy.on_create = [audit](const std::string& path, bool directory) { audit->created(path, directory); };
    if (rank == 0)  // shared inputs once; every rank reads them alike
      for (const auto& [what, path] : inputs) audit_->read(path);
  }
  install_file_policy(policy);
}

RunSecurity::~RunSecurity() {
  FilePolicy policy = file_policy();  // the observer goes before the log it points at
  policy.on_create = nullptr;
  install_file_policy(policy);
}

void RunSecurity::finish() {
  if (audit_) audit_->finish();
}

}  // namespace trident::cli
