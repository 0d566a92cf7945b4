// Wall-clock timing and process memory figures.
#pragma once
#include <chrono>
#include <cstdint>

namespace trident {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void reset() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Peak resident set size of this process in MiB (getrusage).
double peak_rss_mb();
// Current resident set size in MiB (/proc/self/statm).
double current_rss_mb();

}  // namespace trident
