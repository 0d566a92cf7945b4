// A fresh directory under /tmp for one test, removed with everything in it afterwards.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace trident::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/trident_test_XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& leaf) const { return (path / leaf).string(); }
};

}  // namespace trident::testing
