// ProfilingOps: forwards every call to the wrapped backend and adds its wall time to a phase.
#include "trident/backend/profiling_ops.hpp"

#include <chrono>

namespace trident {
namespace {

class ProfilingOps final : public Ops {
 public:
  ProfilingOps(Ops& inner, KernelTimes& times) : inner_(inner), times_(times) {}

  Device device() const override { return inner_.device(); }
  std::string name() const override { return inner_.name(); }
  double peak_flops(DType dtype) override { return inner_.peak_flops(dtype); }
  void synchronize() override { inner_.synchronize(); }
  double peak_device_mb() const override { return inner_.peak_device_mb(); }
  Tensor zeros(Shape shape, DType dtype) override { return inner_.zeros(shape, dtype); }
  void copy(const Tensor& src, Tensor& dst) override { timed(KernelPhase::kElementwise, "copy", [&] { inner_.copy(src, dst); }); }
  void fill(Tensor& x, double value) override { timed(KernelPhase::kElementwise, "fill", [&] { inner_.fill(x, value); }); }
  DType set_matmul_precision(DType dtype) override { return inner_.set_matmul_precision(dtype); }
  DType matmul_precision() const override { return inner_.matmul_precision(); }
  std::string matmul_precision_note() const override { return inner_.matmul_precision_note(); }

  void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
            Tensor& c) override {
    const int64_t k = trans_a ? a.numel() / a.shape()[a.ndim() - 1] : a.shape()[a.ndim() - 1];
    if (times_.enabled) times_.gemm_flops += 2.0 * double(c.numel()) * double(k);
    timed(KernelPhase::kGemm, "gemm", [&] { inner_.gemm(trans_a, trans_b, alpha, a, b, beta, c); });
  }
  void gemm_parts(bool trans_a, bool trans_b, double alpha, const std::vector<Tensor>& a,
                  const std::vector<Tensor>& b, double beta, const std::vector<Tensor>& c) override {
    const Tensor& a0 = a.at(0);
    const int64_t k = trans_a ? a0.numel() / a0.shape()[a0.ndim() - 1] : a0.shape()[a0.ndim() - 1];
    if (times_.enabled) times_.gemm_flops += 2.0 * double(c.at(0).numel()) * double(k) * double(c.size());
    timed(KernelPhase::kGemm, "gemm", [&] { inner_.gemm_parts(trans_a, trans_b, alpha, a, b, beta, c); });
  }
  void add_bias(Tensor& y, const Tensor& bias) override {
    timed(KernelPhase::kElementwise, "add_bias", [&] { inner_.add_bias(y, bias); });
  }
  void bias_backward(const Tensor& dy, Tensor& dbias) override {
    timed(KernelPhase::kElementwise, "bias_backward", [&] { inner_.bias_backward(dy, dbias); });
  }
  void add(const Tensor& a, const Tensor& b, Tensor& out) override {
    timed(KernelPhase::kElementwise, "add", [&] { inner_.add(a, b, out); });
  }
  void scale(Tensor& x, double s) override { timed(KernelPhase::kElementwise, "scale", [&] { inner_.scale(x, s); }); }
  double sum_squares(const Tensor& x) override {
    double r = 0;
    timed(KernelPhase::kOptimizer, "sum_squares", [&] { r = inner_.sum_squares(x); });  // the gradient norm
    return r;
  }
  void embedding_forward(const Tensor& tokens, const Tensor& positions, const Tensor& wte, const Tensor& wpe,
                         int64_t vocab_offset, Tensor& out) override {
    timed(KernelPhase::kElementwise, "embedding_forward", [&] { inner_.embedding_forward(tokens, positions, wte, wpe, vocab_offset, out); });
  }
  void embedding_backward(const Tensor& tokens, const Tensor& positions, const Tensor& dout, int64_t vocab_offset,
                          Tensor& dwte, Tensor& dwpe) override {
    timed(KernelPhase::kElementwise, "embedding_backward",
          [&] { inner_.embedding_backward(tokens, positions, dout, vocab_offset, dwte, dwpe); });
  }
  void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y, Tensor& mean,
                         Tensor& rstd) override {
    timed(KernelPhase::kElementwise, "layernorm_forward", [&] { inner_.layernorm_forward(x, w, b, eps, y, mean, rstd); });
  }
  void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                          Tensor& dx, Tensor& dw, Tensor& db) override {
    timed(KernelPhase::kElementwise, "layernorm_backward", [&] { inner_.layernorm_backward(dy, x, w, mean, rstd, dx, dw, db); });
  }
  void rmsnorm_forward(const Tensor& x, const Tensor& w, double eps, Tensor& y, Tensor& rstd) override {
    timed(KernelPhase::kElementwise, "rmsnorm_forward", [&] { inner_.rmsnorm_forward(x, w, eps, y, rstd); });
  }
  void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx,
                        Tensor& dw) override {
    timed(KernelPhase::kElementwise, "rmsnorm_backward", [&] { inner_.rmsnorm_backward(dy, x, w, rstd, dx, dw); });
  }
  void gelu_forward(const Tensor& x, Tensor& y) override {
    timed(KernelPhase::kElementwise, "gelu_forward", [&] { inner_.gelu_forward(x, y); });
  }
  void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    timed(KernelPhase::kElementwise, "gelu_backward", [&] { inner_.gelu_backward(x, dy, dx); });
  }
  void bias_gelu_forward(Tensor& x, const Tensor& bias, Tensor& y) override {
    timed(KernelPhase::kElementwise, "bias_gelu_forward", [&] { inner_.bias_gelu_forward(x, bias, y); });
  }
  void gelu_bias_backward(const Tensor& x, const Tensor& dy, Tensor& dx, Tensor& dbias) override {
    timed(KernelPhase::kElementwise, "gelu_bias_backward", [&] { inner_.gelu_bias_backward(x, dy, dx, dbias); });
  }
  void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y) override {
    timed(KernelPhase::kElementwise, "swiglu_forward", [&] { inner_.swiglu_forward(gate, up, y); });
  }
  void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup) override {
    timed(KernelPhase::kElementwise, "swiglu_backward", [&] { inner_.swiglu_backward(gate, up, dy, dgate, dup); });
  }
  void gather_rows(const Tensor& x, const Tensor& index, const Tensor& scale, Tensor& out) override {
    timed(KernelPhase::kElementwise, "gather_rows", [&] { inner_.gather_rows(x, index, scale, out); });
  }
  void combine_rows(const Tensor& y, const Tensor& slots, const Tensor& weights, Tensor& out,
                    bool accumulate) override {
    timed(KernelPhase::kElementwise, "combine_rows", [&] { inner_.combine_rows(y, slots, weights, out, accumulate); });
  }
  void row_dots(const Tensor& a, const Tensor& b, const Tensor& slots, Tensor& out) override {
    timed(KernelPhase::kElementwise, "row_dots", [&] { inner_.row_dots(a, b, slots, out); });
  }
  void rope_forward(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& f) override {
    timed(KernelPhase::kAttention, "rope_forward", [&] { inner_.rope_forward(x, positions, head_size, f); });
  }
  void rope_backward(Tensor& dx, const Tensor& positions, int head_size, const RotaryFrequencies& f) override {
    timed(KernelPhase::kAttention, "rope_backward", [&] { inner_.rope_backward(dx, positions, head_size, f); });
  }
  void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                         const Tensor& positions, Tensor& out, Tensor& lse) override {
    timed(KernelPhase::kAttention, "attention_forward", [&] { inner_.attention_forward(q, k, v, heads, kv_heads, positions, out, lse); });
  }
  void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                          const Tensor& dout, int heads, int kv_heads, const Tensor& positions, Tensor& dq,
                          Tensor& dk, Tensor& dv) override {
    timed(KernelPhase::kAttention, "attention_backward",
          [&] { inner_.attention_backward(q, k, v, out, lse, dout, heads, kv_heads, positions, dq, dk, dv); });
  }
  void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int heads, int kv_heads,
                        const Tensor& start, Tensor& out, int window) override {
    timed(KernelPhase::kAttention, "attention_cached",
          [&] { inner_.attention_cached(q, k_cache, v_cache, heads, kv_heads, start, out, window); });
  }
  void cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets, double grad_scale, Tensor& losses,
                                      Tensor& dlogits) override {
    timed(KernelPhase::kLoss, "cross_entropy_forward_backward",
          [&] { inner_.cross_entropy_forward_backward(logits, targets, grad_scale, losses, dlogits); });
  }
  void cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                 int64_t valid_columns, Tensor& row_max, Tensor& sum_exp,
                                 Tensor& target_logit) override {
    timed(KernelPhase::kLoss, "cross_entropy_shard_stats", [&] {
      inner_.cross_entropy_shard_stats(logits, targets, vocab_offset, valid_columns, row_max, sum_exp, target_logit);
    });
  }
  void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                    int64_t valid_columns, const Tensor& row_max, const Tensor& sum_exp,
                                    double grad_scale, Tensor& dlogits) override {
    timed(KernelPhase::kLoss, "cross_entropy_shard_backward", [&] {
      inner_.cross_entropy_shard_backward(logits, targets, vocab_offset, valid_columns, row_max, sum_exp, grad_scale,
                                          dlogits);
    });
  }
  void add_gaussian(Tensor& x, double std_dev, uint64_t key, uint64_t stream, int64_t first_index) override {
    timed(KernelPhase::kOptimizer, "add_gaussian", [&] { inner_.add_gaussian(x, std_dev, key, stream, first_index); });
  }
  void dropout(Tensor& x, double p, uint64_t key, uint64_t stream, int64_t first_index) override {
    timed(KernelPhase::kElementwise, "dropout", [&] { inner_.dropout(x, p, key, stream, first_index); });
  }
  void adamw(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const AdamWArgs& args) override {
    timed(KernelPhase::kOptimizer, "adamw", [&] { inner_.adamw(param, grad, exp_avg, exp_avg_sq, args); });
  }

 private:
  // kernel: a string literal (one per call site), the key of its row in times_.kernels.
  template <typename F>
  void timed(KernelPhase phase, const char* kernel, F&& call) {
    if (!times_.enabled) return call();
    // A device backend queues kernels and returns: wait for them on both sides of the call.
    const bool queued = inner_.device() != Device::kCPU;
    if (queued) inner_.synchronize();
    const auto start = std::chrono::steady_clock::now();
    call();
    if (queued) inner_.synchronize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const size_t i = static_cast<size_t>(phase);
    times_.seconds[i] += seconds;
    ++times_.calls[i];
    KernelTimes::Kernel& row = times_.kernel(kernel, phase);
    row.seconds += seconds;
    ++row.calls;
  }

  Ops& inner_;
  KernelTimes& times_;
};

}  // namespace

const char* kernel_phase_name(KernelPhase phase) {
  switch (phase) {
    case KernelPhase::kGemm: return "gemm";
    case KernelPhase::kAttention: return "attention";
    case KernelPhase::kElementwise: return "elementwise_norm";
    case KernelPhase::kLoss: return "loss";
    case KernelPhase::kOptimizer: return "optimizer";
    case KernelPhase::kCount: break;
  }
  return "?";
}

KernelTimes::Kernel& KernelTimes::kernel(const char* name, KernelPhase phase) {
  for (Kernel& k : kernels)
    if (k.name == name) return k;
  kernels.push_back({name, phase});
  return kernels.back();
}

double KernelTimes::total() const {
  double t = 0;
  for (double s : seconds) t += s;
  return t;
}

std::unique_ptr<Ops> make_profiling_ops(Ops& inner, KernelTimes& times) {
  return std::make_unique<ProfilingOps>(inner, times);
}

}  // namespace trident
