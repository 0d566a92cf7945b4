// mpi-ranks: 1 2
// Checkpoints of state in GPU memory, without a GPU: a stand-in backend whose tensors are host
// memory tagged as CUDA and stored with every byte inverted, so any host access that bypasses
// Ops::copy reads or writes garbage (and the HDF5 layer refuses device pieces outright). A save
// through the host staging buffers must load bitwise on the CPU backend, a resume must restore
// it on the stand-in device, and load_model must replace the frozen base weights while the LoRA
// adapters keep their initialisation.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_job_dir.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/train/checkpoint/checkpointer.hpp"
#include "trident/train/optim/grad_reducer.hpp"

namespace trident::train {
namespace {

void invert(const void* from, void* to, size_t bytes) {
  const auto* in = static_cast<const unsigned char*>(from);
  auto* out = static_cast<unsigned char*>(to);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(~in[i]);
}

// Device tensors hold their bytes inverted; copy() converts on the host side (via the CPU
// backend) and inverts on the way in and out. No kernels: only what building a model, an
// optimizer and a checkpointer needs.
class InvertedDeviceOps final : public Ops {
 public:
  Device device() const override { return Device::kCUDA; }
  std::string name() const override { return "inverted-device"; }
  double peak_flops(DType) override { return 1.0; }
  DType set_matmul_precision(DType) override { return DType::kF32; }
  DType matmul_precision() const override { return DType::kF32; }

  Tensor zeros(Shape shape, DType dtype) override {
    const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
    std::shared_ptr<Storage> host = allocate_host(bytes);
    auto device = std::make_shared<Storage>(host->data(), bytes, Device::kCUDA, [host](void*) {});
    std::memset(device->data(), 0xff, bytes);  // zero, inverted
    return Tensor(device, 0, shape, dtype);
  }
  void copy(const Tensor& src, Tensor& dst) override {
    Tensor converted = Tensor::zeros(dst.shape(), dst.dtype());
    cpu_->copy(on_host(src), converted);
    store(converted, dst);
  }
  void fill(Tensor& x, double value) override {
    Tensor filled = Tensor::zeros(x.shape(), x.dtype());
    cpu_->fill(filled, value);
    store(filled, x);
  }

  void gemm(bool, bool, double, const Tensor&, const Tensor&, double, Tensor&) override { unsupported("gemm"); }
  void add_bias(Tensor&, const Tensor&) override { unsupported("add_bias"); }
  void bias_backward(const Tensor&, Tensor&) override { unsupported("bias_backward"); }
  void add(const Tensor&, const Tensor&, Tensor&) override { unsupported("add"); }
  void scale(Tensor&, double) override { unsupported("scale"); }
  void gather_rows(const Tensor&, const Tensor&, const Tensor&, Tensor&) override { unsupported("gather_rows"); }
  void combine_rows(const Tensor&, const Tensor&, const Tensor&, Tensor&, bool) override { unsupported("combine_rows"); }
  void row_dots(const Tensor&, const Tensor&, const Tensor&, Tensor&) override { unsupported("row_dots"); }
  double sum_squares(const Tensor&) override { unsupported("sum_squares"); }
  void embedding_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t, Tensor&) override {
    unsupported("embedding_forward");
  }
  void embedding_backward(const Tensor&, const Tensor&, const Tensor&, int64_t, Tensor&, Tensor&) override {
    unsupported("embedding_backward");
  }
  void layernorm_forward(const Tensor&, const Tensor&, const Tensor&, double, Tensor&, Tensor&, Tensor&) override {
    unsupported("layernorm_forward");
  }
  void layernorm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&,
                          Tensor&) override {
    unsupported("layernorm_backward");
  }
  void rmsnorm_forward(const Tensor&, const Tensor&, double, Tensor&, Tensor&) override { unsupported("rmsnorm_forward"); }
  void rmsnorm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&) override {
    unsupported("rmsnorm_backward");
  }
  void gelu_forward(const Tensor&, Tensor&) override { unsupported("gelu_forward"); }
  void gelu_backward(const Tensor&, const Tensor&, Tensor&) override { unsupported("gelu_backward"); }
  void bias_gelu_forward(Tensor&, const Tensor&, Tensor&) override { unsupported("bias_gelu_forward"); }
  void gelu_bias_backward(const Tensor&, const Tensor&, Tensor&, Tensor&) override { unsupported("gelu_bias_backward"); }
  void swiglu_forward(const Tensor&, const Tensor&, Tensor&) override { unsupported("swiglu_forward"); }
  void swiglu_backward(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&) override {
    unsupported("swiglu_backward");
  }
  void rope_forward(Tensor&, const Tensor&, int, const RotaryFrequencies&) override { unsupported("rope_forward"); }
  void rope_backward(Tensor&, const Tensor&, int, const RotaryFrequencies&) override { unsupported("rope_backward"); }
  void attention_forward(const Tensor&, const Tensor&, const Tensor&, int, int, const Tensor&, Tensor&,
                         Tensor&) override {
    unsupported("attention_forward");
  }
  void attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int,
                          int, const Tensor&, Tensor&, Tensor&, Tensor&) override {
    unsupported("attention_backward");
  }
  void attention_cached(const Tensor&, const Tensor&, const Tensor&, int, int, const Tensor&, Tensor&, int) override {
    unsupported("attention_cached");
  }
  void cross_entropy_forward_backward(const Tensor&, const Tensor&, double, Tensor&, Tensor&) override {
    unsupported("cross_entropy_forward_backward");
  }
  void cross_entropy_shard_stats(const Tensor&, const Tensor&, int64_t, int64_t, Tensor&, Tensor&, Tensor&) override {
    unsupported("cross_entropy_shard_stats");
  }
  void cross_entropy_shard_backward(const Tensor&, const Tensor&, int64_t, int64_t, const Tensor&, const Tensor&, double,
                                    Tensor&) override {
    unsupported("cross_entropy_shard_backward");
  }
  void dropout(Tensor&, double, uint64_t, uint64_t, int64_t) override { unsupported("dropout"); }
  void add_gaussian(Tensor&, double, uint64_t, uint64_t, int64_t) override { unsupported("add_gaussian"); }
  void adamw(Tensor&, const Tensor&, Tensor&, Tensor&, const AdamWArgs&) override { unsupported("adamw"); }

 private:
  [[noreturn]] static void unsupported(const char* kernel) {
    throw std::logic_error(std::string("the stand-in device runs no kernels: ") + kernel);
  }
  // t's elements in host memory, decoded (t itself when it is on the host).
  static Tensor on_host(const Tensor& t) {
    if (t.device() == Device::kCPU) return t;
    Tensor host = Tensor::zeros(t.shape(), t.dtype());
    invert(t.raw(), host.raw(), t.bytes());
    return host;
  }
  static void store(const Tensor& host, Tensor& dst) {
    if (dst.device() == Device::kCPU) std::memcpy(dst.raw(), host.raw(), host.bytes());
    else invert(host.raw(), dst.raw(), host.bytes());
  }

  std::unique_ptr<Ops> cpu_ = make_cpu_ops(1);
};

RunConfig small_run(const std::string& dir) {
  RunConfig c;
  c.model.arch = model::Arch::kLlama;
  c.model.layers = 2;
  c.model.hidden = 64;
  c.model.heads = 4;
  c.model.kv_heads = 2;
  c.model.vocab = 320;
  c.model.seq_len = 32;
  c.model.tie_embeddings = false;
  c.model.lora.r = 2;  // frozen base weights (their own flat buffer) and trainable adapters
  c.model.resolve();
  MPI_Comm_size(MPI_COMM_WORLD, &c.layout.dp);
  c.checkpoint.dir = dir;
  c.checkpoint.resume = "none";
  return c;
}

std::vector<OptimSegment> one_segment_per_parameter(model::ParamStore& params) {
  std::vector<OptimSegment> segments;
  for (const auto& p : params.all())
    if (p->trainable())
      segments.push_back({p->offset, p->offset + p->local_shape.numel(), p->spec.weight_decay, p->grad.flat()});
  return segments;
}

// A model and its optimizer on one backend, initialised from seed, with non-zero moments that
// depend on the seed too (the same on every rank: replicas).
struct TrainingState {
  TrainingState(const RunConfig& cfg, Ops& ops, uint64_t seed)
      : model(cfg.model, ops, DType::kF32, /*micro_batch=*/1, GradReducer::pad_multiple(cfg.layout.dp), {},
              model::StagePlan::whole(cfg.model)),
        optimizer(model.params(), ops, cfg.train, one_segment_per_parameter(model.params())) {
    model.initialize(seed);
    for (size_t i = 0; i < optimizer.segments().size(); ++i)
      for (bool second : {false, true}) {
        Tensor moment = second ? optimizer.exp_avg_sq(i) : optimizer.exp_avg(i);
        Tensor pattern = Tensor::zeros(moment.shape(), DType::kF32);
        float* x = pattern.data<float>();
        for (int64_t k = 0; k < pattern.numel(); ++k) x[k] = float(seed) + (second ? 0.5f : 0.25f) + 1e-3f * float(k + i);
        ops.copy(pattern, moment);
      }
  }
  model::GPTModel model;
  AdamW optimizer;
};

std::vector<char> host_bytes(Ops& ops, const Tensor& t) {
  Tensor host = Tensor::zeros(t.shape(), t.dtype());
  ops.copy(t, host);
  const char* bytes = static_cast<const char*>(host.raw());
  return std::vector<char>(bytes, bytes + host.bytes());
}

// Every value of the selected parameters, then every moment, read through ops.
std::vector<std::vector<char>> contents(TrainingState& s, Ops& ops, bool base, bool adapters, bool moments) {
  std::vector<std::vector<char>> out;
  for (const auto& p : s.model.params().all())
    if (p->spec.adapter ? adapters : base) out.push_back(host_bytes(ops, p->value));
  for (size_t i = 0; moments && i < s.optimizer.segments().size(); ++i) {
    out.push_back(host_bytes(ops, s.optimizer.exp_avg(i)));
    out.push_back(host_bytes(ops, s.optimizer.exp_avg_sq(i)));
  }
  return out;
}

class CheckpointStaging : public ::testing::Test {
 protected:
  trident::testing::MpiJobDir job{"trident_ckpt_staging"};
  const std::string& dir = job.path;
};

TEST_F(CheckpointStaging, DeviceStateSavesAndLoadsThroughHostMemory) {
  InvertedDeviceOps device;
  std::unique_ptr<Ops> cpu = make_cpu_ops(1);
  const RunConfig cfg = small_run(dir);
  dist::Topology topology(cfg.layout, MPI_COMM_WORLD);
  Logger quiet(/*rank=*/1);

  TrainingState saved(cfg, device, 1);
  ASSERT_EQ(saved.model.params().flat_values().device(), Device::kCUDA);
  ASSERT_GT(saved.model.params().frozen_numel(), 0);
  Checkpointer(cfg, topology, saved.model, device, quiet, &saved.optimizer).save(7, {});
  const std::vector<std::vector<char>> want = contents(saved, device, true, true, true);
  RunConfig resume = cfg;
  resume.checkpoint.resume = dir + "/" + CheckpointDirectory::file_name(7);

  {  // What the staged save wrote, as the CPU backend reads it in place.
    TrainingState on_cpu(resume, *cpu, 2);
    EXPECT_EQ(Checkpointer(resume, topology, on_cpu.model, *cpu, quiet, &on_cpu.optimizer).resume().step, 7);
    EXPECT_TRUE(contents(on_cpu, *cpu, true, true, true) == want) << "the staged save differs from the device state";
  }
  {  // A resume on the device: read into host memory, copied up.
    TrainingState on_device(resume, device, 3);
    EXPECT_EQ(Checkpointer(resume, topology, on_device.model, device, quiet, &on_device.optimizer).resume().step, 7);
    EXPECT_TRUE(contents(on_device, device, true, true, true) == want) << "the staged resume differs from the saved state";
  }
  {  // model.init_from on the device: the base weights are loaded, the adapters stay as initialised.
    TrainingState fresh(cfg, device, 4);
    const std::vector<std::vector<char>> adapters = contents(fresh, device, false, true, false);
    Checkpointer(cfg, topology, fresh.model, device, quiet, &fresh.optimizer).load_model(resume.checkpoint.resume, /*adapters=*/false);
    EXPECT_TRUE(contents(fresh, device, true, false, false) == contents(saved, device, true, false, false));
    EXPECT_TRUE(contents(fresh, device, false, true, false) == adapters) << "load_model replaced the LoRA adapters";
  }
}

}  // namespace
}  // namespace trident::train
