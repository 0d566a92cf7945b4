// An INI run configuration, parsed and checked as `trident train --config FILE` does.
#include "fuzz_target.hpp"
#include "trident/cli/config_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const trident::fuzz::ScratchFile file(".ini", trident::fuzz::as_text(data, size));
  std::string arg0 = "trident", flag = "--config", path = file.path();
  char* argv[] = {arg0.data(), flag.data(), path.data()};
  trident::fuzz::expect_clean_rejection([&] { (void)trident::cli::parse_run_config(3, argv, 1); });
  return 0;
}
