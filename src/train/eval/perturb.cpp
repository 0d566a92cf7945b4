// Robustness perturbations: counter-based draws (core/rng.hpp) keyed by the perturbation and
// stream = example index, so an example's perturbation does not depend on which rank scores it.
#include "trident/train/eval/perturb.hpp"

#include <algorithm>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::train {

namespace {

class Draws {
 public:
  Draws(const PerturbSpec& spec, uint64_t index) : key_(rng_key(spec.seed, spec.name)), stream_(index) {}
  double uniform() { return rng_uniform(key_, n_++, stream_); }
  uint64_t below(uint64_t k) { return std::min<uint64_t>(k - 1, uint64_t(uniform() * double(k))); }

 private:
  uint64_t key_, stream_, n_ = 0;
};

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Sentences about nothing the examples ask: read past by a robust model.
constexpr std::string_view kDistractors[] = {
    "The museum on the hill was closed for repairs last spring.",
    "A light rain fell over the harbour for most of the afternoon.",
    "Some people prefer tea in the morning and coffee at night.",
    "The old bridge was painted green a few years ago.",
    "Several birds were singing in the garden behind the library.",
    "The train to the coast leaves twice a day in winter.",
    "Her neighbour grows tomatoes and peppers on the balcony.",
    "The committee met on Tuesday to discuss the new logo.",
};

std::string typo(Draws& d, double rate, std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (i + 1 == s.size() || !is_letter(c) || d.uniform() >= rate) {
      out += c;
      continue;
    }
    switch (d.below(4)) {
      case 0:  // swap with the next character (when it is a letter too)
        if (is_letter(s[i + 1]) && i + 2 < s.size()) {
          out += s[i + 1];
          out += c;
          ++i;
        } else {
          out += c;
        }
        break;
      case 1: break;  // dropped
      case 2: out += c, out += c; break;
      default: out += char('a' + d.below(26)); break;
    }
  }
  return out;
}

std::string flip_case(Draws& d, double rate, std::string_view s) {
  std::string out(s);
  for (size_t i = 0; i + 1 < out.size(); ++i)
    if (is_letter(out[i]) && d.uniform() < rate) out[i] = char(out[i] ^ 0x20);
  return out;
}

std::string whitespace(Draws& d, double rate, std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool inner = i > 0 && i + 1 < s.size();
    if (inner && c == ' ' && d.uniform() < rate) {
      out += d.below(3) == 0 ? std::string("\t") : std::string(2 + d.below(2), ' ');
    } else if (inner && is_letter(c) && is_letter(s[i - 1]) && d.uniform() < rate / 2) {
      out += ' ';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> parse_perturbations(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size() && !s.empty()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    std::string name = s.substr(at, comma - at);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    const bool known = std::find(std::begin(kPerturbations), std::end(kPerturbations), name) != std::end(kPerturbations);
    TRIDENT_CONFIG_CHECK(known, "eval.perturb: unknown perturbation '", name,
                         "' (known: typo, case, whitespace, shuffle_choices, distractor)");
    TRIDENT_CONFIG_CHECK(std::find(out.begin(), out.end(), name) == out.end(), "eval.perturb: '", name, "' twice");
    out.push_back(name);
    at = comma + 1;
  }
  return out;
}

std::string perturb_text(const PerturbSpec& spec, uint64_t index, std::string_view text) {
  Draws d(spec, index);
  if (spec.name == "typo") return typo(d, spec.rate, text);
  if (spec.name == "case") return flip_case(d, spec.rate, text);
  if (spec.name == "whitespace") return whitespace(d, spec.rate, text);
  if (spec.name == "distractor") {
    const std::string_view sentence = kDistractors[d.below(std::size(kDistractors))];
    return detail::concat(sentence, text.empty() || text.front() == '\n' ? "" : " ", text);
  }
  return std::string(text);
}

std::vector<int> perturb_order(const PerturbSpec& spec, uint64_t index, int n) {
  std::vector<int> order(size_t(std::max(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  if (spec.name != "shuffle_choices" || n < 2) return order;
  Draws d(spec, index);
  // Fisher-Yates; redrawn (a few times at most) when it comes out as the identity.
  for (int attempt = 0; attempt < 8; ++attempt) {
    for (int i = n - 1; i > 0; --i) std::swap(order[size_t(i)], order[d.below(uint64_t(i) + 1)]);
    if (!std::is_sorted(order.begin(), order.end())) break;
  }
  return order;
}

}  // namespace trident::train
