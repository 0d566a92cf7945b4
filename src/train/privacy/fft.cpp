// Radix-2 decimation-in-time FFT: a bit-reversal permutation, then log2(n) butterfly passes.
// Twiddles are evaluated directly (cos / sin of each angle), not by recurrence, so their error
// stays at one rounding however long the transform.
#include "trident/train/privacy/fft.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "trident/core/error.hpp"

namespace trident::train::privacy {

namespace {
// a * b without the C99 Annex G infinity recovery std::complex's operator* calls out for (the
// values here are finite): 4 multiplies instead of a library call.
inline std::complex<double> mul(std::complex<double> a, std::complex<double> b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
}  // namespace

void fft(std::vector<std::complex<double>>& x, bool inverse) {
  const size_t n = x.size();
  if (n == 0 || (n & (n - 1)) != 0) throw Error("fft: length " + std::to_string(n) + " is not a power of two");
  for (size_t i = 1, j = 0; i < n; ++i) {  // j: i bit-reversed
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(x[i], x[j]);
  }
  // w[k] = e^{-+2 pi i k / n}, k < n/2; a pass of length len uses every (n / len)-th one.
  std::vector<std::complex<double>> w(n / 2);
  const double sign = inverse ? 1.0 : -1.0;
  for (size_t k = 0; k < n / 2; ++k) {
    const double a = 2 * M_PI * static_cast<double>(k) / static_cast<double>(n);
    w[k] = {std::cos(a), sign * std::sin(a)};
  }
  // Passes of length <= kBlock touch only their own kBlock-sized block: run them block by block
  // while it sits in cache, then the longer passes over the whole array.
  constexpr size_t kBlock = size_t{1} << 13;
  auto pass = [&](size_t len, size_t begin, size_t end) {
    const size_t half = len / 2, stride = n / len;
    for (size_t s = begin; s < end; s += len)
      for (size_t k = 0; k < half; ++k) {
        const std::complex<double> u = x[s + k], v = mul(x[s + k + half], w[k * stride]);
        x[s + k] = u + v;
        x[s + k + half] = u - v;
      }
  };
  const size_t block = std::min(n, kBlock);
  for (size_t b = 0; b < n; b += block)
    for (size_t len = 2; len <= block; len <<= 1) pass(len, b, b + block);
  for (size_t len = block * 2; len <= n; len <<= 1) pass(len, 0, n);
  if (inverse)
    for (auto& v : x) v /= static_cast<double>(n);
}

// With z_j = x_{2j} + i x_{2j+1} and Z = FFT(z) (length h = n/2), the transforms of the even
// and odd samples are E_k = (Z_k + conj(Z_{h-k})) / 2 and O_k = (Z_k - conj(Z_{h-k})) / 2i, and
// X_k = E_k + W^k O_k, X_{k+h} = E_k - W^k O_k with W = e^{-2 pi i / n}.
std::vector<std::complex<double>> real_fft(const std::vector<double>& x) {
  const size_t n = x.size(), h = n / 2;
  if (n < 2 || (n & (n - 1)) != 0) throw Error("real_fft: length " + std::to_string(n) + " is not a power of two");
  std::vector<std::complex<double>> z(h);
  for (size_t j = 0; j < h; ++j) z[j] = {x[2 * j], x[2 * j + 1]};
  fft(z, false);
  std::vector<std::complex<double>> X(h + 1);
  for (size_t k = 0; k <= h; ++k) {
    const std::complex<double> zk = z[k % h], zc = std::conj(z[(h - k) % h]);
    const std::complex<double> e = (zk + zc) * 0.5, o = (zk - zc) * std::complex<double>(0, -0.5);
    const double a = -2 * M_PI * static_cast<double>(k) / static_cast<double>(n);
    X[k] = e + mul({std::cos(a), std::sin(a)}, o);
  }
  return X;
}

// E_k = (X_k + conj(X_{h-k})) / 2, O_k = (X_k - conj(X_{h-k})) / (2 W^k), z = IFFT(E + i O).
std::vector<double> real_ifft(const std::vector<std::complex<double>>& X) {
  const size_t h = X.size() - 1, n = 2 * h;
  if (h < 1 || (h & (h - 1)) != 0) throw Error("real_ifft: " + std::to_string(X.size()) + " bins is not 2^k + 1");
  std::vector<std::complex<double>> z(h);
  for (size_t k = 0; k < h; ++k) {
    const std::complex<double> xk = X[k], xc = std::conj(X[h - k]);
    const double a = 2 * M_PI * static_cast<double>(k) / static_cast<double>(n);
    const std::complex<double> e = (xk + xc) * 0.5, o = mul((xk - xc) * 0.5, {std::cos(a), std::sin(a)});
    z[k] = e + mul({0, 1}, o);
  }
  fft(z, true);
  std::vector<double> x(n);
  for (size_t j = 0; j < h; ++j) {
    x[2 * j] = z[j].real();
    x[2 * j + 1] = z[j].imag();
  }
  return x;
}

}  // namespace trident::train::privacy
