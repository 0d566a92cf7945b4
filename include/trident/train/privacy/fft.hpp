// An in-place iterative radix-2 complex FFT in double precision: what the PRV accountant
// composes discretised privacy loss distributions with (src/train/privacy/fft.cpp).
#pragma once

#include <complex>
#include <vector>

namespace trident::train::privacy {

// x: (n,), n a power of two (else Error). Forward: X_k = sum_j x_j e^{-2 pi i jk / n};
// inverse: x_j = (1/n) sum_k X_k e^{+2 pi i jk / n}.
void fft(std::vector<std::complex<double>>& x, bool inverse);

// The transform of a real x: (n,), n a power of two >= 2 -> X_0..X_{n/2}, (n/2 + 1,) (the rest
// is conj(X_{n-k})), by one complex FFT of length n/2 over (x_0 + i x_1, x_2 + i x_3, ...).
std::vector<std::complex<double>> real_fft(const std::vector<double>& x);
// Its inverse: X: (n/2 + 1,) of a Hermitian spectrum -> x: (n,).
std::vector<double> real_ifft(const std::vector<std::complex<double>>& X);

}  // namespace trident::train::privacy
