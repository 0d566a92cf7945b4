// A cluster as the planner sees it: one device's compute and memory, the links between devices,
// and the software stack's habits that change time and memory (attention kernel, dtypes).
// Presets: a100-80g, h100-sxm, h200 (NVLink in nodes, InfiniBand between), and local (this CPU
// machine, built from a calibration file that `trident plan --calibrate` measures).
#pragma once
#include <string>
#include <vector>

namespace trident::plan {

struct Cluster {
  std::string name;
  // Compute (per device). peak: dense FLOP/s in the training dtype.
  double peak_flops = 0;
  double gemm_efficiency = 0.85;  // fraction of peak a large, square GEMM sustains
  int compute_units = 1;          // SMs (GPU) / 1 (CPU): the unit of wave quantisation
  int tile_m = 1, tile_n = 1;     // output tile of one compute unit's GEMM work item
  double gemm_k_fill = 0;         // K at which a tile's pipeline fill/epilogue costs half the time
  double kernel_overhead_s = 0;   // fixed cost per kernel (launch, OpenMP fork/join)
  double gemm_overhead_s = 0;     // a GEMM's further fixed cost (packing, thread start-up)
  double attention_efficiency = 0.5;  // fused (flash) attention: fraction of peak it sustains
  // Memory (per device).
  double memory_bytes = 0;
  double memory_reserved_bytes = 0;   // runtime, context, libraries
  double memory_usable_fraction = 1;  // the rest is lost to allocator fragmentation
  double memory_bandwidth = 0;        // bytes/s that elementwise kernels achieve
  // Links: bandwidth per device and direction (what a ring all-reduce's bus bandwidth reaches),
  // latency per message step.
  int devices_per_node = 1;
  double intra_bandwidth = 0, intra_latency_s = 0;
  double inter_bandwidth = 0, inter_latency_s = 0;
  // Software stack.
  bool flash_attention = true;   // attention without the s x s matrix in memory
  double activation_bytes = 2;   // bytes per stored activation element (bf16 = 2, fp32 = 4)
  double weight_bytes = 2;       // model weights as the kernels read them
  double grad_bytes = 4;         // gradient accumulation and reduction dtype
  bool master_weights = true;    // an fp32 master copy next to low-precision weights
  bool stores_dropout_masks = true;  // masks kept as bytes (Megatron) or rebuilt from the RNG (trident)
  double logits_chunk_bytes = 0;     // the loss computed over chunks of rows holding at most this
                                     // much logits at once (trident: 64 MiB); 0 = all rows at once
  // Tensor-parallel collectives split into chunks and pipelined with the GEMM that produces or
  // consumes them (Megatron-Core --tp-comm-overlap, Transformer Engine userbuffers): only the
  // part longer than its GEMM, and one chunk of each, stays on the critical path.
  bool tp_comm_overlap = false;
  // Selective recompute rebuilds the q, k, v projection as well as the attention core (trident);
  // false: the attention core only (Megatron-Core's "selective": core attention).
  bool selective_recomputes_qkv = true;
};

// Names of the presets, for --help and error messages.
std::vector<std::string> cluster_preset_names();
// A GPU preset by name; ConfigError listing the names when unknown ("local" is not here: see
// local_cluster).
Cluster cluster_preset(const std::string& name);

// What `trident plan --calibrate` measures on this machine, for all its cores together.
struct LocalCalibration {
  int cores = 1;
  double peak_fp32 = 0, peak_bf16 = 0;  // FLOP/s, FMA-loop peak of all cores
  double gemm_fp32 = 0, gemm_bf16 = 0;  // FLOP/s of a large transformer-shaped GEMM, all cores
                                        // (gemm_bf16 = 0: bf16 GEMMs no faster than fp32 here)
  double attention_fp32 = 0;            // FLOP/s of the backend's causal attention (fwd + bwd)
  double memory_bandwidth = 0;          // bytes/s of a large streaming kernel, all cores
  // The same with one thread: ranks that split the cores run single-threaded kernels, which
  // scale better than one rank's threads do.
  double gemm_fp32_1 = 0, gemm_bf16_1 = 0, attention_fp32_1 = 0, memory_bandwidth_1 = 0;
  double kernel_overhead_s = 0;         // one small parallel kernel
  double gemm_overhead_s = 0;           // a small GEMM's time beyond its FLOPs at the large-GEMM rate
  double comm_bandwidth = 0;            // bytes/s, 2-rank MPI all-reduce bus bandwidth (0: not measured)
  double comm_latency_s = 0;
  double base_rss_bytes = 0;            // resident memory of a trident process before its model
  std::string measured_at;              // date, for the report
};

// Reads / writes the calibration file (JSON). ConfigError naming the file when it is unreadable.
LocalCalibration read_calibration(const std::string& path);
void write_calibration(const LocalCalibration& c, const std::string& path);

// The local machine as a cluster of ranks_per_node ranks sharing its cores (trident's CPU backend:
// fp32 or bf16 GEMMs, fp32 or bf16 activations, flash-style attention, masks from the RNG).
Cluster local_cluster(const LocalCalibration& c, int ranks_per_node, bool bf16);

// Time of one GEMM out[M, N] = A[M, K] B[K, N] repeated `batch` times: the slower of compute (peak
// x efficiency x wave utilisation x K-fill) and memory traffic (operands and result once), plus
// the kernel overhead.
double gemm_seconds(const Cluster& c, double m, double n, double k, double batch = 1);
// Memory-bound kernel moving `bytes` (read + written).
double memory_seconds(const Cluster& c, double bytes, int kernels = 1);
// Ring collectives over `ranks` devices of one group; intra: all in one node (NVLink).
double all_reduce_seconds(const Cluster& c, double bytes, int ranks, bool intra);
double all_gather_seconds(const Cluster& c, double bytes, int ranks, bool intra);  // bytes: the full result
double p2p_seconds(const Cluster& c, double bytes, bool intra);

}  // namespace trident::plan
