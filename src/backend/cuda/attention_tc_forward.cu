// Causal attention forward on tensor cores (bf16/fp16, head size 64 or 128), FlashAttention-2
// style: one block per (64-query tile, head, batch), 4 warps of 16 query rows each. The block
// streams the key tiles its rows can see (from the rows' first document start to the diagonal)
// through a double buffer filled by cp.async, so the next tile's copy overlaps this tile's math.
// Per tile and warp: S = Q K^T (Q's fragments stay in registers), scale (and mask, on tiles that
// cross the diagonal or a document start) in fp32, online softmax in the log2 domain (exp2f of
// log2(e)-prescaled scores, running max and sum per row), then O += P V with P rounded to the
// input dtype. O is normalised once at the end;
// lse = ln 2 * max + ln(sum) is saved in fp32 for the backward.
#include "attention_tc.cuh"

namespace trident::cuda::attn::tc {
namespace {

template <int HS>
struct ForwardTcTiles {
  static constexpr int Br = 64, Bc = 64, LD = HS + kPad;
  // Q [Br][LD], K and V double-buffered [2][Bc][LD], then the rows' document starts.
  static constexpr size_t kSharedBytes = 2 * size_t(LD) * (Br + 4 * Bc) + sizeof(int) * Br;
  static_assert(Br == 16 * kWarps && HS % 16 == 0);
};

template <typename E, int HS>
__global__ void __launch_bounds__(kThreads) attention_tc_forward_kernel(TcArgs a) {
  using Tl = ForwardTcTiles<HS>;
  constexpr int Br = Tl::Br, Bc = Tl::Bc, LD = Tl::LD;
  constexpr int KS = HS / 16;  // k-steps of Q K^T
  constexpr int SN = Bc / 8;   // n-tiles of a score row block
  constexpr int ON = HS / 8;   // n-tiles of the output
  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* Qs = reinterpret_cast<E*>(smem_raw);
  E* Ks = Qs + Br * LD;
  E* Vs = Ks + 2 * Bc * LD;
  int* lo_s = reinterpret_cast<int*>(Vs + 2 * Bc * LD);
  __shared__ int first_key;

  // Last query tiles first: they stream the most keys, so the long blocks start early.
  const int i0 = (gridDim.x - 1 - blockIdx.x) * Br, h = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int T = a.T;
  const int ni = min(Br, T - i0);
  const int64_t kv_col = static_cast<int64_t>(h / a.group) * HS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = warp * 16;  // the warp's first row in the tile
  const E* k = static_cast<const E*>(a.k);
  const E* v = static_cast<const E*>(a.v);

  query_doc_starts<Br>(lo_s, first_key, a.positions, b, T, i0, ni);
  copy_tile_async<Br, HS>(Qs, static_cast<const E*>(a.q), b * T + i0, a.q_stride, static_cast<int64_t>(h) * HS, ni);
  cp_async_commit();
  __syncthreads();  // first_key and lo_s
  const int j_begin = first_key / Bc * Bc, j_end = i0 + ni;
  copy_tile_async<Bc, HS>(Ks, k, b * T + j_begin, a.kv_stride, kv_col, T - j_begin);
  copy_tile_async<Bc, HS>(Vs, v, b * T + j_begin, a.kv_stride, kv_col, T - j_begin);
  cp_async_commit();
  cp_async_wait<1>();  // Q has landed (the first K, V tile may still be in flight)
  __syncthreads();

  uint32_t qf[KS][4];
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) load_a<LD>(qf[kk], Qs, row0, kk * 16, lane);

  // This thread's two rows (g and g + 8 of the warp): global index and document start.
  const int g = lane >> 2, c = lane & 3;
  int t_row[2], lo[2];
  float m[2], l[2];  // running max (log2 domain) and this thread's share of the row sum
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    t_row[half] = i0 + row0 + g + half * 8;
    lo[half] = lo_s[row0 + g + half * 8];  // INT_MAX for padding rows: they see no key
    m[half] = -INFINITY;
    l[half] = 0.f;
  }
  float o[ON][4];
  zero(o);
  const float scale2 = a.scale * kLog2e;

  int buf = 0;
  for (int j0 = j_begin; j0 < j_end; j0 += Bc, buf ^= 1) {
    if (j0 + Bc < j_end) {  // prefetch the next tile into the other buffer
      const int jn = j0 + Bc;
      copy_tile_async<Bc, HS>(Ks + (buf ^ 1) * Bc * LD, k, b * T + jn, a.kv_stride, kv_col, T - jn);
      copy_tile_async<Bc, HS>(Vs + (buf ^ 1) * Bc * LD, v, b * T + jn, a.kv_stride, kv_col, T - jn);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // this tile's K, V visible to all warps
    const E* Kb = Ks + buf * Bc * LD;
    const E* Vb = Vs + buf * Bc * LD;

    float s[SN][4];
    zero(s);
    // S = Q K^T with Q's fragments in registers.
#pragma unroll
    for (int kk = 0; kk < KS; ++kk)
#pragma unroll
      for (int j = 0; j < SN; j += 2) {
        uint32_t bk[2][2];
        load_b_rows_n<LD>(bk, Kb, j * 8, kk * 16, lane);
        mma_m16n8k16<E>(s[j], qf[kk], bk[0]);
        mma_m16n8k16<E>(s[j + 1], qf[kk], bk[1]);
      }

#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float mx = -INFINITY;
      // Only a tile that crosses the diagonal or the row's document start needs the mask (most
      // tiles of a long row lie wholly inside its visible range).
      if (j0 >= lo[half] && j0 + Bc - 1 <= t_row[half]) {
#pragma unroll
        for (int j = 0; j < SN; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = s[j][2 * half + e];
            x *= scale2;
            mx = fmaxf(mx, x);
          }
      } else {
#pragma unroll
        for (int j = 0; j < SN; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int key = j0 + j * 8 + 2 * c + e;
            float& x = s[j][2 * half + e];
            x = key >= lo[half] && key <= t_row[half] ? x * scale2 : -INFINITY;
            mx = fmaxf(mx, x);
          }
      }
      const float m_new = fmaxf(m[half], quad_max(mx));
      // A row with no key seen yet (m = -inf) has nothing to rescale; one that sees none in
      // this tile either keeps m_new = -inf and gets p = 0 below.
      const float alpha = m[half] == -INFINITY ? 0.f : exp2f(m[half] - m_new);
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < SN; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s[j][2 * half + e];
          x = x == -INFINITY ? 0.f : exp2f(x - m_new);
          sum += x;
        }
      l[half] = l[half] * alpha + sum;
      m[half] = m_new;
#pragma unroll
      for (int j = 0; j < ON; ++j) {
        o[j][2 * half] *= alpha;
        o[j][2 * half + 1] *= alpha;
      }
    }

    mma_pb<ON, Bc / 16, LD, E>(o, s, Vb, lane);  // O += P V, P rounded to E
    __syncthreads();  // all warps are done with this buffer before it is refilled
  }

  float inv[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const float total = quad_sum(l[half]);  // > 0 for real rows: a query always sees its own key
    inv[half] = 1.f / total;
    const int row = row0 + g + half * 8;
    if (c == 0 && row < ni) a.lse_out[(b * a.NH + h) * T + t_row[half]] = m[half] * kLn2 + logf(total);
  }
  store_rows<ON, E>(a.o, o, b * T + i0, a.q_stride, static_cast<int64_t>(h) * HS, row0, ni, inv, lane);
}

template <typename E, int HS>
void launch_forward(const TcArgs& a, int B, cudaStream_t stream) {
  constexpr int Br = ForwardTcTiles<HS>::Br;
  launch_tiles(attention_tc_forward_kernel<E, HS>, dim3((a.T + Br - 1) / Br, a.NH, B),
               ForwardTcTiles<HS>::kSharedBytes, a, stream);
}

}  // namespace

void forward(const TcArgs& a, DType dtype, int HS, int B, cudaStream_t stream) {
  if (dtype == DType::kBF16)
    HS == 64 ? launch_forward<__nv_bfloat16, 64>(a, B, stream) : launch_forward<__nv_bfloat16, 128>(a, B, stream);
  else
    HS == 64 ? launch_forward<__half, 64>(a, B, stream) : launch_forward<__half, 128>(a, B, stream);
}

}  // namespace trident::cuda::attn::tc
