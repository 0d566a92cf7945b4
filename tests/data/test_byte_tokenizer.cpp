// Tests of the byte tokenizer: exact round trip of every byte value and the end-of-text id.
#include <gtest/gtest.h>

#include "trident/data/byte_tokenizer.hpp"

namespace trident::data {
namespace {

TEST(ByteTokenizer, RoundTripsEveryByte) {
  std::string text;
  for (int c = 0; c < 256; ++c) text.push_back(static_cast<char>(c));
  const std::vector<uint32_t> ids = ByteTokenizer::encode(text);
  ASSERT_EQ(ids.size(), 256u);
  for (uint32_t c = 0; c < 256; ++c) EXPECT_EQ(ids[c], c);
  EXPECT_EQ(ByteTokenizer::decode(ids), text);
}

TEST(ByteTokenizer, Utf8IsBytes) {
  const std::vector<uint32_t> ids = ByteTokenizer::encode("h\xC3\xA9");  // "hé"
  EXPECT_EQ(ids, (std::vector<uint32_t>{'h', 0xC3, 0xA9}));
}

TEST(ByteTokenizer, EndOfTextRendersAsMarker) {
  std::vector<uint32_t> ids = ByteTokenizer::encode("ab");
  ids.push_back(ByteTokenizer::kEndOfText);
  ByteTokenizer::encode_append("c", ids);
  EXPECT_EQ(ByteTokenizer::decode(ids), "ab<|endoftext|>c");
  EXPECT_EQ(ByteTokenizer::kVocabSize, 257u);
}

}  // namespace
}  // namespace trident::data
