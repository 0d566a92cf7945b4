// Causal attention forward, FlashAttention-2 style: one block per (query tile, head, batch)
// streams over the key tiles its rows can see, from the block's first document start to the
// diagonal, with an online softmax (running row max and sum in fp32), and normalises its output
// tile once at the end; no T x T matrix exists beyond one Br x Bc score tile in shared memory.
// GQA: query head h reads kv head h / (NH/NKV). Also saves lse[B, NH, T] for the backward pass.
#include "attention_common.cuh"
#include "attention_tc.cuh"
#include "kernels.cuh"

namespace trident::cuda {
namespace {

using namespace attn;

struct ForwardArgs {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;
  const int32_t* positions;  // nullptr: plain causal
  Elem eq, ek, ev, eo;
  int T, NH, HS, group;
  int64_t q_stride, kv_stride;
  float scale;
};

// Br query rows x Bc keys per tile; MaxHS is the head-size bucket (HS <= MaxHS).
template <int MaxHS, int Br, int Bc>
struct ForwardTiles {
  static constexpr int R = Br / kRowGroups;    // query rows per thread
  static constexpr int C = Bc / kColGroups;    // keys per thread in a score tile
  static constexpr int ND = MaxHS / kColGroups;  // head dims per thread in the output tile
  static constexpr int LD = MaxHS + 1, LDP = Bc + 1;
  // Q [Br][LD], K and V [Bc][LD], P [Br][LDP] in fp32, then the rows' document starts.
  static constexpr size_t kSharedBytes = sizeof(float) * (Br * LD + 2 * Bc * LD + Br * LDP) + sizeof(int) * Br;
  static_assert(Br % kRowGroups == 0 && Bc % kColGroups == 0 && MaxHS % kColGroups == 0);
};

template <int MaxHS, int Br, int Bc>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(ForwardArgs a) {
  using Tl = ForwardTiles<MaxHS, Br, Bc>;
  constexpr int R = Tl::R, C = Tl::C, ND = Tl::ND, LD = Tl::LD, LDP = Tl::LDP;
  extern __shared__ float smem[];
  float* Qs = smem;
  float* Ks = Qs + Br * LD;
  float* Vs = Ks + Bc * LD;
  float* Ps = Vs + Bc * LD;
  int* lo_s = reinterpret_cast<int*>(Ps + Br * LDP);
  __shared__ int first_key;

  // Last query tiles first: they stream the most keys, so the long blocks start early.
  const int i0 = (gridDim.x - 1 - blockIdx.x) * Br, h = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int T = a.T, HS = a.HS;
  const int ni = min(Br, T - i0);
  const int64_t kv_col = static_cast<int64_t>(h / a.group) * HS;
  const int rg = threadIdx.x / kColGroups, cg = threadIdx.x % kColGroups;

  // The rows' document starts and the first key any of them sees.
  query_doc_starts<Br>(lo_s, first_key, a.positions, b, T, i0, ni);
  load_tile<Br, LD>(Qs, a.q, a.eq, b * T + i0, a.q_stride, static_cast<int64_t>(h) * HS, ni, HS);
  __syncthreads();

  int lo[R];
  float m[R], l[R], acc[R][ND];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    lo[i] = lo_s[rg * R + i];
    m[i] = -INFINITY;
    l[i] = 0.f;  // this thread's share of the row sum (its columns); summed over the row at the end
#pragma unroll
    for (int dd = 0; dd < ND; ++dd) acc[i][dd] = 0.f;
  }

  for (int j0 = first_key / Bc * Bc; j0 < i0 + ni; j0 += Bc) {
    const int nj = min(Bc, T - j0);
    __syncthreads();  // the previous tile's readers of Ks, Vs, Ps are done
    load_kv_tiles<Bc, LD>(Ks, Vs, a, b * T + j0, kv_col, nj, HS);
    __syncthreads();

    float s[R][C];
    tile_dot<R, C, LD>(s, Qs, Ks, HS, rg, cg);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int t = i0 + rg * R + i;
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const int key = j0 + cg + j * kColGroups;
        s[i][j] = key >= lo[i] && key <= t ? s[i][j] * a.scale : -INFINITY;
        mx = fmaxf(mx, s[i][j]);
      }
      const float m_new = fmaxf(m[i], row_max(mx));
      // A row with no key seen yet has m = -inf and nothing to rescale.
      const float alpha = m[i] == -INFINITY ? 0.f : expf(m[i] - m_new);
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const float p = s[i][j] == -INFINITY ? 0.f : expf(s[i][j] - m_new);
        Ps[(rg * R + i) * LDP + cg + j * kColGroups] = p;
        sum += p;
      }
      l[i] = l[i] * alpha + sum;
      m[i] = m_new;
#pragma unroll
      for (int dd = 0; dd < ND; ++dd) acc[i][dd] *= alpha;
    }
    __syncthreads();  // P complete
    tile_accumulate<R, ND, Bc, LDP, LD>(acc, Ps, Vs, HS, rg, cg);
  }

#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int row = rg * R + i, t = i0 + row;
    const float total = row_sum(l[i]);  // > 0 for real rows: a query always sees its own key
    if (row >= ni) continue;
    const float inv = 1.f / total;
    const int64_t base = (b * T + t) * a.q_stride + static_cast<int64_t>(h) * HS;
#pragma unroll
    for (int dd = 0; dd < ND; ++dd) {
      const int d = cg + dd * kColGroups;
      if (d < HS) store(a.out, a.eo, base + d, acc[i][dd] * inv);
    }
    if (cg == 0) a.lse[(b * a.NH + h) * T + t] = m[i] + logf(total);
  }
}

template <int MaxHS, int Br, int Bc>
void launch_forward(const ForwardArgs& a, int B, cudaStream_t stream) {
  launch_tiles(attention_forward_kernel<MaxHS, Br, Bc>, dim3((a.T + Br - 1) / Br, a.NH, B),
               ForwardTiles<MaxHS, Br, Bc>::kSharedBytes, a, stream);
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                       const Tensor& positions, Tensor& out, Tensor& lse, cudaStream_t stream) {
  constexpr const char* op = "attention_forward";
  const attn::Shape4 s = attn::check_attention(op, q, k, v, out, lse, positions, heads, kv_heads);
  if (s.B == 0 || s.T == 0) return;
  attn::check_grid(op, s, q);
  const float scale = 1.f / std::sqrt(static_cast<float>(s.HS));
  const int32_t* pos = positions.defined() ? static_cast<const int32_t*>(positions.raw()) : nullptr;
  // All bf16 or all fp16 at head size 64 or 128: the tensor-core kernels (attention_tc_forward.cu).
  if (attn::tc::eligible({&q, &k, &v, &out}, s.HS)) {
    attn::tc::TcArgs a{};
    a.q = q.raw();
    a.k = k.raw();
    a.v = v.raw();
    a.o = out.raw();
    a.lse_out = static_cast<float*>(lse.raw());
    a.positions = pos;
    a.T = static_cast<int>(s.T);
    a.NH = static_cast<int>(s.NH);
    a.group = s.group();
    a.q_stride = s.q_stride();
    a.kv_stride = s.kv_stride();
    a.scale = scale;
    attn::tc::forward(a, q.dtype(), static_cast<int>(s.HS), static_cast<int>(s.B), stream);
    return;
  }
  ForwardArgs a{q.raw(),
                k.raw(),
                v.raw(),
                out.raw(),
                static_cast<float*>(lse.raw()),
                pos,
                elem_of(q, op, "q"),
                elem_of(k, op, "k"),
                elem_of(v, op, "v"),
                elem_of(out, op, "out"),
                static_cast<int>(s.T),
                static_cast<int>(s.NH),
                static_cast<int>(s.HS),
                s.group(),
                s.q_stride(),
                s.kv_stride(),
                scale};
  // Tiles sized for about 70 KiB of shared memory: two or three blocks per SM on sm_80/sm_90.
  if (s.HS <= 64)
    launch_forward<64, 64, 64>(a, static_cast<int>(s.B), stream);
  else
    launch_forward<128, 64, 32>(a, static_cast<int>(s.B), stream);
}

}  // namespace trident::cuda
