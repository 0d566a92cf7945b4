// Mixture-of-experts token movement: gather rows into expert order, combine expert rows back
// into token order with routing weights, and the per-(token, choice) dot products the routing
// weights' gradient needs. x, y, a, b, out [ACT]; scale, weights and dot outputs fp32 (fp64 in
// fp64 calls); index and slots int32. One thread writes each output row: deterministic.
#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

// The rows of t seen as [rows, C] with C its last dimension.
void check_rows(const Tensor& t, int64_t C, const char* op, const char* name) {
  TRIDENT_CHECK(last_dim(t) == C, op, ": ", name, " ", t.shape().str(), " does not have ", C, " features per row");
}

// Checks slot ids of slots [N, K] lie in [-1, limit). Before any parallel region.
void check_slots(const Tensor& slots, int64_t limit, const char* op) {
  check_dtype(slots, DType::kI32, op, "slots");
  const int32_t* p = slots.data<int32_t>();
  for (int64_t i = 0; i < slots.numel(); ++i)
    TRIDENT_CHECK(p[i] >= -1 && p[i] < limit, op, ": slot ", p[i], " at ", i, " is outside [-1, ", limit, ")");
}

}  // namespace

void gather_rows(const Tensor& x, const Tensor& index, const Tensor& scale, Tensor& out) {
  constexpr const char* op = "gather_rows";
  const DType ct = compute_dtype(x, op, "x");
  check_act(out, ct, op, "out");
  const int64_t C = last_dim(x), N = rows_of(x), M = index.numel();
  check_rows(out, C, op, "out");
  check_numel(out, M * C, op, "out");
  check_dtype(index, DType::kI32, op, "index");
  check_ids(index, N, op, "index");
  if (scale.defined()) {
    check_dtype(scale, ct, op, "scale");
    check_numel(scale, M, op, "scale");
  }
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), oa(out);
    const int32_t* pi = index.data<int32_t>();
    const T* ps = scale.defined() ? scale.data<T>() : nullptr;
#pragma omp parallel for if (M * C > kParallelElems) schedule(static)
    for (int64_t m = 0; m < M; ++m) {
      T* in_buf = xa.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(C));
      T* out_buf = oa.in_place() ? nullptr : thread_scratch<T, 1>(static_cast<size_t>(C));
      const T* src = xa.read(int64_t(pi[m]) * C, C, in_buf);
      T* dst = oa.out(m * C, out_buf);
      const T s = ps ? ps[m] : T(1);
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) dst[c] = s * src[c];
      oa.commit(m * C, C, dst);
    }
  });
}

void combine_rows(const Tensor& y, const Tensor& slots, const Tensor& weights, Tensor& out, bool accumulate) {
  constexpr const char* op = "combine_rows";
  const DType ct = compute_dtype(out, op, "out");
  check_act(y, ct, op, "y");
  const int64_t C = last_dim(out), N = rows_of(out), M = rows_of(y);
  check_rows(y, C, op, "y");
  const int64_t K = N == 0 ? 0 : slots.numel() / N;
  check_numel(slots, N * K, op, "slots");
  check_slots(slots, M, op);
  if (weights.defined()) {
    check_dtype(weights, ct, op, "weights");
    check_numel(weights, N * K, op, "weights");
  }
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> ya(y), oa(out);
    const int32_t* ps = slots.data<int32_t>();
    const T* pw = weights.defined() ? weights.data<T>() : nullptr;
#pragma omp parallel for if (N * K * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      T* out_buf = oa.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(C));
      T* in_buf = ya.in_place() ? nullptr : thread_scratch<T, 1>(static_cast<size_t>(C));
      T* dst = accumulate ? oa.update(n * C, C, out_buf) : oa.out(n * C, out_buf);
      if (!accumulate)
        for (int64_t c = 0; c < C; ++c) dst[c] = T(0);
      for (int64_t j = 0; j < K; ++j) {
        const int32_t slot = ps[n * K + j];
        if (slot < 0) continue;
        const T w = pw ? pw[n * K + j] : T(1);
        const T* src = ya.read(int64_t(slot) * C, C, in_buf);
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) dst[c] += w * src[c];
      }
      oa.commit(n * C, C, dst);
    }
  });
}

void row_dots(const Tensor& a, const Tensor& b, const Tensor& slots, Tensor& out) {
  constexpr const char* op = "row_dots";
  const DType ct = compute_dtype(a, op, "a");
  check_act(b, ct, op, "b");
  check_dtype(out, ct, op, "out");
  const int64_t C = last_dim(a), N = rows_of(a), M = rows_of(b);
  check_rows(b, C, op, "b");
  const int64_t K = N == 0 ? 0 : out.numel() / N;
  check_numel(out, N * K, op, "out");
  check_numel(slots, N * K, op, "slots");
  check_slots(slots, M, op);
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> aa(a), ba(b);
    const int32_t* ps = slots.data<int32_t>();
    T* po = out.data<T>();
#pragma omp parallel for if (N * K * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      T* a_buf = aa.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(C));
      T* b_buf = ba.in_place() ? nullptr : thread_scratch<T, 1>(static_cast<size_t>(C));
      const T* row = aa.read(n * C, C, a_buf);
      for (int64_t j = 0; j < K; ++j) {
        const int32_t slot = ps[n * K + j];
        double dot = 0;
        if (slot >= 0) {
          const T* other = ba.read(int64_t(slot) * C, C, b_buf);
#pragma omp simd reduction(+ : dot)
          for (int64_t c = 0; c < C; ++c) dot += double(row[c]) * double(other[c]);
        }
        po[n * K + j] = T(dot);
      }
    }
  });
}

}  // namespace trident::cpu
