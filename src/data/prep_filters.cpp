// Quality filters: repeated lines, repeated word n-grams and non-text characters, measured as
// ratios over one document (definitions in filters.hpp). Hashes stand in for strings: a false
// "repeat" needs a 64-bit collision inside one document.
#include "trident/data/filters.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

namespace trident::data {
namespace {

uint64_t hash_bytes(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Code point at s[i] and its length in bytes; length 1 and cp = -1 for an invalid sequence.
int64_t decode_utf8(std::string_view s, size_t i, size_t& length) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  length = 1;
  if (c < 0x80) return c;
  const size_t n = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return -1;
  int64_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  length = n;
  return cp;
}

bool is_non_text(int64_t cp) {
  if (cp < 0) return true;
  if (cp < 0x80) return cp < 0x20 ? !(cp >= 0x09 && cp <= 0x0D) : cp == 0x7F;
  return cp == 0xFFFD || (cp >= 0x80 && cp <= 0x9F) || (cp >= 0xE000 && cp <= 0xF8FF) ||
         (cp >= 0x2500 && cp <= 0x259F) || (cp >= 0x2600 && cp <= 0x27BF) ||
         (cp >= 0x1F000 && cp <= 0x1FAFF);
}

}  // namespace

const char* drop_reason_name(DropReason reason) {
  static constexpr const char* kNames[] = {"too_short", "too_long", "repeated_lines", "repeated_ngrams",
                                           "non_text"};
  return kNames[static_cast<int>(reason)];
}

double repeated_line_ratio(std::string_view text) {
  std::unordered_set<uint64_t> seen;
  int64_t lines = 0, repeats = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
    begin = end + 1;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    ++lines;
    repeats += !seen.insert(hash_bytes(line)).second;
  }
  return lines ? static_cast<double>(repeats) / static_cast<double>(lines) : 0.0;
}

double repeated_ngram_ratio(std::string_view text, int n) {
  std::vector<std::string_view> words;
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && is_space(text[i])) ++i;
    const size_t begin = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > begin) words.push_back(text.substr(begin, i - begin));
  }
  if (n < 1 || words.size() < static_cast<size_t>(n)) return 0.0;
  const size_t grams = words.size() - static_cast<size_t>(n) + 1;
  // Each word hashed once; an n-gram's hash combines its words' hashes (order-sensitive).
  std::vector<uint64_t> word_hash(words.size()), gram_hash(grams);
  for (size_t w = 0; w < words.size(); ++w) word_hash[w] = hash_bytes(words[w]);
  for (size_t g = 0; g < grams; ++g) {
    uint64_t h = 0;
    for (int k = 0; k < n; ++k) h = (h ^ word_hash[g + k]) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(k);
    gram_hash[g] = h ^ (h >> 29);
  }
  // Hashes occurring more than once, sorted (a sort beats a hash map of counts here).
  std::vector<uint64_t> sorted = gram_hash, repeated_hashes;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 1; k < sorted.size(); ++k)
    if (sorted[k] == sorted[k - 1] && (repeated_hashes.empty() || repeated_hashes.back() != sorted[k]))
      repeated_hashes.push_back(sorted[k]);
  std::vector<bool> covered(words.size(), false);
  for (size_t g = 0; g < grams; ++g)
    if (std::binary_search(repeated_hashes.begin(), repeated_hashes.end(), gram_hash[g]))
      for (int k = 0; k < n; ++k) covered[g + k] = true;
  int64_t total = 0, repeated = 0;
  for (size_t w = 0; w < words.size(); ++w) {
    total += static_cast<int64_t>(words[w].size());
    if (covered[w]) repeated += static_cast<int64_t>(words[w].size());
  }
  return total ? static_cast<double>(repeated) / static_cast<double>(total) : 0.0;
}

double non_text_ratio(std::string_view text) {
  int64_t chars = 0, non_text = 0;
  for (size_t i = 0; i < text.size();) {
    size_t length = 1;
    const int64_t cp = decode_utf8(text, i, length);
    ++chars;
    non_text += is_non_text(cp);
    i += length;
  }
  return chars ? static_cast<double>(non_text) / static_cast<double>(chars) : 0.0;
}

std::optional<DropReason> failed_filter(std::string_view text, const FilterOptions& options) {
  const int64_t size = static_cast<int64_t>(text.size());
  if (options.min_chars > 0 && size < options.min_chars) return DropReason::kTooShort;
  if (options.max_chars > 0 && size > options.max_chars) return DropReason::kTooLong;
  if (options.max_non_text_ratio < 1 && non_text_ratio(text) > options.max_non_text_ratio)
    return DropReason::kNonText;
  if (options.max_repeated_line_ratio < 1 && repeated_line_ratio(text) > options.max_repeated_line_ratio)
    return DropReason::kRepeatedLines;
  if (options.max_repeated_ngram_ratio < 1 &&
      repeated_ngram_ratio(text, options.ngram_words) > options.max_repeated_ngram_ratio)
    return DropReason::kRepeatedNgrams;
  return std::nullopt;
}

}  // namespace trident::data
