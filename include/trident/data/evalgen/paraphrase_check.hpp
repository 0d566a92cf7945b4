// The verifier of `trident evalgen --paraphrase`: is a model's rewording of a case's prompt the
// same case? The rule, in the order it is applied (the first rule broken is the verdict):
//   same_as_source  the rewrite equals the original once whitespace runs are one space and
//                   ASCII letters lower case (not a paraphrase: dropped, counted as a duplicate);
//   length          it has from half to twice the original's bytes (+ 20);
//   answer_cue      the original's last line, when it is an answer cue (at most 20 bytes, ending
//                   in ':', e.g. "Answer:"), is the rewrite's last line too;
//   numbers         the numbers (maximal runs of ASCII digits) are the original's, as a multiset:
//                   none changed, dropped, added or repeated;
//   operands        every slot value the original shows (operands, expressions, lists, texts,
//                   the key-value block, keys, weekdays, dates: EvalCase::slots) and every word of
//                   the suite's vocabulary (words.json) occurs, verbatim and bounded (no ASCII
//                   letter or digit glued to either end), as often as in the original;
//   answer_leak     no accepted answer occurs (bounded) more often than in the original;
//   operation       the suite's RewordRule (suite.hpp): a phrase of every must_say group and none
//                   of must_not_say, as whole words, case-insensitive (tokens: runs of ASCII
//                   letters, digits and non-ASCII bytes, each other non-space byte alone);
//   order           the RewordRule's operand orders (a before b in a - b, unless "from" says
//                   "subtract b from a");
//   unit            a count's value is followed by its unit ("5 days") as often as in the
//                   original;
//   checker         the case with the rewritten prompt passes verify_case (generate.hpp): the
//                   checker's answers, recomputed from the parameters, are the case's.
// Rewrites of one case that are equal under the same normalisation are duplicates (the caller
// keeps the first).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trident/data/evalgen/suite.hpp"

namespace trident::data::evalgen {

enum class RewriteVerdict {
  kKept,
  kSameAsSource,
  kLength,
  kAnswerCue,
  kNumbers,
  kOperands,
  kAnswerLeak,
  kOperation,
  kOrder,
  kUnit,
  kChecker,
};
constexpr int kRewriteVerdicts = static_cast<int>(RewriteVerdict::kChecker) + 1;
const char* rewrite_verdict_name(RewriteVerdict v);  // "kept", "same_as_source", "length", ...

// The verdict on `rewrite` (leading and trailing whitespace ignored) as the prompt of `source`;
// words: the suite's vocabulary (SuiteSpec::words).
RewriteVerdict check_rewrite(const Suite& suite, const EvalCase& source, std::string_view rewrite,
                             const std::vector<std::string>& words);

// Whitespace runs as one space, no leading or trailing whitespace, ASCII letters lower case.
std::string normalize_rewrite(std::string_view text);

// Occurrences of `value` in `text`, left to right without overlap, not glued to an ASCII letter
// or digit on a side where value itself starts or ends with one ("12" is not in "123").
int64_t count_bounded(std::string_view text, std::string_view value);

// `text` with every bounded occurrence of a slot value, longest values first, replaced by
// `marker`: the words a question asks with, apart from its data ("sort" as a key).
std::string mask_slots(std::string_view text, const std::map<std::string, std::string>& slots, std::string_view marker);

// The words of `text` for phrase matching and n-grams: lower-case runs of ASCII letters, digits
// and non-ASCII bytes; every other non-space byte is a token of its own.
std::vector<std::string> word_tokens(std::string_view text);

}  // namespace trident::data::evalgen
