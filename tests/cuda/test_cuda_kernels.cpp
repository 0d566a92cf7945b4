// The CUDA row and elementwise kernels (embedding, norms, activations, RoPE, cross-entropy)
// against the CPU backend on the same inputs: fp32 outputs within 1e-5 of the output's scale,
// 16-bit outputs within 1.5 units of their rounding (the two backends may round an fp32 value
// that differs in its last bits to neighbouring 16-bit values). Odd sizes take the scalar
// paths, multiples of 8 the vector ones; "+=" outputs start nonzero; aliasing, vocabulary
// shards, frozen parameters (undefined dw/db) and the fp64 error are covered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cuda_ops.hpp"
#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/tensor.hpp"
#include "cuda_test_support.hpp"

namespace trident {
namespace {

using cuda_test::max_err;

// fp32 outputs: within 1e-5 of the output's scale; 16-bit ones: 1.5 units of their rounding.
constexpr double kF32Tol = 1e-5;
double tol(DType dtype) { return cuda_test::tol_for(dtype, kF32Tol); }

class CudaKernelTest : public cuda_test::CudaVsCpuTest {
 protected:
  CudaKernelTest() : CudaVsCpuTest("cuda-kernels") {}

  static Tensor host_i32(const std::vector<int32_t>& v) {
    Tensor t = Tensor::zeros(Shape{int64_t(v.size())}, DType::kI32);
    std::copy(v.begin(), v.end(), t.data<int32_t>());
    return t;
  }
  // GPU result d against CPU result h, within the tolerance of d's dtype.
  void expect_close(const Tensor& d, const Tensor& h, const std::string& what, double floor = 1e-6) {
    ASSERT_EQ(d.dtype(), h.dtype()) << what;
    EXPECT_LE(max_err(values(to_host(d)), values(h), floor), tol(d.dtype())) << what << " (" << dtype_name(d.dtype())
                                                                             << ")";
  }
};

const DType kActTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// --- embedding ----------------------------------------------------------------------------------

TEST_F(CudaKernelTest, EmbeddingForwardBackwardWithShardsAndRepeats) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 1000, vocab = 1000, P = 64;
  std::vector<int32_t> tok(N), pos(N);
  const uint64_t key = rng_key(1, "tokens");
  for (int64_t n = 0; n < N; ++n) {
    tok[n] = static_cast<int32_t>(rng_block(key, uint64_t(n))[0] % vocab);
    if (n % 4 == 3) tok[n] = tok[n - 3];  // short repeats
    if (n % 3 == 0) tok[n] = 5;           // one frequent token: a long run after the sort
    pos[n] = static_cast<int32_t>(n % 29);
  }
  const Tensor htok = host_i32(tok), hpos = host_i32(pos), dtok = to_gpu(htok), dpos = to_gpu(hpos);
  struct Shard { int64_t offset, rows; };
  for (int64_t C : {129, 128})
    for (DType dt : {DType::kF32, DType::kBF16})
      for (Shard sh : {Shard{0, vocab}, Shard{300, 400}, Shard{512, 256}})  // 256 rows: the sort key needs 9 bits
        for (bool with_wpe : {true, false}) {
          SCOPED_TRACE(testing::Message() << "C=" << C << " " << dtype_name(dt) << " offset=" << sh.offset
                                          << " wpe=" << with_wpe);
          const Tensor hwte = host_randn(Shape{sh.rows, C}, 2, DType::kF32);
          const Tensor hwpe = with_wpe ? host_randn(Shape{P, C}, 3, DType::kF32) : Tensor();
          const Tensor dwte_t = to_gpu(hwte), dwpe_t = with_wpe ? to_gpu(hwpe) : Tensor();
          Tensor hout = Tensor::zeros(Shape{N, C}, dt), dout = gpu_->zeros(Shape{N, C}, dt);
          cpu_->embedding_forward(htok, hpos, hwte, hwpe, sh.offset, hout);
          gpu_->embedding_forward(dtok, dpos, dwte_t, dwpe_t, sh.offset, dout);
          expect_close(dout, hout, "out");

          // backward: += into nonzero gradients
          const Tensor hgrad = host_randn(Shape{N, C}, 4, dt);
          Tensor hdwte = host_randn(Shape{sh.rows, C}, 5, DType::kF32), ddwte = to_gpu(hdwte);
          Tensor hdwpe = with_wpe ? host_randn(Shape{P, C}, 6, DType::kF32) : Tensor();
          Tensor ddwpe = with_wpe ? to_gpu(hdwpe) : Tensor();
          cpu_->embedding_backward(htok, hpos, hgrad, sh.offset, hdwte, hdwpe);
          gpu_->embedding_backward(dtok, dpos, to_gpu(hgrad), sh.offset, ddwte, ddwpe);
          expect_close(ddwte, hdwte, "dwte");
          if (with_wpe) expect_close(ddwpe, hdwpe, "dwpe");
        }
}

// --- norms --------------------------------------------------------------------------------------

struct NormCase {
  DType x, y;  // x and dx; y and dy
};
const NormCase kNormCases[] = {{DType::kF32, DType::kF32},
                               {DType::kBF16, DType::kBF16},
                               {DType::kF16, DType::kF16},
                               {DType::kF32, DType::kBF16},
                               {DType::kBF16, DType::kF32}};

TEST_F(CudaKernelTest, LayerNormForwardBackward) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 37;
  for (int64_t C : {129, 768})
    for (const NormCase nc : kNormCases)
      for (bool with_b : {true, false})
        for (bool frozen : {false, true}) {
          SCOPED_TRACE(testing::Message() << "C=" << C << " x " << dtype_name(nc.x) << " y " << dtype_name(nc.y)
                                          << " b=" << with_b << " frozen=" << frozen);
          const Tensor hx = host_randn(Shape{N, C}, 10, nc.x, 2.0), hw = host_randn(Shape{C}, 11, DType::kF32),
                       hb = with_b ? host_randn(Shape{C}, 12, DType::kF32) : Tensor();
          const Tensor dx_in = to_gpu(hx), dw_in = to_gpu(hw), db_in = with_b ? to_gpu(hb) : Tensor();
          Tensor hy = Tensor::zeros(Shape{N, C}, nc.y), hmean = Tensor::zeros(Shape{N}, DType::kF32),
                 hrstd = Tensor::zeros(Shape{N}, DType::kF32);
          Tensor dy_out = gpu_->zeros(Shape{N, C}, nc.y), dmean = gpu_->zeros(Shape{N}, DType::kF32),
                 drstd = gpu_->zeros(Shape{N}, DType::kF32);
          cpu_->layernorm_forward(hx, hw, hb, 1e-5, hy, hmean, hrstd);
          gpu_->layernorm_forward(dx_in, dw_in, db_in, 1e-5, dy_out, dmean, drstd);
          expect_close(dy_out, hy, "y");
          expect_close(dmean, hmean, "mean");
          expect_close(drstd, hrstd, "rstd");

          // backward from the CPU's statistics (the same on both sides), into nonzero dx, dw, db
          const Tensor hdy = host_randn(Shape{N, C}, 13, nc.y);
          Tensor hdx = host_randn(Shape{N, C}, 14, nc.x), ddx = to_gpu(hdx);
          Tensor hdw = frozen ? Tensor() : host_randn(Shape{C}, 15, DType::kF32), ddw = frozen ? Tensor() : to_gpu(hdw);
          Tensor hdb = frozen ? Tensor() : host_randn(Shape{C}, 16, DType::kF32), ddb = frozen ? Tensor() : to_gpu(hdb);
          cpu_->layernorm_backward(hdy, hx, hw, hmean, hrstd, hdx, hdw, hdb);
          gpu_->layernorm_backward(to_gpu(hdy), dx_in, dw_in, to_gpu(hmean), to_gpu(hrstd), ddx, ddw, ddb);
          expect_close(ddx, hdx, "dx");
          if (!frozen) {
            expect_close(ddw, hdw, "dw");
            expect_close(ddb, hdb, "db");
          }
        }
}

TEST_F(CudaKernelTest, RmsNormForwardBackward) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 37;
  for (int64_t C : {129, 768})
    for (const NormCase nc : kNormCases)
      for (bool frozen : {false, true}) {
        SCOPED_TRACE(testing::Message() << "C=" << C << " x " << dtype_name(nc.x) << " y " << dtype_name(nc.y)
                                        << " frozen=" << frozen);
        const Tensor hx = host_randn(Shape{N, C}, 20, nc.x, 2.0), hw = host_randn(Shape{C}, 21, DType::kF32);
        const Tensor dx_in = to_gpu(hx), dw_in = to_gpu(hw);
        Tensor hy = Tensor::zeros(Shape{N, C}, nc.y), hrstd = Tensor::zeros(Shape{N}, DType::kF32);
        Tensor dy_out = gpu_->zeros(Shape{N, C}, nc.y), drstd = gpu_->zeros(Shape{N}, DType::kF32);
        cpu_->rmsnorm_forward(hx, hw, 1e-6, hy, hrstd);
        gpu_->rmsnorm_forward(dx_in, dw_in, 1e-6, dy_out, drstd);
        expect_close(dy_out, hy, "y");
        expect_close(drstd, hrstd, "rstd");

        const Tensor hdy = host_randn(Shape{N, C}, 23, nc.y);
        Tensor hdx = host_randn(Shape{N, C}, 24, nc.x), ddx = to_gpu(hdx);
        Tensor hdw = frozen ? Tensor() : host_randn(Shape{C}, 25, DType::kF32), ddw = frozen ? Tensor() : to_gpu(hdw);
        cpu_->rmsnorm_backward(hdy, hx, hw, hrstd, hdx, hdw);
        gpu_->rmsnorm_backward(to_gpu(hdy), dx_in, dw_in, to_gpu(hrstd), ddx, ddw);
        expect_close(ddx, hdx, "dx");
        if (!frozen) expect_close(ddw, hdw, "dw");
      }
}

// Many rows: the dw/db sums span several row chunks of the two-pass reduction.
TEST_F(CudaKernelTest, NormParameterGradientsOverManyRows) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 20011, C = 72;
  const Tensor hx = host_randn(Shape{N, C}, 30, DType::kBF16), hw = host_randn(Shape{C}, 31, DType::kF32);
  const Tensor hmean = host_randn(Shape{N}, 32, DType::kF32, 0.1), hrstd = host_randn(Shape{N}, 33, DType::kF32, 0.1);
  const Tensor hdy = host_randn(Shape{N, C}, 34, DType::kBF16);
  Tensor hdx = Tensor::zeros(Shape{N, C}, DType::kF32), ddx = to_gpu(hdx);
  Tensor hdw = host_randn(Shape{C}, 35, DType::kF32), ddw = to_gpu(hdw);
  Tensor hdb = host_randn(Shape{C}, 36, DType::kF32), ddb = to_gpu(hdb);
  cpu_->layernorm_backward(hdy, hx, hw, hmean, hrstd, hdx, hdw, hdb);
  gpu_->layernorm_backward(to_gpu(hdy), to_gpu(hx), to_gpu(hw), to_gpu(hmean), to_gpu(hrstd), ddx, ddw, ddb);
  expect_close(ddx, hdx, "dx");
  expect_close(ddw, hdw, "dw");
  expect_close(ddb, hdb, "db");
  // only db (dw frozen) and the RMSNorm dw
  Tensor none;
  cpu_->layernorm_backward(hdy, hx, hw, hmean, hrstd, hdx, none, hdb);
  gpu_->layernorm_backward(to_gpu(hdy), to_gpu(hx), to_gpu(hw), to_gpu(hmean), to_gpu(hrstd), ddx, none, ddb);
  expect_close(ddb, hdb, "db alone");
  cpu_->rmsnorm_backward(hdy, hx, hw, hrstd, hdx, hdw);
  gpu_->rmsnorm_backward(to_gpu(hdy), to_gpu(hx), to_gpu(hw), to_gpu(hrstd), ddx, ddw);
  expect_close(ddw, hdw, "rms dw");
}

// --- activations --------------------------------------------------------------------------------

TEST_F(CudaKernelTest, GeluAndSwiglu) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 37;
  for (int64_t F : {1111, 1024})
    for (DType dt : kActTypes)
      for (DType dout : {dt, DType::kF32}) {
        SCOPED_TRACE(testing::Message() << "F=" << F << " in " << dtype_name(dt) << " out " << dtype_name(dout));
        const Tensor hx = host_randn(Shape{N, F}, 40, dt, 3.0), hup = host_randn(Shape{N, F}, 41, dt),
                     hdy = host_randn(Shape{N, F}, 42, dt);
        const Tensor dx = to_gpu(hx), dup_in = to_gpu(hup), ddy = to_gpu(hdy);
        Tensor hy = Tensor::zeros(Shape{N, F}, dout), dy_out = gpu_->zeros(Shape{N, F}, dout);
        cpu_->gelu_forward(hx, hy);
        gpu_->gelu_forward(dx, dy_out);
        expect_close(dy_out, hy, "gelu y");
        Tensor hg = Tensor::zeros(Shape{N, F}, dout), dg = gpu_->zeros(Shape{N, F}, dout);
        cpu_->gelu_backward(hx, hdy, hg);
        gpu_->gelu_backward(dx, ddy, dg);
        expect_close(dg, hg, "gelu dx");

        cpu_->swiglu_forward(hx, hup, hy);
        gpu_->swiglu_forward(dx, dup_in, dy_out);
        expect_close(dy_out, hy, "swiglu y");
        Tensor hdg = Tensor::zeros(Shape{N, F}, dout), ddg = gpu_->zeros(Shape{N, F}, dout);
        Tensor hdu = Tensor::zeros(Shape{N, F}, dout), ddu = gpu_->zeros(Shape{N, F}, dout);
        cpu_->swiglu_backward(hx, hup, hdy, hdg, hdu);
        gpu_->swiglu_backward(dx, dup_in, ddy, ddg, ddu);
        expect_close(ddg, hdg, "swiglu dgate");
        expect_close(ddu, hdu, "swiglu dup");
      }
}

// The fused bias + GELU passes against the CPU's (which equal add_bias + gelu and gelu +
// bias_backward): the pre-activation kept in place, dx over dy, dbias accumulated.
TEST_F(CudaKernelTest, FusedBiasGelu) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 300;
  for (int64_t F : {1111, 1024})
    for (DType dt : kActTypes) {
      SCOPED_TRACE(testing::Message() << "F=" << F << " " << dtype_name(dt));
      Tensor hx = host_randn(Shape{N, F}, 43, dt, 3.0), hdy = host_randn(Shape{N, F}, 44, dt);
      const Tensor hb = host_randn(Shape{F}, 45, DType::kF32), hdb0 = host_randn(Shape{F}, 46, DType::kF32);
      Tensor dx = to_gpu(hx), ddy = to_gpu(hdy), db = to_gpu(hdb0);
      Tensor hy = Tensor::zeros(Shape{N, F}, dt), dy_out = gpu_->zeros(Shape{N, F}, dt);
      Tensor hdb = Tensor::zeros(Shape{F}, DType::kF32);
      cpu_->copy(hdb0, hdb);
      cpu_->bias_gelu_forward(hx, hb, hy);
      gpu_->bias_gelu_forward(dx, to_gpu(hb), dy_out);
      expect_close(dx, hx, "x + bias");
      expect_close(dy_out, hy, "gelu y");
      cpu_->gelu_bias_backward(hx, hdy, hdy, hdb);
      gpu_->gelu_bias_backward(dx, ddy, ddy, db);
      expect_close(ddy, hdy, "dx");
      expect_close(db, hdb, "dbias");
    }
}

// Mixture-of-experts token movement: gather into expert order (with and without row scales),
// combine back with weights (dropped slots, accumulate), and the per-choice dot products.
TEST_F(CudaKernelTest, MoeGatherCombineAndRowDots) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 53, K = 2, C = 300, M = N * K - 3;  // three assignments dropped
  std::vector<int32_t> slots(N * K, -1), rows(M);
  for (int64_t i = 0, m = 0; i < N * K; ++i)
    if (i % 37 != 5 && m < M) slots[size_t(i)] = int32_t((m * 7) % M), ++m;
  for (int64_t i = 0; i < N * K; ++i)
    if (slots[size_t(i)] >= 0) rows[size_t(slots[size_t(i)])] = int32_t(i / K);
  const Tensor hslots = host_i32(slots).view(Shape{N, K}), hrows = host_i32(rows);
  const Tensor dslots = to_gpu(hslots), drows = to_gpu(hrows);
  const Tensor hw = host_randn(Shape{N, K}, 50, DType::kF32), hscale = host_randn(Shape{M}, 51, DType::kF32);
  const Tensor dw = to_gpu(hw), dscale = to_gpu(hscale);
  for (DType dt : kActTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor hx = host_randn(Shape{N, C}, 52, dt), dx = to_gpu(hx);
    for (const bool scaled : {false, true}) {
      Tensor hg = Tensor::zeros(Shape{M, C}, dt), dg = gpu_->zeros(Shape{M, C}, dt);
      cpu_->gather_rows(hx, hrows, scaled ? hscale : Tensor(), hg);
      gpu_->gather_rows(dx, drows, scaled ? dscale : Tensor(), dg);
      expect_close(dg, hg, scaled ? "gather_rows scaled" : "gather_rows");
    }
    const Tensor hy = host_randn(Shape{M, C}, 53, dt), dy = to_gpu(hy);
    for (const bool accumulate : {false, true}) {
      Tensor hout = host_randn(Shape{N, C}, 54, DType::kF32), dout = to_gpu(hout);
      cpu_->combine_rows(hy, hslots, hw, hout, accumulate);
      gpu_->combine_rows(dy, dslots, dw, dout, accumulate);
      expect_close(dout, hout, accumulate ? "combine_rows +=" : "combine_rows");
    }
    Tensor hd = Tensor::zeros(Shape{N, K}, DType::kF32), dd = gpu_->zeros(Shape{N, K}, DType::kF32);
    cpu_->row_dots(hx, hy, hslots, hd);
    gpu_->row_dots(dx, dy, dslots, dd);
    expect_close(dd, hd, "row_dots");
  }
}

TEST_F(CudaKernelTest, ActivationsInPlaceAndOnUnalignedViews) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 37, F = 1024;
  for (DType dt : kActTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor hx = host_randn(Shape{N, F}, 50, dt, 3.0), hup = host_randn(Shape{N, F}, 51, dt);
    // gelu backward with dx aliasing dy
    Tensor hg = host_randn(Shape{N, F}, 52, dt), dg = to_gpu(hg);
    cpu_->gelu_backward(hx, hg, hg);
    gpu_->gelu_backward(to_gpu(hx), dg, dg);
    expect_close(dg, hg, "gelu dx = dy");
    // swiglu backward writing over its own inputs (dgate = gate, dup = up)
    Tensor hgate = clone_host(hx), hu = clone_host(hup), dgate = to_gpu(hx), du = to_gpu(hup);
    const Tensor hdy = host_randn(Shape{N, F}, 53, dt);
    cpu_->swiglu_backward(hgate, hu, hdy, hgate, hu);
    gpu_->swiglu_backward(dgate, du, to_gpu(hdy), dgate, du);
    expect_close(dgate, hgate, "dgate = gate");
    expect_close(du, hu, "dup = up");
    // views starting one element in: not 16-byte aligned, scalar path (n = 36 * 1024 - 1 elements)
    const Tensor hflat = hx.flat(), dflat = to_gpu(hx).flat();
    const Tensor hv = hflat.narrow(1, N * F), dv = dflat.narrow(1, N * F);
    Tensor hy = Tensor::zeros(hv.shape(), dt), dy = gpu_->zeros(hv.shape(), dt);
    cpu_->gelu_forward(hv, hy);
    gpu_->gelu_forward(dv, dy);
    expect_close(dy, hy, "gelu on an unaligned view");
  }
}

// --- RoPE ---------------------------------------------------------------------------------------

TEST_F(CudaKernelTest, RopeForwardBackward) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 37, H = 3;
  std::vector<int32_t> pos(N);
  for (int64_t n = 0; n < N; ++n) pos[n] = static_cast<int32_t>((n * 7919) % 5003);  // large angles
  const Tensor hpos = host_i32(pos), dpos = to_gpu(hpos);
  for (int HS : {64, 80})
    for (double theta : {10000.0, 500000.0})
      for (bool scaled : {false, true})  // scaled: frequencies of a RoPE scaling and YaRN's factor
        for (DType dt : kActTypes) {
          SCOPED_TRACE(testing::Message() << "HS=" << HS << " theta=" << theta << " scaled=" << scaled << " "
                                          << dtype_name(dt));
          RotaryFrequencies f = RotaryFrequencies::plain(theta, HS);
          if (scaled) {
            for (size_t i = 0; i < f.inv_freq.size(); ++i) f.inv_freq[i] /= 1.0 + 3.0 * double(i) / f.inv_freq.size();
            f.scale = 1.17;
          }
          Tensor hx = host_randn(Shape{N, H * HS}, 60, dt), dx = to_gpu(hx);
          cpu_->rope_forward(hx, hpos, HS, f);
          gpu_->rope_forward(dx, dpos, HS, f);
          expect_close(dx, hx, "forward");
          Tensor hg = host_randn(Shape{N, H * HS}, 61, dt), dg = to_gpu(hg);
          cpu_->rope_backward(hg, hpos, HS, f);
          gpu_->rope_backward(dg, dpos, HS, f);
          expect_close(dg, hg, "backward");
        }
}

// --- cross-entropy ------------------------------------------------------------------------------

std::vector<int32_t> make_targets(int64_t N, int64_t range, uint64_t seed) {
  std::vector<int32_t> t(N);
  const uint64_t key = rng_key(seed, "targets");
  for (int64_t n = 0; n < N; ++n) t[n] = n % 5 == 2 ? -1 : static_cast<int32_t>(rng_block(key, uint64_t(n))[0] % range);
  return t;
}

TEST_F(CudaKernelTest, CrossEntropyForwardBackward) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 37;
  const double gs = 1.0 / 30;
  struct Case { DType logits, dlogits; };
  for (int64_t V : {1000, 1024, 50257})
    for (Case cs : {Case{DType::kF32, DType::kF32}, Case{DType::kBF16, DType::kBF16}, Case{DType::kF16, DType::kF16},
                    Case{DType::kBF16, DType::kF32}}) {
      SCOPED_TRACE(testing::Message() << "V=" << V << " logits " << dtype_name(cs.logits) << " dlogits "
                                      << dtype_name(cs.dlogits));
      const Tensor hl = host_randn(Shape{N, V}, 70, cs.logits, 4.0), dl = to_gpu(hl);
      const Tensor ht = host_i32(make_targets(N, V, 71)), dt = to_gpu(ht);
      Tensor hloss = Tensor::zeros(Shape{N}, DType::kF32), dloss = gpu_->zeros(Shape{N}, DType::kF32);
      Tensor hd = host_randn(Shape{N, V}, 72, cs.dlogits), dd = to_gpu(hd);  // overwritten, not +=
      cpu_->cross_entropy_forward_backward(hl, ht, gs, hloss, hd);
      gpu_->cross_entropy_forward_backward(dl, dt, gs, dloss, dd);
      expect_close(dloss, hloss, "losses");
      expect_close(dd, hd, "dlogits");
      // dlogits aliasing logits
      if (cs.logits == cs.dlogits) {
        Tensor hal = clone_host(hl), dal = to_gpu(hl);
        cpu_->cross_entropy_forward_backward(hal, ht, gs, hloss, hal);
        gpu_->cross_entropy_forward_backward(dal, dt, gs, dloss, dal);
        expect_close(dloss, hloss, "losses (aliased)");
        expect_close(dal, hal, "dlogits = logits");
      }
    }
}

TEST_F(CudaKernelTest, CrossEntropyVocabularyShard) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t N = 37, offset = 2000;
  const double gs = 0.25;
  struct Case { int64_t Vl, valid; };
  for (Case cs : {Case{1000, 997}, Case{1024, 1016}, Case{1024, 0}})
    for (DType dt : kActTypes) {
      SCOPED_TRACE(testing::Message() << "Vl=" << cs.Vl << " valid=" << cs.valid << " " << dtype_name(dt));
      const Tensor hl = host_randn(Shape{N, cs.Vl}, 80, dt, 4.0), dl = to_gpu(hl);
      // targets in [0, 4000): some in this shard (2000..2000+valid), some in padding, most elsewhere
      const Tensor ht = host_i32(make_targets(N, 4000, 81)), dtg = to_gpu(ht);
      Tensor hmax = Tensor::zeros(Shape{N}, DType::kF32), hsum = Tensor::zeros(Shape{N}, DType::kF32),
             htl = Tensor::zeros(Shape{N}, DType::kF32);
      Tensor dmax = gpu_->zeros(Shape{N}, DType::kF32), dsum = gpu_->zeros(Shape{N}, DType::kF32),
             dtl = gpu_->zeros(Shape{N}, DType::kF32);
      cpu_->cross_entropy_shard_stats(hl, ht, offset, cs.valid, hmax, hsum, htl);
      gpu_->cross_entropy_shard_stats(dl, dtg, offset, cs.valid, dmax, dsum, dtl);
      if (cs.valid > 0) {
        expect_close(dmax, hmax, "row_max");
      } else {
        for (double v : values(to_host(dmax))) EXPECT_EQ(v, -INFINITY);
      }
      expect_close(dsum, hsum, "sum_exp");
      expect_close(dtl, htl, "target_logit");
      if (cs.valid == 0) continue;

      // backward from the CPU's statistics (standing in for the group's), into a nonzero buffer
      Tensor hd = host_randn(Shape{N, cs.Vl}, 82, dt), dd = to_gpu(hd);
      cpu_->cross_entropy_shard_backward(hl, ht, offset, cs.valid, hmax, hsum, gs, hd);
      gpu_->cross_entropy_shard_backward(dl, dtg, offset, cs.valid, to_gpu(hmax), to_gpu(hsum), gs, dd);
      expect_close(dd, hd, "dlogits");
      Tensor hal = clone_host(hl), dal = to_gpu(hl);
      cpu_->cross_entropy_shard_backward(hal, ht, offset, cs.valid, hmax, hsum, gs, hal);
      gpu_->cross_entropy_shard_backward(dal, dtg, offset, cs.valid, to_gpu(hmax), to_gpu(hsum), gs, dal);
      expect_close(dal, hal, "dlogits = logits");
    }
}

// --- errors -------------------------------------------------------------------------------------

TEST_F(CudaKernelTest, Fp64AndBadDtypesAreErrors) {
  SKIP_WITHOUT_GPU();
  init();
  // fp64 (the CPU backend's finite-difference mode) is an Error, unless the backend refuses
  // fp64 tensors already (then no kernel can see one)
  Tensor x64, y64;
  try {
    x64 = gpu_->zeros(Shape{4, 8}, DType::kF64);
    y64 = gpu_->zeros(Shape{4, 8}, DType::kF64);
  } catch (const Error&) {
  }
  if (x64.defined() && y64.defined()) {
    EXPECT_THROW(gpu_->gelu_forward(x64, y64), Error);
  }
  Tensor x = gpu_->zeros(Shape{4, 8}, DType::kF32), y = gpu_->zeros(Shape{4, 8}, DType::kF32);
  Tensor w16 = gpu_->zeros(Shape{8}, DType::kBF16), rstd = gpu_->zeros(Shape{4}, DType::kF32);
  EXPECT_THROW(gpu_->rmsnorm_forward(x, w16, 1e-5, y, rstd), Error);  // a 16-bit parameter
  Tensor w = gpu_->zeros(Shape{8}, DType::kF32), rstd_i32 = gpu_->zeros(Shape{4}, DType::kI32);
  EXPECT_THROW(gpu_->rmsnorm_forward(x, w, 1e-5, y, rstd_i32), Error);  // a statistic that is not fp32
  Tensor pos = gpu_->zeros(Shape{4}, DType::kI32);
  EXPECT_THROW(gpu_->rope_forward(x, pos, 3, RotaryFrequencies::plain(1e4, 2)), Error);  // odd head size
  EXPECT_THROW(gpu_->rope_forward(x, pos, 16, RotaryFrequencies::plain(1e4, 16)), Error);  // 8 is not a multiple of 16
}

}  // namespace
}  // namespace trident
