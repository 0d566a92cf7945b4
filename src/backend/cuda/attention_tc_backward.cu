// Causal attention backward on tensor cores (bf16/fp16, head size 64 or 128), FlashAttention-2
// style and deterministic (no atomics), the same passes as attention_backward.cu (whose
// D = rowsum(dout * out) pass runs first):
//  1. dK, dV: one block per (64-key tile, kv head, batch), 4 warps of 16 key rows each. K and V
//     stay in shared memory, dK and dV in registers; the block loops over the kv head's query
//     heads and the query tiles that see the tile. Per step and warp: S^T = K Q^T and
//     dP^T = V dO^T, P^T = exp2(scale log2(e) S^T - log2(e) lse), dS^T = P^T (dP^T - D), then
//     dV += P^T dO and dK += dS^T Q with P^T and dS^T rounded to the input dtype in registers;
//     dK is scaled once at the end. The next query tile's Q and dO are copied (cp.async) into a
//     second buffer while a step computes. Summing the GQA group inside the block needs no reduction.
//  2. dQ: one block per (64-query tile, head, batch) streams the key tiles its rows see, as the
//     forward does: S = Q K^T, dP = dO V^T, P, dS as above, dQ += dS K; scaled once at the end.
#include "attention_tc.cuh"

namespace trident::cuda::attn::tc {
namespace {

// dK, dV tiles: Bc keys per block, Br queries per step (fewer at HS 128 to stay in registers).
template <int HS>
struct KeyTcTiles {
  static constexpr int Bc = 64, Br = HS == 64 ? 64 : 32, LD = HS + kPad;
  // K, V [Bc][LD]; Q, dO double-buffered [2][Br][LD]; then the step's log2(e) lse, D and
  // document starts [Br].
  static constexpr size_t kSharedBytes = 2 * size_t(LD) * (2 * Bc + 4 * Br) + (2 * sizeof(float) + sizeof(int)) * Br;
  static_assert(Bc == 16 * kWarps && Br % 16 == 0 && Br <= kThreads);
};

template <typename E, int HS>
__global__ void __launch_bounds__(kThreads) attention_tc_backward_dkdv(TcArgs a) {
  using Tl = KeyTcTiles<HS>;
  constexpr int Bc = Tl::Bc, Br = Tl::Br, LD = Tl::LD;
  constexpr int QN = Br / 8;  // n-tiles of a score row block (queries)
  constexpr int ON = HS / 8;  // n-tiles of dK, dV
  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* Ks = reinterpret_cast<E*>(smem_raw);
  E* Vs = Ks + Bc * LD;
  E* Qbuf = Vs + Bc * LD;        // [2][Br][LD]
  E* dObuf = Qbuf + 2 * Br * LD;  // [2][Br][LD]
  float* lse_s = reinterpret_cast<float*>(dObuf + 2 * Br * LD);
  float* D_s = lse_s + Br;
  int* lo_s = reinterpret_cast<int*>(D_s + Br);

  const int j0 = blockIdx.x * Bc, kv = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int T = a.T;
  const int nj = min(Bc, T - j0);
  const int64_t kv_col = static_cast<int64_t>(kv) * HS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = warp * 16;  // the warp's first key in the tile
  const int g = lane >> 2, c = lane & 3;
  const int key[2] = {j0 + row0 + g, j0 + row0 + g + 8};  // this thread's two keys
  const E* q = static_cast<const E*>(a.q);
  const E* dout = static_cast<const E*>(a.dout);
  const float scale2 = a.scale * kLog2e;

  copy_tile_async<Bc, HS>(Ks, static_cast<const E*>(a.k), b * T + j0, a.kv_stride, kv_col, nj);
  copy_tile_async<Bc, HS>(Vs, static_cast<const E*>(a.v), b * T + j0, a.kv_stride, kv_col, nj);
  cp_async_commit();

  float dk[ON][4], dv[ON][4];
  zero(dk);
  zero(dv);

  // Q and dO of a step's query tile are in buffer `cur`; the next tile's copy is started into
  // the other buffer before this step's math, so it overlaps it. held[b] is the (head, tile)
  // buffer b holds or is receiving (-1: none): a tile after a skipped one is copied then.
  int cur = 0;
  int64_t held[2] = {-1, -1};
  auto load = [&](int buffer, int head, int t_first) {
    const int64_t col = static_cast<int64_t>(head) * HS;
    copy_tile_async<Br, HS>(Qbuf + buffer * Br * LD, q, b * T + t_first, a.q_stride, col, min(Br, T - t_first));
    copy_tile_async<Br, HS>(dObuf + buffer * Br * LD, dout, b * T + t_first, a.q_stride, col, min(Br, T - t_first));
    cp_async_commit();
    held[buffer] = int64_t(head) * T + t_first;
  };

  for (int hh = 0; hh < a.group; ++hh) {
    const int h = kv * a.group + hh;
    const float* lse_h = a.lse + (b * a.NH + h) * T;
    const float* D_h = a.D + (b * a.NH + h) * T;
    // Query tiles from the one holding query j0 (earlier queries see none of these keys).
    for (int t0 = j0 / Br * Br; t0 < T; t0 += Br) {
      const int nt = min(Br, T - t0);
      // Per-query statistics; the barrier also tells whether any query sees a key of this tile
      // (document masking: later documents' query tiles are skipped).
      bool sees = false;
      if (threadIdx.x < Br) {
        const int r = threadIdx.x, t = t0 + r;
        const int lo = r < nt ? doc_start(a.positions, b, T, t) : INT_MAX;
        lo_s[r] = lo;
        lse_s[r] = r < nt ? lse_h[t] * kLog2e : 0.f;
        D_s[r] = r < nt ? D_h[t] : 0.f;
        sees = r < nt && t >= j0 && lo < j0 + nj;
      }
      if (!__syncthreads_or(sees)) continue;
      if (held[cur] != int64_t(h) * T + t0) {  // not prefetched: a copy still landing there ends first
        cp_async_wait<0>();
        load(cur, h, t0);
      }
      // The next step's tile: this head's next one, or the next head's first.
      const int t_next = t0 + Br < T ? t0 + Br : j0 / Br * Br;
      const int h_next = t0 + Br < T ? h : h + 1;
      if (h_next < kv * a.group + a.group) {
        load(cur ^ 1, h_next, t_next);
        cp_async_wait<1>();  // everything but that prefetch has landed
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const E* Qs = Qbuf + cur * Br * LD;
      const E* dOs = dObuf + cur * Br * LD;

      float s[QN][4], dp[QN][4];  // S^T, dP^T: the warp's 16 keys x Br queries
      zero(s);
      zero(dp);
      mma_abt<QN, HS / 16, LD, LD>(s, Ks, row0, Qs, lane);
      mma_abt<QN, HS / 16, LD, LD>(dp, Vs, row0, dOs, lane);
#pragma unroll
      for (int j = 0; j < QN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = j * 8 + 2 * c + (e & 1), t = t0 + r, kk = key[e >> 1];
          const bool valid = kk >= lo_s[r] && kk <= t;  // padding queries have lo = INT_MAX
          const float p = valid ? exp2f(s[j][e] * scale2 - lse_s[r]) : 0.f;
          s[j][e] = p;
          dp[j][e] = p * (dp[j][e] - D_s[r]);
        }
      mma_pb<ON, Br / 16, LD, E>(dv, s, dOs, lane);  // dV += P^T dO
      mma_pb<ON, Br / 16, LD, E>(dk, dp, Qs, lane);  // dK += dS^T Q
      __syncthreads();  // the step's readers of this buffer and the statistics are done
      cur ^= 1;
    }
  }
  cp_async_wait<0>();  // K, V (never waited for when no query tile saw them) and any prefetch

  const float mul_k[2] = {a.scale, a.scale}, mul_v[2] = {1.f, 1.f};
  store_rows<ON, E>(a.dk, dk, b * T + j0, a.kv_stride, kv_col, row0, nj, mul_k, lane);
  store_rows<ON, E>(a.dv, dv, b * T + j0, a.kv_stride, kv_col, row0, nj, mul_v, lane);
}

// dQ tiles: Br queries per block, Bc keys per step.
template <int HS>
struct QueryTcTiles {
  static constexpr int Br = 64, Bc = 64, LD = HS + kPad;
  // Q, dO [Br][LD]; K, V [Bc][LD]; then the rows' document starts.
  static constexpr size_t kSharedBytes = 2 * size_t(LD) * (2 * Br + 2 * Bc) + sizeof(int) * Br;
  static_assert(Br == 16 * kWarps && Bc % 16 == 0);
};

template <typename E, int HS>
__global__ void __launch_bounds__(kThreads) attention_tc_backward_dq(TcArgs a) {
  using Tl = QueryTcTiles<HS>;
  constexpr int Br = Tl::Br, Bc = Tl::Bc, LD = Tl::LD;
  constexpr int SN = Bc / 8;  // n-tiles of a score row block (keys)
  constexpr int ON = HS / 8;  // n-tiles of dQ
  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* Qs = reinterpret_cast<E*>(smem_raw);
  E* dOs = Qs + Br * LD;
  E* Ks = dOs + Br * LD;
  E* Vs = Ks + Bc * LD;
  int* lo_s = reinterpret_cast<int*>(Vs + Bc * LD);
  __shared__ int first_key;

  const int i0 = (gridDim.x - 1 - blockIdx.x) * Br, h = blockIdx.y;  // longest blocks first
  const int64_t b = blockIdx.z;
  const int T = a.T;
  const int ni = min(Br, T - i0);
  const int64_t q_col = static_cast<int64_t>(h) * HS, kv_col = static_cast<int64_t>(h / a.group) * HS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = warp * 16;
  const int g = lane >> 2, c = lane & 3;
  const E* k = static_cast<const E*>(a.k);
  const E* v = static_cast<const E*>(a.v);
  const float scale2 = a.scale * kLog2e;

  query_doc_starts<Br>(lo_s, first_key, a.positions, b, T, i0, ni);
  copy_tile_async<Br, HS>(Qs, static_cast<const E*>(a.q), b * T + i0, a.q_stride, q_col, ni);
  copy_tile_async<Br, HS>(dOs, static_cast<const E*>(a.dout), b * T + i0, a.q_stride, q_col, ni);
  cp_async_commit();
  __syncthreads();  // first_key and lo_s

  // This thread's two rows: global index, document start, log2(e) lse and D.
  int t_row[2], lo[2];
  float lse2[2], D[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + g + half * 8;
    const int64_t stat = (b * a.NH + h) * T + i0 + row;
    t_row[half] = i0 + row;
    lo[half] = lo_s[row];
    lse2[half] = row < ni ? a.lse[stat] * kLog2e : 0.f;
    D[half] = row < ni ? a.D[stat] : 0.f;
  }
  float dq[ON][4];
  zero(dq);

  for (int j0 = first_key / Bc * Bc; j0 < i0 + ni; j0 += Bc) {
    copy_tile_async<Bc, HS>(Ks, k, b * T + j0, a.kv_stride, kv_col, T - j0);
    copy_tile_async<Bc, HS>(Vs, v, b * T + j0, a.kv_stride, kv_col, T - j0);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    float s[SN][4], dp[SN][4];
    zero(s);
    zero(dp);
    mma_abt<SN, HS / 16, LD, LD>(s, Qs, row0, Ks, lane);   // S = Q K^T
    mma_abt<SN, HS / 16, LD, LD>(dp, dOs, row0, Vs, lane);  // dP = dO V^T
#pragma unroll
    for (int j = 0; j < SN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = j0 + j * 8 + 2 * c + (e & 1), half = e >> 1;
        const bool valid = key >= lo[half] && key <= t_row[half];  // padding rows have lo = INT_MAX
        const float p = valid ? exp2f(s[j][e] * scale2 - lse2[half]) : 0.f;
        dp[j][e] = p * (dp[j][e] - D[half]);
      }
    mma_pb<ON, Bc / 16, LD, E>(dq, dp, Ks, lane);  // dQ += dS K
    __syncthreads();  // the step's readers of Ks, Vs are done
  }

  const float mul[2] = {a.scale, a.scale};
  store_rows<ON, E>(a.dq, dq, b * T + i0, a.q_stride, q_col, row0, ni, mul, lane);
}

template <typename E, int HS>
void launch_backward(const TcArgs& a, int B, int NKV, cudaStream_t stream) {
  constexpr int Bc = KeyTcTiles<HS>::Bc, Br = QueryTcTiles<HS>::Br;
  launch_tiles(attention_tc_backward_dkdv<E, HS>, dim3((a.T + Bc - 1) / Bc, NKV, B), KeyTcTiles<HS>::kSharedBytes,
               a, stream);
  launch_tiles(attention_tc_backward_dq<E, HS>, dim3((a.T + Br - 1) / Br, a.NH, B), QueryTcTiles<HS>::kSharedBytes,
               a, stream);
}

}  // namespace

void backward(const TcArgs& a, DType dtype, int HS, int B, int NKV, cudaStream_t stream) {
  if (dtype == DType::kBF16)
    HS == 64 ? launch_backward<__nv_bfloat16, 64>(a, B, NKV, stream)
             : launch_backward<__nv_bfloat16, 128>(a, B, NKV, stream);
  else
    HS == 64 ? launch_backward<__half, 64>(a, B, NKV, stream) : launch_backward<__half, 128>(a, B, NKV, stream);
}

}  // namespace trident::cuda::attn::tc
