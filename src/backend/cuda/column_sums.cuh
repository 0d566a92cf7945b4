// dbias[c] += sum over rows of v(r * C + c) for a [N, C] matrix whose values come from a device
// functor (a plain load for bias_backward; GELU's gradient, stored as it is made, for the fused
// GELU + bias backward). Two passes with a fixed grid for a given size: per-chunk partial sums
// in double, then the chunks in order, so results never depend on timing.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "allocator.hpp"
#include "device_access.cuh"

namespace trident::cuda {
namespace column_sums_detail {

// Pass 1: block (x: 32 columns, y: one chunk of rows) sums its rows per column in double; the
// threads of a warp take 32 consecutive columns of a row (coalesced). Every element is visited
// exactly once, so a functor may also store what it computes.
constexpr int kColTile = 32, kRowThreads = 8;
template <typename Values>
__global__ void partial_kernel(Values v, int64_t N, int64_t C, int64_t rows_per_chunk, double* partial) {
  __shared__ double sums[kRowThreads][kColTile];
  const int64_t c = blockIdx.x * int64_t(kColTile) + threadIdx.x;
  const int64_t r0 = blockIdx.y * rows_per_chunk, r1 = min(N, r0 + rows_per_chunk);
  double acc = 0.0;
  if (c < C)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowThreads) acc += double(v(r * C + c));
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    double total = 0.0;
    for (int k = 0; k < kRowThreads; ++k) total += sums[k][threadIdx.x];  // fixed order
    partial[blockIdx.y * C + c] = total;
  }
}

// Pass 2: dbias[c] += sum of the chunks' partial sums, in chunk order.
static __global__ void final_kernel(const double* partial, int64_t chunks, int64_t C, float* dbias) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  double total = 0.0;
  for (int64_t k = 0; k < chunks; ++k) total += partial[k * C + c];
  dbias[c] = float(double(dbias[c]) + total);
}

}  // namespace column_sums_detail

template <typename Values>
void column_sums(Values values, int64_t N, int64_t C, float* dbias, DeviceAllocator& alloc, cudaStream_t stream) {
  using namespace column_sums_detail;
  if (C == 0 || N == 0) return;
  // Chunks of at least 64 rows, at most 256 chunks: enough blocks to fill the GPU for the
  // usual N = B*T in the thousands; fewer for very wide C, keeping the partial sums <= 16 MiB.
  const int64_t chunks = std::max<int64_t>(1, std::min({int64_t(256), (N + 63) / 64, (int64_t(1) << 21) / C}));
  const int64_t rows_per_chunk = (N + chunks - 1) / chunks;
  auto partial = alloc.allocate(static_cast<size_t>(chunks * C) * sizeof(double));
  double* pp = static_cast<double*>(partial->data());
  const dim3 grid(static_cast<unsigned>((C + kColTile - 1) / kColTile), static_cast<unsigned>(chunks));
  partial_kernel<<<grid, dim3(kColTile, kRowThreads), 0, stream>>>(values, N, C, rows_per_chunk, pp);
  TRIDENT_CUDA_LAUNCHED();
  constexpr int kThreads = 256;
  final_kernel<<<static_cast<unsigned>((C + kThreads - 1) / kThreads), kThreads, 0, stream>>>(pp, chunks, C, dbias);
  TRIDENT_CUDA_LAUNCHED();
  // partial goes back to the cache now; only later work on this stream can reuse it.
}

}  // namespace trident::cuda
