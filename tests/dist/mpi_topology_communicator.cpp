// mpi-ranks: 2 4 8
// The 3D grid and the communicator on real MPI ranks: coordinates follow
// rank = (pp_i * dp + dp_i) * tp + tp_i, every group holds exactly the ranks it should, and
// every collective delivers the expected data (sizes 0, 1, odd, and above the chunk size).
#include <algorithm>
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "trident/dist/topology.hpp"

namespace trident::dist {
namespace {

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// World ranks of the members of c, in c's rank order.
std::vector<int> members(Communicator& c) {
  int mine = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mine);
  std::vector<int> all(static_cast<size_t>(c.size()));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, c.comm());
  return all;
}

// Every (dp, tp, pp) factorisation of the world size.
std::vector<Layout> layouts(int n) {
  std::vector<Layout> out;
  for (int tp = 1; tp <= n; ++tp)
    for (int pp = 1; tp * pp <= n; ++pp)
      if (n % (tp * pp) == 0) out.push_back({.dp = n / (tp * pp), .tp = tp, .pp = pp});
  return out;
}

TEST(Topology, GroupsFollowTheGridFormula) {
  for (const Layout& L : layouts(world_size())) {
    Topology topo(L, MPI_COMM_WORLD);
    const int r = topo.world_rank();
    ASSERT_EQ(r, (topo.pp_rank() * L.dp + topo.dp_rank()) * L.tp + topo.tp_rank());
    auto rank_of = [&](int dp_i, int tp_i, int pp_i) { return (pp_i * L.dp + dp_i) * L.tp + tp_i; };
    std::vector<int> tp, dp, pp, mp;
    for (int i = 0; i < L.tp; ++i) tp.push_back(rank_of(topo.dp_rank(), i, topo.pp_rank()));
    for (int i = 0; i < L.dp; ++i) dp.push_back(rank_of(i, topo.tp_rank(), topo.pp_rank()));
    for (int i = 0; i < L.pp; ++i) pp.push_back(rank_of(topo.dp_rank(), topo.tp_rank(), i));
    for (int p = 0; p < L.pp; ++p)
      for (int t = 0; t < L.tp; ++t) mp.push_back(rank_of(topo.dp_rank(), t, p));
    EXPECT_EQ(members(topo.tp()), tp) << "tp group, layout dp" << L.dp << " tp" << L.tp << " pp" << L.pp;
    EXPECT_EQ(members(topo.dp()), dp) << "dp group";
    EXPECT_EQ(members(topo.pp()), pp) << "pp group";
    EXPECT_EQ(members(topo.model_parallel()), mp) << "model-parallel group";
    const bool embedding = topo.is_first_stage() || topo.is_last_stage();
    ASSERT_EQ(topo.embedding() != nullptr, embedding);
    if (embedding) {
      std::vector<int> expect = {rank_of(topo.dp_rank(), topo.tp_rank(), 0)};
      if (L.pp > 1) expect.push_back(rank_of(topo.dp_rank(), topo.tp_rank(), L.pp - 1));
      EXPECT_EQ(members(*topo.embedding()), expect) << "embedding group";
    }
    const std::string text = topo.describe();
    if (r == 0) {
      EXPECT_NE(text.find("rank 0 -> (dp 0, tp 0, pp 0)"), std::string::npos) << text;
    }
  }
}

// Modelled nodes of 2 consecutive ranks: the dp group (tp = pp = 1) splits into its ranks on
// this node and one rank per node; even splits are agreed on by every rank.
TEST(Topology, DpGroupSplitsByNode) {
  const int n = world_size();
  for (int node_size : {1, 2, n}) {
    Topology topo({.dp = n, .tp = 1, .pp = 1, .node_size = node_size}, MPI_COMM_WORLD);
    const int r = topo.world_rank(), first = r / node_size * node_size;
    std::vector<int> node, cross;
    for (int i = first; i < std::min(n, first + node_size); ++i) node.push_back(i);
    for (int i = r % node_size; i < n; i += node_size) cross.push_back(i);
    EXPECT_EQ(members(topo.dp_node()), node) << "node size " << node_size;
    EXPECT_EQ(members(topo.dp_cross()), cross) << "node size " << node_size;
    EXPECT_EQ(topo.members_on_node(topo.dp()), int(node.size()));
    EXPECT_EQ(topo.dp_spans_nodes_evenly(), node_size > 1 && node_size < n && n % node_size == 0);
  }
  if (n == 8) {  // tp = 2 over nodes of 4: each dp group holds 2 ranks per node
    Topology topo({.dp = 4, .tp = 2, .pp = 1, .node_size = 4}, MPI_COMM_WORLD);
    EXPECT_EQ(topo.dp_node().size(), 2);
    EXPECT_EQ(topo.dp_cross().size(), 2);
    EXPECT_TRUE(topo.dp_spans_nodes_evenly());
  }
}

TEST(Topology, WorldSizeMismatchIsAConfigError) {
  EXPECT_THROW(Topology({.dp = world_size() + 1, .tp = 1, .pp = 1}, MPI_COMM_WORLD), ConfigError);
  EXPECT_THROW(Topology({.dp = 0, .tp = 1, .pp = 1}, MPI_COMM_WORLD), ConfigError);
}

TEST(Communicator, AllReduceSumEverySize) {
  Communicator world(MPI_COMM_WORLD);
  const int n = world.size(), r = world.rank();
  // Sizes: empty, one, odd, not divisible by the group, and above the 16 MiB chunk (fp32).
  for (int64_t size : {int64_t(0), int64_t(1), int64_t(7), int64_t(1000003), int64_t(5) << 20}) {
    Tensor x = Tensor::zeros(Shape{size}, DType::kF32);
    float* p = x.data<float>();
    for (int64_t i = 0; i < size; ++i) p[i] = float((r + 1) * ((i % 13) + 1));
    world.all_reduce_sum(x);
    const float ranks_sum = float(n * (n + 1) / 2);
    int64_t bad = 0;
    for (int64_t i = 0; i < size; ++i) bad += p[i] != ranks_sum * float((i % 13) + 1);
    EXPECT_EQ(bad, 0) << "size " << size;
  }
  Tensor d = Tensor::zeros(Shape{3}, DType::kF64);
  d.data<double>()[2] = 0.5 * r;
  world.all_reduce_sum(d);
  EXPECT_DOUBLE_EQ(d.data<double>()[2], 0.25 * n * (n - 1));
  EXPECT_GT(world.bytes_moved(), 0u);
}

TEST(Communicator, ScalarsAndBroadcast) {
  Communicator world(MPI_COMM_WORLD);
  const int n = world.size(), r = world.rank();
  double v[2] = {double(r), -double(r)};
  world.all_reduce_sum(v, 2);
  EXPECT_DOUBLE_EQ(v[0], n * (n - 1) / 2.0);
  double m[1] = {double(r)};
  world.all_reduce_max(m, 1);
  EXPECT_DOUBLE_EQ(m[0], n - 1);
  std::vector<char> data(1001, r == n - 1 ? 'x' : 'o');
  world.broadcast(data.data(), data.size(), n - 1);
  EXPECT_EQ(std::string(data.begin(), data.end()), std::string(1001, 'x'));
  world.barrier();
}

TEST(Communicator, ReduceScatterAndAllGatherEverySize) {
  Communicator world(MPI_COMM_WORLD);
  const int n = world.size(), r = world.rank();
  // Sizes: empty, fewer elements than ranks, not divisible by the group, divisible, large.
  for (int64_t size : {int64_t(0), int64_t(1), int64_t(7), int64_t(8 * 5), int64_t(100003)}) {
    const Communicator::Block mine = world.block(size, r);
    Tensor in = Tensor::zeros(Shape{size}, DType::kF32), out = Tensor::zeros(Shape{mine.end - mine.begin}, DType::kF32);
    for (int64_t i = 0; i < size; ++i) in.data<float>()[i] = float(r + 1) * float(i % 7);
    CommRequest req = world.ireduce_scatter_sum(in, out);
    req.wait();
    int64_t bad = 0;
    for (int64_t i = 0; i < out.numel(); ++i)
      bad += out.data<float>()[i] != float(n * (n + 1) / 2) * float((mine.begin + i) % 7);
    EXPECT_EQ(bad, 0) << "reduce_scatter of " << size;

    Tensor gathered = Tensor::zeros(Shape{size}, DType::kF64);
    for (int64_t i = mine.begin; i < mine.end; ++i) gathered.data<double>()[i] = r * 1e6 + double(i);
    world.all_gather_in_place(gathered);
    bad = 0;
    for (int q = 0; q < n; ++q) {
      const Communicator::Block b = world.block(size, q);
      for (int64_t i = b.begin; i < b.end; ++i) bad += gathered.data<double>()[i] != q * 1e6 + double(i);
    }
    EXPECT_EQ(bad, 0) << "all_gather of " << size;
  }
  EXPECT_GT(world.bytes(CommOp::kReduceScatter), 0u);
}

TEST(Communicator, NonBlockingAllReduceAndPointToPoint) {
  Communicator world(MPI_COMM_WORLD);
  const int n = world.size(), r = world.rank();
  Tensor a = Tensor::zeros(Shape{(int64_t(6) << 20) + 3}, DType::kF32);  // 3 chunks
  std::fill(a.data<float>(), a.data<float>() + a.numel(), float(r));
  CommRequest req = world.iall_reduce_sum(a);
  while (!req.test()) {
  }
  EXPECT_EQ(a.data<float>()[a.numel() - 1], float(n * (n - 1) / 2));
  // A ring: send to the next rank, receive from the previous, sizes 0 and odd.
  for (int64_t size : {int64_t(0), int64_t(33)}) {
    Tensor out = Tensor::zeros(Shape{size}, DType::kF32), in = Tensor::zeros(Shape{size}, DType::kF32);
    std::fill(out.data<float>(), out.data<float>() + size, float(r));
    CommRequest recv = world.irecv(in, (r + n - 1) % n, 7);
    CommRequest send = world.isend(out, (r + 1) % n, 7);
    recv.wait();
    send.wait();
    for (int64_t i = 0; i < size; ++i) ASSERT_EQ(in.data<float>()[i], float((r + n - 1) % n));
  }
  EXPECT_GT(world.bytes(CommOp::kPointToPoint), 0u);
}

// exchange(): sends and receives posted together, so every rank may send to both neighbours and
// receive from both in one call, whatever the order of the list.
TEST(Communicator, ExchangeWithBothNeighbours) {
  Communicator world(MPI_COMM_WORLD);
  const int n = world.size(), r = world.rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
  Tensor to_next = Tensor::zeros(Shape{1001}, DType::kF32), to_prev = Tensor::zeros(Shape{1001}, DType::kF32);
  Tensor from_prev = Tensor::zeros(Shape{1001}, DType::kF32), from_next = Tensor::zeros(Shape{1001}, DType::kF32);
  for (int64_t i = 0; i < 1001; ++i) {
    to_next.data<float>()[i] = float(r * 10000 + i);
    to_prev.data<float>()[i] = float(-r * 10000 - i);
  }
  world.exchange({{&to_next, next, true, 1}, {&to_prev, prev, true, 2}, {&from_next, next, false, 2},
                  {&from_prev, prev, false, 1}});
  for (int64_t i = 0; i < 1001; ++i) {
    ASSERT_EQ(from_prev.data<float>()[i], float(prev * 10000 + i));
    ASSERT_EQ(from_next.data<float>()[i], float(-next * 10000 - i));
  }
}

// The pipeline lanes (the GPU's pipeline transfers; the CPU's too): on a pipeline of every rank,
// activations go to the next stage and gradients to the previous one, each over its own lane,
// every rank sending on both before it receives on either (one communicator for both would
// serve NCCL's in-order matching badly; MPI does not care, the wiring is what is checked).
TEST(Topology, PipelineLanesConnectNeighbouringStages) {
  const int n = world_size();
  Topology topology(Layout{1, 1, n}, MPI_COMM_WORLD);
  const PipelineLanes* lanes = topology.pipeline_lanes();
  if (n == 1) {
    EXPECT_EQ(lanes, nullptr);
    return;
  }
  ASSERT_NE(lanes, nullptr);
  for (Communicator* lane : {lanes->act_out, lanes->act_in, lanes->grad_out, lanes->grad_in}) EXPECT_EQ(lane->size(), 2);
  const int r = topology.pp_rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
  Tensor act = Tensor::zeros(Shape{33}, DType::kF32), grad = Tensor::zeros(Shape{33}, DType::kF32);
  Tensor act_in = Tensor::zeros(Shape{33}, DType::kF32), grad_in = Tensor::zeros(Shape{33}, DType::kF32);
  std::fill(act.data<float>(), act.data<float>() + 33, float(100 + r));
  std::fill(grad.data<float>(), grad.data<float>() + 33, float(-100 - r));
  CommRequest sent_act = lanes->act_out->isend(act, 1 - lanes->act_out->rank(), 0);
  CommRequest sent_grad = lanes->grad_out->isend(grad, 1 - lanes->grad_out->rank(), 0);
  lanes->act_in->irecv(act_in, 1 - lanes->act_in->rank(), 0).wait();
  lanes->grad_in->irecv(grad_in, 1 - lanes->grad_in->rank(), 0).wait();
  sent_act.wait();
  sent_grad.wait();
  EXPECT_EQ(act_in.data<float>()[32], float(100 + prev)) << "activation from the previous stage";
  EXPECT_EQ(grad_in.data<float>()[32], float(-100 - next)) << "gradient from the next stage";
}

// GPU operations never block the host, so the watchdog polls them: one that completes within
// comm.timeout_s is retired, and one whose owner is forgotten is no longer watched. Either one,
// left tracked past the timeout, would end the job (exit 3) and fail this test.
TEST(Watchdog, TracksAsynchronousOperationsUntilTheyComplete) {
  Watchdog dog(0.5, 0);  // polls every 50 ms
  std::atomic<bool> finished{false};
  std::atomic<int> polls{0}, forgotten_polls{0};
  int owner = 0, forgotten = 0;
  dog.track(&owner, [&] { return ++polls, finished.load(); },
            std::make_shared<const std::string>("an operation that completes"));
  dog.track(&forgotten, [&] { return ++forgotten_polls, false; },
            std::make_shared<const std::string>("an operation whose owner goes away"));
  dog.forget(&forgotten);
  const int forgotten_before = forgotten_polls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_GE(polls.load(), 2) << "the watchdog does not poll a pending operation";
  finished = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  const int polls_when_done = polls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the timeout
  EXPECT_EQ(polls.load(), polls_when_done) << "a completed operation is still polled";
  EXPECT_EQ(forgotten_polls.load(), forgotten_before) << "a forgotten operation is still polled";
}

}  // namespace
}  // namespace trident::dist
