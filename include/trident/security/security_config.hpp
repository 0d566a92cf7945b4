// The [security] section (docs/design.md section 12): who may read what trident writes, how
// strictly its inputs are checked, the key for encryption at rest, and the audit log.
#pragma once
#include <optional>
#include <string>

#include "trident/core/file_policy.hpp"
#include "trident/security/crypto.hpp"

namespace trident::security {

// security.inputs: what an input writable by others, or a symlink out of its directory, is.
enum class InputCheck { kOff, kWarn, kStrict };

struct SecurityConfig {
  FilePolicy files;             // security.group, file_mode, dir_mode (core/file_policy.hpp)
  InputCheck inputs = InputCheck::kWarn;
  std::string key_file;         // "" = no encryption at rest
  std::optional<MasterKey> key; // loaded from key_file when the configuration is read
  bool audit = false;           // <run_dir>/audit.jsonl: one line per file read or written
};

}  // namespace trident::security
