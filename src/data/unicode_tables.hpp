// Layout of the generated Unicode tables (src/data/unicode_tables.cpp, written by
// utils/gen_unicode_tables.py): every table sorted by its first column.
#pragma once
#include <cstddef>
#include <cstdint>

namespace trident::data::unicode_tables {

struct CodeRange {  // code points first..last (inclusive)
  uint32_t first, last;
};
struct ClassRange {  // canonical combining class of first..last
  uint32_t first, last, ccc;
};
struct Decomposition {  // canonical decomposition of `cp`: first [second] (second 0: singleton)
  uint32_t cp, first, second;
};
struct Composition {  // primary composite of the pair (first, second), sorted by (first, second)
  uint32_t first, second, composite;
};
// Compatibility decomposition of `cp`: its full NFKD is kCompatCodePoints[offset, offset + length).
struct CompatDecomposition {
  uint32_t cp, offset, length;
};

extern const CodeRange kLetters[];  // general category L*
extern const size_t kLetters_size;
extern const CodeRange kNumbers[];  // general category N*
extern const size_t kNumbers_size;
extern const CodeRange kMarks[];  // general category M*
extern const size_t kMarks_size;
extern const CodeRange kWordExtras[];  // \w beyond L and M: Nd, Nl, Pc, ZWNJ/ZWJ, circled letters
extern const size_t kWordExtras_size;
extern const ClassRange kCombiningClasses[];  // non-zero classes only
extern const size_t kCombiningClasses_size;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositions_size;
extern const Composition kCompositions[];
extern const size_t kCompositions_size;
extern const CompatDecomposition kCompatDecompositions[];
extern const size_t kCompatDecompositions_size;
extern const uint32_t kCompatCodePoints[];
extern const size_t kCompatCodePoints_size;

}  // namespace trident::data::unicode_tables
