// What the single-process commands (evalgen, privacy, prep, inspect) share: reading their
// options with --help, and how they end on an error: bad input (a ConfigError or a bad option)
// is exit 2 with "trident NAME: error: ..." (and the usage for a bad option), anything else
// exit 1 with "trident NAME: failed: ...".
#pragma once
#include <boost/program_options.hpp>
#include <cstdio>
#include <exception>
#include <iostream>

#include "trident/core/error.hpp"

namespace trident::cli {

// Reads argv into vm; with --help prints the usage and the options and returns false (the
// command then exits 0). Throws boost::program_options::error for a bad or missing option.
inline bool parse_options(int argc, char** argv, const boost::program_options::options_description& desc,
                          const char* usage, boost::program_options::variables_map& vm,
                          const boost::program_options::positional_options_description* positional = nullptr) {
  namespace po = boost::program_options;
  po::command_line_parser parser(argc, argv);
  parser.options(desc);
  if (positional) parser.positional(*positional);
  po::store(parser.run(), vm);
  if (vm.count("help")) {
    std::cout << usage << "\n\n" << desc;
    return false;
  }
  po::notify(vm);
  return true;
}

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
