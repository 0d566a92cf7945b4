// Views of activation buffers allocated for seq_len T, cut to a shorter micro-batch of length
// L (bucketed batches: rows padded only to the longest row of their micro-batch). Every view
// is a prefix of its buffer laid out for L, so kernels that take their sizes from the tensors
// compute on B*L rows only. Private to the model layer.
#pragma once
#include "trident/model/block.hpp"
#include "trident/model/lm_head.hpp"

namespace trident::model {

class SequenceTrim {
 public:
  SequenceTrim(int64_t full, int64_t length) : T_(full), L_(length) {}
  bool active() const { return L_ != T_; }

  // [R, ...] with R proportional to T (B*T rows, or B*T/tp with sequence parallelism).
  Tensor rows(const Tensor& t) const {
    if (!t.defined() || !active()) return t;
    const Shape& s = t.shape();
    TRIDENT_CHECK(s[0] * L_ % T_ == 0, "cannot cut ", s.str(), " from length ", T_, " to ", L_);
    Shape out = s;
    out[0] = s[0] * L_ / T_;
    return t.flat().narrow(0, out.numel()).view(out);
  }
  // [d0, T, d2] or, for seq_dim = 2, [d0, d1, T].
  Tensor sequence(const Tensor& t, int seq_dim = 1) const {
    if (!t.defined() || !active()) return t;
    Shape out = t.shape();
    TRIDENT_CHECK(out[seq_dim] == T_, "dimension ", seq_dim, " of ", t.shape().str(), " is not the length ", T_);
    out[seq_dim] = L_;
    return t.flat().narrow(0, out.numel()).view(out);
  }

  NormActivations operator()(const NormActivations& a) const { return {rows(a.y), rows(a.mean), rows(a.rstd)}; }
  AttentionActivations operator()(const AttentionActivations& a) const {
    return {sequence(a.q),     sequence(a.k),     sequence(a.v),  sequence(a.out), sequence(a.lse, 2),
            sequence(a.q_raw), sequence(a.k_raw), rows(a.q_rstd), rows(a.k_rstd)};
  }
  MlpActivations operator()(const MlpActivations& a) const { return {rows(a.up), rows(a.gate), rows(a.act)}; }
  BlockActivations operator()(const BlockActivations& a) const {
    return {(*this)(a.norm1), (*this)(a.attn), rows(a.mid), (*this)(a.norm2), (*this)(a.mlp),
            a.moe.logits.defined() ? a.moe.prefix(L_, T_) : a.moe};
  }
  BlockScratch operator()(const BlockScratch& s) const {
    return {rows(s.gathered), rows(s.partial), rows(s.dnorm), rows(s.dnorm_rows), rows(s.branch), rows(s.dbranch_low),
            {sequence(s.attn.dout), sequence(s.attn.dq), sequence(s.attn.dk), sequence(s.attn.dv),
             sequence(s.attn.dq_raw), sequence(s.attn.dk_raw)},
            {rows(s.mlp.dact), rows(s.mlp.dgate)},
            s.moe.dy.defined() ? s.moe.prefix(L_, T_) : s.moe};
  }
  HeadBuffers operator()(const HeadBuffers& b) const {
    HeadBuffers t = b;  // the chunk buffers (logits, statistics) are cut per chunk anyway
    t.norm = (*this)(b.norm);
    t.gathered = rows(b.gathered);
    t.dnorm = rows(b.dnorm);
    t.dnorm_rows = rows(b.dnorm_rows);
    return t;
  }

 private:
  int64_t T_, L_;
};

}  // namespace trident::model
