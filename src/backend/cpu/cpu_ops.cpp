// CpuOps: the Ops interface on the host. Each method checks nothing itself and forwards to the
// kernel of its file (kernels.hpp); the object owns the only state (rope table, peak cache).
#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cpu_path.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "common.hpp"
#include "gemm_low_precision.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

class CpuOps final : public Ops {
 public:
  explicit CpuOps(bool bf16_taken_as_slower) : bf16_taken_as_slower_(bf16_taken_as_slower) {}
  Device device() const override { return Device::kCPU; }
  std::string name() const override { return "cpu"; }

  double peak_flops(DType dtype) override {
    if (dtype == DType::kF64) {
      if (!peak_f64_) peak_f64_ = cpu::measure_peak_fma_flops(DType::kF64);
      return *peak_f64_;
    }
    if (!peak_f32_) peak_f32_ = cpu::measure_peak_fma_flops(DType::kF32);
    // bf16: the fp32 FMA peak scaled by how much faster a large bf16 GEMM runs than an fp32 one
    // here, both measured (AVX-512 BF16 dot products, or AMX tiles where oneDNN finds them).
    if (dtype == DType::kBF16 && cpu_path_has_bf16() && onednn_has_bf16_matmul())
      return *peak_f32_ * gemm_rate(DType::kBF16) / gemm_rate(DType::kF32);
    return *peak_f32_;
  }

  Tensor zeros(Shape shape, DType dtype) override { return Tensor::zeros(shape, dtype); }
  void copy(const Tensor& src, Tensor& dst) override { cpu::copy(src, dst); }
  void fill(Tensor& x, double value) override { cpu::fill(x, value); }

  DType set_matmul_precision(DType dtype) override {
    TRIDENT_CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16, "matmul precision ",
                  dtype_name(dtype));
    // Without AVX-512 BF16 a bf16 GEMM would only be emulated, slower than fp32: compute in fp32;
    // with it, bf16 must also measure faster than fp32 here (some processors run vdpbf16ps at
    // half the FMA rate and hide AMX).
    note_.clear();
    matmul_precision_ = dtype;
    if (dtype != DType::kBF16) return matmul_precision_;
    if (bf16_taken_as_slower_) {
      matmul_precision_ = DType::kF32;
      note_ = "bf16 GEMMs taken as slower than fp32 (TRIDENT_TEST_SLOW_BF16)";
    } else if (!cpu_path_has_bf16()) {
      matmul_precision_ = DType::kF32;
      note_ = "the CPU path " + cpu_path_name(selected_cpu_path()) + " has no bf16 dot products";
    } else if (!onednn_has_bf16_matmul()) {
      matmul_precision_ = DType::kF32;
      note_ = "this oneDNN has no bf16 matmul for the CPU path " + cpu_path_name(selected_cpu_path());
    } else if (gemm_rate(DType::kBF16) <= gemm_rate(DType::kF32)) {
      matmul_precision_ = DType::kF32;
      note_ = detail::concat("bf16 GEMMs measured ", gemm_rate(DType::kBF16) / 1e9, " GFLOP/s here against ",
                             gemm_rate(DType::kF32) / 1e9, " for fp32 (bf16 would be slower)");
    }
    return matmul_precision_;
  }
  DType matmul_precision() const override { return matmul_precision_; }
  std::string matmul_precision_note() const override { return note_; }

  void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
            Tensor& c) override {
    // One dtype throughout at fp32 precision (or fp64): the plain sgemm/fp64 path; any 16-bit
    // operand or a 16-bit matmul precision: the mixed-precision rules of gemm_low_precision.hpp.
    const DType t = a.dtype();
    const bool uniform = b.dtype() == t && c.dtype() == t;
    if (uniform && (t == DType::kF64 || (t == DType::kF32 && matmul_precision_ == DType::kF32)))
      cpu::gemm(trans_a, trans_b, alpha, a, b, beta, c);
    else if (t == DType::kF64 || b.dtype() == DType::kF64 || c.dtype() == DType::kF64)
      TRIDENT_CHECK(false, "gemm: a is ", dtype_name(t), ", b is ", dtype_name(b.dtype()), ", c is ",
                    dtype_name(c.dtype()), "; an fp64 gemm takes fp64 a, b and c");
    else
      low_precision_.run(matmul_precision_, trans_a, trans_b, alpha, a, b, beta, c);
  }

  void gemm_parts(bool trans_a, bool trans_b, double alpha, const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                  double beta, const std::vector<Tensor>& c) override {
    check_gemm_parts(a, b, c);
    auto has_f64 = [](const std::vector<Tensor>& ts) {
      return std::any_of(ts.begin(), ts.end(), [](const Tensor& t) { return t.dtype() == DType::kF64; });
    };
    if (has_f64(a) || has_f64(b) || has_f64(c)) Ops::gemm_parts(trans_a, trans_b, alpha, a, b, beta, c);
    else low_precision_.run_parts(matmul_precision_, trans_a, trans_b, alpha, a, b, beta, c);
  }

  void add_bias(Tensor& y, const Tensor& bias) override { cpu::add_bias(y, bias); }
  void bias_backward(const Tensor& dy, Tensor& dbias) override { cpu::bias_backward(dy, dbias); }
  void add(const Tensor& a, const Tensor& b, Tensor& out) override { cpu::add(a, b, out); }
  void scale(Tensor& x, double s) override { cpu::scale(x, s); }
  void cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                 int64_t valid_columns, Tensor& row_max, Tensor& sum_exp, Tensor& target_logit) override {
    cpu::cross_entropy_shard_stats(logits, targets, vocab_offset, valid_columns, row_max, sum_exp, target_logit);
  }
  void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                    int64_t valid_columns, const Tensor& row_max, const Tensor& sum_exp,
                                    double grad_scale, Tensor& dlogits) override {
    cpu::cross_entropy_shard_backward(logits, targets, vocab_offset, valid_columns, row_max, sum_exp, grad_scale,
                                      dlogits);
  }
  void dropout(Tensor& x, double p, uint64_t key, uint64_t stream, int64_t first_index) override {
    cpu::dropout(x, p, key, stream, first_index);
  }
  void add_gaussian(Tensor& x, double std_dev, uint64_t key, uint64_t stream, int64_t first_index) override {
    cpu::add_gaussian(x, std_dev, key, stream, first_index);
  }
  double sum_squares(const Tensor& x) override { return cpu::sum_squares(x); }

  void embedding_forward(const Tensor& tokens, const Tensor& positions, const Tensor& wte, const Tensor& wpe,
                         int64_t vocab_offset, Tensor& out) override {
    cpu::embedding_forward(tokens, positions, wte, wpe, vocab_offset, out);
  }
  void embedding_backward(const Tensor& tokens, const Tensor& positions, const Tensor& dout, int64_t vocab_offset,
                          Tensor& dwte, Tensor& dwpe) override {
    cpu::embedding_backward(tokens, positions, dout, vocab_offset, dwte, dwpe);
  }

  void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y,
                         Tensor& mean, Tensor& rstd) override {
    cpu::layernorm_forward(x, w, b, eps, y, mean, rstd);
  }
  void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean,
                          const Tensor& rstd, Tensor& dx, Tensor& dw, Tensor& db) override {
    cpu::layernorm_backward(dy, x, w, mean, rstd, dx, dw, db);
  }
  void rmsnorm_forward(const Tensor& x, const Tensor& w, double eps, Tensor& y, Tensor& rstd) override {
    cpu::rmsnorm_forward(x, w, eps, y, rstd);
  }
  void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx,
                        Tensor& dw) override {
    cpu::rmsnorm_backward(dy, x, w, rstd, dx, dw);
  }

  void gelu_forward(const Tensor& x, Tensor& y) override { cpu::gelu_forward(x, y); }
  void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override { cpu::gelu_backward(x, dy, dx); }
  void bias_gelu_forward(Tensor& x, const Tensor& bias, Tensor& y) override { cpu::bias_gelu_forward(x, bias, y); }
  void gelu_bias_backward(const Tensor& x, const Tensor& dy, Tensor& dx, Tensor& dbias) override {
    cpu::gelu_bias_backward(x, dy, dx, dbias);
  }
  void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y) override {
    cpu::swiglu_forward(gate, up, y);
  }

  void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate,
                       Tensor& dup) override {
    cpu::swiglu_backward(gate, up, dy, dgate, dup);
  }
  void gather_rows(const Tensor& x, const Tensor& index, const Tensor& scale, Tensor& out) override {
    cpu::gather_rows(x, index, scale, out);
  }
  void combine_rows(const Tensor& y, const Tensor& slots, const Tensor& weights, Tensor& out,
                    bool accumulate) override {
    cpu::combine_rows(y, slots, weights, out, accumulate);
  }
  void row_dots(const Tensor& a, const Tensor& b, const Tensor& slots, Tensor& out) override {
    cpu::row_dots(a, b, slots, out);
  }

  void rope_forward(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& f) override {
    cpu::rope(x, positions, head_size, f, /*inverse=*/false, rope_table_);
  }
  void rope_backward(Tensor& dx, const Tensor& positions, int head_size, const RotaryFrequencies& f) override {
    cpu::rope(dx, positions, head_size, f, /*inverse=*/true, rope_table_);
  }

  void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                         const Tensor& positions, Tensor& out, Tensor& lse) override {
    if (bf16_attention(q, k, v, lse)) cpu::attention_forward_matmul(q, k, v, heads, kv_heads, positions, out, lse);
    else cpu::attention_forward(q, k, v, heads, kv_heads, positions, out, lse);
  }
  void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                          const Tensor& lse, const Tensor& dout, int heads, int kv_heads, const Tensor& positions,
                          Tensor& dq, Tensor& dk, Tensor& dv) override {
    if (bf16_attention(q, k, v, lse))
      cpu::attention_backward_matmul(q, k, v, out, lse, dout, heads, kv_heads, positions, dq, dk, dv);
    else
      cpu::attention_backward(q, k, v, out, lse, dout, heads, kv_heads, positions, dq, dk, dv);
  }
  void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int heads, int kv_heads,
                        const Tensor& start, Tensor& out, int window) override {
    cpu::attention_cached(q, k_cache, v_cache, heads, kv_heads, start, out, window);
  }

  void cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets, double grad_scale,
                                      Tensor& losses, Tensor& dlogits) override {
    cpu::cross_entropy_forward_backward(logits, targets, grad_scale, losses, dlogits);
  }

  void adamw(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
             const AdamWArgs& args) override {
    cpu::adamw(param, grad, exp_avg, exp_avg_sq, args);
  }

 private:
  // bf16 q, k, v at bf16 matmul precision (bf16 GEMMs measured faster than fp32 here): the
  // attention products go through oneDNN's bf16 matmuls too, else the fp32 flash kernel.
  bool bf16_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lse) const {
    return matmul_precision_ == DType::kBF16 && q.dtype() == DType::kBF16 && k.dtype() == DType::kBF16 &&
           v.dtype() == DType::kBF16 && lse.dtype() == DType::kF32;
  }

  // FLOP/s of a 1536 x 1536 x 1536 GEMM in dtype (fp32 sgemm, or bf16 inputs with fp32 output),
  // the best of four after a warm-up (~0.1 s for fp32); measured once per dtype.
  double gemm_rate(DType dtype) {
    std::optional<double>& rate = dtype == DType::kBF16 ? gemm_bf16_ : gemm_f32_;
    if (rate) return *rate;
    constexpr int64_t n = 1536;
    Tensor a = Tensor::zeros(Shape{n, n}, dtype), b = Tensor::zeros(Shape{n, n}, dtype);
    Tensor c = Tensor::zeros(Shape{n, n}, DType::kF32);
    cpu::fill(a, 0.5);
    cpu::fill(b, 0.25);
    double best = 0;
    for (int i = 0; i < 5; ++i) {
      const double start = omp_get_wtime();
      if (dtype == DType::kF32) cpu::gemm(false, false, 1.0, a, b, 0.0, c);
      else low_precision_.run(DType::kBF16, false, false, 1.0, a, b, 0.0, c);
      const double seconds = omp_get_wtime() - start;
      if (i > 0) best = std::max(best, 2.0 * n * n * n / seconds);
    }
    rate = best;
    return best;
  }

  cpu::RopeTable rope_table_;
  std::optional<double> peak_f32_, peak_f64_, gemm_f32_, gemm_bf16_;
  const bool bf16_taken_as_slower_;  // make_cpu_ops
  DType matmul_precision_ = DType::kF32;
  std::string note_;  // matmul_precision_note()
  cpu::LowPrecisionGemm low_precision_;
};

}  // namespace

// This path's CpuOps (cpu_ops_factory.cpp picks the path).
std::unique_ptr<Ops> make_path_ops(bool bf16_taken_as_slower) {
  return std::make_unique<CpuOps>(bf16_taken_as_slower);
}

void check_ids(const Tensor& ids, int64_t limit, const char* op, const char* name) {
  check_dtype(ids, DType::kI32, op, name);
  const int32_t* p = ids.data<int32_t>();
  for (int64_t i = 0; i < ids.numel(); ++i)
    TRIDENT_CHECK(p[i] >= 0 && p[i] < limit, op, ": ", name, "[", i, "] = ", p[i], " is outside [0, ", limit,
                  ")");
}

}  // namespace trident::cpu::inline TRIDENT_CPU_PATH
