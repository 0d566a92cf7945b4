// Python str semantics over UTF-8 for the template interpreter: lengths, indexes and slices count
// code points (a byte that is not well-formed UTF-8 counts as one), whitespace is str.isspace(),
// and strip/split/case behave as Python's str methods do.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trident::data::jinja {

// Byte offset of each code point of `s`, plus s.size() at the end (so size() - 1 code points).
std::vector<size_t> code_point_offsets(std::string_view s);
size_t code_point_count(std::string_view s);
std::vector<std::string> code_points(std::string_view s);  // each as its UTF-8 text

// Python's str.isspace() for one code point.
bool is_py_space(uint32_t cp);

// str.strip/lstrip/rstrip: `chars` absent strips whitespace, else the code points in it.
enum class StripSide { kBoth, kLeft, kRight };
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side);

// str.split(sep, maxsplit) and str.split() (sep absent: runs of whitespace, no empty parts);
// maxsplit < 0 is no limit. An empty separator is the caller's error to report.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.rsplit, the same from the right.
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);

// str.replace(old, new, count); count < 0 is every occurrence.
std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count);

// Case mapping of ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic letters (other scripts
// are left as they are: a documented approximation of Python's full Unicode tables).
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);  // first upper, the rest lower
std::string py_title(std::string_view s);       // each run of letters: first upper, rest lower

}  // namespace trident::data::jinja
