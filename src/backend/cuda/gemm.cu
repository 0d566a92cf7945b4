// cuBLASLt GEMMs for Ops::gemm (see gemm.hpp for the dtype rules). cuBLAS is column-major: a
// row-major [r, c] matrix is a column-major [c, r] one with leading dimension c, so the
// row-major c[M, N] = op(a) @ op(b) is computed as the column-major c^T[N, M] = op(b)^T-view @
// op(a)^T-view, i.e. cuBLAS's A is our b and its B is our a, with the same transpose flags.
#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "allocator.hpp"
#include "core_kernels.cuh"
#include "device_access.cuh"
#include "gemm.hpp"

namespace trident::cuda {
namespace {

#define TRIDENT_CUBLAS_CHECK(call)                                                                      \
  do {                                                                                                  \
    cublasStatus_t trident_cublas_status_ = (call);                                                     \
    if (trident_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                \
      throw ::trident::Error(std::string(#call) + ": " + cublasLtGetStatusString(trident_cublas_status_)); \
  } while (0)

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

cudaDataType_t cuda_type(DType d) {
  switch (d) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF16: return CUDA_R_16F;
    case DType::kF64: return CUDA_R_64F;
    default: throw Error("gemm: no cuBLAS type for " + std::string(dtype_name(d)));
  }
}

bool is_gemm_float(DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16; }

int64_t last_dim(const Tensor& t) { return t.ndim() == 0 ? 1 : t.dim(-1); }
int64_t rows_of(const Tensor& t) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < t.ndim(); ++i) rows *= t.dim(i);
  return rows;
}

// Largest power of two (<= 256) dividing the address: cuBLASLt picks kernels by alignment.
uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

// Deterministic values in [-0.5, 0.5) for the peak measurement (tensor-core power, hence clock,
// depends on the data: zeros would overstate the peak).
__global__ void peak_init_kernel(void* x, Elem e, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    h ^= h >> 15;
    store(x, e, i, float(h & 0xffffu) / 65536.0f - 0.5f);
  }
}

__global__ void peak_init_f64_kernel(double* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    h ^= h >> 15;
    x[i] = double(h & 0xffffu) / 65536.0 - 0.5;
  }
}

}  // namespace

struct LtGemm::Impl {
  DeviceAllocator& alloc;
  cudaStream_t stream;
  cublasLtHandle_t handle = nullptr;
  std::shared_ptr<Storage> workspace;

  // One cuBLASLt problem: descriptors and the heuristic's algorithm, built once per shape.
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool found = false;
  };
  // Strided batches (gemm_parts): count and the element strides of a, b, c between parts (0: shared).
  struct Batch {
    int32_t count;
    int64_t a, b, c;
  };
  // (M, N, K, trans_a, trans_b, input dtype, c dtype, alignments of a, b, c, batch)
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, DType, DType, uint32_t, uint32_t, uint32_t, int32_t,
                         int64_t, int64_t, int64_t>;
  std::map<Key, Plan> plans;

  Impl(DeviceAllocator& alloc_, cudaStream_t stream_) : alloc(alloc_), stream(stream_) {
    TRIDENT_CUBLAS_CHECK(cublasLtCreate(&handle));
    workspace = alloc.allocate(kWorkspaceBytes);
  }
  ~Impl() {
    for (auto& [key, plan] : plans) {
      if (plan.a) cublasLtMatrixLayoutDestroy(plan.a);
      if (plan.b) cublasLtMatrixLayoutDestroy(plan.b);
      if (plan.c) cublasLtMatrixLayoutDestroy(plan.c);
      if (plan.desc) cublasLtMatmulDescDestroy(plan.desc);
    }
    if (handle) cublasLtDestroy(handle);
  }

  Plan& plan_for(int64_t M, int64_t N, int64_t K, bool ta, bool tb, DType in, DType ct, const void* pa,
                 const void* pb, const void* pc, const Batch& batch) {
    const uint32_t aa = alignment_of(pa), ab = alignment_of(pb), ac = alignment_of(pc);
    const Key key{M, N, K, ta, tb, in, ct, aa, ab, ac, batch.count, batch.a, batch.b, batch.c};
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan& plan = plans[key];
    const bool f64 = in == DType::kF64;
    const cublasComputeType_t compute =
        f64 ? CUBLAS_COMPUTE_64F : (in == DType::kF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
    TRIDENT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, f64 ? CUDA_R_64F : CUDA_R_32F));
    // cuBLAS A = our b, B = our a (see the top of this file).
    const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    TRIDENT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    TRIDENT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    // Stored (pre-op) shapes, column-major: our b is [b_rows, b_cols] row-major = [b_cols, b_rows].
    const int64_t b_cols = tb ? K : N, b_rows = tb ? N : K;
    const int64_t a_cols = ta ? M : K, a_rows = ta ? K : M;
    TRIDENT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, cuda_type(in), b_cols, b_rows, b_cols));
    TRIDENT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, cuda_type(in), a_cols, a_rows, a_cols));
    TRIDENT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.c, cuda_type(ct), N, M, N));
    if (batch.count > 1) {  // cuBLAS's A is our b, its B our a
      const std::tuple<cublasLtMatrixLayout_t, int64_t> layouts[] = {{plan.a, batch.b}, {plan.b, batch.a}, {plan.c, batch.c}};
      for (const auto& [layout, stride] : layouts) {
        TRIDENT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch.count,
                                                              sizeof(batch.count)));
        TRIDENT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                              &stride, sizeof(stride)));
      }
    }
    cublasLtMatmulPreference_t pref = nullptr;
    TRIDENT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &ab, sizeof(ab));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &aa, sizeof(aa));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof(ac));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof(ac));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.a, plan.b, plan.c, plan.c,
                                                                 pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    plan.found = status == CUBLAS_STATUS_SUCCESS && found > 0;
    if (plan.found) plan.algo = result.algo;
    return plan;
  }

  // d = alpha * op(a) @ op(b) + beta * c in place, a and b of dtype in, c of dtype ct.
  // False when cuBLASLt has no algorithm for the combination.
  bool matmul(int64_t M, int64_t N, int64_t K, bool ta, bool tb, DType in, DType ct, double alpha, const void* pa,
              const void* pb, double beta, void* pc, const Batch& batch = Batch{1, 0, 0, 0}) {
    Plan& plan = plan_for(M, N, K, ta, tb, in, ct, pa, pb, pc, batch);
    if (!plan.found) return false;
    const float alpha32 = float(alpha), beta32 = float(beta);
    const bool f64 = in == DType::kF64;
    const void* alpha_p = f64 ? static_cast<const void*>(&alpha) : &alpha32;
    const void* beta_p = f64 ? static_cast<const void*>(&beta) : &beta32;
    TRIDENT_CUBLAS_CHECK(cublasLtMatmul(handle, plan.desc, alpha_p, pb, plan.a, pa, plan.b, beta_p, pc, plan.c, pc,
                                        plan.c, &plan.algo, workspace->data(), kWorkspaceBytes, stream));
    return true;
  }

  // t converted to dtype in device scratch (or t's own memory when it already is).
  const void* as_dtype(const Tensor& t, DType dtype, std::shared_ptr<Storage>& scratch) {
    if (t.dtype() == dtype) return t.raw();
    scratch = alloc.allocate(static_cast<size_t>(t.numel()) * dtype_size(dtype));
    convert(t.raw(), t.dtype(), scratch->data(), dtype, t.numel(), stream);
    return scratch->data();
  }
};

LtGemm::LtGemm(DeviceAllocator& alloc, cudaStream_t stream) : impl_(std::make_unique<Impl>(alloc, stream)) {}
LtGemm::~LtGemm() = default;

namespace {
struct Dims {
  int64_t M, N, K;
};
bool overlaps(const char* x_begin, const char* x_end, const char* y_begin, const char* y_end) {
  return x_begin < y_end && y_begin < x_end;
}
bool overlaps(const Tensor& x, const Tensor& y) {
  const char* xb = static_cast<const char*>(x.raw());
  const char* yb = static_cast<const char*>(y.raw());
  return overlaps(xb, xb + x.bytes(), yb, yb + y.bytes());
}

// The checked GEMM shape of c = op(a) @ op(b), with Ops::gemm's dtype rules.
Dims gemm_dims(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c) {
  const DType da = a.dtype(), db = b.dtype(), dc = c.dtype();
  const bool all_f64 = da == DType::kF64 && db == DType::kF64 && dc == DType::kF64;
  TRIDENT_CHECK(all_f64 || (is_gemm_float(da) && is_gemm_float(db) && is_gemm_float(dc)), "gemm: a is ",
                dtype_name(da), ", b is ", dtype_name(db), ", c is ", dtype_name(dc),
                "; each may be fp32, bf16 or fp16 (or all three fp64)");
  const int64_t a_rows = rows_of(a), a_cols = last_dim(a), b_rows = rows_of(b), b_cols = last_dim(b);
  const int64_t M = trans_a ? a_cols : a_rows, K = trans_a ? a_rows : a_cols;
  const int64_t N = trans_b ? b_rows : b_cols, Kb = trans_b ? b_cols : b_rows;
  TRIDENT_CHECK(K == Kb, "gemm: inner dimensions differ: op(a) is [", M, ", ", K, "], op(b) is [", Kb, ", ", N,
                "] (a ", a.shape().str(), trans_a ? "^T" : "", ", b ", b.shape().str(), trans_b ? "^T" : "", ")");
  TRIDENT_CHECK(c.numel() == M * N && (M * N == 0 || last_dim(c) == N), "gemm: c ", c.shape().str(), " is not [", M,
                ", ", N, "]");
  TRIDENT_CHECK(!overlaps(c, a) && !overlaps(c, b), "gemm: c must not overlap a or b");
  return {M, N, K};
}

// Elements from one part to the next when every part has parts[0]'s shape and dtype and they lie
// one stride apart without overlapping (0 for a single shared part); -1 otherwise.
int64_t part_stride(const std::vector<Tensor>& parts) {
  if (parts.size() == 1) return 0;
  const Tensor& first = parts[0];
  const char* base = static_cast<const char*>(first.raw());
  const ptrdiff_t step = static_cast<const char*>(parts[1].raw()) - base;
  const auto element = static_cast<ptrdiff_t>(dtype_size(first.dtype()));
  if (step < static_cast<ptrdiff_t>(first.bytes()) || step % element != 0) return -1;
  for (size_t g = 0; g < parts.size(); ++g)
    if (parts[g].shape() != first.shape() || parts[g].dtype() != first.dtype() ||
        static_cast<const char*>(parts[g].raw()) != base + ptrdiff_t(g) * step)
      return -1;
  return step / element;
}

// [begin, end) of all parts' bytes.
std::pair<const char*, const char*> span_of(const std::vector<Tensor>& parts) {
  const char* begin = static_cast<const char*>(parts.front().raw());
  return {begin, static_cast<const char*>(parts.back().raw()) + parts.back().bytes()};
}
}  // namespace

bool LtGemm::run_parts(DType precision, bool trans_a, bool trans_b, double alpha, const std::vector<Tensor>& a,
                       const std::vector<Tensor>& b, double beta, const std::vector<Tensor>& c) {
  if (c.size() < 2) return false;
  const int64_t sa = part_stride(a), sb = part_stride(b), sc = part_stride(c);
  if (sa < 0 || sb < 0 || sc <= 0) return false;
  const auto [M, N, K] = gemm_dims(trans_a, trans_b, a[0], b[0], c[0]);
  const auto [c_begin, c_end] = span_of(c);
  for (const std::vector<Tensor>* in : {&a, &b}) {
    const auto [begin, end] = span_of(*in);
    if (overlaps(c_begin, c_end, begin, end)) return false;
  }
  if (M == 0 || N == 0 || K == 0) return false;
  // Only operands used as they are: fp32 inputs at a 16-bit precision, or mixed input types,
  // would need converted copies (part by part is as good then); c written directly.
  const DType da = a[0].dtype(), db = b[0].dtype(), dc = c[0].dtype();
  const bool low = precision == DType::kBF16 || precision == DType::kF16;
  if (da != db || (low && da == DType::kF32)) return false;
  if (!(dc == da || (dc == DType::kF32 && da != DType::kF64))) return false;
  return impl_->matmul(M, N, K, trans_a, trans_b, da, dc, alpha, a[0].raw(), b[0].raw(), beta, c[0].raw(),
                       {static_cast<int32_t>(c.size()), sa, sb, sc});
}

void LtGemm::run(DType precision, bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                 double beta, Tensor& c) {
  const DType da = a.dtype(), db = b.dtype(), dc = c.dtype();
  const bool all_f64 = da == DType::kF64 && db == DType::kF64 && dc == DType::kF64;
  const auto [M, N, K] = gemm_dims(trans_a, trans_b, a, b, c);
  if (M == 0 || N == 0) return;
  if (K == 0) {  // empty sum: c = beta * c
    if (beta == 0.0) fill(c, 0.0, impl_->stream);
    else scale(c, beta, impl_->stream);
    return;
  }
  Impl& im = *impl_;
  if (all_f64) {
    TRIDENT_CHECK(im.matmul(M, N, K, trans_a, trans_b, DType::kF64, DType::kF64, alpha, a.raw(), b.raw(), beta,
                            c.raw()),
                  "gemm: cuBLASLt has no fp64 algorithm for M=", M, " N=", N, " K=", K);
    return;
  }
  // Input dtype: fp32 inputs rounded to a 16-bit matmul precision; one common type, else fp32.
  const bool low = precision == DType::kBF16 || precision == DType::kF16;
  const DType ra = da == DType::kF32 && low ? precision : da, rb = db == DType::kF32 && low ? precision : db;
  DType in = ra == rb ? ra : DType::kF32;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<Storage> sa, sb, sc;
    const void* pa = im.as_dtype(a, in, sa);
    const void* pb = im.as_dtype(b, in, sb);
    // cuBLASLt writes fp32 c, or c of the inputs' type; any other c is staged in fp32.
    const bool c_direct = dc == DType::kF32 || dc == in;
    void* pc = c.raw();
    if (!c_direct) {
      sc = im.alloc.allocate(static_cast<size_t>(c.numel()) * 4);
      pc = sc->data();
      if (beta != 0.0) convert(c.raw(), dc, pc, DType::kF32, c.numel(), im.stream);
    }
    if (im.matmul(M, N, K, trans_a, trans_b, in, c_direct ? dc : DType::kF32, alpha, pa, pb, beta, pc)) {
      if (!c_direct) convert(pc, DType::kF32, c.raw(), dc, c.numel(), im.stream);
      return;  // scratch returns to the cache; only later work on this stream reuses it
    }
    // No 16-bit algorithm (e.g. odd leading dimensions misaligned for tensor cores): widen.
    TRIDENT_CHECK(in != DType::kF32, "gemm: cuBLASLt has no algorithm for M=", M, " N=", N, " K=", K, " (a ",
                  dtype_name(da), ", b ", dtype_name(db), ", c ", dtype_name(dc), ")");
    in = DType::kF32;
  }
}

double LtGemm::measure_peak(DType dtype) {
  Impl& im = *impl_;
  TRIDENT_CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16 || dtype == DType::kF64,
                "peak_flops: dtype ", dtype_name(dtype));
  // Large enough that launch overheads vanish (1.1 TFLOP per 8192^3 GEMM).
  const int64_t n = dtype == DType::kF64 ? 4096 : 8192;
  const size_t bytes = static_cast<size_t>(n * n) * dtype_size(dtype);
  auto a = im.alloc.allocate(bytes), b = im.alloc.allocate(bytes), c = im.alloc.allocate(bytes);
  const unsigned grid = grid_for(n * n);
  for (void* p : {a->data(), b->data()}) {
    if (dtype == DType::kF64) peak_init_f64_kernel<<<grid, 256, 0, im.stream>>>(static_cast<double*>(p), n * n);
    else peak_init_kernel<<<grid, 256, 0, im.stream>>>(p, elem_of(dtype, "peak_flops", "a"), n * n);
    TRIDENT_CUDA_LAUNCHED();
  }
  auto run_gemms = [&](int count) {
    for (int i = 0; i < count; ++i)
      TRIDENT_CHECK(im.matmul(n, n, n, false, true, dtype, dtype, 1.0, a->data(), b->data(), 0.0, c->data()),
                    "peak_flops: cuBLASLt has no algorithm for a ", n, "^3 ", dtype_name(dtype), " GEMM");
  };
  cudaEvent_t start, stop;
  TRIDENT_CUDA_CHECK(cudaEventCreate(&start));
  TRIDENT_CUDA_CHECK(cudaEventCreate(&stop));
  auto time_gemms = [&](int count) {
    TRIDENT_CUDA_CHECK(cudaEventRecord(start, im.stream));
    run_gemms(count);
    TRIDENT_CUDA_CHECK(cudaEventRecord(stop, im.stream));
    TRIDENT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    TRIDENT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return double(ms) * 1e-3;
  };
  time_gemms(2);                                             // warm-up: clocks, algorithm choice
  const double one = time_gemms(1);
  const int count = std::max(3, std::min(200, int(std::ceil(0.2 / std::max(one, 1e-6)))));  // ~0.2 s
  const double seconds = time_gemms(count);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  a.reset();
  b.reset();
  c.reset();
  im.alloc.release_cache();  // do not keep ~1 GB of measurement buffers cached
  return 2.0 * double(n) * double(n) * double(n) * count / seconds;
}

}  // namespace trident::cuda
