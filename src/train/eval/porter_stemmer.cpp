// NLTK's Porter stemmer, NLTK_EXTENSIONS mode (porter_stemmer.hpp), rule for rule as
// nltk/stem/porter.py writes it.
#include "trident/train/eval/porter_stemmer.hpp"

#include <span>
#include <utility>

namespace trident::train {

namespace {

bool is_vowel_letter(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

// Porter's consonant: anything but a, e, i, o, u, and but a y that follows a consonant
// (a y that starts the word is one). A run of y's alternates.
bool is_consonant(std::string_view w, size_t i) {
  bool negate = false;
  while (i > 0 && w[i] == 'y') negate = !negate, --i;
  return !is_vowel_letter(w[i]) != negate;
}

// m in [C](VC){m}[V]: the number of vowel-to-consonant changes.
int measure(std::string_view s) {
  int m = 0;
  bool previous_consonant = true;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool consonant = is_vowel_letter(s[i]) ? false : s[i] == 'y' ? (i == 0 || !previous_consonant) : true;
    if (i > 0 && consonant && !previous_consonant) ++m;
    previous_consonant = consonant;
  }
  return m;
}

// *v*: the stem holds a vowel.
bool contains_vowel(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (!is_consonant(s, i)) return true;
  return false;
}

// *d: the word ends with a double consonant.
bool ends_double_consonant(std::string_view w) {
  return w.size() >= 2 && w[w.size() - 1] == w[w.size() - 2] && is_consonant(w, w.size() - 1);
}

// *o: the word ends consonant-vowel-consonant, the last not w, x or y; NLTK adds a whole word
// of two letters, vowel then consonant.
bool ends_cvc(std::string_view w) {
  const size_t n = w.size();
  if (n >= 3 && is_consonant(w, n - 3) && !is_consonant(w, n - 2) && is_consonant(w, n - 1) && w[n - 1] != 'w' &&
      w[n - 1] != 'x' && w[n - 1] != 'y')
    return true;
  return n == 2 && !is_consonant(w, 0) && is_consonant(w, 1);
}

std::string_view without(std::string_view w, size_t suffix_length) { return w.substr(0, w.size() - suffix_length); }

std::string concat(std::string_view a, std::string_view b) {
  std::string out(a);
  out += b;
  return out;
}

// A suffix rule: suffix -> replacement where condition(stem, word) holds (null: always);
// stem is the word without the suffix.
using Condition = bool (*)(std::string_view stem, std::string_view word);
struct Rule {
  std::string_view suffix, replacement;
  Condition condition;
};

bool measure_above_0(std::string_view stem, std::string_view) { return measure(stem) > 0; }
bool measure_above_1(std::string_view stem, std::string_view) { return measure(stem) > 1; }

// NLTK's _apply_rule_list: the first rule whose suffix ends the word decides alone; where its
// condition fails, the word stays as it is.
std::string apply_first_rule(std::string_view word, std::span<const Rule> rules) {
  for (const Rule& rule : rules) {
    if (!word.ends_with(rule.suffix)) continue;
    const std::string_view stem = without(word, rule.suffix.size());
    if (rule.condition && !rule.condition(stem, word)) return std::string(word);
    return concat(stem, rule.replacement);
  }
  return std::string(word);
}

// SSES -> SS, IES -> I, SS -> SS, S -> ; NLTK: a four-letter word in -ies -> -ie (dies -> die).
std::string step1a(std::string_view w) {
  static constexpr Rule kRules[] = {
      {"sses", "ss", nullptr}, {"ies", "i", nullptr}, {"ss", "ss", nullptr}, {"s", "", nullptr}};
  if (w.size() == 4 && w.ends_with("ies")) return concat(without(w, 3), "ie");
  return apply_first_rule(w, kRules);
}

// After -ed or -ing came off: AT -> ATE, BL -> BLE, IZ -> IZE, a double consonant other than
// l, s, z -> single, (m=1 and *o) -> E.
std::string step1b_tidy(std::string_view stem) {
  static constexpr Rule kRestore[] = {{"at", "ate", nullptr}, {"bl", "ble", nullptr}, {"iz", "ize", nullptr}};
  for (const Rule& rule : kRestore)
    if (stem.ends_with(rule.suffix)) return concat(without(stem, rule.suffix.size()), rule.replacement);
  if (ends_double_consonant(stem)) {
    const char last = stem.back();
    return std::string(last == 'l' || last == 's' || last == 'z' ? stem : without(stem, 1));
  }
  if (measure(stem) == 1 && ends_cvc(stem)) return concat(stem, "e");
  return std::string(stem);
}

// NLTK: -ied -> -ie in a four-letter word, else -i; (m>0) EED -> EE; (*v*) ED -> ; (*v*) ING -> .
std::string step1b(std::string_view w) {
  if (w.ends_with("ied")) return concat(without(w, 3), w.size() == 4 ? "ie" : "i");
  if (w.ends_with("eed")) return measure(without(w, 3)) > 0 ? concat(without(w, 3), "ee") : std::string(w);
  if (w.ends_with("ed") && contains_vowel(without(w, 2))) return step1b_tidy(without(w, 2));
  if (w.ends_with("ing") && contains_vowel(without(w, 3))) return step1b_tidy(without(w, 3));
  return std::string(w);
}

// NLTK: Y -> I after a consonant that is not the whole stem (happy -> happi, enjoy, sky stay).
std::string step1c(std::string_view w) {
  if (!w.ends_with('y')) return std::string(w);
  const std::string_view stem = without(w, 1);
  return stem.size() > 1 && is_consonant(stem, stem.size() - 1) ? concat(stem, "i") : std::string(w);
}

// NLTK: -logi -> -log when the stem with its l has m>0 (geologi -> geolog).
bool logi_condition(std::string_view, std::string_view word) { return measure(without(word, 3)) > 0; }

std::string step2(std::string_view w) {
  // NLTK: ALLI -> AL first, and the result through step 2 again.
  if (w.ends_with("alli") && measure(without(w, 4)) > 0) return step2(concat(without(w, 4), "al"));
  static constexpr Rule kRules[] = {
      {"ational", "ate", measure_above_0}, {"tional", "tion", measure_above_0}, {"enci", "ence", measure_above_0},
      {"anci", "ance", measure_above_0},   {"izer", "ize", measure_above_0},    {"bli", "ble", measure_above_0},
      {"alli", "al", measure_above_0},     {"entli", "ent", measure_above_0},   {"eli", "e", measure_above_0},
      {"ousli", "ous", measure_above_0},   {"ization", "ize", measure_above_0}, {"ation", "ate", measure_above_0},
      {"ator", "ate", measure_above_0},    {"alism", "al", measure_above_0},    {"iveness", "ive", measure_above_0},
      {"fulness", "ful", measure_above_0}, {"ousness", "ous", measure_above_0}, {"aliti", "al", measure_above_0},
      {"iviti", "ive", measure_above_0},   {"biliti", "ble", measure_above_0},  {"fulli", "ful", measure_above_0},
      {"logi", "log", logi_condition},
  };
  return apply_first_rule(w, kRules);
}

std::string step3(std::string_view w) {
  static constexpr Rule kRules[] = {
      {"icate", "ic", measure_above_0}, {"ative", "", measure_above_0}, {"alize", "al", measure_above_0},
      {"iciti", "ic", measure_above_0}, {"ical", "ic", measure_above_0}, {"ful", "", measure_above_0},
      {"ness", "", measure_above_0},
  };
  return apply_first_rule(w, kRules);
}

// (m>1 and (*S or *T)) ION -> .
bool ion_condition(std::string_view stem, std::string_view) {
  return measure(stem) > 1 && (stem.back() == 's' || stem.back() == 't');
}

std::string step4(std::string_view w) {
  static constexpr Rule kRules[] = {
      {"al", "", measure_above_1},   {"ance", "", measure_above_1}, {"ence", "", measure_above_1},
      {"er", "", measure_above_1},   {"ic", "", measure_above_1},   {"able", "", measure_above_1},
      {"ible", "", measure_above_1}, {"ant", "", measure_above_1},  {"ement", "", measure_above_1},
      {"ment", "", measure_above_1}, {"ent", "", measure_above_1},  {"ion", "", ion_condition},
      {"ou", "", measure_above_1},   {"ism", "", measure_above_1},  {"ate", "", measure_above_1},
      {"iti", "", measure_above_1},  {"ous", "", measure_above_1},  {"ive", "", measure_above_1},
      {"ize", "", measure_above_1},
  };
  return apply_first_rule(w, kRules);
}

// (m>1) E -> ; (m=1 and not *o) E -> .
std::string step5a(std::string_view w) {
  if (!w.ends_with('e')) return std::string(w);
  const std::string_view stem = without(w, 1);
  const int m = measure(stem);
  return m > 1 || (m == 1 && !ends_cvc(stem)) ? std::string(stem) : std::string(w);
}

// (m>1 and *d and *L) -> single letter, m taken of the word less one l.
bool ll_condition(std::string_view, std::string_view word) { return measure(without(word, 1)) > 1; }

std::string step5b(std::string_view w) {
  static constexpr Rule kRules[] = {{"ll", "l", ll_condition}};
  return apply_first_rule(w, kRules);
}

// NLTK's irregular forms: these words stem to the given stem whatever the rules say.
const char* irregular_stem(std::string_view w) {
  static constexpr std::pair<std::string_view, const char*> kPool[] = {
      {"sky", "sky"},         {"skies", "sky"},       {"dying", "die"},       {"lying", "lie"},
      {"tying", "tie"},       {"news", "news"},       {"innings", "inning"},  {"inning", "inning"},
      {"outings", "outing"},  {"outing", "outing"},   {"cannings", "canning"}, {"canning", "canning"},
      {"howe", "howe"},       {"proceed", "proceed"}, {"exceed", "exceed"},   {"succeed", "succeed"},
  };
  for (const auto& [form, stem] : kPool)
    if (w == form) return stem;
  return nullptr;
}

}  // namespace

std::string porter_stem(std::string_view word) {
  std::string w(word);
  for (char& c : w)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');  // NLTK lowercases first
  if (const char* irregular = irregular_stem(w)) return irregular;
  if (w.size() <= 2) return w;
  w = step1a(w);
  w = step1b(w);
  w = step1c(w);
  w = step2(w);
  w = step3(w);
  w = step4(w);
  w = step5a(w);
  return step5b(w);
}

}  // namespace trident::train
