// A Hugging Face tokenizer.json: loaded as a file, then used to encode and decode a sample.
#include "fuzz_target.hpp"
#include "trident/data/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const trident::fuzz::ScratchFile file("-tokenizer.json", trident::fuzz::as_text(data, size));
  trident::fuzz::expect_clean_rejection([&] {
    const auto tokenizer = trident::data::load_tokenizer(file.path());
    const std::vector<uint32_t> ids = tokenizer->encode("Hello, world! 123 <|endoftext|> caf\xC3\xA9 \xE4\xB8\xAD");
    for (uint32_t id : ids)
      if (id >= tokenizer->vocab_size()) __builtin_trap();
    (void)tokenizer->decode(ids);
  });
  return 0;
}
