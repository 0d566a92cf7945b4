// Causal attention backward, FlashAttention-2 style, deterministic (no atomics):
//  1. D[b, h, t] = dout_t . out_t (fp32 scratch [B, NH, T]), one warp per row and head;
//  2. dK, dV: one block per (key tile, kv head, batch) holds the tile's K, V in shared memory and
//     dK, dV in registers, and loops over the kv head's query heads and the query tiles that can
//     see the tile, recomputing P = exp(scale q.k - lse) and dS = P (dP - D) scale with
//     dP = dout . v; dV += P^T dout, dK += dS^T q. The group's query heads are summed inside the
//     block, so GQA needs no reduction across blocks;
//  3. dQ: one block per (query tile, head, batch) streams over the key tiles its rows see (as the
//     forward does), recomputing P and dS the same way; dQ += dS K in registers.
// Pass 3 recomputes the scores pass 2 already had: about 1.4x the FLOPs of an atomicAdd dQ, but
// dq, dk, dv are written once each, in their own dtype, and bit-reproducible run to run.
#include "attention_common.cuh"
#include "attention_tc.cuh"
#include "kernels.cuh"

namespace trident::cuda {
namespace {

using namespace attn;

struct BackwardArgs {
  const void* q;
  const void* k;
  const void* v;
  const void* out;
  const void* dout;
  const float* lse;
  float* D;  // [B, NH, T] scratch
  const int32_t* positions;  // nullptr: plain causal
  void* dq;
  void* dk;
  void* dv;
  Elem eq, ek, ev, eo, edo, edq, edk, edv;
  int T, NH, HS, group;
  int64_t q_stride, kv_stride;
  float scale;
};

// D = rowsum(dout * out) per (b, t, h): one warp per row of one head.
__global__ void attention_backward_rowdot(BackwardArgs a, int64_t rows) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < rows; r += warps) {
    const int64_t bt = r / a.NH;
    const int h = static_cast<int>(r - bt * a.NH);
    const int64_t base = bt * a.q_stride + static_cast<int64_t>(h) * a.HS;
    float sum = 0.f;
    for (int d = lane; d < a.HS; d += 32) sum = fmaf(load(a.out, a.eo, base + d), load(a.dout, a.edo, base + d), sum);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) {
      const int64_t b = bt / a.T, t = bt - b * a.T;
      a.D[(b * a.NH + h) * a.T + t] = sum;
    }
  }
}

// Pass 2 tiles: Bc keys per block (KR per thread), Br queries per step.
template <int MaxHS, int Bc, int Br>
struct KeyTiles {
  static constexpr int KR = Bc / kRowGroups;     // keys per thread
  static constexpr int QC = Br / kColGroups;     // queries per thread in a score tile
  static constexpr int ND = MaxHS / kColGroups;  // head dims per thread in dK, dV
  static constexpr int LD = MaxHS + 1, LDP = Br + 1;
  // K, V [Bc][LD]; Q, dO [Br][LD]; P^T, dS^T [Bc][LDP]; then lse, D and document starts [Br].
  static constexpr size_t kSharedBytes =
      sizeof(float) * (2 * Bc * LD + 2 * Br * LD + 2 * Bc * LDP + 2 * Br) + sizeof(int) * Br;
  static_assert(Bc % kRowGroups == 0 && Br % kColGroups == 0 && Br <= kThreads);
};

template <int MaxHS, int Bc, int Br>
__global__ void __launch_bounds__(kThreads) attention_backward_dkdv(BackwardArgs a) {
  using Tl = KeyTiles<MaxHS, Bc, Br>;
  constexpr int KR = Tl::KR, QC = Tl::QC, ND = Tl::ND, LD = Tl::LD, LDP = Tl::LDP;
  extern __shared__ float smem[];
  float* Ks = smem;
  float* Vs = Ks + Bc * LD;
  float* Qs = Vs + Bc * LD;
  float* dOs = Qs + Br * LD;
  float* PT = dOs + Br * LD;
  float* dST = PT + Bc * LDP;
  float* lse_s = dST + Bc * LDP;
  float* D_s = lse_s + Br;
  int* lo_s = reinterpret_cast<int*>(D_s + Br);

  const int j0 = blockIdx.x * Bc, g = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int T = a.T, HS = a.HS;
  const int nj = min(Bc, T - j0);
  const int64_t kv_col = static_cast<int64_t>(g) * HS;
  const int rg = threadIdx.x / kColGroups, cg = threadIdx.x % kColGroups;

  load_kv_tiles<Bc, LD>(Ks, Vs, a, b * T + j0, kv_col, nj, HS);

  float dk[KR][ND], dv[KR][ND];
#pragma unroll
  for (int i = 0; i < KR; ++i)
#pragma unroll
    for (int dd = 0; dd < ND; ++dd) dk[i][dd] = dv[i][dd] = 0.f;

  for (int hh = 0; hh < a.group; ++hh) {
    const int h = g * a.group + hh;
    const float* lse_h = a.lse + (b * a.NH + h) * T;
    const float* D_h = a.D + (b * a.NH + h) * T;
    // Query tiles from the one holding query j0 (earlier queries see none of these keys).
    for (int t0 = j0 / Br * Br; t0 < T; t0 += Br) {
      const int nt = min(Br, T - t0);
      // Per-row statistics; the barrier also tells whether any row sees a key of this tile
      // (document masking: later documents' query tiles are skipped).
      bool sees = false;
      if (threadIdx.x < Br) {
        const int r = threadIdx.x, t = t0 + r;
        const int lo = r < nt ? doc_start(a.positions, b, T, t) : INT_MAX;
        lo_s[r] = lo;
        lse_s[r] = r < nt ? lse_h[t] : 0.f;
        D_s[r] = r < nt ? D_h[t] : 0.f;
        sees = r < nt && t >= j0 && lo < j0 + nj;
      }
      // Also orders the previous step's reads of Qs, dOs, PT, dST before the writes below.
      if (!__syncthreads_or(sees)) continue;
      load_tile<Br, LD>(Qs, a.q, a.eq, b * T + t0, a.q_stride, static_cast<int64_t>(h) * HS, nt, HS);
      load_tile<Br, LD>(dOs, a.dout, a.edo, b * T + t0, a.q_stride, static_cast<int64_t>(h) * HS, nt, HS);
      __syncthreads();

      // S^T = K Q^T and dP^T = V dO^T for this thread's keys x queries.
      float s[KR][QC], dp[KR][QC];
      tile_dot<KR, QC, LD>(s, Ks, Qs, HS, rg, cg);
      tile_dot<KR, QC, LD>(dp, Vs, dOs, HS, rg, cg);
#pragma unroll
      for (int i = 0; i < KR; ++i) {
        const int key = j0 + rg * KR + i;
#pragma unroll
        for (int jj = 0; jj < QC; ++jj) {
          const int r = cg + jj * kColGroups, t = t0 + r;
          const bool valid = key >= lo_s[r] && key <= t;  // padding rows have lo = INT_MAX
          const float p = valid ? expf(s[i][jj] * a.scale - lse_s[r]) : 0.f;
          PT[(rg * KR + i) * LDP + r] = p;
          dST[(rg * KR + i) * LDP + r] = p * (dp[i][jj] - D_s[r]) * a.scale;
        }
      }
      __syncthreads();
      tile_accumulate<KR, ND, Br, LDP, LD>(dv, PT, dOs, HS, rg, cg);   // dV += P^T dO
      tile_accumulate<KR, ND, Br, LDP, LD>(dk, dST, Qs, HS, rg, cg);  // dK += dS^T Q
    }
  }

#pragma unroll
  for (int i = 0; i < KR; ++i) {
    const int row = rg * KR + i;
    if (row >= nj) continue;
    const int64_t base = (b * T + j0 + row) * a.kv_stride + kv_col;
#pragma unroll
    for (int dd = 0; dd < ND; ++dd) {
      const int d = cg + dd * kColGroups;
      if (d < HS) {
        store(a.dk, a.edk, base + d, dk[i][dd]);
        store(a.dv, a.edv, base + d, dv[i][dd]);
      }
    }
  }
}

// Pass 3 tiles: Br queries per block (R per thread), Bc keys per step.
template <int MaxHS, int Br, int Bc>
struct QueryTiles {
  static constexpr int R = Br / kRowGroups;
  static constexpr int C = Bc / kColGroups;
  static constexpr int ND = MaxHS / kColGroups;
  static constexpr int LD = MaxHS + 1, LDP = Bc + 1;
  // Q, dO [Br][LD]; K, V [Bc][LD]; dS [Br][LDP]; then the rows' document starts.
  static constexpr size_t kSharedBytes = sizeof(float) * (2 * Br * LD + 2 * Bc * LD + Br * LDP) + sizeof(int) * Br;
  static_assert(Br % kRowGroups == 0 && Bc % kColGroups == 0);
};

template <int MaxHS, int Br, int Bc>
__global__ void __launch_bounds__(kThreads) attention_backward_dq(BackwardArgs a) {
  using Tl = QueryTiles<MaxHS, Br, Bc>;
  constexpr int R = Tl::R, C = Tl::C, ND = Tl::ND, LD = Tl::LD, LDP = Tl::LDP;
  extern __shared__ float smem[];
  float* Qs = smem;
  float* dOs = Qs + Br * LD;
  float* Ks = dOs + Br * LD;
  float* Vs = Ks + Bc * LD;
  float* dSs = Vs + Bc * LD;
  int* lo_s = reinterpret_cast<int*>(dSs + Br * LDP);
  __shared__ int first_key;

  const int i0 = (gridDim.x - 1 - blockIdx.x) * Br, h = blockIdx.y;  // longest blocks first
  const int64_t b = blockIdx.z;
  const int T = a.T, HS = a.HS;
  const int ni = min(Br, T - i0);
  const int64_t kv_col = static_cast<int64_t>(h / a.group) * HS;
  const int rg = threadIdx.x / kColGroups, cg = threadIdx.x % kColGroups;

  query_doc_starts<Br>(lo_s, first_key, a.positions, b, T, i0, ni);
  load_tile<Br, LD>(Qs, a.q, a.eq, b * T + i0, a.q_stride, static_cast<int64_t>(h) * HS, ni, HS);
  load_tile<Br, LD>(dOs, a.dout, a.edo, b * T + i0, a.q_stride, static_cast<int64_t>(h) * HS, ni, HS);
  __syncthreads();

  int lo[R];
  float lse[R], D[R], dq[R][ND];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int row = rg * R + i;
    const int64_t stat = (b * a.NH + h) * T + i0 + row;
    lo[i] = lo_s[row];
    lse[i] = row < ni ? a.lse[stat] : 0.f;
    D[i] = row < ni ? a.D[stat] : 0.f;
#pragma unroll
    for (int dd = 0; dd < ND; ++dd) dq[i][dd] = 0.f;
  }

  for (int j0 = first_key / Bc * Bc; j0 < i0 + ni; j0 += Bc) {
    const int nj = min(Bc, T - j0);
    __syncthreads();  // the previous step's readers of Ks, dSs are done
    load_kv_tiles<Bc, LD>(Ks, Vs, a, b * T + j0, kv_col, nj, HS);
    __syncthreads();

    float s[R][C], dp[R][C];
    tile_dot<R, C, LD>(s, Qs, Ks, HS, rg, cg);
    tile_dot<R, C, LD>(dp, dOs, Vs, HS, rg, cg);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int t = i0 + rg * R + i;
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const int key = j0 + cg + j * kColGroups;
        const bool valid = key >= lo[i] && key <= t;
        const float p = valid ? expf(s[i][j] * a.scale - lse[i]) : 0.f;
        dSs[(rg * R + i) * LDP + cg + j * kColGroups] = p * (dp[i][j] - D[i]) * a.scale;
      }
    }
    __syncthreads();
    tile_accumulate<R, ND, Bc, LDP, LD>(dq, dSs, Ks, HS, rg, cg);  // dQ += dS K
  }

#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int row = rg * R + i;
    if (row >= ni) continue;
    const int64_t base = (b * T + i0 + row) * a.q_stride + static_cast<int64_t>(h) * HS;
#pragma unroll
    for (int dd = 0; dd < ND; ++dd) {
      const int d = cg + dd * kColGroups;
      if (d < HS) store(a.dq, a.edq, base + d, dq[i][dd]);
    }
  }
}

// Tiles sized for about 60-75 KiB of shared memory: two or three blocks per SM on sm_80/sm_90.
template <int MaxHS, int KeyBc, int KeyBr, int QBr, int QBc>
void launch_backward(const BackwardArgs& a, int B, int NKV, cudaStream_t stream) {
  launch_tiles(attention_backward_dkdv<MaxHS, KeyBc, KeyBr>, dim3((a.T + KeyBc - 1) / KeyBc, NKV, B),
               KeyTiles<MaxHS, KeyBc, KeyBr>::kSharedBytes, a, stream);
  launch_tiles(attention_backward_dq<MaxHS, QBr, QBc>, dim3((a.T + QBr - 1) / QBr, a.NH, B),
               QueryTiles<MaxHS, QBr, QBc>::kSharedBytes, a, stream);
}

void check_like(const Tensor& t, const Tensor& like, const char* op, const char* name, const char* like_name) {
  elem_of(t, op, name);
  TRIDENT_CHECK(t.numel() == like.numel() && t.dim(-1) == like.dim(-1), op, ": ", name, " ", t.shape().str(),
                " differs from ", like_name, " ", like.shape().str());
}

}  // namespace

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int heads, int kv_heads, const Tensor& positions, Tensor& dq,
                        Tensor& dk, Tensor& dv, cudaStream_t stream) {
  constexpr const char* op = "attention_backward";
  const attn::Shape4 s = attn::check_attention(op, q, k, v, out, lse, positions, heads, kv_heads);
  check_like(dout, q, op, "dout", "q");
  check_like(dq, q, op, "dq", "q");
  check_like(dk, k, op, "dk", "k");
  check_like(dv, v, op, "dv", "v");
  if (s.B == 0 || s.T == 0) return;
  attn::check_grid(op, s, q);

  const size_t d_bytes = sizeof(float) * static_cast<size_t>(s.B * s.NH * s.T);
  float* D = nullptr;
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&D), d_bytes, stream));
  BackwardArgs a{q.raw(),
                 k.raw(),
                 v.raw(),
                 out.raw(),
                 dout.raw(),
                 static_cast<const float*>(lse.raw()),
                 D,
                 positions.defined() ? static_cast<const int32_t*>(positions.raw()) : nullptr,
                 dq.raw(),
                 dk.raw(),
                 dv.raw(),
                 elem_of(q, op, "q"),
                 elem_of(k, op, "k"),
                 elem_of(v, op, "v"),
                 elem_of(out, op, "out"),
                 elem_of(dout, op, "dout"),
                 elem_of(dq, op, "dq"),
                 elem_of(dk, op, "dk"),
                 elem_of(dv, op, "dv"),
                 static_cast<int>(s.T),
                 static_cast<int>(s.NH),
                 static_cast<int>(s.HS),
                 s.group(),
                 s.q_stride(),
                 s.kv_stride(),
                 1.f / std::sqrt(static_cast<float>(s.HS))};
  try {
    const int64_t rows = s.B * s.T * s.NH;
    attention_backward_rowdot<<<grid_for(rows * 32, 256), 256, 0, stream>>>(a, rows);
    TRIDENT_CUDA_LAUNCHED();
    // All bf16 or all fp16 at head size 64 or 128: the tensor-core kernels (attention_tc_backward.cu).
    if (attn::tc::eligible({&q, &k, &v, &out, &dout, &dq, &dk, &dv}, s.HS)) {
      attn::tc::TcArgs t{};
      t.q = a.q;
      t.k = a.k;
      t.v = a.v;
      t.dout = a.dout;
      t.lse = a.lse;
      t.D = D;
      t.positions = a.positions;
      t.dq = a.dq;
      t.dk = a.dk;
      t.dv = a.dv;
      t.T = a.T;
      t.NH = a.NH;
      t.group = a.group;
      t.q_stride = a.q_stride;
      t.kv_stride = a.kv_stride;
      t.scale = a.scale;
      attn::tc::backward(t, q.dtype(), a.HS, static_cast<int>(s.B), static_cast<int>(s.NKV), stream);
    } else if (s.HS <= 64)
      launch_backward<64, 64, 32, 64, 32>(a, static_cast<int>(s.B), static_cast<int>(s.NKV), stream);
    else
      launch_backward<128, 32, 32, 32, 32>(a, static_cast<int>(s.B), static_cast<int>(s.NKV), stream);
  } catch (...) {
    cudaFreeAsync(D, stream);
    throw;
  }
  TRIDENT_CUDA_CHECK(cudaFreeAsync(D, stream));
}

}  // namespace trident::cuda
