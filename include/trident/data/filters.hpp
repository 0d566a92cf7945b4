// Document quality filters of `trident prep` (Gopher-style heuristics), each a ratio in [0, 1]
// computed on the document's text and compared against a threshold; a document failing one is
// dropped and counted under that reason. The defaults keep ordinary prose and source code (the
// Python standard library passes whole) and drop boilerplate, spam and binary junk.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace trident::data {

struct FilterOptions {
  int64_t min_chars = 0;                   // fewer bytes: dropped (0 = off; empty is always dropped)
  int64_t max_chars = 0;                   // more bytes: dropped (0 = off)
  double max_repeated_line_ratio = 0.5;    // see repeated_line_ratio (1 = off)
  double max_repeated_ngram_ratio = 0.8;   // see repeated_ngram_ratio (1 = off)
  int ngram_words = 5;                     // n of the n-gram filter
  double max_non_text_ratio = 0.2;         // see non_text_ratio (1 = off)
};

enum class DropReason {
  kTooShort, kTooLong, kRepeatedLines, kRepeatedNgrams, kNonText, kCount
};
const char* drop_reason_name(DropReason reason);  // "too_short", "too_long", "repeated_lines", ...

// The first filter `text` fails, or nothing when it passes them all.
std::optional<DropReason> failed_filter(std::string_view text, const FilterOptions& options);

// Share of the non-blank lines (trailing whitespace ignored) that repeat an earlier line.
double repeated_line_ratio(std::string_view text);

// Share of the characters of whitespace-separated words that lie in a word n-gram occurring
// more than once in the document (Gopher's "duplicate n-gram character fraction"). Documents
// of fewer than n words: 0.
double repeated_ngram_ratio(std::string_view text, int n);

// Share of the characters (UTF-8 code points) that are not letters, digits, punctuation or
// whitespace: ASCII control characters other than \t \n \r \f \v, bytes that are not valid
// UTF-8, U+FFFD, C1 controls, private-use code points, box drawing and block elements
// (U+2500-259F) and symbols/emoji (U+2600-27BF, U+1F000-1FAFF). Any other non-ASCII code point
// counts as text (letters of every script).
double non_text_ratio(std::string_view text);

}  // namespace trident::data
