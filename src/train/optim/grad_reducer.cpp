// Bucketed, overlapped data-parallel gradient reduction and ZeRO-1 sharding.
#include "trident/train/optim/grad_reducer.hpp"

#include <algorithm>
#include <cmath>

#include "trident/core/rng.hpp"

namespace trident::train {

GradReducer::GradReducer(model::ParamStore& params, Ops& ops, dist::Communicator& dp, const ReducerOptions& options,
                         dist::Communicator* model_parallel, int tp_rank, dist::Communicator* expert_dp,
                         dist::Communicator* ep, const NodeGroups& nodes)
    : params_(params),
      ops_(ops),
      dp_(dp),
      options_(options),
      model_parallel_(model_parallel),
      tp_rank_(tp_rank),
      expert_dp_(expert_dp),
      ep_(ep),
      nodes_(nodes) {
  TRIDENT_CHECK(!nodes.hierarchical || (nodes.node && nodes.cross && nodes.node->size() * nodes.cross->size() == dp.size()),
                "GradReducer: the hierarchical reduction needs the dp group split into nodes");
  const int64_t total = params.padded_numel();
  const int64_t align = pad_multiple(dp.size());
  TRIDENT_CHECK(total % align == 0, "flat buffer of ", total, " elements is not padded to ", align);
  TRIDENT_CONFIG_CHECK(options.bucket_mb > 0, "comm.bucket_mb must be > 0 (got ", options.bucket_mb, ")");
  TRIDENT_CHECK((expert_dp == nullptr) == (ep == nullptr), "GradReducer: the expert groups come together");
  TRIDENT_CONFIG_CHECK(!ep || options.compression.kind == dist::CompressionKind::kNone,
                       "comm.compression with parallel.ep > 1 is not supported (expert gradients reduce over their "
                       "own group)");
  const int64_t elem = static_cast<int64_t>(dtype_size(params.flat_grads().dtype()));
  const int64_t bucket = std::max(align, static_cast<int64_t>(options.bucket_mb * (1 << 20)) / elem / align * align);
  // Regions of the flat buffer reduced over one group: runs of expert and other parameters
  // (the ParamStore aligns their starts to `align` under expert parallelism).
  std::vector<std::pair<int64_t, bool>> starts = {{0, false}};
  if (ep)
    for (const auto& p : params.all()) {
      if (!p->trainable() || p->spec.expert == starts.back().second) continue;
      TRIDENT_CHECK(p->offset % align == 0, p->spec.name, ": an expert run starts at ", p->offset,
                    ", not aligned to ", align);
      if (p->offset == starts.back().first) starts.back().second = p->spec.expert;
      else starts.push_back({p->offset, p->spec.expert});
    }
  for (size_t r = 0; r < starts.size(); ++r) {
    const int64_t region_end = r + 1 < starts.size() ? starts[r + 1].first : total;
    const bool expert = starts[r].second;
    dist::Communicator* comm = expert ? expert_dp : &dp;
    for (int64_t begin = starts[r].first; begin < region_end; begin += bucket) {
      Bucket b;
      b.begin = begin;
      b.end = std::min(region_end, begin + bucket);
      b.comm = comm;
      b.expert = expert;
      const int n = comm->size();
      if (options.zero && n > 1) b.shard_grad = ops.zeros(Shape{(b.end - b.begin) / n}, params.flat_grads().dtype());
      if (options.grad_dtype != params.flat_grads().dtype() && n > 1) {
        b.low = ops.zeros(Shape{b.end - b.begin}, options.grad_dtype);
        if (options.zero) b.shard_low = ops.zeros(Shape{(b.end - b.begin) / n}, options.grad_dtype);
      }
      b.hierarchical = nodes.hierarchical && !expert && options.compression.kind == dist::CompressionKind::kNone;
      if (b.hierarchical) b.part = ops.zeros(Shape{(b.end - b.begin) / nodes.node->size()}, options.grad_dtype);
      buckets_.push_back(std::move(b));
    }
  }
  next_to_start_ = buckets_.size();
  segments_ = optimizer_segments();
  norm_ranges_ = norm_ranges();
  TRIDENT_CONFIG_CHECK(options.grad_dtype == params.flat_grads().dtype() ||
                           options.compression.kind == dist::CompressionKind::kNone,
                       "comm.grad_dtype = ", dtype_name(options.grad_dtype),
                       " and comm.compression both shrink the gradient traffic: choose one");
  if (options.compression.kind != dist::CompressionKind::kNone && dp.size() > 1) make_compressor();
}

void GradReducer::make_compressor() {
  std::vector<dist::GradBucket> buckets;
  for (const Bucket& b : buckets_)
    buckets.push_back({b.begin, b.end, params_.flat_grads().narrow(b.begin, b.end), b.shard_grad});
  std::vector<dist::GradMatrix> matrices;  // this rank's shard of every 2-D parameter
  for (const auto& p : params_.all())
    if (p->local_shape.ndim() == 2 && p->trainable())
      matrices.push_back({p->offset, p->local_shape[0], p->local_shape[1],
                          rng_key(options_.compression.seed, "powersgd/" + p->spec.name)});
  compressor_ = dist::make_compressor(options_.compression, dp_, params_.flat_grads(), std::move(buckets), matrices);
}

void GradReducer::start_step(int64_t steps_done) {
  if (compressor_) compressor_->begin_step(steps_done);
  for (Bucket& b : buckets_) b.started = b.checked = false;
  next_to_start_ = buckets_.size();
  local_non_finite_ = false;
  step_wire_bytes_ = step_raw_bytes_ = step_inter_node_bytes_ = 0;
}

int64_t GradReducer::block_begin(const Bucket& b) const {
  const int64_t n = b.end - b.begin;
  if (!b.hierarchical) return b.begin + b.comm->block(n, b.comm->rank()).begin;
  const dist::Communicator &node = *nodes_.node, &cross = *nodes_.cross;
  return b.begin + node.block(n, node.rank()).begin + cross.block(n / node.size(), cross.rank()).begin;
}

uint64_t GradReducer::off_node(const Bucket& b, uint64_t wire) const {
  const int size = b.comm->size(), on_node = b.expert ? nodes_.edp_on_node : nodes_.dp_on_node;
  return size > 1 ? wire * uint64_t(size - on_node) / uint64_t(size - 1) : 0;
}

void GradReducer::start(size_t i) {
  Bucket& b = buckets_[i];
  b.started = true;
  dist::Communicator& comm = *b.comm;
  check_local(b);
  if (comm.size() == 1) return;
  if (compressor_) return compressor_->start(i);
  Tensor grads = params_.flat_grads().narrow(b.begin, b.end);
  if (b.hierarchical) {
    const int local = nodes_.node->size(), nodes = nodes_.cross->size();
    const bool zero = options_.zero;
    // Inside the node: reduce-scatter (and all-gather without ZeRO); across: the 1/L shard.
    auto bytes = [&](uint64_t whole, uint64_t* across) {
      *across = zero ? dist::wire_reduce_scatter(whole / local, nodes) : dist::wire_all_reduce(whole / local, nodes);
      return dist::wire_reduce_scatter(whole, local) * (zero ? 1 : 2) + *across;
    };
    uint64_t across = 0;
    step_raw_bytes_ += bytes(grads.bytes(), &across);
    if (b.low.defined()) ops_.copy(grads, b.low);
    step_wire_bytes_ += bytes(wire(b).bytes(), &across);
    step_inter_node_bytes_ += across;
    b.phase = 1;
    b.request = nodes_.node->ireduce_scatter_sum(wire(b), b.part);
    return;
  }
  const uint64_t raw = options_.zero ? dist::wire_reduce_scatter(grads.bytes(), comm.size())
                                     : dist::wire_all_reduce(grads.bytes(), comm.size());
  step_raw_bytes_ += raw;
  step_inter_node_bytes_ += off_node(b, b.low.defined() ? raw * dtype_size(b.low.dtype()) / dtype_size(grads.dtype()) : raw);
  if (b.low.defined()) {  // 16-bit on the wire
    ops_.copy(grads, b.low);
    step_wire_bytes_ += raw * dtype_size(b.low.dtype()) / dtype_size(grads.dtype());
    b.request = options_.zero ? comm.ireduce_scatter_sum(b.low, b.shard_low) : comm.iall_reduce_sum(b.low);
    return;
  }
  step_wire_bytes_ += raw;
  b.request = options_.zero ? comm.ireduce_scatter_sum(grads, b.shard_grad) : comm.iall_reduce_sum(grads);
}

void GradReducer::advance(Bucket& b, bool wait) {
  while (b.phase != 0) {
    if (!wait && !b.request.test()) return;
    b.request.wait();
    if (b.phase == 1) {  // the node's sum of this rank's 1/L: reduce it across the nodes
      b.request = options_.zero ? nodes_.cross->ireduce_scatter_sum(b.part, shard_wire(b))
                                : nodes_.cross->iall_reduce_sum(b.part);
      b.phase = 2;
    } else if (b.phase == 2 && !options_.zero) {  // the reduced 1/L back into place, gathered in the node
      Tensor whole = wire(b);
      const dist::Communicator::Block mine = nodes_.node->block(whole.numel(), nodes_.node->rank());
      Tensor place = whole.narrow(mine.begin, mine.end);
      ops_.copy(b.part, place);
      b.request = nodes_.node->iall_gather_in_place(whole);
      b.phase = 3;
    } else {
      b.phase = 0;
    }
  }
}

void GradReducer::grads_final_from(int64_t offset) {
  while (next_to_start_ > 0 && buckets_[next_to_start_ - 1].begin >= offset) start(--next_to_start_);
  // Entering MPI lets it progress the reductions already in flight.
  if (compressor_) compressor_->progress();
  for (size_t i = next_to_start_; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    if (b.hierarchical) advance(b, /*wait=*/false);
    else b.request.test();
  }
}

void GradReducer::check_local(Bucket& b) {
  if (!options_.check_local || b.checked) return;
  b.checked = true;
  if (!local_non_finite_)
    local_non_finite_ = !std::isfinite(ops_.sum_squares(params_.flat_grads().narrow(b.begin, b.end)));
}

void GradReducer::finish() {
  // The buckets not started yet are checked before the tied table's sum mixes two stages' values.
  for (size_t i = 0; i < next_to_start_; ++i) check_local(buckets_[i]);
  if (tied_group_) tied_group_->all_reduce_sum(tied_grad_);
  while (next_to_start_ > 0) start(--next_to_start_);
  if (compressor_) {
    // Second exchanges, then results, in ascending bucket order on every rank.
    for (size_t i = 0; i < buckets_.size(); ++i) compressor_->advance(i);
    for (size_t i = 0; i < buckets_.size(); ++i) compressor_->complete(i);
    step_wire_bytes_ += compressor_->take_wire_bytes();
    step_raw_bytes_ += compressor_->take_raw_bytes();
  }
  for (Bucket& b : buckets_) {
    if (b.hierarchical) advance(b, /*wait=*/true);
    b.request.wait();
    if (!b.low.defined()) continue;
    if (options_.zero) {
      ops_.copy(b.shard_low, b.shard_grad);
    } else {
      Tensor grads = params_.flat_grads().narrow(b.begin, b.end);
      ops_.copy(b.low, grads);
    }
  }
}

std::vector<std::pair<Tensor, bool>> GradReducer::norm_ranges() const {
  struct Run {
    Tensor parent;  // the flat gradient, or a bucket's ZeRO block
    int64_t begin, end;
    bool expert;
  };
  std::vector<Run> runs;
  for (const OptimSegment& s : segments_) {
    if (!s.counts_in_norm) continue;
    Run r{params_.flat_grads(), s.begin, s.end, false};
    for (const Bucket& b : buckets_) {
      if (s.begin < b.begin || s.end > b.end) continue;
      r.expert = b.expert;
      if (sharded(b) && s.begin >= block_begin(b) && s.end <= block_end(b))
        r = {b.shard_grad, s.begin - block_begin(b), s.end - block_begin(b), b.expert};
    }
    if (!runs.empty() && runs.back().parent.raw() == r.parent.raw() && runs.back().end == r.begin &&
        runs.back().expert == r.expert)
      runs.back().end = r.end;
    else
      runs.push_back(r);
  }
  std::vector<std::pair<Tensor, bool>> ranges;
  for (const Run& r : runs) ranges.push_back({r.parent.narrow(r.begin, r.end), r.expert});
  return ranges;
}

double GradReducer::grad_norm() {
  double dense = 0, experts = 0;
  for (const auto& [range, expert] : norm_ranges_) (expert ? experts : dense) += ops_.sum_squares(range);
  // A ZeRO-sharded group holds a share each; experts differ over the ep group besides.
  if (options_.zero && dp_.size() > 1) dp_.all_reduce_sum(&dense, 1);
  if (ep_) {
    if (options_.zero && expert_dp_->size() > 1) expert_dp_->all_reduce_sum(&experts, 1);
    ep_->all_reduce_sum(&experts, 1);
  }
  double sum = dense + experts;
  if (model_parallel_) model_parallel_->all_reduce_sum(&sum, 1);   // each rank holds a part of the model
  return std::sqrt(sum);
}

std::vector<OptimSegment> GradReducer::optimizer_segments() const {
  std::vector<OptimSegment> segments;
  for (const auto& p : params_.all()) {
    if (!p->trainable()) continue;  // frozen: no gradient, no optimizer state
    const int64_t p_begin = p->offset, p_end = p->offset + p->local_shape.numel();
    // A parameter replicated over the tensor-parallel group has the same gradient on every
    // rank of it: rank 0 counts it in the norm.
    const bool counts = p->spec.counted_in_norm && (p->spec.split_dim >= 0 || tp_rank_ == 0);
    for (const Bucket& b : buckets_) {
      if (!sharded(b)) {  // the whole parameter's part in this bucket
        const int64_t lo = std::max(p_begin, b.begin), hi = std::min(p_end, b.end);
        if (lo < hi && lo == p_begin)  // one segment per parameter (a parameter never spans groups)
          segments.push_back({p_begin, p_end, p->spec.weight_decay, params_.flat_grads().narrow(p_begin, p_end), counts});
        continue;
      }
      const int64_t lo = std::max(p_begin, block_begin(b)), hi = std::min(p_end, block_end(b));
      if (lo < hi)
        segments.push_back({lo, hi, p->spec.weight_decay,
                            b.shard_grad.narrow(lo - block_begin(b), hi - block_begin(b)), counts});
    }
  }
  return segments;
}

void GradReducer::gather_parameters() {
  // Hierarchical buckets: across the nodes (this rank's 1/L), then inside the node.
  std::vector<dist::CommRequest> requests;
  for (Bucket& b : buckets_) {
    if (!sharded(b) || !b.hierarchical) continue;
    Tensor values = params_.flat_values().narrow(b.begin, b.end);
    const dist::Communicator::Block mine = nodes_.node->block(values.numel(), nodes_.node->rank());
    Tensor part = values.narrow(mine.begin, mine.end);
    const uint64_t across = dist::wire_reduce_scatter(part.bytes(), nodes_.cross->size());
    step_wire_bytes_ += across;
    step_raw_bytes_ += across;
    step_inter_node_bytes_ += across;
    requests.push_back(nodes_.cross->iall_gather_in_place(part));
  }
  for (auto& r : requests) r.wait();
  requests.clear();
  for (Bucket& b : buckets_) {
    if (!sharded(b)) continue;
    Tensor values = params_.flat_values().narrow(b.begin, b.end);
    dist::Communicator& group = b.hierarchical ? *nodes_.node : *b.comm;
    const uint64_t wire = dist::wire_reduce_scatter(values.bytes(), group.size());  // all-gather: same bytes
    step_wire_bytes_ += wire;
    step_raw_bytes_ += wire;
    if (!b.hierarchical) step_inter_node_bytes_ += off_node(b, wire);
    requests.push_back(group.iall_gather_in_place(values));
  }
  for (auto& r : requests) r.wait();
}

}  // namespace trident::train
