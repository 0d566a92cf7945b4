// AuditLog: JSON lines appended with one write() each; digests by SHA-256 (crypto.hpp).
#include "trident/security/audit_log.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/core/file_policy.hpp"
#include "trident/security/crypto.hpp"

namespace trident::security {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kWholeDigestBytes = 64ull << 20;  // above: the first and last MiB and the size
constexpr uint64_t kEndBytes = 1ull << 20;

std::string now_utc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return text;
}

// SHA-256 of the file, or of its ends and size when large; "" when it cannot be read.
std::string file_digest(const std::string& path, uint64_t size, bool* ends) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  Sha256 h;
  std::vector<char> buffer(1 << 20);
  const auto feed = [&](uint64_t bytes) {
    while (bytes > 0 && in) {
      in.read(buffer.data(), std::streamsize(std::min<uint64_t>(bytes, buffer.size())));
      h.update(buffer.data(), size_t(in.gcount()));
      bytes -= uint64_t(in.gcount());
    }
  };
  *ends = size > kWholeDigestBytes;
  if (!*ends) {
    feed(size);
  } else {
    feed(kEndBytes);
    in.seekg(std::streamoff(size - kEndBytes));
    feed(kEndBytes);
    h.update(&size, sizeof size);
  }
  const Digest d = h.finish();
  return to_hex(d);
}

}  // namespace

AuditLog::AuditLog(std::string path, int rank, std::string key_id)
    : path_(fs::absolute(path).lexically_normal().string()), rank_(rank), key_id_(std::move(key_id)) {
  const uid_t uid = ::geteuid();
  const struct passwd* pw = ::getpwuid(uid);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const char* job = std::getenv("SLURM_JOB_ID");
  Json fields = Json::object();
  fields.set("user", pw ? std::string(pw->pw_name) : std::to_string(uid));
  fields.set("uid", int64_t(uid));
  fields.set("host", std::string(host));
  fields.set("job", job ? Json(std::string(job)) : Json());
  fields.set("rank", rank_);
  prefix_ = fields.dump();  // {"user":...,"rank":R} -> the shared middle of every line
  prefix_ = prefix_.substr(1, prefix_.size() - 2);
}

AuditLog::~AuditLog() {
  try {
    finish();
  } catch (...) {  // a destructor must not throw; finish() was the place to see it
  }
  if (fd_ >= 0) ::close(fd_);
}

bool AuditLog::encrypted(const std::string& path) const {
  if (key_id_.empty()) return false;
  const fs::path p(path);
  const std::string ext = p.extension().string();
  if (ext == ".h5") return true;  // checkpoints (both tiers) are encrypted whenever a key is set
  if (ext != ".bin" && ext != ".idx") return false;
  std::ifstream file(p, std::ios::binary);
  char magic[8] = {};
  file.read(magic, sizeof magic);
  if (std::memcmp(magic, "TRDLOCAL", 8) == 0) return true;  // a local-tier checkpoint
  // A shard: its index's version (bytes 8..11) and protection flags (40..43) say
  // (data/shard_format.hpp).
  std::ifstream idx(fs::path(p).replace_extension(".idx"), std::ios::binary);
  unsigned char header[44] = {};
  idx.read(reinterpret_cast<char*>(header), sizeof header);
  uint32_t version = 0, flags = 0;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&flags, header + 40, 4);
  return idx.gcount() == sizeof header && version >= 2 && (flags & 1);
}

void AuditLog::append(const std::string& action, const std::string& path, bool directory) {
  const std::string absolute = fs::absolute(path).lexically_normal().string();
  if (absolute == path_) return;  // the log itself
  std::error_code ec;
  const uint64_t size = directory ? 0 : uint64_t(fs::file_size(absolute, ec));
  Json extra = Json::object();
  extra.set("action", action);
  extra.set("path", absolute);
  extra.set("size", ec ? uint64_t(0) : size);
  if (directory) {
    extra.set("directory", true);
  } else if (action != "create") {
    if (encrypted(absolute)) {
      extra.set("key_id", key_id_);
    } else if (!ec) {
      bool ends = false;
      const std::string digest = file_digest(absolute, size, &ends);
      if (!digest.empty()) extra.set("sha256", digest);
      if (ends) extra.set("sha256_of", "ends");
    }
  }
  const std::string rest = extra.dump();
  const std::string line = "{\"time\":\"" + now_utc() + "\"," + prefix_ + "," + rest.substr(1) + "\n";
  const std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(line);
  flush_pending();
}

void AuditLog::flush_pending() {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd_ < 0) return;  // the run directory is not there yet: the lines wait
    secure_file(fd_, path_);
  }
  for (const std::string& line : pending_)
    if (::write(fd_, line.data(), line.size()) != ssize_t(line.size()))
      throw Error(detail::concat("audit log ", path_, ": cannot append: ", std::strerror(errno)));
  pending_.clear();
}

void AuditLog::read(const std::string& path) { append("read", path, false); }

void AuditLog::created(const std::string& path, bool directory) {
  if (fs::absolute(path).lexically_normal().string() == path_) return;  // the log itself, being opened
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!directory) created_.insert(fs::absolute(path).lexically_normal().string());
  }
  append("create", path, directory);
}

void AuditLog::written(const std::string& path) { append("write", path, false); }

void AuditLog::finish() {
  if (finished_) return;
  finished_ = true;
  std::set<std::string> files;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    files.swap(created_);
  }
  std::error_code ec;
  std::set<std::string> final_names;
  for (const std::string& f : files) {
    if (fs::exists(f, ec)) {
      final_names.insert(f);
    } else if (const size_t tmp = f.rfind(".tmp"); tmp != std::string::npos &&
               f.find_first_not_of("0123456789", tmp + 5) == std::string::npos) {
      final_names.insert(f.substr(0, tmp));  // written aside (X.tmp, X.tmp.PID) and renamed into place
    }
  }
  for (const std::string& f : final_names)
    if (fs::exists(f, ec)) written(f);
  const std::lock_guard<std::mutex> lock(mutex_);
  flush_pending();
}

}  // namespace trident::security
