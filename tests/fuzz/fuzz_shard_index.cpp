// A shard index (.idx) with a token file (.bin) of a size taken from the input's first byte:
// opened, validated and read through the way training reads it.
#include <vector>

#include "fuzz_target.hpp"
#include "trident/data/shard_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string prefix = "/tmp/trident-fuzz-" + std::to_string(::getpid()) + "-shard";
  const size_t bin_bytes = size_t(data[0]) * 4;
  // ScratchFile names are /tmp/trident-fuzz-<pid><suffix>: the pair forms the shard prefix above.
  const trident::fuzz::ScratchFile idx("-shard.idx", trident::fuzz::as_text(data + 1, size - 1));
  const trident::fuzz::ScratchFile bin("-shard.bin", std::string(bin_bytes, '\x01'));
  trident::fuzz::expect_clean_rejection([&] {
    const trident::data::ShardReader reader(prefix);
    std::vector<int32_t> tokens;
    for (uint64_t d = 0; d < reader.num_documents(); ++d) {
      const trident::data::DocumentSpan doc = reader.document(d);
      tokens.resize(doc.size());
      reader.copy_tokens(doc.begin, doc.size(), tokens.data());
      if (doc.loss_start > doc.size()) __builtin_trap();
    }
  });
  return 0;
}
