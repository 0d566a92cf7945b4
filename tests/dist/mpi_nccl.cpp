// mpi-ranks: 2 4
// GPU tensors through the Communicator interface, which hands them to the group's NCCL
// communicator (Topology::attach_device): all-reduce (blocking and overlapped), reduce-scatter,
// all-gather, broadcast and grouped send/receive deliver the values the MPI path delivers for
// host tensors (odd sizes, fp32 and bf16), on the world and on the split groups of a Topology.
// Skipped, saying why, without a GPU per rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cuda_ops.hpp"
#include "trident/dist/topology.hpp"

namespace trident::dist {
namespace {

int world(int* rank = nullptr) {
  int n = 1, r = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  if (rank) *rank = r;
  return n;
}

// A GPU for this rank (ranks share devices round-robin when there are fewer), or why not.
struct Gpu {
  std::unique_ptr<Ops> ops;
  std::string why;
};
Gpu gpu_for_rank() {
  Gpu g;
  const int devices = cuda_device_count(&g.why);
  // Every rank must agree to skip, or the others would wait in a collective.
  int have = devices > 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (g.why.empty()) g.why = "a rank has no GPU";
    return g;
  }
  int rank = 0;
  world(&rank);
  g.ops = make_cuda_ops(rank % devices);
  return g;
}

Tensor on_device(Ops& ops, const std::vector<float>& values, DType dtype) {
  Tensor host = Tensor::zeros(Shape{int64_t(values.size())}, DType::kF32);
  std::copy(values.begin(), values.end(), host.data<float>());
  Tensor dev = ops.zeros(Shape{int64_t(values.size())}, dtype);
  ops.copy(host, dev);
  return dev;
}

std::vector<float> to_host(Ops& ops, const Tensor& dev) {
  Tensor host = Tensor::zeros(Shape{dev.numel()}, DType::kF32);
  ops.copy(dev, host);
  return {host.data<float>(), host.data<float>() + host.numel()};
}

// Values every rank can predict: small integers, exact in bf16 and in sums of a few ranks.
float value(int rank, int64_t i) { return float((rank + 1) * 3 + i % 17); }

DeviceGroupMaker nccl_maker(Ops& ops) {
  DeviceGroupMaker maker;
  maker.unique_id = [] { return nccl_unique_id(); };
  maker.make = [&ops](const DeviceCollectives::UniqueId& id, int size, int rank, const std::string& name) {
    return make_nccl_collectives(ops, id, size, rank, name);
  };
  return maker;
}

TEST(Nccl, CollectivesMatchTheirDefinition) {
  Gpu g = gpu_for_rank();
  if (!g.ops) GTEST_SKIP() << "no GPU: " << g.why;
  int rank = 0;
  const int n = world(&rank);
  Topology topology(Layout{n, 1, 1}, MPI_COMM_WORLD);  // every rank in the dp group
  topology.attach_device(nccl_maker(*g.ops));
  Communicator& comm = topology.dp();
  ASSERT_NE(comm.device(), nullptr);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (int64_t len : {int64_t(1), int64_t(37), int64_t(4099)}) {
      std::vector<float> mine(static_cast<size_t>(len * n));
      for (int64_t i = 0; i < len * n; ++i) mine[size_t(i)] = value(rank, i);
      auto sum_at = [&](int64_t i) {
        float want = 0;
        for (int r = 0; r < n; ++r) want += value(r, i);
        return want;
      };
      // all-reduce, blocking form
      Tensor x = on_device(*g.ops, mine, dtype);
      comm.all_reduce_sum(x);
      std::vector<float> got = to_host(*g.ops, x);
      for (int64_t i = 0; i < len * n; ++i)
        ASSERT_EQ(got[size_t(i)], sum_at(i)) << "all_reduce " << dtype_name(dtype) << " len " << len << " at " << i;
      // all-reduce, overlapped: kernels queued after wait() see the sum
      Tensor y = on_device(*g.ops, mine, dtype);
      CommRequest pending = comm.iall_reduce_sum(y);
      pending.wait();
      g.ops->scale(y, 2.0);
      got = to_host(*g.ops, y);
      for (int64_t i = 0; i < len * n; ++i) ASSERT_EQ(got[size_t(i)], 2 * sum_at(i)) << "iall_reduce at " << i;
      // reduce-scatter: this rank's block of the sum
      Tensor in = on_device(*g.ops, mine, dtype);
      Tensor block = g.ops->zeros(Shape{len}, dtype);
      comm.reduce_scatter_sum(in, block);
      got = to_host(*g.ops, block);
      for (int64_t i = 0; i < len; ++i) ASSERT_EQ(got[size_t(i)], sum_at(rank * len + i)) << "reduce_scatter at " << i;
      // all-gather in place: block r of every rank's tensor comes from rank r
      Tensor all = on_device(*g.ops, mine, dtype);
      comm.all_gather_in_place(all);
      got = to_host(*g.ops, all);
      for (int r = 0; r < n; ++r)
        for (int64_t i = 0; i < len; ++i)
          ASSERT_EQ(got[size_t(r * len + i)], value(r, r * len + i)) << "all_gather";
      // broadcast from the last rank
      Tensor b = on_device(*g.ops, mine, dtype);
      comm.broadcast(b, n - 1);
      got = to_host(*g.ops, b);
      for (int64_t i = 0; i < len * n; ++i) ASSERT_EQ(got[size_t(i)], value(n - 1, i)) << "broadcast";
    }
  }
  EXPECT_GT(comm.bytes(CommOp::kAllReduce), 0u);
  topology.shutdown_device();
  EXPECT_EQ(comm.device(), nullptr);
}

// Pipeline-style, on the pp groups: every rank sends to the next stage and receives from the
// previous one in one exchange (no deadlock whatever the order), then over the pipeline lanes.
TEST(Nccl, ExchangeRingOnThePipelineGroups) {
  Gpu g = gpu_for_rank();
  if (!g.ops) GTEST_SKIP() << "no GPU: " << g.why;
  const int n = world();
  int world_rank = 0;
  world(&world_rank);
  Watchdog dog(60, world_rank);  // outlives the topology, which reports to it
  Topology topology(n >= 4 ? Layout{2, 1, n / 2} : Layout{1, 1, n}, MPI_COMM_WORLD);
  topology.set_watchdog(&dog);
  topology.attach_device(nccl_maker(*g.ops));
  Communicator& pp = topology.pp();
  const int r = pp.rank(), size = pp.size();
  if (size > 1) {
    const int64_t len = 1000 + 3;
    std::vector<float> mine(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) mine[size_t(i)] = value(r, i);
    Tensor out = on_device(*g.ops, mine, DType::kF32);
    Tensor in = g.ops->zeros(Shape{len}, DType::kF32);
    pp.exchange({{&out, (r + 1) % size, true, 0}, {&in, (r + size - 1) % size, false, 0}});
    std::vector<float> got = to_host(*g.ops, in);
    for (int64_t i = 0; i < len; ++i) ASSERT_EQ(got[size_t(i)], value((r + size - 1) % size, i));

    // The lanes, as the pipeline uses them: activations forward and gradients back, each rank
    // sending before it receives on every lane (a single pp communicator would deadlock here).
    const PipelineLanes* lanes = topology.pipeline_lanes();
    ASSERT_NE(lanes, nullptr);
    Tensor act_in = g.ops->zeros(Shape{len}, DType::kF32), grad_in = g.ops->zeros(Shape{len}, DType::kF32);
    Tensor grad_out = on_device(*g.ops, std::vector<float>(mine.rbegin(), mine.rend()), DType::kF32);
    CommRequest sent_act = lanes->act_out->isend(out, 1 - lanes->act_out->rank(), 0);
    CommRequest sent_grad = lanes->grad_out->isend(grad_out, 1 - lanes->grad_out->rank(), 0);
    lanes->act_in->irecv(act_in, 1 - lanes->act_in->rank(), 0).wait();
    lanes->grad_in->irecv(grad_in, 1 - lanes->grad_in->rank(), 0).wait();
    sent_act.wait();
    sent_grad.wait();
    got = to_host(*g.ops, act_in);
    for (int64_t i = 0; i < len; ++i) ASSERT_EQ(got[size_t(i)], value((r + size - 1) % size, i)) << "act lane";
    got = to_host(*g.ops, grad_in);
    for (int64_t i = 0; i < len; ++i) ASSERT_EQ(got[size_t(i)], value((r + 1) % size, len - 1 - i)) << "grad lane";
  }
  topology.shutdown_device();
  if (size > 1) {
    EXPECT_EQ(topology.pipeline_lanes()->act_out->device(), nullptr);
  }
}

// A GPU tensor on a group without a device communicator is refused by name, not read as host
// memory. Runs wherever one GPU exists.
TEST(Nccl, GpuTensorWithoutDeviceGroupIsRefused) {
  Gpu g = gpu_for_rank();
  if (!g.ops) GTEST_SKIP() << "no GPU: " << g.why;
  const int n = world();
  Topology topology(Layout{n, 1, 1}, MPI_COMM_WORLD);
  Tensor x = g.ops->zeros(Shape{8}, DType::kF32);
  if (n > 1) {
    try {
      topology.dp().all_reduce_sum(x);
      FAIL() << "a GPU tensor went to MPI";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no device communicator"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace trident::dist
