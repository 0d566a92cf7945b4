// Option parsing shared by the `trident bench` subcommands: help and errors handled alike.
#pragma once
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <optional>

namespace trident::cli {

// Parses argv into vm. Returns an exit code when the command should stop here (0 after
// printing --help, 2 after reporting a bad option), nothing when it should go on.
inline std::optional<int> parse_bench_options(const boost::program_options::options_description& desc, int argc,
                                              char** argv, const char* command,
                                              boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "trident bench %s: %s\n", command, e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  return std::nullopt;
}

}  // namespace trident::cli
