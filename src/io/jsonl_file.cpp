// Whole-line appends to JSON-lines files.
#include "trident/core/file_policy.hpp"
#include "trident/io/jsonl_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"

namespace trident::io {

std::string metrics_json(const MetricsRecord& record, const MetricsText& text) {
  std::string out = "{";
  char number[64];
  for (size_t i = 0; i < record.size(); ++i) {
    const double v = record[i].second;
    if (!std::isfinite(v)) std::snprintf(number, sizeof number, "null");
    else if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(number, sizeof number, "%.0f", v);
    else std::snprintf(number, sizeof number, "%.9g", v);
    out += (i ? ", \"" : "\"") + record[i].first + "\": " + number;
  }
  for (const auto& [key, value] : text) out += (out.size() > 1 ? ", \"" : "\"") + key + "\": " + Json(value).dump();
  return out + "}";
}

namespace {

// Offset just past the file's last newline (0 when it has none): where a partial last line
// starts. Reads backwards in blocks.
off_t end_of_last_line(int fd, off_t size) {
  char block[4096];
  for (off_t end = size; end > 0;) {
    const off_t begin = end > off_t(sizeof block) ? end - off_t(sizeof block) : 0;
    const ssize_t n = ::pread(fd, block, size_t(end - begin), begin);
    if (n <= 0) return size;  // unreadable: leave the file as it is
    for (ssize_t i = n; i-- > 0;)
      if (block[i] == '\n') return begin + i + 1;
    end = begin;
  }
  return 0;
}

}  // namespace

JsonlAppender::JsonlAppender(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw ConfigError(detail::concat("cannot open ", path, " for appending: ", std::strerror(errno)));
  secure_file(fd_, path);
  struct stat st {};
  const int read_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (read_fd >= 0 && ::fstat(read_fd, &st) == 0 && st.st_size > 0) {
    const off_t keep = end_of_last_line(read_fd, st.st_size);
    if (keep < st.st_size && ::ftruncate(fd_, keep) == 0) dropped_ = st.st_size - keep;
  }
  if (read_fd >= 0) ::close(read_fd);
}

JsonlAppender::~JsonlAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlAppender::append(const std::string& line) {
  const std::string whole = line + "\n";
  struct stat st {};
  const bool sized = ::fstat(fd_, &st) == 0;
  size_t done = 0;
  while (done < whole.size()) {
    const ssize_t n = ::write(fd_, whole.data() + done, whole.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      // Cut back what went out of this line, so the file ends with a complete one.
      if (done > 0 && sized) (void)::ftruncate(fd_, st.st_size);
      throw Error(detail::concat("cannot append to ", path_, ": ", std::strerror(error)));
    }
    done += size_t(n);
  }
}

std::vector<std::string> complete_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', at)) {
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return lines;
}

}  // namespace trident::io
