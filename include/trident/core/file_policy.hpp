// Who may read what trident writes (docs/design.md section 12, security.group / file_mode /
// dir_mode). Every file and directory is created owner-only (main sets the umask to 077 before
// anything else) and given its group and exact mode before a byte is written into it, so there
// is no moment in which it is readable wider than configured, whatever the user's umask.
//
// The policy is process state, set once by the command before it writes anything: it extends
// the umask, which is process state too, and reaches every writer (metrics, TensorBoard,
// checkpoints, shards, exports) without threading a parameter through each.
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

namespace trident {

struct FilePolicy {
  mode_t file_mode = 0640;
  mode_t dir_mode = 0750;
  gid_t group = static_cast<gid_t>(-1);  // -1: keep the group a new file gets
  std::string group_name;                // for messages
  // Told of every file and directory secured (the audit log); may be empty.
  std::function<void(const std::string& path, bool directory)> on_create;
};

// The umask trident runs under (owner-only until a file is secured).
inline constexpr mode_t kCreationUmask = 077;

// Sets the policy (and the umask); the default policy is in force until then.
void install_file_policy(const FilePolicy& policy);
const FilePolicy& file_policy();

// Give a just-created file (by path or open descriptor) or directory the policy's group and
// mode; an Error naming the path when the system refuses (not a member of the group, a file
// system without modes).
void secure_file(const std::string& path);
void secure_file(int fd, const std::string& path);
void secure_directory(const std::string& path);
// An ofstream on a new (or truncated) file, secured before it is returned; a stream that could
// not be opened is returned as is (callers report it as they did).
std::ofstream create_file(const std::string& path, std::ios::openmode mode = std::ios::out | std::ios::trunc);
// create_directories that secures each directory it creates (existing ones are left alone).
// The error_code form reports failures like std::filesystem's does.
void make_directories(const std::filesystem::path& dir);
bool make_directories(const std::filesystem::path& dir, std::error_code& ec);

}  // namespace trident
