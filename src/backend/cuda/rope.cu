// Rotary position embedding (rotate-half pairing (i, i + HS/2) as in Llama), in place.
// x: [N, H*HS] [ACT] (rotated in fp32, rounded once); positions: [N] int32 on the device;
// angle(n, i) = positions[n] * inv_freq[i], i < HS/2; cos and sin times the frequencies' scale.
//
// The CPU backend computes the angle, cos and sin in double and rounds cos/sin to fp32; so does
// this kernel (an fp32 angle would be off by ~1e-4 at positions in the thousands). Each thread
// owns one (row, i) pair and rotates it in every head, so the double-precision sincos is paid
// once per H pairs. The frequencies travel as a kernel argument (at most 256 doubles).
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/reduce.cuh"

namespace trident::cuda {
namespace {

struct Frequencies {
  double inv_freq[RotaryFrequencies::kMaxPairs];
  double scale;
};

// forward: x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin (x1 = x[i], x2 = x[i + HS/2] of a head);
// inverse (backward, the transpose of the rotation) uses sign = -1 on sin.
__global__ void rope_kernel(void* x, Elem ex, const int32_t* __restrict__ positions, int64_t N, int64_t heads,
                            int head_size, const Frequencies f, float sign) {
  const int64_t half = head_size / 2, width = heads * head_size;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < N * half; t += stride) {
    const int64_t n = t / half, i = t % half;
    const double angle = double(positions[n]) * f.inv_freq[i];
    double sd, cd;
    sincos(angle, &sd, &cd);
    const float c = float(cd * f.scale), s = sign * float(sd * f.scale);
    const int64_t row = n * width + i;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t i1 = row + h * head_size, i2 = i1 + half;
      const float a = load(x, ex, i1), b = load(x, ex, i2);
      store(x, ex, i1, a * c - b * s);
      store(x, ex, i2, b * c + a * s);
    }
  }
}

void rope(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& rotary, bool inverse,
          cudaStream_t stream) {
  const char* op = inverse ? "rope_backward" : "rope_forward";
  const Elem ex = act_elem(x, op, "x");
  TRIDENT_CHECK(head_size > 0 && head_size % 2 == 0, op, ": head_size ", head_size, " must be positive and even");
  TRIDENT_CHECK(int64_t(rotary.inv_freq.size()) == head_size / 2 && head_size / 2 <= RotaryFrequencies::kMaxPairs, op,
                ": ", rotary.inv_freq.size(), " frequencies for head_size ", head_size, " (at most ",
                RotaryFrequencies::kMaxPairs, ")");
  Frequencies f{};
  for (size_t i = 0; i < rotary.inv_freq.size(); ++i) f.inv_freq[i] = rotary.inv_freq[i];
  f.scale = rotary.scale;
  const int64_t width = last_dim(x), N = rows_of(x);
  TRIDENT_CHECK(width % head_size == 0, op, ": x ", x.shape().str(), " last dim is not a multiple of head_size ",
                head_size);
  check_i32(positions, op, "positions");
  check_numel(positions, N, op, "positions");
  const int64_t pairs = N * (head_size / 2);
  if (pairs == 0 || width == 0) return;
  rope_kernel<<<grid_for(pairs), 256, 0, stream>>>(x.raw(), ex, positions.data<int32_t>(), N, width / head_size,
                                                   head_size, f, inverse ? -1.f : 1.f);
  TRIDENT_CUDA_LAUNCHED();
}

}  // namespace

void rope_forward(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& f, cudaStream_t stream) {
  rope(x, positions, head_size, f, false, stream);
}

void rope_backward(Tensor& dx, const Tensor& positions, int head_size, const RotaryFrequencies& f,
                   cudaStream_t stream) {
  rope(dx, positions, head_size, f, true, stream);
}

}  // namespace trident::cuda
