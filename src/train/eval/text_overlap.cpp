// ROUGE and BLEU as rouge-score and sacrebleu compute them (text_overlap.hpp).
#include "trident/train/eval/text_overlap.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "trident/data/unicode.hpp"
#include "trident/train/eval/porter_stemmer.hpp"

namespace trident::train {

namespace {

namespace unicode = data::unicode;

// Code points of UTF-8 text; a byte that starts no well-formed sequence is kept as itself,
// shifted past the code point range (it then matches no class and survives as it was).
constexpr uint32_t kRawByte = 0x110000;

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const unicode::Decoded d = unicode::decode_utf8(s, i);
    out.push_back(d.cp == unicode::kInvalid ? kRawByte + uint8_t(s[i]) : d.cp);
    i += d.length;
  }
  return out;
}

std::string utf8(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    if (cps[i] >= kRawByte) out.push_back(char(cps[i] - kRawByte));
    else unicode::append_utf8(cps[i], out);
  }
  return out;
}

// Python's str.isspace().
bool python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

double fmeasure(double precision, double recall) {
  return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0;
}

// LCS table of a (rows) and b (columns), (|a| + 1) x (|b| + 1), row-major.
std::vector<int32_t> lcs_table(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const size_t cols = b.size() + 1;
  std::vector<int32_t> t((a.size() + 1) * cols, 0);
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i * cols + j] = a[i - 1] == b[j - 1] ? t[(i - 1) * cols + j - 1] + 1
                                             : std::max(t[(i - 1) * cols + j], t[i * cols + j - 1]);
  return t;
}

// The indices into ref of one LCS of ref and can: rouge-score's _backtrack_norec.
std::vector<size_t> lcs_indices(const std::vector<std::string>& ref, const std::vector<std::string>& can) {
  const std::vector<int32_t> t = lcs_table(ref, can);
  const size_t cols = can.size() + 1;
  std::vector<size_t> out;
  size_t i = ref.size(), j = can.size();
  while (i > 0 && j > 0) {
    if (ref[i - 1] == can[j - 1]) {
      out.push_back(i - 1);
      --i, --j;
    } else if (t[i * cols + j - 1] > t[(i - 1) * cols + j]) {
      --j;
    } else {
      --i;
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

double rouge_n(const std::vector<std::string>& prediction, const std::vector<std::string>& reference, size_t n) {
  auto grams = [n](const std::vector<std::string>& tokens) {
    std::map<std::vector<std::string>, int64_t> counts;
    for (size_t i = 0; i + n <= tokens.size(); ++i) ++counts[std::vector<std::string>(tokens.begin() + i, tokens.begin() + i + n)];
    return counts;
  };
  const auto target = grams(reference), predicted = grams(prediction);
  int64_t overlap = 0, target_count = 0, predicted_count = 0;
  for (const auto& [g, c] : target) {
    target_count += c;
    const auto it = predicted.find(g);
    if (it != predicted.end()) overlap += std::min(c, it->second);
  }
  for (const auto& [g, c] : predicted) predicted_count += c;
  return fmeasure(double(overlap) / double(std::max<int64_t>(predicted_count, 1)),
                  double(overlap) / double(std::max<int64_t>(target_count, 1)));
}

double rouge_l(const std::vector<std::string>& prediction, const std::vector<std::string>& reference) {
  if (prediction.empty() || reference.empty()) return 0.0;
  const double lcs = lcs_table(reference, prediction).back();
  return fmeasure(lcs / double(prediction.size()), lcs / double(reference.size()));
}

// Newline-separated sentences (empty ones dropped), each tokenized (and stemmed) on its own.
std::vector<std::vector<std::string>> sentences(std::string_view text, bool stem) {
  std::vector<std::vector<std::string>> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    if (end > begin) out.push_back(rouge_tokens(text.substr(begin, end - begin), stem));
    begin = end + 1;
  }
  return out;
}

double rouge_lsum(std::string_view prediction, std::string_view reference, bool stem) {
  const auto ref = sentences(reference, stem), can = sentences(prediction, stem);
  if (ref.empty() || can.empty()) return 0.0;
  std::map<std::string, int64_t> ref_counts, can_counts;
  int64_t m = 0, n = 0;
  for (const auto& s : ref)
    for (const std::string& t : s) ++ref_counts[t], ++m;
  for (const auto& s : can)
    for (const std::string& t : s) ++can_counts[t], ++n;
  if (m == 0 || n == 0) return 0.0;
  int64_t hits = 0;
  for (const auto& r : ref) {
    std::set<size_t> uni;  // union of the LCS indices into r against every candidate sentence
    for (const auto& c : can)
      for (size_t i : lcs_indices(r, c)) uni.insert(i);
    for (size_t i : uni) {
      int64_t& in_can = can_counts[r[i]];
      int64_t& in_ref = ref_counts[r[i]];
      if (in_can > 0 && in_ref > 0) ++hits, --in_can, --in_ref;  // each token counted once
    }
  }
  return fmeasure(double(hits) / double(n), double(hits) / double(m));
}

// Python's re.sub of a two-character pattern, left to right without overlaps: where first(a)
// and second(b) hold for neighbours a, b, emit(a, b) replaces them.
template <typename First, typename Second, typename Emit>
std::vector<uint32_t> substitute_pairs(const std::vector<uint32_t>& s, First first, Second second, Emit emit) {
  std::vector<uint32_t> out;
  out.reserve(s.size() * 2);
  for (size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(s[i], s[i + 1], out);
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

std::vector<std::string> rouge_tokens(std::string_view text, bool stem) {
  std::vector<std::string> tokens;
  std::string current;
  auto flush = [&] {
    if (!current.empty()) tokens.push_back(current), current.clear();
  };
  for (const uint32_t c : code_points(text)) {
    // str.lower(): ASCII letters, and the two characters whose lowercase holds one (U+0130 is
    // "i" + a combining dot, U+212A KELVIN SIGN is "k"); anything else is a separator.
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) current.push_back(char(c));
    else if (c >= 'A' && c <= 'Z') current.push_back(char(c - 'A' + 'a'));
    else if (c == 0x130) current.push_back('i'), flush();
    else if (c == 0x212A) current.push_back('k');
    else flush();
  }
  flush();
  if (stem)  // tokenize.py: only tokens of more than 3 characters are stemmed
    for (std::string& t : tokens)
      if (t.size() > 3) t = porter_stem(t);
  return tokens;
}

RougeScores rouge(std::string_view prediction, std::string_view reference, bool stem) {
  const std::vector<std::string> p = rouge_tokens(prediction, stem), r = rouge_tokens(reference, stem);
  return {.rouge1 = rouge_n(p, r, 1), .rouge2 = rouge_n(p, r, 2), .rougeL = rouge_l(p, r),
          .rougeLsum = rouge_lsum(prediction, reference, stem)};
}

RougeScores rouge(std::string_view prediction, const std::vector<std::string>& references, bool stem) {
  RougeScores best;
  bool first = true;
  for (const std::string& reference : references) {  // numpy's argmax: the first of equal maxima
    const RougeScores s = rouge(prediction, reference, stem);
    if (first || s.rouge1 > best.rouge1) best.rouge1 = s.rouge1;
    if (first || s.rouge2 > best.rouge2) best.rouge2 = s.rouge2;
    if (first || s.rougeL > best.rougeL) best.rougeL = s.rougeL;
    if (first || s.rougeLsum > best.rougeLsum) best.rougeLsum = s.rougeLsum;
    first = false;
  }
  return best;
}

std::vector<std::string> bleu_tokens_13a(std::string_view text) {
  std::vector<uint32_t> cps = code_points(text);
  while (!cps.empty() && python_space(cps.back())) cps.pop_back();  // rstrip()
  std::string line = utf8(cps, 0, cps.size());
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  cps = code_points(" " + line + " ");
  // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
  std::vector<uint32_t> s;
  for (const uint32_t c : cps) {
    const bool punct = (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
                       (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
    if (punct) s.insert(s.end(), {' ', c, ' '});
    else s.push_back(c);
  }
  auto digit = [](uint32_t c) { return c >= '0' && c <= '9'; };
  auto not_digit = [&](uint32_t c) { return !digit(c); };
  auto period_comma = [](uint32_t c) { return c == '.' || c == ','; };
  // ([^0-9])([\.,]) -> "\1 \2 "; ([\.,])([^0-9]) -> " \1 \2"; ([0-9])(-) -> "\1 \2 "
  s = substitute_pairs(s, not_digit, period_comma, [](uint32_t a, uint32_t b, auto& out) { out.insert(out.end(), {a, ' ', b, ' '}); });
  s = substitute_pairs(s, period_comma, not_digit, [](uint32_t a, uint32_t b, auto& out) { out.insert(out.end(), {' ', a, ' ', b}); });
  s = substitute_pairs(s, digit, [](uint32_t c) { return c == '-'; },
                       [](uint32_t a, uint32_t b, auto& out) { out.insert(out.end(), {a, ' ', b, ' '}); });
  std::vector<std::string> tokens;  // str.split()
  for (size_t i = 0; i < s.size();) {
    while (i < s.size() && python_space(s[i])) ++i;
    const size_t begin = i;
    while (i < s.size() && !python_space(s[i])) ++i;
    if (i > begin) tokens.push_back(utf8(s, begin, i));
  }
  return tokens;
}

void CorpusBleu::add(std::string_view prediction, std::string_view reference) {
  add(prediction, std::vector<std::string>{std::string(reference)});
}

BleuStats BleuStats::of(std::string_view prediction, const std::vector<std::string>& references) {
  BleuStats out;
  const std::vector<std::string> hyp = bleu_tokens_13a(prediction);
  std::vector<std::vector<std::string>> refs;
  for (const std::string& r : references) refs.push_back(bleu_tokens_13a(r));
  int64_t closest = -1;  // the reference length closest to the prediction's, the shorter on a tie
  for (const auto& ref : refs) {
    const int64_t len = int64_t(ref.size()), diff = std::abs(len - int64_t(hyp.size()));
    const int64_t best = std::abs(closest - int64_t(hyp.size()));
    if (closest < 0 || diff < best || (diff == best && len < closest)) closest = len;
  }
  for (size_t n = 1; n <= 4; ++n) {
    std::map<std::vector<std::string>, int64_t> ref_counts, hyp_counts;  // ref: the most any holds
    for (const auto& ref : refs) {
      std::map<std::vector<std::string>, int64_t> counts;
      for (size_t i = 0; i + n <= ref.size(); ++i) ++counts[{ref.begin() + i, ref.begin() + i + n}];
      for (const auto& [g, c] : counts) ref_counts[g] = std::max(ref_counts[g], c);
    }
    for (size_t i = 0; i + n <= hyp.size(); ++i) ++hyp_counts[{hyp.begin() + i, hyp.begin() + i + n}];
    for (const auto& [g, c] : hyp_counts) {
      out.total[n - 1] += c;
      const auto it = ref_counts.find(g);
      if (it != ref_counts.end()) out.correct[n - 1] += std::min(c, it->second);
    }
  }
  out.prediction_length = int64_t(hyp.size());
  out.reference_length = std::max<int64_t>(closest, 0);
  return out;
}

BleuStats& BleuStats::operator+=(const BleuStats& o) {
  for (size_t n = 0; n < 4; ++n) correct[n] += o.correct[n], total[n] += o.total[n];
  prediction_length += o.prediction_length, reference_length += o.reference_length;
  return *this;
}

void BleuStats::to(double* out) const {
  for (size_t n = 0; n < 4; ++n) out[n] = double(correct[n]), out[4 + n] = double(total[n]);
  out[8] = double(prediction_length), out[9] = double(reference_length);
}

BleuStats BleuStats::from(const double* in) {
  BleuStats s;
  for (size_t n = 0; n < 4; ++n) s.correct[n] = int64_t(in[n]), s.total[n] = int64_t(in[4 + n]);
  s.prediction_length = int64_t(in[8]), s.reference_length = int64_t(in[9]);
  return s;
}

void CorpusBleu::add(std::string_view prediction, const std::vector<std::string>& references) {
  stats_ += BleuStats::of(prediction, references);
  ++pairs_;
}

double BleuStats::score() const {
  const double sys = double(prediction_length), ref = double(reference_length);
  const double bp = sys < ref ? (sys > 0 ? std::exp(1 - ref / sys) : 0.0) : 1.0;
  if (std::all_of(correct.begin(), correct.end(), [](int64_t c) { return c == 0; })) return 0.0;
  double precisions[4] = {0, 0, 0, 0}, smooth = 1;
  for (size_t n = 0; n < 4; ++n) {
    if (total[n] == 0) break;
    if (correct[n] == 0) {
      smooth *= 2;
      precisions[n] = 100.0 / (smooth * double(total[n]));
    } else {
      precisions[n] = 100.0 * double(correct[n]) / double(total[n]);
    }
  }
  double log_sum = 0;
  for (double p : precisions) log_sum += p == 0.0 ? -9999999999.0 : std::log(p);
  return bp * std::exp(log_sum / 4);
}

}  // namespace trident::train
