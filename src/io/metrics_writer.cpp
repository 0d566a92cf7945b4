// JSON lines writer for training metrics.
#include "trident/io/metrics_writer.hpp"

#include <cmath>
#include <cstring>

#include "trident/core/error.hpp"

namespace trident::io {

MetricsWriter::MetricsWriter(const std::string& path, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  TRIDENT_CONFIG_CHECK(file_ != nullptr, "cannot open ", path, " for writing: ", std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

std::string MetricsWriter::to_json(const Record& record) {
  std::string out = "{";
  char number[64];
  for (size_t i = 0; i < record.size(); ++i) {
    const double v = record[i].second;
    if (!std::isfinite(v)) std::snprintf(number, sizeof number, "null");
    else if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(number, sizeof number, "%.0f", v);
    else std::snprintf(number, sizeof number, "%.9g", v);
    out += (i ? ", \"" : "\"") + record[i].first + "\": " + number;
  }
  return out + "}";
}

void MetricsWriter::write(const Record& record) {
  const std::string line = to_json(record) + "\n";
  TRIDENT_CHECK(std::fputs(line.c_str(), file_) >= 0 && std::fflush(file_) == 0, "cannot write ", path_);
}

}  // namespace trident::io
