// metrics.jsonl: one JSON object per logged step (DESIGN.md section 5), flushed line by line so
// a crashed or preempted run keeps every line it logged.
#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace trident::io {

class MetricsWriter {
 public:
  using Record = std::vector<std::pair<std::string, double>>;
  // append: keep existing lines (a resumed run); otherwise start a new file.
  MetricsWriter(const std::string& path, bool append);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void write(const Record& record);

  // {"a": 1, "b": 2.5}: integers printed without a fraction, non-finite values as null.
  static std::string to_json(const Record& record);

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace trident::io
