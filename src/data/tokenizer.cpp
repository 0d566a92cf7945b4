// load_tokenizer: the built-in byte tokenizer behind the Tokenizer interface, or a BPE
// tokenizer read from a tokenizer.json; how a document ends.
#include "trident/data/tokenizer.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trident/core/error.hpp"
#include "trident/data/bpe_tokenizer.hpp"
#include "trident/data/byte_tokenizer.hpp"
#include "trident/data/tokenizer_json.hpp"

namespace trident::data {

namespace {

class ByteTokenizerAdapter final : public Tokenizer {
 public:
  void encode_append(std::string_view text, std::vector<uint32_t>& ids) const override {
    ByteTokenizer::encode_append(text, ids);
  }
  std::string decode(std::span<const uint32_t> ids) const override { return ByteTokenizer::decode(ids); }
  uint64_t vocab_size() const override { return ByteTokenizer::kVocabSize; }
  uint32_t end_of_text() const override { return ByteTokenizer::kEndOfText; }
  std::optional<uint32_t> special_token(std::string_view content) const override {
    if (content == ByteTokenizer::kEndOfTextText) return ByteTokenizer::kEndOfText;
    return std::nullopt;
  }
  std::string describe() const override { return "byte"; }
  const SpecialTokenTemplate& specials() const override { return specials_; }

 private:
  SpecialTokenTemplate specials_;  // none: documents start with their first byte
};

}  // namespace

void append_document_end(const Tokenizer& tokenizer, std::vector<uint32_t>& ids) {
  const std::vector<uint32_t>& suffix = tokenizer.specials().suffix;
  ids.insert(ids.end(), suffix.begin(), suffix.end());
  if (suffix.empty() || suffix.back() != tokenizer.end_of_text()) ids.push_back(tokenizer.end_of_text());
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec) {
  if (spec == "byte") return std::make_unique<ByteTokenizerAdapter>();
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string path = spec;
  if (fs::is_directory(path, ec)) path = (fs::path(spec) / "tokenizer.json").string();
  TRIDENT_CONFIG_CHECK(fs::is_regular_file(path, ec), "tokenizer ", path,
                       ": no such file (give \"byte\", a tokenizer.json or a directory holding one)");
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in, "tokenizer ", path, ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return std::make_unique<BpeTokenizer>(parse_tokenizer_json(text.str(), path));
}

}  // namespace trident::data
