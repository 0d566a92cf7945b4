// LayerNorm (biased variance, as PyTorch) and RMSNorm, forward and backward, one block per row.
// x, y, dy, dx: [N, C] [ACT] (statistics and arithmetic in fp32); w, b, dw, db: [C] and
// mean, rstd: [N] fp32. Expressions follow the CPU backend's (src/backend/cpu/norm.cpp) term
// for term; only the order of the row sums differs (a block reduction).
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/reduce.cuh"

namespace trident::cuda {
namespace {

struct NormShape {
  int64_t N, C;
  Elem x, act;
};

NormShape check_norm(const char* op, const Tensor& x, const Tensor& w, const Tensor& act, const char* act_name,
                     const Tensor& stat, const char* stat_name) {
  const Elem ex = act_elem(x, op, "x");
  const int64_t C = last_dim(x), N = rows_of(x);
  check_f32(w, op, "w");
  check_numel(w, C, op, "w");
  const Elem ea = act_elem(act, op, act_name);
  TRIDENT_CHECK(act.shape() == x.shape(), op, ": ", act_name, " ", act.shape().str(), " differs from x ",
                x.shape().str());
  check_f32(stat, op, stat_name);
  check_numel(stat, N, op, stat_name);
  return {N, C, ex, ea};
}

// An optional parameter gradient (undefined: a frozen parameter) or bias.
void check_optional(const Tensor& t, int64_t C, const char* op, const char* name) {
  if (!t.defined()) return;
  check_f32(t, op, name);
  check_numel(t, C, op, name);
}

// dx of a backward: [ACT] with x's shape; returns its Elem.
Elem check_dx(const char* op, const Tensor& dx, const Tensor& x) {
  const Elem edx = act_elem(dx, op, "dx");
  TRIDENT_CHECK(dx.shape() == x.shape(), op, ": dx ", dx.shape().str(), " differs from x ", x.shape().str());
  return edx;
}

// Threads per row block: 8 columns per thread on the vector path.
int norm_threads(int64_t C, bool vec) { return row_threads(vec ? C / 8 : C, 512); }

// --- forward ------------------------------------------------------------------------------------

// sum_c term(x[base + c]) over one row of C elements, returned to every thread of the block.
template <typename Term>
__device__ __forceinline__ float row_sum_of(const void* x, Elem ex, int64_t base, int64_t C, bool vec, Term term) {
  float sum = 0.f;
  for_row(C, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float xv[W];
    loadv(x, ex, base + c, xv);
#pragma unroll
    for (int k = 0; k < W; ++k) sum += term(xv[k]);
  });
  return block_sum(sum);
}

// Two passes over the row for mean and variance (as the CPU: no E[x^2] - E[x]^2 cancellation);
// the later passes re-read x from L1/L2, where the first pass left it.
__global__ void layernorm_forward_kernel(const void* x, Elem ex, const float* __restrict__ w,
                                         const float* __restrict__ b, float eps, int64_t C, void* y, Elem ey,
                                         float* __restrict__ mean, float* __restrict__ rstd, bool vec) {
  const int64_t base = blockIdx.x * C;
  const float inv_c = 1.f / float(C);
  const float m = row_sum_of(x, ex, base, C, vec, [](float v) { return v; }) * inv_c;
  const float var = row_sum_of(x, ex, base, C, vec, [m](float v) { return (v - m) * (v - m); });
  const float r = 1.f / sqrtf(var * inv_c + eps);
  for_row(C, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float xv[W], wv[W], bv[W] = {}, yv[W];
    loadv(x, ex, base + c, xv);
    loadv(w, Elem::kF32, c, wv);
    if (b) loadv(b, Elem::kF32, c, bv);
#pragma unroll
    for (int k = 0; k < W; ++k) yv[k] = (xv[k] - m) * r * wv[k] + bv[k];
    storev(y, ey, base + c, yv);
  });
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = r;
  }
}

__global__ void rmsnorm_forward_kernel(const void* x, Elem ex, const float* __restrict__ w, float eps, int64_t C,
                                       void* y, Elem ey, float* __restrict__ rstd, bool vec) {
  const int64_t base = blockIdx.x * C;
  const float ss = row_sum_of(x, ex, base, C, vec, [](float v) { return v * v; });
  const float r = 1.f / sqrtf(ss / float(C) + eps);
  for_row(C, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float xv[W], wv[W], yv[W];
    loadv(x, ex, base + c, xv);
    loadv(w, Elem::kF32, c, wv);
#pragma unroll
    for (int k = 0; k < W; ++k) yv[k] = xv[k] * r * wv[k];
    storev(y, ey, base + c, yv);
  });
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

// --- backward: dx -------------------------------------------------------------------------------

// With xhat = (x - mean) * rstd and g = dy * w: dx += rstd * (g - mean(g) - xhat * mean(g * xhat)).
// RMSNorm is the same with mean = nullptr (0) and no mean(g) term. dx is read, added to in fp32
// and rounded once.
__global__ void norm_backward_dx_kernel(const void* dy, Elem edy, const void* x, Elem ex,
                                        const float* __restrict__ w, const float* __restrict__ mean,
                                        const float* __restrict__ rstd, int64_t C, void* dx, Elem edx, bool vec) {
  const int64_t n = blockIdx.x, base = n * C;
  const float m = mean ? mean[n] : 0.f, r = rstd[n];
  float g_sum = 0.f, gx_sum = 0.f;
  for_row(C, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float dyv[W], xv[W], wv[W];
    loadv(dy, edy, base + c, dyv);
    loadv(x, ex, base + c, xv);
    loadv(w, Elem::kF32, c, wv);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float g = dyv[k] * wv[k];
      g_sum += g;
      gx_sum += mean ? g * (xv[k] - m) * r : dyv[k] * wv[k] * xv[k] * r;
    }
  });
  block_sum2(g_sum, gx_sum);
  // LayerNorm scales by inv_c, RMSNorm divides by C: the CPU's expressions exactly
  const float inv_c = 1.f / float(C);
  const float g_mean = mean ? g_sum * inv_c : 0.f, gx_mean = mean ? gx_sum * inv_c : gx_sum / float(C);
  for_row(C, vec, [&](int64_t c, auto width) {
    constexpr int W = decltype(width)::value;
    float dyv[W], xv[W], wv[W], dxv[W];
    loadv(dy, edy, base + c, dyv);
    loadv(x, ex, base + c, xv);
    loadv(w, Elem::kF32, c, wv);
    loadv(dx, edx, base + c, dxv);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      if (mean) dxv[k] += r * (dyv[k] * wv[k] - g_mean - (xv[k] - m) * r * gx_mean);
      else dxv[k] += r * (dyv[k] * wv[k] - xv[k] * r * gx_mean);
    }
    storev(dx, edx, base + c, dxv);
  });
}

// --- backward: dw, db (deterministic column sums over rows) -------------------------------------
// Pass 1: block (kTile columns) x (kLanes row lanes) sums the rows of one chunk for its columns
// in double, lanes combined in a fixed order, into part[chunk, C]. Pass 2: one thread per
// column adds the chunks in order and adds that to dw/db once (dw = fp32(dw + sum), as the CPU).
// The chunking depends on N only, so results do not depend on the GPU or on timing.

constexpr int kTile = 32, kLanes = 8;
constexpr int64_t kMaxChunks = 256, kMinChunkRows = 64;

// dw term: dy * (x - mean) * rstd (mean = nullptr: RMSNorm, dy * x * rstd); db term: dy.
__global__ void norm_param_partials_kernel(const void* dy, Elem edy, const void* x, Elem ex,
                                           const float* __restrict__ mean, const float* __restrict__ rstd,
                                           int64_t N, int64_t C, int64_t chunk_rows, double* __restrict__ part_w,
                                           double* __restrict__ part_b) {
  const int64_t c = int64_t(blockIdx.x) * kTile + threadIdx.x, chunk = blockIdx.y;
  const int64_t r0 = chunk * chunk_rows, r1 = r0 + chunk_rows < N ? r0 + chunk_rows : N;
  double aw = 0.0, ab = 0.0;
  if (c < C) {
    for (int64_t n = r0 + threadIdx.y; n < r1; n += kLanes) {
      const float d = load(dy, edy, n * C + c);
      if (part_w) {
        const float xv = load(x, ex, n * C + c);
        aw += mean ? double(d * (xv - mean[n]) * rstd[n]) : double(d * xv * rstd[n]);
      }
      ab += double(d);
    }
  }
  __shared__ double sw[kLanes][kTile], sb[kLanes][kTile];
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    double tw = 0.0, tb = 0.0;
#pragma unroll
    for (int k = 0; k < kLanes; ++k) {
      tw += sw[k][threadIdx.x];
      tb += sb[k][threadIdx.x];
    }
    if (part_w) part_w[chunk * C + c] = tw;
    if (part_b) part_b[chunk * C + c] = tb;
  }
}

__global__ void norm_param_finish_kernel(const double* __restrict__ part, int64_t chunks, int64_t C,
                                         float* __restrict__ out) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  double s = 0.0;
  for (int64_t k = 0; k < chunks; ++k) s += part[k * C + c];
  out[c] = float(double(out[c]) + s);
}

// dw += sum_n dy * xhat, db += sum_n dy, for whichever of dw, db is defined.
void norm_param_grads(const Tensor& dy, Elem edy, const Tensor& x, Elem ex, const float* mean, const float* rstd,
                      int64_t N, int64_t C, Tensor& dw, Tensor& db, cudaStream_t stream) {
  if (!dw.defined() && !db.defined()) return;
  int64_t chunk_rows = (N + kMaxChunks - 1) / kMaxChunks;
  if (chunk_rows < kMinChunkRows) chunk_rows = kMinChunkRows;
  const int64_t chunks = (N + chunk_rows - 1) / chunk_rows;
  const size_t part_bytes = round256(size_t(chunks * C) * sizeof(double));
  StreamScratch scratch((dw.defined() ? part_bytes : 0) + (db.defined() ? part_bytes : 0), stream);
  double* part_w = dw.defined() ? reinterpret_cast<double*>(scratch.get()) : nullptr;
  double* part_b = db.defined() ? reinterpret_cast<double*>(scratch.get() + (dw.defined() ? part_bytes : 0)) : nullptr;
  const dim3 grid(static_cast<unsigned>((C + kTile - 1) / kTile), static_cast<unsigned>(chunks));
  norm_param_partials_kernel<<<grid, dim3(kTile, kLanes), 0, stream>>>(dy.raw(), edy, x.raw(), ex, mean, rstd, N, C,
                                                                       chunk_rows, part_w, part_b);
  TRIDENT_CUDA_LAUNCHED();
  const unsigned blocks = static_cast<unsigned>((C + 255) / 256);
  if (part_w) {
    norm_param_finish_kernel<<<blocks, 256, 0, stream>>>(part_w, chunks, C, dw.data<float>());
    TRIDENT_CUDA_LAUNCHED();
  }
  if (part_b) {
    norm_param_finish_kernel<<<blocks, 256, 0, stream>>>(part_b, chunks, C, db.data<float>());
    TRIDENT_CUDA_LAUNCHED();
  }
}

}  // namespace

void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y, Tensor& mean,
                       Tensor& rstd, cudaStream_t stream) {
  constexpr const char* op = "layernorm_forward";
  const auto s = check_norm(op, x, w, y, "y", mean, "mean");
  check_f32(rstd, op, "rstd");
  check_numel(rstd, s.N, op, "rstd");
  check_optional(b, s.C, op, "b");
  if (s.N == 0 || s.C == 0) return;
  const bool vec = rows_vectorisable(s.C, {&x, &w, &y}) && (!b.defined() || aligned16(b));
  layernorm_forward_kernel<<<static_cast<unsigned>(s.N), norm_threads(s.C, vec), 0, stream>>>(
      x.raw(), s.x, w.data<float>(), b.defined() ? b.data<float>() : nullptr, float(eps), s.C, y.raw(), s.act,
      mean.data<float>(), rstd.data<float>(), vec);
  TRIDENT_CUDA_LAUNCHED();
}

void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                        Tensor& dx, Tensor& dw, Tensor& db, cudaStream_t stream) {
  constexpr const char* op = "layernorm_backward";
  const auto s = check_norm(op, x, w, dy, "dy", mean, "mean");
  check_f32(rstd, op, "rstd");
  check_numel(rstd, s.N, op, "rstd");
  const Elem edx = check_dx(op, dx, x);
  check_optional(dw, s.C, op, "dw");  // undefined: a frozen weight (dx only)
  check_optional(db, s.C, op, "db");
  if (s.N == 0 || s.C == 0) return;
  const bool vec = rows_vectorisable(s.C, {&dy, &x, &w, &dx});
  norm_backward_dx_kernel<<<static_cast<unsigned>(s.N), norm_threads(s.C, vec), 0, stream>>>(
      dy.raw(), s.act, x.raw(), s.x, w.data<float>(), mean.data<float>(), rstd.data<float>(), s.C, dx.raw(), edx,
      vec);
  TRIDENT_CUDA_LAUNCHED();
  norm_param_grads(dy, s.act, x, s.x, mean.data<float>(), rstd.data<float>(), s.N, s.C, dw, db, stream);
}

void rmsnorm_forward(const Tensor& x, const Tensor& w, double eps, Tensor& y, Tensor& rstd, cudaStream_t stream) {
  constexpr const char* op = "rmsnorm_forward";
  const auto s = check_norm(op, x, w, y, "y", rstd, "rstd");
  if (s.N == 0 || s.C == 0) return;
  const bool vec = rows_vectorisable(s.C, {&x, &w, &y});
  rmsnorm_forward_kernel<<<static_cast<unsigned>(s.N), norm_threads(s.C, vec), 0, stream>>>(
      x.raw(), s.x, w.data<float>(), float(eps), s.C, y.raw(), s.act, rstd.data<float>(), vec);
  TRIDENT_CUDA_LAUNCHED();
}

void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx, Tensor& dw,
                      cudaStream_t stream) {
  constexpr const char* op = "rmsnorm_backward";
  const auto s = check_norm(op, x, w, dy, "dy", rstd, "rstd");
  const Elem edx = check_dx(op, dx, x);
  check_optional(dw, s.C, op, "dw");  // undefined: a frozen weight (dx only)
  if (s.N == 0 || s.C == 0) return;
  const bool vec = rows_vectorisable(s.C, {&dy, &x, &w, &dx});
  norm_backward_dx_kernel<<<static_cast<unsigned>(s.N), norm_threads(s.C, vec), 0, stream>>>(
      dy.raw(), s.act, x.raw(), s.x, w.data<float>(), nullptr, rstd.data<float>(), s.C, dx.raw(), edx, vec);
  TRIDENT_CUDA_LAUNCHED();
  Tensor no_db;
  norm_param_grads(dy, s.act, x, s.x, nullptr, rstd.data<float>(), s.N, s.C, dw, no_db, stream);
}

}  // namespace trident::cuda
