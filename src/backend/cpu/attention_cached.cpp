// Attention of new queries against a key/value cache (generation): per (sequence, head, query)
// one pass of scores over the cached keys up to the query's position, a softmax, and P @ V.
// The new tokens' keys are already in the cache, so prefill (S = prompt length) and decode
// (S = 1) are the same call. Memory-bound on the cache; no T x T matrix.
#include "attention.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

// q, out: [B, S, NH*HS]; k, v: [B, L, NKV*HS]; start: [B].
template <typename T>
void attention_cached_impl(int64_t B, int64_t S, int64_t L, int64_t NH, int64_t NKV, int64_t HS,
                           int64_t window, const int32_t* start, const T* q, const T* k, const T* v, T* out) {
  const int64_t group = NH / NKV, qs = NH * HS, kvs = NKV * HS;
  const T scale = T(1) / std::sqrt(T(HS));
#pragma omp parallel for collapse(3) schedule(dynamic, 1) if (B * NH * S * L * HS > (int64_t(1) << 16))
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      for (int64_t s = 0; s < S; ++s) {
        T* p = thread_scratch<T, 0>(static_cast<size_t>(L));
        // Cache positions first .. start + s: all of them, or the window's last ones.
        const int64_t last = start[b] + s, first = window > 0 ? std::max<int64_t>(0, last + 1 - window) : 0;
        const int64_t keys = last + 1 - first;
        const T* qrow = q + (b * S + s) * qs + h * HS;
        const T* kcol = k + b * L * kvs + first * kvs + (h / group) * HS;
        T row_max = -INFINITY;
        for (int64_t j = 0; j < keys; ++j) {
          const T* krow = kcol + j * kvs;
          T dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < HS; ++d) dot += qrow[d] * krow[d];
          p[j] = dot * scale;
          row_max = std::max(row_max, p[j]);
        }
        T sum = 0;
        for (int64_t j = 0; j < keys; ++j) {
          p[j] = exp_t<T>(p[j] - row_max);
          sum += p[j];
        }
        const T inv = T(1) / sum;
        for (int64_t j = 0; j < keys; ++j) p[j] *= inv;
        T* o = out + (b * S + s) * qs + h * HS;
        accumulate_rows(o, T(0), p, v + b * L * kvs + first * kvs + (h / group) * HS, kvs, keys, HS);
      }
    }
  }
}

}  // namespace

void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int heads, int kv_heads,
                      const Tensor& start, Tensor& out, int window) {
  const char* op = "attention_cached";
  TRIDENT_CHECK(window >= 0, op, ": window ", window, " is negative");
  const DType ct = q.dtype();
  TRIDENT_CHECK(ct == DType::kF32 || ct == DType::kF64, op, ": q is ", dtype_name(ct),
                "; generation computes in fp32 or fp64");
  TRIDENT_CHECK(q.ndim() == 3 && k_cache.ndim() == 3, op, ": q ", q.shape().str(), " and k_cache ",
                k_cache.shape().str(), " must be [B, S, NH*HS] and [B, L, NKV*HS]");
  TRIDENT_CHECK(heads > 0 && kv_heads > 0 && heads % kv_heads == 0 && q.dim(2) % heads == 0, op, ": heads ", heads,
                " / kv_heads ", kv_heads, " do not divide q width ", q.dim(2));
  const int64_t B = q.dim(0), S = q.dim(1), HS = q.dim(2) / heads, L = k_cache.dim(1);
  for (const Tensor* t : {&k_cache, &v_cache}) {
    check_dtype(*t, ct, op, t == &k_cache ? "k_cache" : "v_cache");
    TRIDENT_CHECK(t->shape() == (Shape{B, L, kv_heads * HS}), op, ": cache ", t->shape().str(), " is not [B=", B,
                  ", L, NKV*HS=", kv_heads * HS, "]");
  }
  check_dtype(out, ct, op, "out");
  TRIDENT_CHECK(out.shape() == q.shape(), op, ": out ", out.shape().str(), " differs from q ", q.shape().str());
  check_dtype(start, DType::kI32, op, "start");
  check_numel(start, B, op, "start [B]");
  const int32_t* st = start.data<int32_t>();
  for (int64_t b = 0; b < B; ++b)
    TRIDENT_CHECK(st[b] >= 0 && st[b] + S <= L, op, ": sequence ", b, " starts at ", st[b], " with ", S,
                  " new tokens, past the cache's ", L, " positions");
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    attention_cached_impl<T>(B, S, L, heads, kv_heads, HS, window, st, q.data<T>(), k_cache.data<T>(), v_cache.data<T>(),
                             out.data<T>());
  });
}

}  // namespace trident::cpu
