// Helpers shared by the evalgen suites (private to src/data/evalgen/): numbers of a given
// digit count, random letters and words, list joining, and numeric near misses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/core/json.hpp"
#include "trident/data/evalgen/rng.hpp"

namespace trident::data::evalgen {

// A non-negative integer of exactly `digits` decimal digits (1 digit: 0..9).
int64_t draw_with_digits(EvalRng& rng, int64_t digits);
// Number of decimal digits of |v|.
int digit_count(int64_t v);
// "1234567" -> "1,234,567" (sign kept).
std::string with_commas(int64_t v);
// `len` lower-case letters.
std::string random_letters(EvalRng& rng, int64_t len);
// `k` distinct words of `words` in random order (k <= words.size()).
std::vector<std::string> distinct_words(EvalRng& rng, const std::vector<std::string>& words, int64_t k);
std::string join(const std::vector<std::string>& items, const std::string& sep);
std::vector<std::string> split(const std::string& s, const std::string& sep);

Json string_array(const std::vector<std::string>& items);
Json int_array(const std::vector<int64_t>& items);
std::vector<std::string> strings_of(const Json& array);
std::vector<int64_t> ints_of(const Json& array);

// Near misses of an integer answer: +-1, one digit changed by one, two neighbouring digits
// swapped, +-10, +-2, ... (duplicates and the value itself may appear; callers filter).
std::vector<std::string> integer_near_misses(int64_t v);
// Near misses of a string: neighbouring characters swapped, one deleted, one doubled, one
// letter replaced by the next.
std::vector<std::string> string_near_misses(const std::string& s);
// The phrases that name an arithmetic operation ("add", "subtract", "multiply", "divide") in a
// question (RewordRule), and those of every operation but `op`.
const std::vector<std::string>& operation_phrases(const std::string& op);
std::vector<std::string> other_operation_phrases(const std::string& op);
// Phrases of the text transformations a copy / reverse / sort question must not turn into.
const std::vector<std::string>& reordering_phrases();  // reverse, sort, alphabetical, ...
const std::vector<std::string>& selection_phrases();   // first, only, except, uppercase, ...

// Near misses of a list: two neighbours swapped, any two swapped, rotated, one dropped, one doubled.
std::vector<std::vector<std::string>> list_near_misses(const std::vector<std::string>& items);

}  // namespace trident::data::evalgen
