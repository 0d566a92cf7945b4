// The global tier's files: names, `latest`, resume order, pruning.
#include "trident/core/file_policy.hpp"
#include "trident/train/checkpoint/checkpoint_directory.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "trident/core/error.hpp"

namespace trident::train {

namespace fs = std::filesystem;

std::string CheckpointDirectory::file_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld.h5", static_cast<long long>(step));
  return name;
}

bool CheckpointDirectory::is_step_file(const std::string& name) {
  if (name.size() != 16 || name.rfind("step_", 0) != 0 || name.substr(13) != ".h5") return false;
  return std::all_of(name.begin() + 5, name.begin() + 13, [](char ch) { return ch >= '0' && ch <= '9'; });
}

std::string CheckpointDirectory::file(int64_t step) const { return (fs::path(path_) / file_name(step)).string(); }

std::vector<std::string> CheckpointDirectory::step_files() const {
  std::vector<std::string> files;
  if (!fs::is_directory(path_)) return files;
  for (const auto& entry : fs::directory_iterator(path_))
    if (is_step_file(entry.path().filename().string())) files.push_back(entry.path().filename().string());
  return files;
}

std::string CheckpointDirectory::newest() const {
  if (!fs::is_directory(path_)) return "";
  std::ifstream latest(fs::path(path_) / "latest");
  std::string name;
  if (latest >> name && is_step_file(name) && fs::is_regular_file(fs::path(path_) / name))
    return (fs::path(path_) / name).string();
  const std::vector<std::string> files = step_files();
  if (files.empty()) return "";
  return (fs::path(path_) / *std::max_element(files.begin(), files.end())).string();
}

std::vector<std::string> CheckpointDirectory::resume_candidates(const std::string& mode) const {
  if (mode == "none") return {};
  if (mode != "auto") return {mode};
  // `latest` names the newest file of this run's timeline: it first, then its older ones.
  std::vector<std::string> files = step_files();
  std::sort(files.rbegin(), files.rend());
  std::ifstream latest(fs::path(path_) / "latest");
  std::string named;
  if (latest >> named && is_step_file(named) && std::find(files.begin(), files.end(), named) != files.end())
    std::erase_if(files, [&](const std::string& f) { return f > named; });
  std::vector<std::string> out;
  for (const std::string& f : files) out.push_back((fs::path(path_) / f).string());
  return out;
}

void CheckpointDirectory::create() const {
  std::error_code ec;
  make_directories(path_, ec);
  if (ec) throw Error(detail::concat("checkpoint: cannot create ", path_, ": ", ec.message()));
}

void CheckpointDirectory::publish(int64_t step, int keep) const {
  const fs::path latest = fs::path(path_) / "latest", tmp = fs::path(path_) / "latest.tmp";
  {
    std::ofstream out = create_file(tmp.string());
    out << file_name(step) << "\n";
    out.flush();
    if (!out.good()) throw Error(detail::concat("checkpoint: cannot write ", tmp.string(), " (disk full?); ", file(step),
                                                " is complete, `latest` still names the one before"));
  }
  fs::rename(tmp, latest);
  prune(step, keep);
}

void CheckpointDirectory::prune(int64_t written, int keep) const {
  if (keep <= 0) return;
  // Only this run's timeline: files of a higher step belong to a run that went further in the
  // same directory (another run, or this one before it resumed from an older checkpoint).
  const std::string newest = file_name(written);
  std::vector<std::string> files = step_files();
  std::erase_if(files, [&](const std::string& f) { return f > newest; });
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < files.size(); ++i)
    if (files[i] != newest) fs::remove(fs::path(path_) / files[i]);
}

}  // namespace trident::train
