// Helpers of the prep tests: the byte tokenizer, file writing, and decoding a document of a
// shard or shard set back to text.
#pragma once
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "trident/data/byte_tokenizer.hpp"
#include "trident/data/prep.hpp"
#include "trident/data/shard_set.hpp"
#include "trident/data/tokenizer.hpp"

namespace trident::data::prep_test {

// The built-in byte tokenizer through the interface prep sees.
inline const Tokenizer& byte_tokenizer() {
  static const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer("byte");
  return *tokenizer;
}

inline std::string write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <typename Reader>
std::string decode_document(const Reader& reader, uint64_t d) {
  const DocumentSpan doc = reader.document(d);
  std::vector<uint32_t> ids;
  for (uint64_t t = doc.begin; t < doc.end; ++t) ids.push_back(reader.token(t));
  return ByteTokenizer::decode(ids);
}

inline PrepOptions options_for(std::vector<std::string> inputs, std::string output) {
  PrepOptions o;
  o.inputs = std::move(inputs);
  o.output = std::move(output);
  return o;
}

inline PrepSummary prep(const PrepOptions& options) {
  return prepare_shards(options, byte_tokenizer(), PrepComm::single_process());
}

}  // namespace trident::data::prep_test
