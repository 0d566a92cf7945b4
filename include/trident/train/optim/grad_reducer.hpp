// GradReducer: data-parallel gradient reduction over contiguous buckets of the flat gradient
// buffer (comm.bucket_mb). With overlap, a bucket's non-blocking reduction starts during the
// last micro-batch's backward as soon as every gradient in it is final; the optimizer then
// waits only for what is still in flight. Gradients are reduced once per optimizer step.
//
// Without ZeRO each bucket is all-reduced. With ZeRO-1 (parallel.zero = 1) each bucket is
// reduce-scattered: dp rank r owns block r of every bucket, updates only those parameters
// (optimizer state exists only for them, ~1/dp of the whole) and all-gathers the updated
// values afterwards. Bucket lengths are multiples of dp, so blocks divide evenly.
//
// With comm.compression (dist/compression.hpp) a bucket is compressed when it becomes final
// (overlap keeps working for the first exchange; the second, where a method has one, runs in
// finish()); with ZeRO-1 the compressed reduction leaves this rank's block in its shard. The
// reduced gradient (the norm, clipping and the update see it) is then an approximation, so
// layout invariance holds only for compression = none.
//
// Hierarchical (node-aware) reduction (comm.hierarchical): where the dp group spans nodes with
// L of its ranks on each, a bucket is reduce-scattered inside the node (L ranks), its 1/L shard
// all-reduced across the nodes (one rank per node), and the result all-gathered inside the node:
// each rank sends 1/L of the flat all-reduce's bytes across the node boundary. Under ZeRO-1 the
// step across nodes is a reduce-scatter and the parameter all-gather mirrors it; the rank at
// (node rank l, cross rank n) then owns block l * N + n of a bucket rather than block dp_rank.
// Compressed buckets and the experts' stay flat.
//
// Expert parallelism: the experts' parameters (ParamSpec::expert, aligned into runs of their
// own by the ParamStore) differ between the ranks of an ep group; their buckets are reduced
// (and ZeRO-sharded) over the expert-data-parallel group instead, and the gradient norm sums
// their squares over the ep group too.
#pragma once
#include <memory>
#include <vector>

#include "trident/dist/communicator.hpp"
#include "trident/dist/compression.hpp"
#include "trident/model/param_store.hpp"
#include "trident/train/optim/adamw.hpp"

namespace trident::train {

struct ReducerOptions {
  double bucket_mb = 25;
  bool overlap = true;
  bool zero = false;
  dist::CompressionOptions compression;
  // comm.grad_dtype: kBF16/kF16 reduce each bucket as 16-bit values (half the bytes; each
  // reduction step adds in fp32 and rounds once), converted back to fp32 afterwards. fp32: exact.
  DType grad_dtype = DType::kF32;
  // train.rerun_bad_steps: each bucket's local gradients are checked for NaN/inf before they are
  // reduced (one read of the gradients), so that a bad step can name the rank it came from.
  bool check_local = false;
};

// The hierarchical reduction's groups (dist::Topology::dp_node and dp_cross) and how many ranks
// of the dp and expert-data-parallel groups share this rank's node (the inter-node bytes).
struct NodeGroups {
  dist::Communicator* node = nullptr;
  dist::Communicator* cross = nullptr;
  bool hierarchical = false;  // reduce inside the node first (node and cross given)
  int dp_on_node = 1, edp_on_node = 1;
};

class GradReducer {
 public:
  // The flat buffers of params must be padded to a multiple of pad_multiple(dp size).
  // model_parallel: the group whose ranks hold different parts of the model (tp x pp), over
  // which the gradient norm is summed (nullptr: none); tp_rank: parameters replicated over the
  // tensor-parallel group count in the norm on tp rank 0 only.
  // expert_dp, ep (expert parallelism, both or neither): the groups over which expert
  // gradients are reduced and over which ranks hold different experts.
  GradReducer(model::ParamStore& params, Ops& ops, dist::Communicator& dp, const ReducerOptions& options,
              dist::Communicator* model_parallel = nullptr, int tp_rank = 0,
              dist::Communicator* expert_dp = nullptr, dist::Communicator* ep = nullptr, const NodeGroups& nodes = {});
  static int64_t pad_multiple(int dp_size) { return 16 * int64_t(dp_size); }

  bool overlap() const { return options_.overlap; }
  // A token table tied across the first and last pipeline stage gets gradient on both: finish()
  // sums grad (its part of the flat gradient buffer) over group, the two stages, before it
  // reduces the buckets holding it. Call once, on both stages.
  void tie_across_stages(Tensor grad, dist::Communicator& group) {
    tied_grad_ = std::move(grad);
    tied_group_ = &group;
  }
  // Marks every bucket pending; call before the step's last micro-batch.
  void start_step(int64_t steps_done = 0);
  // Gradients from flat offset `offset` to the end are final: start those buckets (overlap).
  void grads_final_from(int64_t offset);
  // Sums the tied table (tie_across_stages), starts what is left and waits for every bucket.
  void finish();
  // Global L2 norm of the reduced gradient (after finish), the same on every rank: every
  // parameter counted once whatever the layout.
  double grad_norm();
  // With ReducerOptions::check_local: whether this rank's own gradients held a NaN or inf this
  // step, before any reduction mixed them with the other ranks'.
  bool local_non_finite() const { return local_non_finite_; }
  // The ranges of the flat buffer this rank updates, with their gradients (all of it without
  // ZeRO, its blocks with ZeRO).
  std::vector<OptimSegment> optimizer_segments() const;
  // ZeRO: all-gathers the updated parameter blocks (no-op otherwise).
  void gather_parameters();

  size_t num_buckets() const { return buckets_.size(); }

  // Bytes this rank put on the wire for the dp reduction of the current step (gradients and the
  // ZeRO-1 parameter all-gather), and what the same step uncompressed would have put there.
  uint64_t step_wire_bytes() const { return step_wire_bytes_; }
  uint64_t step_raw_bytes() const { return step_raw_bytes_; }
  // Of the wire bytes, those sent to ranks on other nodes. Flat collectives spread a rank's
  // bytes evenly over its peers (the share on other nodes); the hierarchical reduction's
  // step across nodes sends all of its bytes there.
  uint64_t step_inter_node_bytes() const { return step_inter_node_bytes_; }
  bool hierarchical() const { return nodes_.hierarchical; }
  // Error-feedback state (nullptr without compression): checkpointed per rank.
  dist::GradCompressor* compressor() { return compressor_.get(); }
  // A skipped step (non-finite gradients) leaves NaN in the residuals: start them afresh.
  void discard_compression_state() {
    if (compressor_) compressor_->reset_state();
  }

 private:
  struct Bucket {
    int64_t begin = 0, end = 0;  // flat element range, length a multiple of dp
    dist::Communicator* comm = nullptr;  // dp, or the expert-data-parallel group for experts
    bool expert = false;
    Tensor shard_grad;           // ZeRO: this rank's block of the reduced gradient
    Tensor low, shard_low;       // comm.grad_dtype 16-bit: the bucket and its reduced block on the wire
    dist::CommRequest request;
    bool started = false;
    bool checked = false;       // its local gradients checked for NaN/inf (check_local)
    bool hierarchical = false;  // reduced inside the node, then across nodes
    Tensor part;                // hierarchical: this rank's 1/L of the bucket (wire dtype)
    int phase = 0;              // hierarchical: 1 inside the node, 2 across nodes, 3 gather inside, 0 done
  };
  void start(size_t i);
  // ReducerOptions::check_local: whether the bucket's own gradients hold a NaN or inf (once a step).
  void check_local(Bucket& b);
  // Hierarchical buckets: starts each phase once the previous one completed (wait: blocks
  // until the bucket is reduced).
  void advance(Bucket& b, bool wait);
  // The bucket as it travels (16-bit copy or the gradients) and its reduced block under ZeRO.
  Tensor wire(Bucket& b) { return b.low.defined() ? b.low : params_.flat_grads().narrow(b.begin, b.end); }
  Tensor& shard_wire(Bucket& b) { return b.low.defined() ? b.shard_low : b.shard_grad; }
  // Bytes a flat collective over b's group sends to other nodes, of `wire` in all.
  uint64_t off_node(const Bucket& b, uint64_t wire) const;
  void make_compressor();
  // The gradient the norm counts, as few contiguous ranges as the segments allow: one
  // sum_squares each, so a GPU returns one number per range rather than per parameter.
  // Each range with whether it holds experts' gradients.
  std::vector<std::pair<Tensor, bool>> norm_ranges() const;
  // ZeRO-1 sharding of a bucket: over its group when that has more than one rank.
  bool sharded(const Bucket& b) const { return options_.zero && b.comm->size() > 1; }
  // This rank's block of a bucket, as its communicator splits it.
  int64_t block_begin(const Bucket& b) const;
  int64_t block_end(const Bucket& b) const { return block_begin(b) + (b.end - b.begin) / b.comm->size(); }

  model::ParamStore& params_;
  Ops& ops_;
  dist::Communicator& dp_;
  ReducerOptions options_;
  dist::Communicator* model_parallel_;
  int tp_rank_;
  bool local_non_finite_ = false;
  dist::Communicator* expert_dp_;
  dist::Communicator* ep_;
  std::vector<OptimSegment> segments_;
  std::vector<std::pair<Tensor, bool>> norm_ranges_;
  std::vector<Bucket> buckets_;
  size_t next_to_start_ = 0;  // buckets start from the last one down
  std::unique_ptr<dist::GradCompressor> compressor_;
  Tensor tied_grad_;
  dist::Communicator* tied_group_ = nullptr;
  NodeGroups nodes_;
  uint64_t step_wire_bytes_ = 0, step_raw_bytes_ = 0, step_inter_node_bytes_ = 0;
};

}  // namespace trident::train
