// GEMM on the host: c = alpha * op(a) @ op(b) + beta * c. fp32 goes to oneDNN's dnnl_sgemm
// (row-major, OpenMP inside); fp64 is a plain blocked loop, used only by small gradient checks.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <vector>

#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

// c[M, N] = alpha * op(a)[M, K] @ op(b)[K, N] + beta * c; a is [M, K] (or [K, M] when trans_a),
// b is [K, N] (or [N, K] when trans_b). Rows of c are independent: one thread per row block.
void gemm_f64(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* a,
              const double* b, double beta, double* c) {
  constexpr int64_t kBlockK = 256;
#pragma omp parallel if (M * N * K > (int64_t(1) << 16))
  {
    std::vector<double> acc(static_cast<size_t>(N));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);
      double* acc_row = acc.data();
      for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
        const int64_t k1 = std::min(K, k0 + kBlockK);
        if (!trans_b) {  // acc[:] += op(a)[i, k] * b[k, :]
          for (int64_t k = k0; k < k1; ++k) {
            const double aik = trans_a ? a[k * M + i] : a[i * K + k];
            const double* b_row = b + k * N;
#pragma omp simd
            for (int64_t j = 0; j < N; ++j) acc_row[j] += aik * b_row[j];
          }
        } else {  // acc[j] += op(a)[i, k0:k1] . b[j, k0:k1]
          for (int64_t j = 0; j < N; ++j) {
            const double* b_row = b + j * K;
            double s = 0.0;
            for (int64_t k = k0; k < k1; ++k) s += (trans_a ? a[k * M + i] : a[i * K + k]) * b_row[k];
            acc_row[j] += s;
          }
        }
      }
      double* c_row = c + i * N;
      if (beta == 0.0) {  // overwrite: NaN/inf already in c must not leak through 0 * c
        for (int64_t j = 0; j < N; ++j) c_row[j] = alpha * acc_row[j];
      } else {
        for (int64_t j = 0; j < N; ++j) c_row[j] = alpha * acc_row[j] + beta * c_row[j];
      }
    }
  }
}

}  // namespace

GemmDims gemm_dims(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c) {
  const int64_t a_rows = rows_of(a), a_cols = last_dim(a);
  const int64_t b_rows = rows_of(b), b_cols = last_dim(b);
  const int64_t M = trans_a ? a_cols : a_rows, K = trans_a ? a_rows : a_cols;
  const int64_t N = trans_b ? b_rows : b_cols, Kb = trans_b ? b_cols : b_rows;
  TRIDENT_CHECK(K == Kb, "gemm: inner dimensions differ: op(a) is [", M, ", ", K, "], op(b) is [", Kb, ", ", N,
                "] (a ", a.shape().str(), trans_a ? "^T" : "", ", b ", b.shape().str(), trans_b ? "^T" : "", ")");
  TRIDENT_CHECK(c.numel() == M * N && (M * N == 0 || last_dim(c) == N), "gemm: c ", c.shape().str(),
                " is not [", M, ", ", N, "]");
  auto overlaps = [](const Tensor& x, const Tensor& y) {
    const char* xb = static_cast<const char*>(x.raw());
    const char* yb = static_cast<const char*>(y.raw());
    return xb < yb + y.bytes() && yb < xb + x.bytes();
  };
  TRIDENT_CHECK(!overlaps(c, a) && !overlaps(c, b), "gemm: c must not overlap a or b");
  return {M, N, K};
}

void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta, Tensor& c) {
  constexpr const char* op = "gemm";
  check_tensor(a, op, "a");
  check_dtype(b, a.dtype(), op, "b");
  check_dtype(c, a.dtype(), op, "c");
  const auto [M, N, K] = gemm_dims(trans_a, trans_b, a, b, c);
  if (M == 0 || N == 0) return;
  if (K == 0) {  // empty sum: c = beta * c
    if (beta == 0.0) fill(c, 0.0);
    else scale(c, beta);
    return;
  }
  switch (a.dtype()) {
    case DType::kF32: {
      const dnnl_status_t status =
          dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, static_cast<float>(alpha),
                     a.data<float>(), trans_a ? M : K, b.data<float>(), trans_b ? K : N,
                     static_cast<float>(beta), c.data<float>(), N);
      TRIDENT_CHECK(status == dnnl_success, "gemm: dnnl_sgemm failed with status ", int(status), " for M=", M,
                    " N=", N, " K=", K);
      return;
    }
    case DType::kF64:
      gemm_f64(trans_a, trans_b, M, N, K, alpha, a.data<double>(), b.data<double>(), beta, c.data<double>());
      return;
    default:
      TRIDENT_CHECK(false, "gemm: dtype ", dtype_name(a.dtype()), " is not supported by the cpu backend");
  }
}

}  // namespace trident::cpu
