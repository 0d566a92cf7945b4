// JSON-lines files of a run (metrics.jsonl, eval.jsonl: docs/design.md section 6), appended so that
// a crash or a full disk never leaves a line half written among the complete ones: each line
// goes out in one write() on an O_APPEND descriptor, and a write that fails part-way is cut
// back off. Opening a file whose last line lacks its newline (a crash mid-write by an older
// trident, or a power cut) drops that partial line and reports it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trident::io {

// One record as written to metrics.jsonl: {"a": 1, "b": 2.5}, integers printed without a
// fraction, non-finite values as null.
using MetricsRecord = std::vector<std::pair<std::string, double>>;
// Text fields of a line (a straggler's host), after the numbers.
using MetricsText = std::vector<std::pair<std::string, std::string>>;
std::string metrics_json(const MetricsRecord& record, const MetricsText& text = {});

class JsonlAppender {
 public:
  // Opens (creates) path for appending. An unfinished last line is truncated away; its size
  // is dropped_bytes() (0 when the file ended cleanly).
  explicit JsonlAppender(const std::string& path);
  ~JsonlAppender();
  JsonlAppender(const JsonlAppender&) = delete;
  JsonlAppender& operator=(const JsonlAppender&) = delete;

  // Appends line + '\n' whole (Error naming the file when it cannot).
  void append(const std::string& line);
  const std::string& path() const { return path_; }
  int64_t dropped_bytes() const { return dropped_; }

 private:
  int fd_ = -1;
  std::string path_;
  int64_t dropped_ = 0;
};

// Splits a JSON-lines file's text into its complete lines (a partial last one is left out).
std::vector<std::string> complete_lines(const std::string& text);

}  // namespace trident::io
