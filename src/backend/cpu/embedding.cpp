// Token (+ learned position) embedding lookup and its backward, over a whole table or a
// vocabulary shard. tokens, positions: [N] int32; wte: [V, C] (ids vocab_offset..+V);
// wpe: [P, C] (optional); out, dout: [N, C]. Tables and their gradients are fp32 (or fp64);
// out and dout may be fp32, bf16 or fp16 (the sum wte + wpe is formed in fp32, then rounded).
#include <limits>

#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

struct EmbeddingShape {
  int64_t N, C, V, P;
};

// Checks ids, table and activation shapes; returns the sizes. P = 0 when table2 is undefined.
EmbeddingShape check_embedding(const char* op, const Tensor& tokens, const Tensor& positions,
                               const Tensor& table, const Tensor& table2, const Tensor& act) {
  check_tensor(table, op, "wte");
  TRIDENT_CHECK(table.dtype() == DType::kF32 || table.dtype() == DType::kF64, op, ": wte is ",
                dtype_name(table.dtype()), "; embedding tables and their gradients are fp32 (fp64 in checks)");
  check_act(act, table.dtype(), op, "activations");
  const int64_t N = tokens.numel(), C = last_dim(table), V = rows_of(table);
  check_numel(act, N * C, op, "activations");
  TRIDENT_CHECK(N == 0 || last_dim(act) == C, op, ": activations ", act.shape().str(), " do not end in C=", C);
  check_ids(tokens, std::numeric_limits<int32_t>::max(), op, "tokens");  // >= 0; the shard test is per row
  int64_t P = 0;
  if (table2.defined()) {
    check_dtype(table2, table.dtype(), op, "wpe");
    TRIDENT_CHECK(last_dim(table2) == C, op, ": wpe ", table2.shape().str(), " does not end in C=", C);
    P = rows_of(table2);
    check_numel(positions, N, op, "positions");
    check_ids(positions, P, op, "positions");
  }
  return {N, C, V, P};
}

}  // namespace

// out[n, :] = wte[tokens[n] - vocab_offset, :] (zero outside the shard) + wpe[positions[n], :]
void embedding_forward(const Tensor& tokens, const Tensor& positions, const Tensor& wte, const Tensor& wpe,
                       int64_t vocab_offset, Tensor& out) {
  const auto s = check_embedding("embedding_forward", tokens, positions, wte, wpe, out);
  dispatch_float(wte.dtype(), "embedding_forward", [&](auto tag) {
    using T = decltype(tag);
    const int32_t* tok = tokens.data<int32_t>();
    const int32_t* pos = s.P ? positions.data<int32_t>() : nullptr;
    const T* pte = wte.data<T>();
    const T* ppe = s.P ? wpe.data<T>() : nullptr;
    const Act<T> oa(out);
    const int64_t C = s.C;
#pragma omp parallel for if (s.N * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < s.N; ++n) {
      const int64_t row = int64_t(tok[n]) - vocab_offset;
      T* o = oa.out(n * C, oa.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(C)));
      if (row < 0 || row >= s.V) {  // another shard's token
        const T* pe = ppe ? ppe + int64_t(pos[n]) * C : nullptr;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) o[c] = pe ? pe[c] : T(0);
        oa.commit(n * C, C, o);
        continue;
      }
      const T* te = pte + row * C;
      if (ppe) {
        const T* pe = ppe + int64_t(pos[n]) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) o[c] = te[c] + pe[c];
      } else {
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) o[c] = te[c];
      }
      oa.commit(n * C, C, o);
    }
  });
}

// dwte[tokens[n], :] += dout[n, :]; dwpe[positions[n], :] += dout[n, :]. Tokens repeat, so
// threads split the channels (blocks of kColBlock) and each walks all rows: no races, and
// the sum order is the row order whatever the thread count.
void embedding_backward(const Tensor& tokens, const Tensor& positions, const Tensor& dout, int64_t vocab_offset,
                        Tensor& dwte, Tensor& dwpe) {
  const auto s = check_embedding("embedding_backward", tokens, positions, dwte, dwpe, dout);
  dispatch_float(dwte.dtype(), "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    const int32_t* tok = tokens.data<int32_t>();
    const int32_t* pos = s.P ? positions.data<int32_t>() : nullptr;
    const Act<T> da(dout);
    T* pte = dwte.data<T>();
    T* ppe = s.P ? dwpe.data<T>() : nullptr;
    const int64_t C = s.C, blocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel for if (s.N * C > kParallelElems) schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t c0 = blk * kColBlock, width = std::min(kColBlock, C - c0);
      alignas(64) T buf[kColBlock];
      for (int64_t n = 0; n < s.N; ++n) {
        const T* d = da.read(n * C + c0, width, buf);
        const int64_t row = int64_t(tok[n]) - vocab_offset;
        if (row >= 0 && row < s.V) {
          T* te = pte + row * C + c0;
#pragma omp simd
          for (int64_t c = 0; c < width; ++c) te[c] += d[c];
        }
        if (ppe) {
          T* pe = ppe + int64_t(pos[n]) * C + c0;
#pragma omp simd
          for (int64_t c = 0; c < width; ++c) pe[c] += d[c];
        }
      }
    }
  });
}

}  // namespace trident::cpu
