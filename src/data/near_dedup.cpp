// MinHash signatures, their LSH band hashes and the choice of bands and rows (near_dedup.hpp).
#include "trident/data/near_dedup.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::data {
namespace {

uint64_t splitmix64(uint64_t& state) { return mix64(state += 0x9E3779B97F4A7C15ull); }

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;

// Not ASCII whitespace, controls or punctuation (!"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~); UTF-8 bytes
// of any script are word bytes.
bool word_byte(unsigned char c) {
  if (c >= 0x80) return true;
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// ∫_lo^hi f by Simpson's rule on 64 intervals: smooth integrands, four digits are plenty.
template <class F>
double integrate(F f, double lo, double hi) {
  constexpr int n = 64;
  const double h = (hi - lo) / n;
  double sum = f(lo) + f(hi);
  for (int k = 1; k < n; ++k) sum += f(lo + k * h) * (k % 2 ? 4 : 2);
  return sum * h / 3;
}

}  // namespace

double candidate_probability(double s, LshShape shape) {
  return 1.0 - std::pow(1.0 - std::pow(s, shape.rows), shape.bands);
}

LshShape optimal_lsh_shape(double threshold, int num_perm) {
  LshShape best{1, 1};
  double best_error = std::numeric_limits<double>::infinity();
  for (int b = 1; b <= num_perm; ++b)
    for (int r = 1; r <= num_perm / b; ++r) {
      const LshShape shape{b, r};
      const double fp = integrate([&](double s) { return candidate_probability(s, shape); }, 0.0, threshold);
      const double fn = integrate([&](double s) { return 1.0 - candidate_probability(s, shape); }, threshold, 1.0);
      const double error = 0.1 * fp + 0.9 * fn;  // near_dedup.hpp: why not equal weights
      if (error < best_error) best_error = error, best = shape;
    }
  return best;
}

LshShape lsh_shape(const NearDedupOptions& o) {
  TRIDENT_CONFIG_CHECK(o.jaccard > 0 && o.jaccard < 1, "--jaccard must be in (0, 1) (got ", o.jaccard, ")");
  TRIDENT_CONFIG_CHECK(o.ngram >= 1 && o.ngram <= 64, "--ngram must be in [1, 64] (got ", o.ngram, ")");
  TRIDENT_CONFIG_CHECK(o.num_perm >= 2 && o.num_perm <= 1024, "--num-perm must be in [2, 1024] (got ", o.num_perm, ")");
  TRIDENT_CONFIG_CHECK((o.bands == 0) == (o.rows == 0), "--bands and --rows go together (got --bands ", o.bands,
                       " --rows ", o.rows, ")");
  if (o.bands == 0) return optimal_lsh_shape(o.jaccard, o.num_perm);
  TRIDENT_CONFIG_CHECK(o.bands >= 1 && o.rows >= 1 && int64_t(o.bands) * o.rows <= o.num_perm,
                       "--bands * --rows must be at most --num-perm ", o.num_perm, " (got ", o.bands, " * ", o.rows, ")");
  return {o.bands, o.rows};
}

std::vector<uint64_t> shingle_hashes(std::string_view text, int ngram) {
  std::vector<std::string_view> words;
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && !word_byte(static_cast<unsigned char>(text[i]))) ++i;
    const size_t begin = i;
    while (i < text.size() && word_byte(static_cast<unsigned char>(text[i]))) ++i;
    if (i > begin) words.push_back(text.substr(begin, i - begin));
  }
  std::vector<uint64_t> hashes;
  if (words.empty()) return hashes;
  const size_t n = std::min(words.size(), static_cast<size_t>(ngram));
  hashes.reserve(words.size() - n + 1);
  for (size_t w = 0; w + n <= words.size(); ++w) {
    uint64_t h = kFnvOffset;
    for (size_t k = 0; k < n; ++k) {
      if (k) h = (h ^ ' ') * kFnvPrime;
      for (const char c : words[w + k]) h = (h ^ static_cast<unsigned char>(lower_ascii(c))) * kFnvPrime;
    }
    hashes.push_back(h);
  }
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  return hashes;
}

MinHasher::MinHasher(const NearDedupOptions& options) : ngram_(options.ngram) {
  uint64_t state = options.seed;
  for (int p = 0; p < options.num_perm; ++p) {
    a_.push_back(splitmix64(state) | 1);
    b_.push_back(splitmix64(state));
  }
}

std::vector<uint32_t> MinHasher::signature(std::string_view text) const {
  const size_t P = a_.size();
  std::vector<uint32_t> minima(P, std::numeric_limits<uint32_t>::max());
  for (const uint64_t x : shingle_hashes(text, ngram_))
    for (size_t p = 0; p < P; ++p)  // vectorises: one multiply-add and shift per permutation
      minima[p] = std::min(minima[p], static_cast<uint32_t>((a_[p] * x + b_[p]) >> 32));
  return minima;
}

void SketchTable::add(const std::vector<uint32_t>& signature) {
  TRIDENT_CHECK(signature.size() == static_cast<size_t>(num_perm_), "minhash signature of ", signature.size(),
                " minima, expected ", num_perm_);
  for (int b = 0; b < shape_.bands; ++b) {
    uint64_t h = kFnvOffset ^ static_cast<uint64_t>(b);
    for (int r = 0; r < shape_.rows; ++r) h = (h ^ signature[static_cast<size_t>(b * shape_.rows + r)]) * kFnvPrime;
    uint64_t state = h;  // FNV alone mixes the high bits poorly; the owner rank uses them
    bands_.push_back(splitmix64(state));
  }
  for (const uint32_t m : signature) minima_.push_back(static_cast<uint16_t>(m));
}

std::span<const uint64_t> SketchTable::bands(size_t i) const {
  return std::span<const uint64_t>(bands_).subspan(i * static_cast<size_t>(shape_.bands), static_cast<size_t>(shape_.bands));
}

std::span<const uint16_t> SketchTable::minima(size_t i) const {
  return std::span<const uint16_t>(minima_).subspan(i * static_cast<size_t>(num_perm_), static_cast<size_t>(num_perm_));
}

double estimated_jaccard(std::span<const uint16_t> a, std::span<const uint16_t> b) {
  TRIDENT_CHECK(a.size() == b.size() && !a.empty(), "minhash signatures of different lengths");
  size_t equal = 0;
  for (size_t k = 0; k < a.size(); ++k) equal += a[k] == b[k];
  return static_cast<double>(equal) / static_cast<double>(a.size());
}

}  // namespace trident::data
