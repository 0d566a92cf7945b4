// Attention of new queries against a key/value cache (generation), fp32. One block per
// (query, head, sequence): its 8 warps take the visible cache positions (0, or the sliding
// window's first, .. start[b] + s) in turn (warp w: keys first+w, first+w+8, ...), each warp keeping an online softmax (running max, sum and P V in
// fp32, head dims spread over the lanes); the warps' partial results are merged at the end.
// Memory-bound on the cache reads, which are whole coalesced rows; no L-long score buffer.
#include "attention_common.cuh"
#include "kernels.cuh"

namespace trident::cuda {
namespace {

constexpr int kCachedThreads = 256;
constexpr int kCachedWarps = kCachedThreads / 32;
constexpr int kDimsPerLane = attn::kMaxHeadSize / 32;  // HS <= 128

// q, out: [B, S, NH*HS]; k, v: [B, L, NKV*HS]; start: [B] on the device.
__global__ void __launch_bounds__(kCachedThreads)
    attention_cached_kernel(const float* q, const float* k, const float* v, const int32_t* start, float* out, int S,
                            int L, int NH, int NKV, int HS, int window, float scale) {
  __shared__ float m_w[kCachedWarps], l_w[kCachedWarps];
  __shared__ float acc_w[kCachedWarps][attn::kMaxHeadSize];
  const int s = blockIdx.x, h = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Cache positions first .. start + s (checked < L on the host).
  const int keys = start[b] + s + 1, first = window > 0 ? max(0, keys - window) : 0;
  const int64_t q_row = ((b * S + s) * NH + h) * HS;
  const int64_t kv_stride = static_cast<int64_t>(NKV) * HS;
  const int64_t kv_base = b * L * kv_stride + static_cast<int64_t>(h / (NH / NKV)) * HS;

  float qv[kDimsPerLane], acc[kDimsPerLane];
#pragma unroll
  for (int c = 0; c < kDimsPerLane; ++c) {
    const int d = lane + 32 * c;
    qv[c] = d < HS ? q[q_row + d] : 0.f;
    acc[c] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int j = first + warp; j < keys; j += kCachedWarps) {
    const float* k_row = k + kv_base + j * kv_stride;
    const float* v_row = v + kv_base + j * kv_stride;
    float dot = 0.f;
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c) {
      const int d = lane + 32 * c;
      if (d < HS) dot = fmaf(qv[c], k_row[d], dot);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    const float score = dot * scale;
    const float m_new = fmaxf(m, score);
    const float alpha = expf(m - m_new);  // 0 on the first key (m = -inf, m_new finite)
    const float p = expf(score - m_new);
    l = l * alpha + p;
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c) {
      const int d = lane + 32 * c;
      acc[c] = acc[c] * alpha + (d < HS ? p * v_row[d] : 0.f);
    }
    m = m_new;
  }
  if (lane == 0) {
    m_w[warp] = m;  // -inf for a warp that had no key
    l_w[warp] = l;
  }
#pragma unroll
  for (int c = 0; c < kDimsPerLane; ++c) acc_w[warp][lane + 32 * c] = acc[c];
  __syncthreads();

  // Merge: weights exp(m_w - M) rescale every warp to the overall max M (warp 0 always sees a key,
  // so M is finite and a keyless warp's weight is exp(-inf) = 0).
  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < kCachedWarps; ++w) M = fmaxf(M, m_w[w]);
  float weight[kCachedWarps], total = 0.f;
#pragma unroll
  for (int w = 0; w < kCachedWarps; ++w) {
    weight[w] = expf(m_w[w] - M);
    total += l_w[w] * weight[w];
  }
  const float inv = 1.f / total;
  for (int d = threadIdx.x; d < HS; d += kCachedThreads) {
    float o = 0.f;
#pragma unroll
    for (int w = 0; w < kCachedWarps; ++w) o += acc_w[w][d] * weight[w];
    out[q_row + d] = o * inv;
  }
}

}  // namespace

void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int heads, int kv_heads,
                      const Tensor& start, Tensor& out, int window, cudaStream_t stream) {
  const std::string op = "attention_cached";
  TRIDENT_CHECK(window >= 0, op, ": window ", window, " is negative");
  for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{&q, "q"}, {&k_cache, "k_cache"},
                                {&v_cache, "v_cache"}, {&out, "out"}})
    TRIDENT_CHECK(t->dtype() == DType::kF32, op, ": ", name, " is ", dtype_name(t->dtype()),
                  "; generation on CUDA computes in fp32 (fp64 is the CPU's finite-difference mode)");
  TRIDENT_CHECK(q.ndim() == 3 && k_cache.ndim() == 3, op, ": q ", q.shape().str(), " and k_cache ",
                k_cache.shape().str(), " must be [B, S, NH*HS] and [B, L, NKV*HS]");
  TRIDENT_CHECK(heads > 0 && kv_heads > 0 && heads % kv_heads == 0 && q.dim(2) % heads == 0, op, ": heads ", heads,
                " / kv_heads ", kv_heads, " do not divide q width ", q.dim(2));
  const int64_t B = q.dim(0), S = q.dim(1), HS = q.dim(2) / heads, L = k_cache.dim(1);
  TRIDENT_CHECK(HS >= 1 && HS <= attn::kMaxHeadSize, op, ": head size ", HS, " is above the CUDA kernel's ",
                attn::kMaxHeadSize);
  for (const Tensor* t : {&k_cache, &v_cache})
    TRIDENT_CHECK(t->shape() == (Shape{B, L, kv_heads * HS}), op, ": cache ", t->shape().str(), " is not [B=", B,
                  ", L, NKV*HS=", kv_heads * HS, "]");
  TRIDENT_CHECK(out.shape() == q.shape(), op, ": out ", out.shape().str(), " differs from q ", q.shape().str());
  TRIDENT_CHECK(start.defined() && start.device() == Device::kCPU && start.dtype() == DType::kI32 &&
                    start.numel() == B,
                op, ": start must be a host int32 tensor of B=", B, " elements");
  const int32_t* st = start.data<int32_t>();
  for (int64_t b = 0; b < B; ++b)
    TRIDENT_CHECK(st[b] >= 0 && st[b] + S <= L, op, ": sequence ", b, " starts at ", st[b], " with ", S,
                  " new tokens, past the cache's ", L, " positions");
  if (B == 0 || S == 0) return;
  TRIDENT_CHECK(B <= 65535 && heads <= 65535 && S < (int64_t(1) << 31) && L < (int64_t(1) << 31), op, ": q ",
                q.shape().str(), " or cache ", k_cache.shape().str(), " exceeds the kernel's grid");

  // start goes to the device through a stream-ordered buffer: the copy from pageable memory
  // returns once the values are staged, so the host tensor may go away right after.
  int32_t* d_start = nullptr;
  const size_t bytes = sizeof(int32_t) * static_cast<size_t>(B);
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d_start), bytes, stream));
  try {
    TRIDENT_CUDA_CHECK(cudaMemcpyAsync(d_start, st, bytes, cudaMemcpyHostToDevice, stream));
    attention_cached_kernel<<<dim3(static_cast<unsigned>(S), heads, static_cast<unsigned>(B)), kCachedThreads, 0,
                              stream>>>(static_cast<const float*>(q.raw()), static_cast<const float*>(k_cache.raw()),
                                        static_cast<const float*>(v_cache.raw()), d_start,
                                        static_cast<float*>(out.raw()), static_cast<int>(S), static_cast<int>(L),
                                        heads, kv_heads, static_cast<int>(HS), window,
                                        1.f / std::sqrt(static_cast<float>(HS)));
    TRIDENT_CUDA_LAUNCHED();
  } catch (...) {
    cudaFreeAsync(d_start, stream);
    throw;
  }
  TRIDENT_CUDA_CHECK(cudaFreeAsync(d_start, stream));
}

}  // namespace trident::cuda
