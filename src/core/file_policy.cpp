// FilePolicy: chown / chmod of what trident creates, right after creation.
#include "trident/core/file_policy.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "trident/core/error.hpp"

namespace trident {
namespace {

FilePolicy& policy_state() {
  static FilePolicy policy;
  return policy;
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", unsigned(mode));
  return text;
}

[[noreturn]] void fail(const char* what, const std::string& path, const std::string& detail) {
  throw Error(detail::concat("cannot ", what, " ", path, ": ", detail));
}

}  // namespace

void install_file_policy(const FilePolicy& policy) {
  policy_state() = policy;
  ::umask(kCreationUmask);
}

const FilePolicy& file_policy() { return policy_state(); }

void secure_file(int fd, const std::string& path) {
  const FilePolicy& p = file_policy();
  if (p.group != static_cast<gid_t>(-1) && ::fchown(fd, static_cast<uid_t>(-1), p.group) != 0)
    fail("give the group", path, detail::concat(p.group_name, ": ", std::strerror(errno)));
  if (::fchmod(fd, p.file_mode) != 0) fail("set the mode", path, mode_text(p.file_mode) + ": " + std::strerror(errno));
  if (p.on_create) p.on_create(path, false);
}

void secure_file(const std::string& path) {
  const FilePolicy& p = file_policy();
  if (p.group != static_cast<gid_t>(-1) && ::chown(path.c_str(), static_cast<uid_t>(-1), p.group) != 0)
    fail("give the group", path, detail::concat(p.group_name, ": ", std::strerror(errno)));
  if (::chmod(path.c_str(), p.file_mode) != 0) fail("set the mode", path, mode_text(p.file_mode) + ": " + std::strerror(errno));
  if (p.on_create) p.on_create(path, false);
}

void secure_directory(const std::string& path) {
  const FilePolicy& p = file_policy();
  // chown first: it may clear the setgid bit, which the chmod then sets when dir_mode has it.
  if (p.group != static_cast<gid_t>(-1) && ::chown(path.c_str(), static_cast<uid_t>(-1), p.group) != 0)
    fail("give the group", path, detail::concat(p.group_name, ": ", std::strerror(errno)));
  if (::chmod(path.c_str(), p.dir_mode) != 0) fail("set the mode", path, mode_text(p.dir_mode) + ": " + std::strerror(errno));
  if (p.on_create) p.on_create(path, true);
}

std::ofstream create_file(const std::string& path, std::ios::openmode mode) {
  std::ofstream out(path, mode);
  if (out.is_open()) secure_file(path);
  return out;
}

bool make_directories(const std::filesystem::path& dir, std::error_code& ec) {
  ec.clear();
  if (dir.empty()) return false;
  // The missing levels, outermost first; each is made and secured before the next inside it.
  std::vector<std::filesystem::path> missing;
  for (std::filesystem::path p = dir.lexically_normal(); !p.empty() && !std::filesystem::exists(p, ec);
       p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  ec.clear();
  bool made = false;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (it->filename().empty()) continue;  // "a/b/" normalises to a trailing empty name
    if (::mkdir(it->c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;  // another rank made it first
      ec = std::error_code(errno, std::generic_category());
      return false;
    }
    try {
      secure_directory(it->string());
    } catch (const Error&) {
      ec = std::error_code(errno ? errno : EPERM, std::generic_category());
      return false;
    }
    made = true;
  }
  return made;
}

void make_directories(const std::filesystem::path& dir) {
  std::error_code ec;
  make_directories(dir, ec);
  if (ec) throw Error(detail::concat("cannot create directory ", dir.string(), ": ", ec.message()));
}

}  // namespace trident
