// How a single-process command (evalgen, privacy) ends on an error: bad input (a ConfigError or
// a bad option) is exit 2 with "trident NAME: error: ..." (and the usage for a bad option),
// anything else exit 1 with "trident NAME: failed: ...".
#pragma once
#include <boost/program_options.hpp>
#include <cstdio>
#include <exception>

#include "trident/core/error.hpp"

namespace trident::cli {

template <typename Body>
int run_reporting_errors(const char* name, const char* usage, Body&& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident %s: error: %s\n", name, e.what());
    return 2;
  } catch (const boost::program_options::error& e) {
    std::fprintf(stderr, "trident %s: error: %s\n%s\n", name, e.what(), usage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident %s: failed: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace trident::cli
