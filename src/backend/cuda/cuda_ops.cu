// CudaOps: the Ops interface on one GPU. It owns the compute stream (every kernel and copy of
// this Ops runs on it, in order), the caching allocator and the cuBLASLt state. Each method
// checks that its tensors are on the device, naming the kernel and argument, then forwards to
// a launcher (kernels.cuh, core_kernels.cuh) that checks shapes and dtypes.
#include <cstring>
#include <map>
#include <string>

#include "allocator.hpp"
#include "core_kernels.cuh"
#include "device_access.cuh"
#include "gemm.hpp"
#include "kernels.cuh"
#include "entry_points.hpp"
#include "trident/backend/cuda_ops.hpp"

namespace trident {
namespace {

// A tensor the kernel reads or writes on the device.
void on_device(const Tensor& t, const char* kernel, const char* arg) {
  TRIDENT_CHECK(t.defined(), kernel, ": ", arg, " is undefined");
  TRIDENT_CHECK(t.device() == Device::kCUDA, kernel, ": ", arg,
                " is a host tensor; the CUDA backend takes tensors made by its zeros() (copy() moves data)");
}
// An optional tensor (undefined: not used).
void on_device_opt(const Tensor& t, const char* kernel, const char* arg) {
  if (t.defined()) on_device(t, kernel, arg);
}

// dst = src on the host, any pair of float dtypes (fp64 conversions always run here: the device
// converts only between fp32, bf16 and fp16).
void host_convert(const Tensor& src, Tensor& dst) {
  auto is_float = [](DType d) { return d != DType::kI32; };
  TRIDENT_CHECK(is_float(src.dtype()) && is_float(dst.dtype()), "copy: no conversion from ", dtype_name(src.dtype()),
                " to ", dtype_name(dst.dtype()));
  const int64_t n = src.numel();
  const void* s = src.raw();
  void* d = dst.raw();
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (src.dtype()) {
      case DType::kF32: v = static_cast<const float*>(s)[i]; break;
      case DType::kF64: v = static_cast<const double*>(s)[i]; break;
      case DType::kBF16: v = bf16_bits_to_fp32(static_cast<const uint16_t*>(s)[i]); break;
      default: v = fp16_bits_to_fp32(static_cast<const uint16_t*>(s)[i]); break;
    }
    switch (dst.dtype()) {
      case DType::kF32: static_cast<float*>(d)[i] = static_cast<float>(v); break;
      case DType::kF64: static_cast<double*>(d)[i] = v; break;
      case DType::kBF16: static_cast<uint16_t*>(d)[i] = fp32_to_bf16_bits(static_cast<float>(v)); break;
      default: static_cast<uint16_t*>(d)[i] = fp32_to_fp16_bits(static_cast<float>(v)); break;
    }
  }
}

class CudaOps final : public Ops {
 public:
  explicit CudaOps(int device) : device_(device) {
    TRIDENT_CUDA_CHECK(cudaSetDevice(device));
    TRIDENT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    // Kernels' small scratch comes from cudaMallocAsync's default pool: keep what it has
    // reserved (by default it would return it to the driver at every synchronisation).
    cudaMemPool_t pool = nullptr;
    TRIDENT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    uint64_t keep = UINT64_MAX;
    TRIDENT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    alloc_ = std::make_unique<cuda::DeviceAllocator>(device);
    gemm_ = std::make_unique<cuda::LtGemm>(*alloc_, stream_);
  }
  ~CudaOps() override {
    cudaStreamSynchronize(stream_);  // queued work may still use cached blocks
    gemm_.reset();
    cudaStreamDestroy(stream_);
  }

  Device device() const override { return Device::kCUDA; }
  cudaStream_t stream() const { return stream_; }
  void synchronize() override { TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  double peak_device_mb() const override { return double(alloc_->peak_bytes_in_use()) / double(1 << 20); }
  std::string name() const override { return "cuda:" + std::to_string(device_); }

  double peak_flops(DType dtype) override {
    auto it = peak_.find(dtype);
    if (it == peak_.end()) it = peak_.emplace(dtype, gemm_->measure_peak(dtype)).first;
    return it->second;
  }

  Tensor zeros(Shape shape, DType dtype) override {
    const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
    std::shared_ptr<Storage> storage = alloc_->allocate(bytes);
    if (bytes > 0) TRIDENT_CUDA_CHECK(cudaMemsetAsync(storage->data(), 0, bytes, stream_));
    return Tensor(std::move(storage), 0, shape, dtype);
  }

  // Same dtype: one cudaMemcpyAsync. Conversions between fp32, bf16 and fp16 run on the device:
  // a host source is staged in a device buffer of its own dtype, a host destination receives a
  // device buffer converted to its dtype. fp64 <-> float conversions run on the host side (fp64
  // parameters initialised on the host, fp64 loss sums). Returns after a device-to-host copy
  // has landed.
  void copy(const Tensor& src, Tensor& dst) override {
    constexpr const char* op = "copy";
    TRIDENT_CHECK(src.defined() && dst.defined(), "copy: src or dst is undefined");
    TRIDENT_CHECK(src.numel() == dst.numel(), "copy: src ", src.shape().str(), " and dst ", dst.shape().str(),
                  " differ in size");
    const bool src_dev = src.device() == Device::kCUDA, dst_dev = dst.device() == Device::kCUDA;
    const int64_t n = src.numel();
    if (n == 0) return;
    if (src.dtype() == dst.dtype()) {
      if (src.raw() == dst.raw()) return;
      if (!src_dev && !dst_dev) {
        std::memmove(dst.raw(), src.raw(), src.bytes());
        return;
      }
      TRIDENT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyDefault, stream_));
      if (!dst_dev) TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return;
    }
    if (!src_dev && !dst_dev) {
      host_convert(src, dst);
      return;
    }
    if (src.dtype() == DType::kF64 || dst.dtype() == DType::kF64) {  // via fp32 on the host side
      TRIDENT_CHECK(!src_dev || !dst_dev, "copy: ", dtype_name(src.dtype()), " to ", dtype_name(dst.dtype()),
                    " between device tensors; fp64 is converted only on the way to or from the host");
      if (!src_dev) {  // host: convert to dst's dtype (fp64) or to fp32, then upload
        Tensor staged = Tensor::zeros(src.shape(), dst.dtype() == DType::kF64 ? DType::kF64 : DType::kF32);
        host_convert(src, staged);
        copy(staged, dst);
      } else {  // download as src's dtype (fp64) or fp32, then convert on the host
        Tensor staged = Tensor::zeros(src.shape(), src.dtype() == DType::kF64 ? DType::kF64 : DType::kF32);
        copy(src, staged);
        host_convert(staged, dst);
      }
      return;
    }
    cuda::elem_of(src, op, "src");  // int32 is not converted
    cuda::elem_of(dst, op, "dst");
    std::shared_ptr<Storage> staged;
    const void* from = src.raw();
    if (!src_dev) {  // host -> device buffer of the source dtype
      staged = alloc_->allocate(src.bytes());
      TRIDENT_CUDA_CHECK(cudaMemcpyAsync(staged->data(), src.raw(), src.bytes(), cudaMemcpyHostToDevice, stream_));
      from = staged->data();
    }
    if (dst_dev) {
      cuda::convert(from, src.dtype(), dst.raw(), dst.dtype(), n, stream_);
      return;
    }
    std::shared_ptr<Storage> converted = alloc_->allocate(dst.bytes());  // device -> host
    cuda::convert(from, src.dtype(), converted->data(), dst.dtype(), n, stream_);
    TRIDENT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), converted->data(), dst.bytes(), cudaMemcpyDeviceToHost, stream_));
    TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void fill(Tensor& x, double value) override {
    on_device(x, "fill", "x");
    cuda::fill(x, value, stream_);
  }

  DType set_matmul_precision(DType dtype) override {
    TRIDENT_CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16, "matmul precision ",
                  dtype_name(dtype));
    precision_ = dtype;  // every GPU this backend is built for (sm_80+) has bf16 and fp16 tensor cores
    return precision_;
  }
  DType matmul_precision() const override { return precision_; }

  void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
            Tensor& c) override {
    on_device(a, "gemm", "a");
    on_device(b, "gemm", "b");
    on_device(c, "gemm", "c");
    gemm_->run(precision_, trans_a, trans_b, alpha, a, b, beta, c);
  }

  void gemm_parts(bool trans_a, bool trans_b, double alpha, const std::vector<Tensor>& a,
                  const std::vector<Tensor>& b, double beta, const std::vector<Tensor>& c) override {
    check_gemm_parts(a, b, c);
    for (const std::vector<Tensor>* parts : {&a, &b, &c})
      for (const Tensor& t : *parts) on_device(t, "gemm_parts", parts == &a ? "a" : parts == &b ? "b" : "c");
    if (!gemm_->run_parts(precision_, trans_a, trans_b, alpha, a, b, beta, c))
      Ops::gemm_parts(trans_a, trans_b, alpha, a, b, beta, c);
  }

  void add_bias(Tensor& y, const Tensor& bias) override {
    on_device(y, "add_bias", "y");
    on_device(bias, "add_bias", "bias");
    cuda::add_bias(y, bias, stream_);
  }
  void bias_backward(const Tensor& dy, Tensor& dbias) override {
    on_device(dy, "bias_backward", "dy");
    on_device(dbias, "bias_backward", "dbias");
    cuda::bias_backward(dy, dbias, *alloc_, stream_);
  }
  void add(const Tensor& a, const Tensor& b, Tensor& out) override {
    on_device(a, "add", "a");
    on_device(b, "add", "b");
    on_device(out, "add", "out");
    cuda::add(a, b, out, stream_);
  }
  void scale(Tensor& x, double s) override {
    on_device(x, "scale", "x");
    cuda::scale(x, s, stream_);
  }
  double sum_squares(const Tensor& x) override {
    on_device(x, "sum_squares", "x");
    return cuda::sum_squares(x, *alloc_, stream_);
  }

  void embedding_forward(const Tensor& tokens, const Tensor& positions, const Tensor& wte, const Tensor& wpe,
                         int64_t vocab_offset, Tensor& out) override {
    constexpr const char* op = "embedding_forward";
    on_device(tokens, op, "tokens");
    on_device_opt(positions, op, "positions");
    on_device(wte, op, "wte");
    on_device_opt(wpe, op, "wpe");
    on_device(out, op, "out");
    cuda::embedding_forward(tokens, positions, wte, wpe, vocab_offset, out, stream_);
  }
  void embedding_backward(const Tensor& tokens, const Tensor& positions, const Tensor& dout, int64_t vocab_offset,
                          Tensor& dwte, Tensor& dwpe) override {
    constexpr const char* op = "embedding_backward";
    on_device(tokens, op, "tokens");
    on_device_opt(positions, op, "positions");
    on_device(dout, op, "dout");
    on_device_opt(dwte, op, "dwte");
    on_device_opt(dwpe, op, "dwpe");
    cuda::embedding_backward(tokens, positions, dout, vocab_offset, dwte, dwpe, stream_);
  }

  void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y, Tensor& mean,
                         Tensor& rstd) override {
    constexpr const char* op = "layernorm_forward";
    on_device(x, op, "x");
    on_device(w, op, "w");
    on_device_opt(b, op, "b");
    on_device(y, op, "y");
    on_device(mean, op, "mean");
    on_device(rstd, op, "rstd");
    cuda::layernorm_forward(x, w, b, eps, y, mean, rstd, stream_);
  }
  void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                          Tensor& dx, Tensor& dw, Tensor& db) override {
    constexpr const char* op = "layernorm_backward";
    on_device(dy, op, "dy");
    on_device(x, op, "x");
    on_device(w, op, "w");
    on_device(mean, op, "mean");
    on_device(rstd, op, "rstd");
    on_device(dx, op, "dx");
    on_device_opt(dw, op, "dw");
    on_device_opt(db, op, "db");
    cuda::layernorm_backward(dy, x, w, mean, rstd, dx, dw, db, stream_);
  }
  void rmsnorm_forward(const Tensor& x, const Tensor& w, double eps, Tensor& y, Tensor& rstd) override {
    constexpr const char* op = "rmsnorm_forward";
    on_device(x, op, "x");
    on_device(w, op, "w");
    on_device(y, op, "y");
    on_device(rstd, op, "rstd");
    cuda::rmsnorm_forward(x, w, eps, y, rstd, stream_);
  }
  void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx,
                        Tensor& dw) override {
    constexpr const char* op = "rmsnorm_backward";
    on_device(dy, op, "dy");
    on_device(x, op, "x");
    on_device(w, op, "w");
    on_device(rstd, op, "rstd");
    on_device(dx, op, "dx");
    on_device_opt(dw, op, "dw");
    cuda::rmsnorm_backward(dy, x, w, rstd, dx, dw, stream_);
  }

  void gelu_forward(const Tensor& x, Tensor& y) override {
    on_device(x, "gelu_forward", "x");
    on_device(y, "gelu_forward", "y");
    cuda::gelu_forward(x, y, stream_);
  }
  void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    on_device(x, "gelu_backward", "x");
    on_device(dy, "gelu_backward", "dy");
    on_device(dx, "gelu_backward", "dx");
    cuda::gelu_backward(x, dy, dx, stream_);
  }
  void bias_gelu_forward(Tensor& x, const Tensor& bias, Tensor& y) override {
    on_device(x, "bias_gelu_forward", "x");
    on_device(bias, "bias_gelu_forward", "bias");
    on_device(y, "bias_gelu_forward", "y");
    cuda::bias_gelu_forward(x, bias, y, stream_);
  }
  void gelu_bias_backward(const Tensor& x, const Tensor& dy, Tensor& dx, Tensor& dbias) override {
    on_device(x, "gelu_bias_backward", "x");
    on_device(dy, "gelu_bias_backward", "dy");
    on_device(dx, "gelu_bias_backward", "dx");
    on_device(dbias, "gelu_bias_backward", "dbias");
    cuda::gelu_bias_backward(x, dy, dx, dbias, *alloc_, stream_);
  }
  void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y) override {
    on_device(gate, "swiglu_forward", "gate");
    on_device(up, "swiglu_forward", "up");
    on_device(y, "swiglu_forward", "y");
    cuda::swiglu_forward(gate, up, y, stream_);
  }
  void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup) override {
    constexpr const char* op = "swiglu_backward";
    on_device(gate, op, "gate");
    on_device(up, op, "up");
    on_device(dy, op, "dy");
    on_device(dgate, op, "dgate");
    on_device(dup, op, "dup");
    cuda::swiglu_backward(gate, up, dy, dgate, dup, stream_);
  }
  void gather_rows(const Tensor& x, const Tensor& index, const Tensor& scale, Tensor& out) override {
    constexpr const char* op = "gather_rows";
    on_device(x, op, "x");
    on_device(index, op, "index");
    on_device_opt(scale, op, "scale");
    on_device(out, op, "out");
    cuda::gather_rows(x, index, scale, out, stream_);
  }
  void combine_rows(const Tensor& y, const Tensor& slots, const Tensor& weights, Tensor& out,
                    bool accumulate) override {
    constexpr const char* op = "combine_rows";
    on_device(y, op, "y");
    on_device(slots, op, "slots");
    on_device_opt(weights, op, "weights");
    on_device(out, op, "out");
    cuda::combine_rows(y, slots, weights, out, accumulate, stream_);
  }
  void row_dots(const Tensor& a, const Tensor& b, const Tensor& slots, Tensor& out) override {
    constexpr const char* op = "row_dots";
    on_device(a, op, "a");
    on_device(b, op, "b");
    on_device(slots, op, "slots");
    on_device(out, op, "out");
    cuda::row_dots(a, b, slots, out, stream_);
  }

  void rope_forward(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& f) override {
    on_device(x, "rope_forward", "x");
    on_device(positions, "rope_forward", "positions");
    cuda::rope_forward(x, positions, head_size, f, stream_);
  }
  void rope_backward(Tensor& dx, const Tensor& positions, int head_size, const RotaryFrequencies& f) override {
    on_device(dx, "rope_backward", "dx");
    on_device(positions, "rope_backward", "positions");
    cuda::rope_backward(dx, positions, head_size, f, stream_);
  }

  void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                         const Tensor& positions, Tensor& out, Tensor& lse) override {
    constexpr const char* op = "attention_forward";
    on_device(q, op, "q");
    on_device(k, op, "k");
    on_device(v, op, "v");
    on_device_opt(positions, op, "positions");
    on_device(out, op, "out");
    on_device(lse, op, "lse");
    cuda::attention_forward(q, k, v, heads, kv_heads, positions, out, lse, stream_);
  }
  void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                          const Tensor& dout, int heads, int kv_heads, const Tensor& positions, Tensor& dq,
                          Tensor& dk, Tensor& dv) override {
    constexpr const char* op = "attention_backward";
    on_device(q, op, "q");
    on_device(k, op, "k");
    on_device(v, op, "v");
    on_device(out, op, "out");
    on_device(lse, op, "lse");
    on_device(dout, op, "dout");
    on_device_opt(positions, op, "positions");
    on_device(dq, op, "dq");
    on_device(dk, op, "dk");
    on_device(dv, op, "dv");
    cuda::attention_backward(q, k, v, out, lse, dout, heads, kv_heads, positions, dq, dk, dv, stream_);
  }
  void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int heads, int kv_heads,
                        const Tensor& start, Tensor& out, int window) override {
    constexpr const char* op = "attention_cached";
    on_device(q, op, "q");
    on_device(k_cache, op, "k_cache");
    on_device(v_cache, op, "v_cache");
    TRIDENT_CHECK(start.defined() && start.device() == Device::kCPU, op,
                  ": start must be a host int32 tensor (ops.hpp)");
    on_device(out, op, "out");
    cuda::attention_cached(q, k_cache, v_cache, heads, kv_heads, start, out, window, stream_);
  }

  void cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets, double grad_scale,
                                      Tensor& losses, Tensor& dlogits) override {
    constexpr const char* op = "cross_entropy_forward_backward";
    on_device(logits, op, "logits");
    on_device(targets, op, "targets");
    on_device(losses, op, "losses");
    on_device(dlogits, op, "dlogits");
    cuda::cross_entropy_forward_backward(logits, targets, grad_scale, losses, dlogits, stream_);
  }
  void cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                 int64_t valid_columns, Tensor& row_max, Tensor& sum_exp,
                                 Tensor& target_logit) override {
    constexpr const char* op = "cross_entropy_shard_stats";
    on_device(logits, op, "logits");
    on_device(targets, op, "targets");
    on_device(row_max, op, "row_max");
    on_device(sum_exp, op, "sum_exp");
    on_device(target_logit, op, "target_logit");
    cuda::cross_entropy_shard_stats(logits, targets, vocab_offset, valid_columns, row_max, sum_exp, target_logit,
                                    stream_);
  }
  void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                    int64_t valid_columns, const Tensor& row_max, const Tensor& sum_exp,
                                    double grad_scale, Tensor& dlogits) override {
    constexpr const char* op = "cross_entropy_shard_backward";
    on_device(logits, op, "logits");
    on_device(targets, op, "targets");
    on_device(row_max, op, "row_max");
    on_device(sum_exp, op, "sum_exp");
    on_device(dlogits, op, "dlogits");
    cuda::cross_entropy_shard_backward(logits, targets, vocab_offset, valid_columns, row_max, sum_exp, grad_scale,
                                       dlogits, stream_);
  }

  void add_gaussian(Tensor& x, double std_dev, uint64_t key, uint64_t stream, int64_t first_index) override {
    on_device(x, "add_gaussian", "x");
    cuda::add_gaussian(x, std_dev, key, stream, first_index, stream_);
  }
  void dropout(Tensor& x, double p, uint64_t key, uint64_t stream, int64_t first_index) override {
    on_device(x, "dropout", "x");
    cuda::dropout(x, p, key, stream, first_index, stream_);
  }

  void adamw(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
             const AdamWArgs& args) override {
    on_device(param, "adamw", "param");
    on_device(grad, "adamw", "grad");
    on_device(exp_avg, "adamw", "exp_avg");
    on_device(exp_avg_sq, "adamw", "exp_avg_sq");
    cuda::adamw(param, grad, exp_avg, exp_avg_sq, args, stream_);
  }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::DeviceAllocator> alloc_;  // before gemm_: its workspace returns here
  std::unique_ptr<cuda::LtGemm> gemm_;
  DType precision_ = DType::kF32;
  std::map<DType, double> peak_;
};

}  // namespace

namespace cuda {

void* stream_of(Ops& ops) {
  auto* cuda = dynamic_cast<CudaOps*>(&ops);
  TRIDENT_CHECK(cuda, "cuda_stream: ", ops.name(), " is not the CUDA backend");
  return cuda->stream();
}

std::unique_ptr<Ops> make_ops(int device) {
  std::string why;
  const int count = device_count(&why);
  if (count == 0) throw Error("make_cuda_ops: no usable GPU (" + why + ")");
  TRIDENT_CHECK(device >= 0 && device < count, "make_cuda_ops: device ", device, " does not exist (", count,
                " visible)");
  return std::make_unique<CudaOps>(device);
}

}  // namespace cuda
}  // namespace trident
