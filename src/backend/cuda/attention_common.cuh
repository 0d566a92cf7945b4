// Private to the flash-style attention kernels (attention_forward.cu, attention_backward.cu):
// the checked shape, the thread layout and the shared-memory tile loops they all use.
//
// Every attention block has 128 threads seen as 16 row groups x 8 column groups
// (tid = rg * 8 + cg, so the 8 threads of a row group are adjacent lanes of one warp and
// reduce a row with three shuffles). A [Rows x Cols] score tile gives thread (rg, cg) rows
// rg*R .. rg*R+R-1 (R = Rows/16) and columns cg, cg+8, ... (C = Cols/8); a [Rows x HS] output
// tile gives it the same rows and head dims cg, cg+8, ... Tiles live in shared memory in fp32
// with a row stride of MaxHS+1 (or Cols+1) floats, = 1 mod 32: the 4 row groups of a warp read
// 4 different rows at the same column and hit 4 different banks, and the 8 column groups read
// 8 different rows (score loops) or 8 adjacent floats (output loops) without conflicts.
// The math is fp32 FMA on CUDA cores: 16-bit inputs are widened on load, as the dtype contract
// says, so results match the CPU backend up to summation order.
#pragma once
#include <climits>
#include <cmath>
#include <string>

#include "device_access.cuh"

namespace trident::cuda::attn {

inline constexpr int kThreads = 128;
inline constexpr int kRowGroups = 16;
inline constexpr int kColGroups = 8;
// Head sizes above this have no kernel (every model trident trains has HS <= 128).
inline constexpr int kMaxHeadSize = 128;

// q, out, dout, dq: [B, T, NH*HS]; k, v, dk, dv: [B, T, NKV*HS]; lse: [B, NH, T].
struct Shape4 {
  int64_t B, T, NH, NKV, HS;
  int64_t q_stride() const { return NH * HS; }
  int64_t kv_stride() const { return NKV * HS; }
  int group() const { return static_cast<int>(NH / NKV); }
};

inline std::string shape_str(const Tensor& t) { return t.shape().str(); }

// The shape and dtype checks shared by forward and backward (the CPU's check_attention).
inline Shape4 check_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor& positions, int heads,
                              int kv_heads) {
  const std::string o(op);
  elem_of(q, op, "q");
  TRIDENT_CHECK(q.ndim() == 3, o, ": q ", shape_str(q), " must be [B, T, NH*HS]");
  TRIDENT_CHECK(heads > 0 && kv_heads > 0 && heads % kv_heads == 0, o, ": heads ", heads,
                " must be a positive multiple of kv_heads ", kv_heads);
  TRIDENT_CHECK(q.dim(2) % heads == 0, o, ": q width ", q.dim(2), " is not a multiple of heads ", heads);
  const Shape4 s{q.dim(0), q.dim(1), heads, kv_heads, q.dim(2) / heads};
  TRIDENT_CHECK(s.HS >= 1 && s.HS <= kMaxHeadSize, o, ": head size ", s.HS, " is above the CUDA kernels' ",
                kMaxHeadSize);
  for (const Tensor* t : {&k, &v}) {
    const char* name = t == &k ? "k" : "v";
    elem_of(*t, op, name);
    TRIDENT_CHECK(t->numel() == s.B * s.T * s.kv_stride() && t->dim(-1) == s.kv_stride(), o, ": ", name, " ",
                  shape_str(*t), " is not [B=", s.B, ", T=", s.T, ", NKV*HS=", s.kv_stride(), "]");
  }
  elem_of(out, op, "out");
  TRIDENT_CHECK(out.shape() == q.shape(), o, ": out ", shape_str(out), " differs from q ", shape_str(q));
  TRIDENT_CHECK(lse.dtype() == DType::kF32, o, ": lse is ", dtype_name(lse.dtype()), "; it must be fp32");
  TRIDENT_CHECK(lse.numel() == s.B * s.NH * s.T, o, ": lse ", shape_str(lse), " is not [B, NH, T] = ",
                s.B * s.NH * s.T, " elements");
  if (positions.defined()) {
    TRIDENT_CHECK(positions.dtype() == DType::kI32, o, ": positions are ", dtype_name(positions.dtype()),
                  "; they must be int32");
    TRIDENT_CHECK(positions.numel() == s.B * s.T, o, ": positions ", shape_str(positions),
                  " is not [B*T] = ", s.B * s.T, " elements");
  }
  return s;
}

// Opts a kernel into more than 48 KiB of dynamic shared memory, then checks the launch.
template <typename Kernel>
inline void allow_shared(Kernel kernel, size_t bytes) {
  TRIDENT_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// Launches kernel(a) on grid with kThreads threads and `shared` bytes of dynamic shared memory.
template <typename Args>
inline void launch_tiles(void (*kernel)(Args), dim3 grid, size_t shared, const Args& a, cudaStream_t stream) {
  allow_shared(kernel, shared);
  kernel<<<grid, kThreads, shared, stream>>>(a);
  TRIDENT_CUDA_LAUNCHED();
}

// The forward and backward grids: (tiles of T, heads, batch).
inline void check_grid(const char* op, const Shape4& s, const Tensor& q) {
  TRIDENT_CHECK(s.B <= 65535 && s.NH <= 65535 && s.T < (int64_t(1) << 30), op, ": q ", q.shape().str(), " with ",
                s.NH, " heads exceeds the kernel's grid");
}

// Where query t's document starts: t - positions[t] (0 without positions), clamped to [0, t]
// so that a row always sees its own key and never reads outside the sequence. The kernels mask
// every score exactly with it, and skip key or query tiles only by block-wide minima, so they
// stay exact even for positions that break the "non-decreasing start" rule (the CPU backend
// rejects those; the device copy is not checked, that would need a synchronisation).
__device__ __forceinline__ int doc_start(const int32_t* positions, int64_t b, int T, int t) {
  if (positions == nullptr) return 0;
  const int start = t - positions[b * T + t];
  return start < 0 ? 0 : (start > t ? t : start);
}

// The document starts of a query tile's rows i0 .. i0+Br-1 into lo[r] (INT_MAX for padding rows
// r >= n: they see no key) and their minimum into first_key, where the tile's key stream starts.
// first_key is the block's __shared__ int; every thread calls this. Readers need a barrier after.
template <int Br>
__device__ __forceinline__ void query_doc_starts(int* lo, int& first_key, const int32_t* positions, int64_t b, int T,
                                                 int i0, int n) {
  if (threadIdx.x == 0) first_key = INT_MAX;
  __syncthreads();
  for (int r = threadIdx.x; r < Br; r += kThreads) {
    const int start = r < n ? doc_start(positions, b, T, i0 + r) : INT_MAX;
    lo[r] = start;
    atomicMin(&first_key, start);
  }
}

// dst[r * LD + d] = src[(row0 + r) * stride + col + d] (widened to fp32) for r < rows, d < HS;
// zero for rows n <= r < Rows, so that padded rows contribute exact zeros (0 * garbage could be NaN).
template <int Rows, int LD>
__device__ __forceinline__ void load_tile(float* dst, const void* src, Elem e, int64_t row0, int64_t stride,
                                          int64_t col, int n, int HS) {
  for (int i = threadIdx.x; i < Rows * HS; i += kThreads) {
    const int r = i / HS, d = i - r * HS;
    dst[r * LD + d] = r < n ? load(src, e, (row0 + r) * stride + col + d) : 0.f;
  }
}

// Key and value rows row0 .. row0+n-1 (of all B*T) at column kv_col (a kv head) into Ks and Vs,
// as load_tile. Args: the kernel's arguments (k, v, ek, ev, kv_stride).
template <int Rows, int LD, typename Args>
__device__ __forceinline__ void load_kv_tiles(float* Ks, float* Vs, const Args& a, int64_t row0, int64_t kv_col, int n,
                                              int HS) {
  load_tile<Rows, LD>(Ks, a.k, a.ek, row0, a.kv_stride, kv_col, n, HS);
  load_tile<Rows, LD>(Vs, a.v, a.ev, row0, a.kv_stride, kv_col, n, HS);
}

// acc[i][j] = sum_{d < HS} A[(rg*R + i) * LD + d] * B[(cg + 8*j) * LD + d]: one thread's share
// of a score tile A B^T (Q K^T, dO V^T, K Q^T, V dO^T).
template <int R, int C, int LD>
__device__ __forceinline__ void tile_dot(float (&acc)[R][C], const float* A, const float* B, int HS, int rg, int cg) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) acc[i][j] = 0.f;
  const float* a_row = A + rg * R * LD;
  const float* b_row = B + cg * LD;
#pragma unroll 4
  for (int d = 0; d < HS; ++d) {
    float a[R], b[C];
#pragma unroll
    for (int i = 0; i < R; ++i) a[i] = a_row[i * LD + d];
#pragma unroll
    for (int j = 0; j < C; ++j) b[j] = b_row[j * kColGroups * LD + d];
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int j = 0; j < C; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// acc[i][dd] += sum_{j < N} P[(rg*R + i) * LDP + j] * V[j * LD + cg + 8*dd] for head dims
// cg + 8*dd < HS: one thread's share of P V, dS K, P^T dO or dS^T Q.
template <int R, int ND, int N, int LDP, int LD>
__device__ __forceinline__ void tile_accumulate(float (&acc)[R][ND], const float* P, const float* V, int HS, int rg,
                                                int cg) {
  const float* p_row = P + rg * R * LDP;
#pragma unroll 2
  for (int j = 0; j < N; ++j) {
    float p[R];
#pragma unroll
    for (int i = 0; i < R; ++i) p[i] = p_row[i * LDP + j];
    const float* v_row = V + j * LD + cg;
#pragma unroll
    for (int dd = 0; dd < ND; ++dd) {
      if (cg + dd * kColGroups < HS) {
        const float x = v_row[dd * kColGroups];
#pragma unroll
        for (int i = 0; i < R; ++i) acc[i][dd] = fmaf(p[i], x, acc[i][dd]);
      }
    }
  }
}

// Sum and max over the 8 column groups of a row (adjacent lanes of one warp).
__device__ __forceinline__ float row_sum(float x) {
#pragma unroll
  for (int o = 1; o < kColGroups; o <<= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ __forceinline__ float row_max(float x) {
#pragma unroll
  for (int o = 1; o < kColGroups; o <<= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

}  // namespace trident::cuda::attn
