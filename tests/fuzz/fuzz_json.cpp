// The JSON parser (JSONL lines, tokenizer.json, safetensors headers, config.json): any bytes
// parse or give a ConfigError; what parses dumps and parses again to the same text.
#include "fuzz_target.hpp"
#include "trident/core/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  trident::fuzz::expect_clean_rejection([&] {
    const trident::Json j = trident::Json::parse(trident::fuzz::as_text(data, size));
    const std::string text = j.dump();
    if (trident::Json::parse(text).dump() != text) __builtin_trap();  // the writer must round-trip
  });
  return 0;
}
