// One JSONL training example as prep reads it ({"text"}, {"input","output"}, {"messages"}).
#include "fuzz_target.hpp"
#include "trident/core/json.hpp"
#include "trident/data/prep_record.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  trident::fuzz::expect_clean_rejection([&] {
    const trident::data::Example example =
        trident::data::parse_example(trident::Json::parse(trident::fuzz::as_text(data, size)));
    (void)trident::data::example_content(example);
    (void)trident::data::example_dedup_hash(example);
  });
  return 0;
}
