// Private to the tensor-core attention kernels (attention_tc_forward.cu, attention_tc_backward.cu):
// which calls take them, their arguments, and the fragment bookkeeping of mma.m16n8k16.
//
// When all of q, k, v (and out, dout, dq, dk, dv) are bf16, or all fp16, and the head size is 64
// or 128, attention_forward / attention_backward run these kernels instead of the fp32 FMA ones
// (attention_common.cuh): same grids, same masking (doc_start, query_doc_starts), same lse,
// but every product on tensor cores with fp32 accumulators.
//
// Thread layout: 128 threads = 4 warps; warp w owns rows 16w .. 16w+15 of the block's tile (query
// rows in the forward and dQ, key rows in dK/dV). In a warp, lane l is (g = l / 4, c = l % 4), and
// an fp32 accumulator tile of 16 rows x 8n columns is float[n][4]: [j][0..1] at row g, columns
// 8j + 2c, 8j + 2c + 1 and [j][2..3] at row g + 8, same columns (the PTX ISA's C fragment).
// A score tile's accumulators become the A operand of the next product in registers (c_to_a):
// the C fragment of columns 16k .. 16k+15 is exactly the A fragment of k-step k.
//
// Shared memory holds 16-bit tiles [rows][HS + 8]: the 16 bytes of padding shift consecutive rows
// by 4 banks, so the 8 row addresses of one ldmatrix matrix (16 bytes each) cover all 32 banks.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "attention_common.cuh"
#include "attention_tc_mma.cuh"

namespace trident::cuda::attn::tc {

inline constexpr int kWarps = kThreads / 32;
inline constexpr int kPad = 8;  // elements of padding per shared row

// Both passes' arguments; the forward leaves the backward's null. Pointers are to E (bf16/fp16).
struct TcArgs {
  const void* q;
  const void* k;
  const void* v;
  const void* dout;
  float* lse_out;  // forward: lse [B, NH, T]
  const float* lse;  // backward: the forward's lse
  const float* D;  // backward: rowsum(dout * out) [B, NH, T]
  const int32_t* positions;  // nullptr: plain causal
  void* o;  // forward output
  void* dq;
  void* dk;
  void* dv;
  int T, NH, group;
  int64_t q_stride, kv_stride;
  float scale;
};

// Whether a call with these tensors takes the tensor-core kernels: one 16-bit dtype for all,
// head size 64 or 128, and 16-byte aligned data (cp.async moves 16 bytes; every row then is too).
inline bool eligible(std::initializer_list<const Tensor*> tensors, int64_t HS) {
  if (HS != 64 && HS != 128) return false;
  const DType dtype = (*tensors.begin())->dtype();
  if (dtype != DType::kBF16 && dtype != DType::kF16) return false;
  for (const Tensor* t : tensors)
    if (t->dtype() != dtype || reinterpret_cast<uintptr_t>(t->raw()) % 16 != 0) return false;
  return true;
}

// attention_tc_forward.cu / attention_tc_backward.cu (the backward expects a.D filled).
void forward(const TcArgs& a, DType dtype, int HS, int B, cudaStream_t stream);
void backward(const TcArgs& a, DType dtype, int HS, int B, int NKV, cudaStream_t stream);

// Rows row0 .. row0+n-1 (global row stride `stride` elements, from column col) into the shared
// tile dst[Rows][HS + kPad] by cp.async; rows n .. Rows-1 are zero-filled, so that padding rows
// give exact zeros in every product. The caller commits and waits.
template <int Rows, int HS, typename E>
__device__ __forceinline__ void copy_tile_async(E* dst, const E* src, int64_t row0, int64_t stride, int64_t col,
                                                int n) {
  constexpr int kChunks = HS / 8;  // 16-byte chunks per row
  for (int i = threadIdx.x; i < Rows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = (i - r * kChunks) * 8;
    const bool real = r < n;
    cp_async_16(dst + r * (HS + kPad) + c, real ? src + (row0 + r) * stride + col + c : src, real);
  }
}

// The A operand (16 rows x 16 columns from row0, k0) of a row-major shared tile with row stride LD.
// Matrices: 0 rows 0-7 / cols 0-7, 1 rows 8-15 / cols 0-7, 2 rows 0-7 / cols 8-15, 3 rows 8-15 / cols 8-15.
template <int LD, typename E>
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const E* tile, int row0, int k0, int lane) {
  ldmatrix_x4(a, tile + (row0 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + k0 + (lane >> 4) * 8);
}

// B operands of the two n-tiles n0 .. n0+7 and n0+8 .. n0+15 at k-step k0 when B[k][n] = tile[n][k]
// (a tile stored one row per output column: K in Q K^T, V in dO V^T, Q and dO in K Q^T and V dO^T).
// Matrices: 0 rows n0+0-7 / k lo, 1 same rows / k hi, 2 rows n0+8-15 / k lo, 3 rows n0+8-15 / k hi.
template <int LD, typename E>
__device__ __forceinline__ void load_b_rows_n(uint32_t (&b)[2][2], const E* tile, int n0, int k0, int lane) {
  uint32_t r[4];
  ldmatrix_x4(r, tile + (n0 + (lane & 7) + (lane >> 4) * 8) * LD + k0 + ((lane >> 3) & 1) * 8);
  b[0][0] = r[0];
  b[0][1] = r[1];
  b[1][0] = r[2];
  b[1][1] = r[3];
}

// B operands of the two n-tiles n0 .. n0+15 at k-step k0 when B[k][n] = tile[k][n] (a tile stored
// one row per k: V in P V, dO in P^T dO, Q in dS^T Q, K in dS K), through ldmatrix .trans.
// Matrices: 0 rows k0+0-7 / cols n0+0-7, 1 rows k0+8-15 / same cols, 2 rows k0+0-7 / n0+8-15, 3 rows k0+8-15 / n0+8-15.
template <int LD, typename E>
__device__ __forceinline__ void load_b_rows_k(uint32_t (&b)[2][2], const E* tile, int k0, int n0, int lane) {
  uint32_t r[4];
  ldmatrix_x4_trans(r, tile + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + n0 + (lane >> 4) * 8);
  b[0][0] = r[0];
  b[0][1] = r[1];
  b[1][0] = r[2];
  b[1][1] = r[3];
}

// acc[j] += A B over KSteps k-steps, for the N n-tiles of B stored one row per output column:
// acc = A_tile[row0 .. row0+15][0 .. 16 kSteps) x B_tile[0 .. 8N)[same]^T.
template <int N, int KSteps, int LDA, int LDB, typename E>
__device__ __forceinline__ void mma_abt(float (&acc)[N][4], const E* A_tile, int row0, const E* B_tile, int lane) {
  static_assert(N % 2 == 0);
#pragma unroll
  for (int kk = 0; kk < KSteps; ++kk) {
    uint32_t a[4];
    load_a<LDA>(a, A_tile, row0, kk * 16, lane);
#pragma unroll
    for (int j = 0; j < N; j += 2) {
      uint32_t b[2][2];
      load_b_rows_n<LDB>(b, B_tile, j * 8, kk * 16, lane);
      mma_m16n8k16<E>(acc[j], a, b[0]);
      mma_m16n8k16<E>(acc[j + 1], a, b[1]);
    }
  }
}

// acc[j] += P B where P is the warp's fp32 score tile p[2 KSteps][4] (16 rows x 16 KSteps columns),
// rounded to E, and B_tile[0 .. 16 KSteps)[0 .. 8N) is stored one row per k: P V, P^T dO, dS K, dS^T Q.
template <int N, int KSteps, int LDB, typename E>
__device__ __forceinline__ void mma_pb(float (&acc)[N][4], const float (&p)[2 * KSteps][4], const E* B_tile,
                                       int lane) {
  static_assert(N % 2 == 0);
#pragma unroll
  for (int kk = 0; kk < KSteps; ++kk) {
    // The C fragments of columns 16kk .. 16kk+15 are the A fragment of k-step kk.
    const uint32_t a[4] = {pack2<E>(p[2 * kk][0], p[2 * kk][1]), pack2<E>(p[2 * kk][2], p[2 * kk][3]),
                           pack2<E>(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                           pack2<E>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int j = 0; j < N; j += 2) {
      uint32_t b[2][2];
      load_b_rows_k<LDB>(b, B_tile, kk * 16, j * 8, lane);
      mma_m16n8k16<E>(acc[j], a, b[0]);
      mma_m16n8k16<E>(acc[j + 1], a, b[1]);
    }
  }
}

template <int N>
__device__ __forceinline__ void zero(float (&acc)[N][4]) {
#pragma unroll
  for (int j = 0; j < N; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
}

// Stores the warp's accumulator rows (rows row0 + g and row0 + g + 8 of a tile of n real rows) times
// mul as E into dst[(row_base + row) * stride + col + d], two elements (one 32-bit store) at a time.
template <int N, typename E>
__device__ __forceinline__ void store_rows(void* dst, const float (&acc)[N][4], int64_t row_base, int64_t stride,
                                          int64_t col, int row0, int n, const float (&mul)[2], int lane) {
  const int g = lane >> 2, c = lane & 3;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + g + half * 8;
    if (row >= n) continue;
    uint32_t* out = reinterpret_cast<uint32_t*>(static_cast<E*>(dst) + (row_base + row) * stride + col + 2 * c);
#pragma unroll
    for (int j = 0; j < N; ++j) out[j * 4] = pack2<E>(acc[j][2 * half] * mul[half], acc[j][2 * half + 1] * mul[half]);
  }
}

// Sum and max over the 4 lanes of a fragment row (lanes 4g .. 4g+3).
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

}  // namespace trident::cuda::attn::tc
