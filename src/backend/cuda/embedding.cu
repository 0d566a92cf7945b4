// Token (+ learned position) embedding lookup and its backward, over a whole table or a
// vocabulary shard. tokens, positions: [N] int32 on the device; wte: [V, C] fp32 (ids
// vocab_offset .. vocab_offset + V); wpe: [P, C] fp32 (optional); out, dout: [N, C] [ACT].
//
// Ids are on the device, so they are not range-checked on the host (that would cost a
// synchronisation per call): a token outside the shard contributes a zero row (as the
// contract says), and a position outside [0, P) contributes nothing.
#include <cub/device/device_radix_sort.cuh>

#include "backend/cuda/kernels.cuh"
#include "backend/cuda/reduce.cuh"

namespace trident::cuda {
namespace {

struct EmbeddingShape {
  int64_t N, C, V, P;
  Elem act;
};

EmbeddingShape check_embedding(const char* op, const Tensor& tokens, const Tensor& positions, const Tensor& table,
                               const Tensor& table2, const Tensor& act) {
  check_f32(table, op, "wte");
  check_i32(tokens, op, "tokens");
  const Elem e = act_elem(act, op, "activations");
  const int64_t N = tokens.numel(), C = last_dim(table), V = rows_of(table);
  check_numel(act, N * C, op, "activations");
  TRIDENT_CHECK(N == 0 || last_dim(act) == C, op, ": activations ", act.shape().str(), " do not end in C=", C);
  int64_t P = 0;
  if (table2.defined()) {
    check_f32(table2, op, "wpe");
    TRIDENT_CHECK(last_dim(table2) == C, op, ": wpe ", table2.shape().str(), " does not end in C=", C);
    P = rows_of(table2);
    check_i32(positions, op, "positions");
    check_numel(positions, N, op, "positions");
  }
  return {N, C, V, P, e};
}

// One block per row n: out[n, :] = wte[tokens[n] - offset, :] (zero outside the shard)
// + wpe[positions[n], :]. Sum in fp32, rounded once. vec: 8 columns per access.
__global__ void embedding_forward_kernel(const int32_t* __restrict__ tok, const int32_t* __restrict__ pos,
                                         const float* __restrict__ wte, const float* __restrict__ wpe,
                                         int64_t offset, int64_t V, int64_t P, int64_t C, void* out, Elem eo,
                                         bool vec) {
  const int64_t n = blockIdx.x;
  const int64_t row = int64_t(tok[n]) - offset;
  const float* te = row >= 0 && row < V ? wte + row * C : nullptr;
  const float* pe = nullptr;
  if (wpe) {
    const int64_t p = pos[n];
    if (p >= 0 && p < P) pe = wpe + p * C;
  }
  const int64_t C8 = vec ? C : 0;
  for (int64_t c = int64_t(threadIdx.x) * 8; c < C8; c += int64_t(blockDim.x) * 8) {
    float v[8] = {};
    if (te) load8(te, Elem::kF32, c, v);
    if (pe) {
      float w[8];
      load8(pe, Elem::kF32, c, w);
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] += w[k];
    }
    store8(out, eo, n * C + c, v);
  }
  for (int64_t c = C8 + threadIdx.x; c < C; c += blockDim.x) {
    float v = te ? te[c] : 0.f;
    if (pe) v += pe[c];
    store(out, eo, n * C + c, v);
  }
}

// Keys for the sort: the table row of each id, or `rows` (sorted last, then skipped) for an
// id this table does not hold; values: the activation row n.
__global__ void scatter_keys_kernel(const int32_t* __restrict__ ids, int64_t offset, int64_t rows, int64_t N,
                                    uint32_t* __restrict__ keys, int32_t* __restrict__ vals) {
  for (int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; n < N; n += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = int64_t(ids[n]) - offset;
    keys[n] = r >= 0 && r < rows ? static_cast<uint32_t>(r) : static_cast<uint32_t>(rows);
    vals[n] = static_cast<int32_t>(n);
  }
}

// After the stable sort, equal keys form runs with their rows in increasing n. The block at
// the start of a run owns that table row: threads split its columns and add the run's rows in
// order, so each column of grad sees exactly the CPU's sequence of fp32 additions (bit-exact,
// deterministic, no atomics). Other blocks return at once.
__global__ void scatter_add_rows_kernel(const uint32_t* __restrict__ keys, const int32_t* __restrict__ vals,
                                        int64_t N, int64_t rows, int64_t C, const void* __restrict__ dout,
                                        Elem ed, float* __restrict__ grad) {
  const int64_t i = blockIdx.x;
  const uint32_t key = keys[i];
  if (key >= rows || (i > 0 && keys[i - 1] == key)) return;
  int64_t end = i + 1;
  while (end < N && keys[end] == key) ++end;
  float* g = grad + int64_t(key) * C;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = g[c];
#pragma unroll 4
    for (int64_t j = i; j < end; ++j) acc += load(dout, ed, int64_t(vals[j]) * C + c);
    g[c] = acc;
  }
}

// grad[ids[n] - offset, :] += dout[n, :] for ids in [offset, offset + rows): a stable radix
// sort of (row, n) groups repeated ids, then one block per run sums them. The sort covers only
// the bits needed for keys 0..rows. Scratch: keys and values in and out plus CUB's temporary
// storage, one stream-ordered allocation.
void scatter_add_rows(const int32_t* ids, int64_t offset, int64_t rows, int64_t N, int64_t C, const void* dout,
                      Elem ed, float* grad, cudaStream_t stream) {
  TRIDENT_CHECK(N < (int64_t(1) << 31) && rows < (int64_t(1) << 31), "embedding_backward: ", N, " rows or ", rows,
                " table rows exceed the int32 sort");
  int end_bit = 1;
  while (end_bit < 32 && (uint64_t(1) << end_bit) <= uint64_t(rows)) ++end_bit;
  const int n = static_cast<int>(N);
  size_t temp_bytes = 0;
  TRIDENT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const uint32_t*>(nullptr),
                                                     static_cast<uint32_t*>(nullptr),
                                                     static_cast<const int32_t*>(nullptr),
                                                     static_cast<int32_t*>(nullptr), n, 0, end_bit, stream));
  const size_t keys_bytes = round256(size_t(N) * sizeof(uint32_t)), vals_bytes = round256(size_t(N) * sizeof(int32_t));
  StreamScratch scratch(2 * keys_bytes + 2 * vals_bytes + temp_bytes, stream);
  char* p = scratch.get();
  auto* keys_in = reinterpret_cast<uint32_t*>(p);
  auto* keys_out = reinterpret_cast<uint32_t*>(p + keys_bytes);
  auto* vals_in = reinterpret_cast<int32_t*>(p + 2 * keys_bytes);
  auto* vals_out = reinterpret_cast<int32_t*>(p + 2 * keys_bytes + vals_bytes);
  void* temp = p + 2 * keys_bytes + 2 * vals_bytes;

  scatter_keys_kernel<<<grid_for(N), 256, 0, stream>>>(ids, offset, rows, N, keys_in, vals_in);
  TRIDENT_CUDA_LAUNCHED();
  TRIDENT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, vals_in, vals_out, n, 0,
                                                     end_bit, stream));
  scatter_add_rows_kernel<<<static_cast<unsigned>(N), row_threads(C, 256), 0, stream>>>(keys_out, vals_out, N, rows,
                                                                                        C, dout, ed, grad);
  TRIDENT_CUDA_LAUNCHED();
}

}  // namespace

void embedding_forward(const Tensor& tokens, const Tensor& positions, const Tensor& wte, const Tensor& wpe,
                       int64_t vocab_offset, Tensor& out, cudaStream_t stream) {
  const auto s = check_embedding("embedding_forward", tokens, positions, wte, wpe, out);
  if (s.N == 0 || s.C == 0) return;
  const bool vec = rows_vectorisable(s.C, {&wte, &out}) && (!s.P || aligned16(wpe));
  embedding_forward_kernel<<<static_cast<unsigned>(s.N), row_threads(vec ? s.C / 8 : s.C, 256), 0, stream>>>(
      tokens.data<int32_t>(), s.P ? positions.data<int32_t>() : nullptr, wte.data<float>(),
      s.P ? wpe.data<float>() : nullptr, vocab_offset, s.V, s.P, s.C, out.raw(), s.act, vec);
  TRIDENT_CUDA_LAUNCHED();
}

void embedding_backward(const Tensor& tokens, const Tensor& positions, const Tensor& dout, int64_t vocab_offset,
                        Tensor& dwte, Tensor& dwpe, cudaStream_t stream) {
  const auto s = check_embedding("embedding_backward", tokens, positions, dwte, dwpe, dout);
  if (s.N == 0 || s.C == 0) return;
  scatter_add_rows(tokens.data<int32_t>(), vocab_offset, s.V, s.N, s.C, dout.raw(), s.act, dwte.data<float>(), stream);
  if (s.P) scatter_add_rows(positions.data<int32_t>(), 0, s.P, s.N, s.C, dout.raw(), s.act, dwpe.data<float>(), stream);
}

}  // namespace trident::cuda
