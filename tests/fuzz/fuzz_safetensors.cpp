// A .safetensors file: header validated on open, then every tensor's first rows read to fp32.
#include <vector>

#include "fuzz_target.hpp"
#include "trident/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const trident::fuzz::ScratchFile file(".safetensors", trident::fuzz::as_text(data, size));
  trident::fuzz::expect_clean_rejection([&] {
    const trident::io::SafetensorsFile st(file.path());
    for (const auto& [name, t] : st.tensors()) {
      const int64_t rows = t.shape.empty() ? 1 : std::min<int64_t>(t.shape[0], 4);
      const int64_t cols = t.shape.size() < 2 ? 1 : std::min<int64_t>(t.shape[1], 4);
      if (t.shape.size() > 2) continue;
      std::vector<float> out(static_cast<size_t>(rows * cols));
      trident::io::read_block(t, 0, rows, 0, cols, false, out.data());
    }
  });
  return 0;
}
