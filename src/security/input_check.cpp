// Input checks: modes and symlinks of what a run reads, by lstat / stat / realpath.
#include "trident/security/input_check.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "trident/core/error.hpp"

namespace trident::security {
namespace {

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", unsigned(mode & 07777));
  return text;
}

}  // namespace

std::string input_problem(const std::string& path) {
  namespace fs = std::filesystem;
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) return "";
  std::error_code ec;
  if (S_ISLNK(link.st_mode)) {
    const fs::path target = fs::canonical(path, ec);
    if (ec) return "";
    const fs::path home = fs::canonical(fs::absolute(path).parent_path(), ec);
    if (!ec && target.parent_path() != home)
      return detail::concat(path, " is a symlink out of its directory (to ", target.string(), ")");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  if (st.st_mode & S_IWOTH) return detail::concat(path, " is writable by others (mode ", mode_text(st.st_mode), ")");
  const fs::path dir = fs::absolute(fs::canonical(path, ec)).parent_path();
  struct stat dst {};
  if (!ec && ::stat(dir.c_str(), &dst) == 0 && (dst.st_mode & S_IWOTH) && !(dst.st_mode & S_ISVTX))
    return detail::concat(path, ": its directory ", dir.string(), " is writable by others (mode ", mode_text(dst.st_mode),
                          "), so anyone may replace it");
  return "";
}

void check_inputs(const std::vector<std::pair<std::string, std::string>>& inputs, InputCheck mode,
                  const std::function<void(const std::string&)>& warn) {
  if (mode == InputCheck::kOff) return;
  std::string problems;
  for (const auto& [what, path] : inputs) {
    const std::string problem = input_problem(path);
    if (problem.empty()) continue;
    if (mode == InputCheck::kWarn) {
      if (warn) warn(detail::concat(what, ": ", problem, " (security.inputs = strict makes this an error)"));
    } else {
      problems += detail::concat(problems.empty() ? "" : "; ", what, ": ", problem);
    }
  }
  TRIDENT_CONFIG_CHECK(problems.empty(), "security.inputs = strict: ", problems);
}

}  // namespace trident::security
