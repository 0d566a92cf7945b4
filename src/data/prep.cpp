// prep: reads text files and JSONL prompt/response lines, tokenizes them with the byte
// tokenizer, drops empty and duplicate documents and writes train (and valid) token shards.
#include "trident/data/prep.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <unordered_set>

#include "trident/core/error.hpp"
#include "trident/data/byte_tokenizer.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

// --- a small JSON reader: exactly what one JSONL example line needs ------------------------

// Offset of the first byte that is not part of a well-formed UTF-8 sequence, or npos.
size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || (n == 2 && c < 0xC2) || i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    if (n == 3) {  // no overlong forms, no UTF-16 surrogates
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return i;
    }
    if (n == 4) {  // no overlong forms, nothing above U+10FFFF
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xF0 && c1 < 0x90) || c > 0xF4 || (c == 0xF4 && c1 >= 0x90)) return i;
    }
    i += n;
  }
  return std::string_view::npos;
}

class JsonLine {
 public:
  explicit JsonLine(std::string_view text) : s_(text) {}

  PromptExample parse_example() {
    PromptExample example;
    bool has_input = false, has_output = false;
    skip_space();
    expect('{', "a JSON object");
    skip_space();
    if (!consume('}')) {
      do {
        skip_space();
        if (peek() != '"') fail("expected a string key");
        const std::string key = parse_string();
        skip_space();
        expect(':', "':' after a key");
        skip_space();
        if (key == "input" || key == "output") {
          if (peek() != '"') fail("\"" + key + "\" must be a string");
          const size_t start = pos_;
          std::string value = parse_string();
          if (const size_t bad = invalid_utf8_at(value); bad != std::string::npos) {
            pos_ = start;
            fail("\"" + key + "\" is not valid UTF-8 (byte " + std::to_string(bad) + " of the string)");
          }
          (key == "input" ? example.input : example.output) = std::move(value);
          (key == "input" ? has_input : has_output) = true;
        } else {
          skip_value(0);
        }
        skip_space();
      } while (consume(','));
      expect('}', "',' or '}' in the object");
    }
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the object");
    if (!has_input) fail("missing key \"input\"");
    if (!has_output) fail("missing key \"output\"");
    return example;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(detail::concat("column ", pos_ + 1, ": ", what));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c, const char* what) {
    if (!consume(c)) fail(std::string("expected ") + what);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  uint32_t parse_hex4() {
    if (s_.size() - pos_ < 4) fail("\\u needs 4 hex digits");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (digit < 0) fail("\\u needs 4 hex digits");
      v = v * 16 + static_cast<uint32_t>(digit);
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // A code point from \uXXXX, joining a UTF-16 surrogate pair (\uD83D\uDE00 -> U+1F600).
  uint32_t parse_unicode_escape() {
    const uint32_t hi = parse_hex4();
    if (hi >= 0xDC00 && hi <= 0xDFFF) fail("lone low surrogate in \\u escape");
    if (hi < 0xD800 || hi > 0xDBFF) return hi;
    if (!(consume('\\') && consume('u'))) fail("high surrogate \\u escape without its low half");
    const uint32_t lo = parse_hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate \\u escape without its low half");
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  }

  std::string parse_string() {
    expect('"', "a string");
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("unescaped control character in a string");
      if (c != '\\') {
        out += c;  // raw UTF-8 bytes pass through unchanged
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      switch (const char e = s_[pos_++]; e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': append_utf8(out, parse_unicode_escape()); break;
        default: --pos_; fail(std::string("invalid escape \\") + e);
      }
    }
  }

  void skip_digits() {
    if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit");
    while (peek() >= '0' && peek() <= '9') ++pos_;
  }

  // Validates and skips any value of a key we do not use (numbers, literals, nesting).
  void skip_value(int depth) {
    if (depth > 64) fail("nesting deeper than 64");
    const char c = peek();
    if (c == '"') {
      parse_string();
    } else if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      skip_space();
      if (consume(close)) return;
      do {
        skip_space();
        if (c == '{') {
          parse_string();
          skip_space();
          expect(':', "':' after a key");
          skip_space();
        }
        skip_value(depth + 1);
        skip_space();
      } while (consume(','));
      if (!consume(close)) fail(std::string("expected ',' or '") + close + "'");
    } else if (s_.substr(pos_, 4) == "true" || s_.substr(pos_, 4) == "null") {
      pos_ += 4;
    } else if (s_.substr(pos_, 5) == "false") {
      pos_ += 5;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      consume('-');
      if (!consume('0')) skip_digits();
      if (consume('.')) skip_digits();
      if (consume('e') || consume('E')) {
        if (!consume('+')) consume('-');
        skip_digits();
      }
    } else {
      fail("expected a JSON value");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// --- prep ----------------------------------------------------------------------------------

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Routes each kept document to the train or valid writer and counts what happened to it.
class ShardSink {
 public:
  ShardSink(const PrepOptions& options, PrepSummary& summary)
      : options_(options), summary_(summary), train_(options.output, ByteTokenizer::kVocabSize) {
    if (options.valid_permille > 0)
      valid_ = std::make_unique<ShardWriter>(valid_shard_prefix(options.output), ByteTokenizer::kVocabSize);
  }

  // Document = input + output + end-of-text; the loss starts after the input's tokens.
  void add(std::string_view input, std::string_view output) {
    ++summary_.documents_in;
    if (input.empty() && output.empty()) return void(++summary_.empty_dropped);
    const uint64_t hash = document_content_hash(input, output);
    if (!seen_.insert(hash).second) return void(++summary_.duplicates_dropped);
    tokens_.clear();
    ByteTokenizer::encode_append(input, tokens_);
    const uint64_t loss_start = tokens_.size();
    ByteTokenizer::encode_append(output, tokens_);
    tokens_.push_back(ByteTokenizer::kEndOfText);
    const bool to_valid = valid_ && hash % 1000 < static_cast<uint64_t>(options_.valid_permille);
    (to_valid ? *valid_ : train_).add_document(tokens_, loss_start);
    ++(to_valid ? summary_.valid_documents : summary_.train_documents);
    (to_valid ? summary_.valid_tokens : summary_.train_tokens) += static_cast<int64_t>(tokens_.size());
  }

  void finish() {
    train_.finish();
    if (valid_) valid_->finish();
  }

 private:
  const PrepOptions& options_;
  PrepSummary& summary_;
  ShardWriter train_;
  std::unique_ptr<ShardWriter> valid_;
  std::unordered_set<uint64_t> seen_;  // 64-bit hashes: a false duplicate needs ~4e9 documents
  std::vector<uint32_t> tokens_;       // reused for every document
};

std::ifstream open_input(const std::string& path) {
  // A directory opens fine as a stream on Linux and then reads as empty: reject it by name.
  TRIDENT_CONFIG_CHECK(!std::filesystem::is_directory(path), "input ", path, " is a directory");
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in.good(), "cannot read input file ", path);
  return in;
}

void read_text_file(const std::string& path, ShardSink& sink) {
  std::ifstream in = open_input(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TRIDENT_CONFIG_CHECK(!in.bad(), "error reading input file ", path);
  sink.add("", text);
}

void read_jsonl_file(const std::string& path, ShardSink& sink) {
  std::ifstream in = open_input(path);
  std::string line;
  for (int64_t line_number = 1; std::getline(in, line); ++line_number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    PromptExample example;
    try {
      example = parse_prompt_example(line);
    } catch (const ConfigError& e) {
      throw ConfigError(detail::concat(path, ":", line_number, ": malformed JSONL line, ", e.what(),
                                       " (expected {\"input\": \"...\", \"output\": \"...\"})"));
    }
    sink.add(example.input, example.output);
  }
  TRIDENT_CONFIG_CHECK(!in.bad(), "error reading input file ", path);
}

}  // namespace

PromptExample parse_prompt_example(std::string_view line) { return JsonLine(line).parse_example(); }

std::string valid_shard_prefix(const std::string& output) { return output + "-valid"; }

// FNV-1a over input, its length, output; then splitmix64's finaliser so that hash % 1000 is
// evenly spread. The length keeps ("ab", "c") apart from ("a", "bc").
uint64_t document_content_hash(std::string_view input, std::string_view output) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix_byte = [&h](unsigned char c) { h = (h ^ c) * 0x100000001b3ull; };
  for (char c : input) mix_byte(static_cast<unsigned char>(c));
  for (int i = 0; i < 8; ++i) mix_byte(static_cast<unsigned char>(uint64_t(input.size()) >> (8 * i)));
  for (char c : output) mix_byte(static_cast<unsigned char>(c));
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

PrepSummary prepare_shards(const PrepOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  TRIDENT_CONFIG_CHECK(options.tokenizer == "byte", "unknown tokenizer '", options.tokenizer,
                       "' (available: byte)");
  TRIDENT_CONFIG_CHECK(options.valid_permille >= 0 && options.valid_permille <= 1000,
                       "--valid-permille must be in [0, 1000] (got ", options.valid_permille, ")");
  TRIDENT_CONFIG_CHECK(!options.inputs.empty(), "no input files given");
  TRIDENT_CONFIG_CHECK(!options.output.empty(), "no output prefix given");
  const std::filesystem::path parent = std::filesystem::path(options.output).parent_path();
  std::error_code ignored;  // if this fails, creating the shard says why
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);

  PrepSummary summary;
  ShardSink sink(options, summary);
  for (const std::string& path : options.inputs) {
    if (ends_with(path, ".jsonl"))
      read_jsonl_file(path, sink);
    else
      read_text_file(path, sink);
  }
  TRIDENT_CONFIG_CHECK(summary.documents_out() > 0, "no documents to write: all ",
                       summary.documents_in, " inputs were empty or duplicates");
  sink.finish();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace trident::data
