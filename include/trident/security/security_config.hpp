// The [security] section (docs/design.md section 13): who may read what trident writes, how
// strictly its inputs are checked, the key for encryption at rest, and the audit log.
#pragma once
#include <optional>
#include <string>

#include "trident/security/crypto.hpp"

namespace trident::security {

// security.inputs: what an input writable by others, or a symlink out of its directory, is.
enum class InputCheck { kOff, kWarn, kStrict };

struct SecurityConfig {
  std::string group;            // every file and directory written is chgrp'ed to it ("" = leave)
  unsigned file_mode = 0640;    // exact mode of every file written, whatever the umask
  unsigned dir_mode = 0750;     // exact mode of every directory created (02000 = setgid allowed)
  InputCheck inputs = InputCheck::kWarn;
  std::string key_file;         // "" = no encryption at rest
  std::optional<MasterKey> key; // loaded from key_file when the configuration is read
  bool audit = false;           // <run_dir>/audit.jsonl: one line per file read or written
};

}  // namespace trident::security
