// Shared by the fuzz targets: each defines LLVMFuzzerTestOneInput, which must reject any input
// with trident's own errors (ConfigError / Error) and nothing worse: no crash, leak, undefined
// behaviour or other exception. Built two ways: with libFuzzer (clang, -DTRIDENT_FUZZ=ON,
// utils/fuzz.sh) and, in every build, with replay_main.cpp, which runs the committed corpus.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "trident/core/error.hpp"

namespace trident::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A private scratch file holding the input, removed afterwards (for readers that take paths).
class ScratchFile {
 public:
  ScratchFile(const std::string& suffix, std::string_view content) {
    path_ = "/tmp/trident-fuzz-" + std::to_string(::getpid()) + suffix;
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) return;
    std::fwrite(content.data(), 1, content.size(), f);
    std::fclose(f);
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs f, accepting trident's own error reports as the correct answer to bad input.
template <typename F>
void expect_clean_rejection(F&& f) {
  try {
    f();
  } catch (const ConfigError&) {
  } catch (const Error&) {
  }
}

}  // namespace trident::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
