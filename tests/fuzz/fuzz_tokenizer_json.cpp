// A Hugging Face tokenizer.json: loaded as a file, then used to encode (with and without the
// post-processor's special tokens, and as a pair) and decode a sample.
#include "fuzz_target.hpp"
#include "trident/data/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const trident::fuzz::ScratchFile file("-tokenizer.json", trident::fuzz::as_text(data, size));
  trident::fuzz::expect_clean_rejection([&] {
    const auto tokenizer = trident::data::load_tokenizer(file.path());
    const char* sample = "Hello, world! 123 <|endoftext|> caf\xC3\xA9 \xE4\xB8\xAD  <s>x</s> \xE2\x96\x81y \xEF\xAC\x81 \t\n";
    std::vector<uint32_t> ids = tokenizer->encode(sample);
    const std::vector<uint32_t> with_specials = tokenizer->encode_with_specials(sample);
    const std::vector<uint32_t> pair = tokenizer->encode_pair_with_specials(sample, "b");
    ids.insert(ids.end(), with_specials.begin(), with_specials.end());
    ids.insert(ids.end(), pair.begin(), pair.end());
    for (uint32_t id : ids)
      if (id >= tokenizer->vocab_size()) __builtin_trap();
    (void)tokenizer->decode(ids);
  });
  return 0;
}
