// A train or eval run's [security] set-up (docs/design.md section 12): its inputs checked
// (security.inputs), the file policy installed, and with security.audit the audit log opened,
// told of every file created and of every input read. Lives as long as the run.
#pragma once
#include <memory>
#include <string>

#include "trident/core/log.hpp"
#include "trident/security/audit_log.hpp"
#include "trident/train/run_config.hpp"

namespace trident::cli {

class RunSecurity {
 public:
  // Throws ConfigError (exit 2) when an input fails security.inputs = strict.
  RunSecurity(const train::RunConfig& cfg, int argc, char** argv, int rank, const Logger& log);
  ~RunSecurity();
  RunSecurity(const RunSecurity&) = delete;
  RunSecurity& operator=(const RunSecurity&) = delete;

  // The audit log's final lines (every file written, with its size and digest).
  void finish();

 private:
  std::unique_ptr<security::AuditLog> audit_;
};

}  // namespace trident::cli
