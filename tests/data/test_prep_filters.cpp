// Quality filters: each ratio on hand-made documents, each threshold dropping with its reason,
// and the defaults keeping ordinary prose and code.
#include <gtest/gtest.h>

#include "trident/data/filters.hpp"

namespace trident::data {
namespace {

TEST(Filters, RepeatedLineRatio) {
  EXPECT_DOUBLE_EQ(repeated_line_ratio("a\nb\nc\n"), 0.0);
  EXPECT_DOUBLE_EQ(repeated_line_ratio("a\nb\na  \n\n\n a\n"), 0.25);  // " a" differs; blanks ignored
  EXPECT_DOUBLE_EQ(repeated_line_ratio("spam\nspam\nspam\nspam\n"), 0.75);
  EXPECT_DOUBLE_EQ(repeated_line_ratio(""), 0.0);
}

TEST(Filters, RepeatedNgramRatio) {
  EXPECT_DOUBLE_EQ(repeated_ngram_ratio("one two three four five six", 3), 0.0);
  EXPECT_DOUBLE_EQ(repeated_ngram_ratio("a b c a b c", 3), 1.0);
  // "x y" repeats; with n = 2 the words of both occurrences count: 4 of 5 one-letter words.
  EXPECT_DOUBLE_EQ(repeated_ngram_ratio("x y z x y", 2), 0.8);
  EXPECT_DOUBLE_EQ(repeated_ngram_ratio("too short", 5), 0.0);
}

TEST(Filters, NonTextRatio) {
  EXPECT_DOUBLE_EQ(non_text_ratio("Hello, world! 123\n\t"), 0.0);
  EXPECT_DOUBLE_EQ(non_text_ratio("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87"), 0.0);  // letters of any script
  EXPECT_DOUBLE_EQ(non_text_ratio(std::string("ab\x01\x02", 4)), 0.5);
  EXPECT_DOUBLE_EQ(non_text_ratio("ab\xFF\xFE"), 0.5);                        // invalid UTF-8
  EXPECT_DOUBLE_EQ(non_text_ratio("\xE2\x94\x80\xE2\x94\x80" "ab"), 0.5);        // box drawing
  EXPECT_DOUBLE_EQ(non_text_ratio("\xF0\x9F\x98\x80" "abc"), 0.25);           // an emoji
}

TEST(Filters, EachThresholdDropsWithItsReason) {
  FilterOptions o;
  o.min_chars = 5;
  o.max_chars = 20;
  EXPECT_EQ(failed_filter("abc", o), DropReason::kTooShort);
  EXPECT_EQ(failed_filter(std::string(21, 'a'), o), DropReason::kTooLong);
  EXPECT_EQ(failed_filter("a\na\na\na\n", o), DropReason::kRepeatedLines);
  EXPECT_EQ(failed_filter(std::string("ab\x01\x02\x03\x04", 6), o), DropReason::kNonText);
  o.max_chars = 0;
  EXPECT_EQ(failed_filter("buy now buy now buy now buy now buy now buy now buy now buy now", o),
            DropReason::kRepeatedNgrams);
  EXPECT_EQ(failed_filter("A perfectly normal sentence about nothing in particular.", o), std::nullopt);
}

TEST(Filters, DefaultsKeepProseAndCode) {
  const FilterOptions defaults;
  const std::string code =
      "import os\n\n\nclass Reader:\n    def __init__(self, path):\n        self.path = path\n\n"
      "    def read(self):\n        with open(self.path) as f:\n            return f.read()\n\n"
      "    def size(self):\n        return os.path.getsize(self.path)\n\n"
      "    def exists(self):\n        return os.path.exists(self.path)\n";
  EXPECT_EQ(failed_filter(code, defaults), std::nullopt);
  EXPECT_EQ(failed_filter("The quick brown fox jumps over the lazy dog. It was not amused.", defaults),
            std::nullopt);
  EXPECT_EQ(failed_filter("x", defaults), std::nullopt);  // no minimum by default
}

}  // namespace
}  // namespace trident::data
