// Test support: a suite of `trident evalgen` with its spec loaded from the repository's
// template library (input/eval), by name.
#pragma once
#include <memory>
#include <string>

#include "trident/core/error.hpp"
#include "trident/data/evalgen/generate.hpp"

namespace trident::data::evalgen::test_support {

inline const std::string kLibrary = std::string(TRIDENT_SOURCE_DIR) + "/input/eval";

struct Loaded {
  std::unique_ptr<Suite> suite;
  SuiteSpec spec;
};

inline Loaded load(const std::string& name) {
  for (auto& s : make_suites())
    if (name == s->name()) {
      SuiteSpec spec = load_suite_spec(kLibrary, name, s->templates());
      return {std::move(s), std::move(spec)};
    }
  throw Error("no suite " + name);
}

}  // namespace trident::data::evalgen::test_support
