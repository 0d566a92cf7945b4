// Cluster presets, the local machine from its calibration, and the time of GEMMs, memory-bound
// kernels and collectives on a cluster.
#include "trident/core/file_policy.hpp"
#include "trident/plan/cluster.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"

namespace trident::plan {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Figures from the vendors' data sheets; efficiencies are what cuBLAS, NCCL and framework
// kernels are commonly measured to reach of them (not fitted to any training result).
Cluster a100_80g() {
  Cluster c;
  c.name = "a100-80g";
  c.peak_flops = 312e12;          // dense bf16 tensor cores, 1410 MHz, 108 SMs
  c.gemm_efficiency = 0.78;       // ~245 TFLOP/s: large bf16 GEMMs sustained under the 400 W limit
  c.compute_units = 108;
  c.tile_m = 128, c.tile_n = 256;
  c.gemm_k_fill = 64;
  c.kernel_overhead_s = 4e-6;
  c.attention_efficiency = 0.5;   // FlashAttention-2 forward + backward on A100
  c.memory_bytes = 80 * kGiB;
  c.memory_reserved_bytes = 3 * kGiB;  // CUDA context, NCCL and cuBLAS buffers
  c.memory_usable_fraction = 0.92;     // caching allocator fragmentation
  c.memory_bandwidth = 1.6e12;    // of 2.04 TB/s HBM2e
  c.devices_per_node = 8;
  c.intra_bandwidth = 230e9;      // NVLink 3 (300 GB/s per direction): NCCL all-reduce bus bandwidth
  c.intra_latency_s = 2e-6;
  c.inter_bandwidth = 22e9;       // one 200 Gb/s HDR adapter per GPU (25 GB/s)
  c.inter_latency_s = 5e-6;
  // The SC21 software stack (Megatron-LM, 2021): attention materialises the score matrix, fused
  // softmax; bf16 weights and activations, fp32 gradients and master weights, dropout masks kept.
  c.flash_attention = false;
  return c;
}

Cluster h100_sxm() {
  Cluster c = a100_80g();
  c.name = "h100-sxm";
  c.peak_flops = 989e12;          // dense bf16, 132 SMs
  // ~690 TFLOP/s: the middle of the 650-750 TFLOP/s that cuBLAS is measured to sustain on large
  // bf16 GEMMs at the 700 W limit (the 1.98 GHz boost clock is not held under tensor-core load).
  c.gemm_efficiency = 0.70;
  c.compute_units = 132;
  c.attention_efficiency = 0.45;  // FlashAttention-2 on H100
  c.memory_bandwidth = 2.7e12;    // of 3.35 TB/s HBM3
  c.intra_bandwidth = 360e9;      // NVLink 4 (450 GB/s per direction)
  c.inter_bandwidth = 45e9;       // one 400 Gb/s NDR adapter per GPU (50 GB/s)
  c.flash_attention = true;
  return c;
}

Cluster h200() {
  Cluster c = h100_sxm();
  c.name = "h200";
  c.memory_bytes = 141e9;
  c.memory_bandwidth = 3.9e12;    // of 4.8 TB/s HBM3e
  return c;
}

double ceil_div(double a, double b) { return std::ceil(a / b); }

}  // namespace

std::vector<std::string> cluster_preset_names() { return {"a100-80g", "h100-sxm", "h200", "local"}; }

Cluster cluster_preset(const std::string& name) {
  if (name == "a100-80g") return a100_80g();
  if (name == "h100-sxm") return h100_sxm();
  if (name == "h200") return h200();
  throw ConfigError(detail::concat("--cluster: unknown preset '", name, "' (expected a100-80g, h100-sxm, h200 or local)"));
}

Cluster local_cluster(const LocalCalibration& cal, int ranks_per_node, bool bf16) {
  TRIDENT_CONFIG_CHECK(cal.peak_fp32 > 0 && cal.gemm_fp32 > 0 && cal.memory_bandwidth > 0,
                       "the local calibration is incomplete: run `trident plan --calibrate`");
  // Ranks split the cores: k threads each, or time-share one core when there are more ranks than
  // cores. A rate with k threads lies between k x the one-thread rate and the all-core rate.
  const int cores = std::max(1, cal.cores), ranks = std::max(1, ranks_per_node);
  const double threads = std::max(1.0, double(cores) / ranks), share = std::min(1.0, double(cores) / ranks);
  auto rate = [&](double all, double one) {
    if (one <= 0 || cores == 1) return all * share * threads / cores;
    const double per_thread = one + (all / cores - one) * (threads - 1) / (cores - 1);
    return per_thread * threads * share;
  };
  // bf16 GEMMs only where the calibration found them faster than fp32 (gemm_bf16 > 0), as the
  // backend decides; elsewhere bf16 means bf16 activations with fp32 GEMMs on the masters.
  const bool bf16_gemms = bf16 && cal.gemm_bf16 > 0;
  Cluster c;
  c.name = "local";
  c.peak_flops = (bf16_gemms && cal.peak_bf16 > 0 ? cal.peak_bf16 : cal.peak_fp32) * threads * share / cores;
  const double gemm = bf16_gemms ? rate(cal.gemm_bf16, cal.gemm_bf16_1) : rate(cal.gemm_fp32, cal.gemm_fp32_1);
  c.gemm_efficiency = gemm / c.peak_flops;
  c.compute_units = 1, c.tile_m = 1, c.tile_n = 1;
  c.gemm_k_fill = 16;  // register blocking: a short K loop does not amortise packing
  c.kernel_overhead_s = cal.kernel_overhead_s;
  c.gemm_overhead_s = cal.gemm_overhead_s;
  const double attention = cal.attention_fp32 > 0 ? rate(cal.attention_fp32, cal.attention_fp32_1) : 0.3 * gemm;
  c.attention_efficiency = attention / c.peak_flops;
  // Host memory shared by the ranks (no allocator slack model: the heap returns what it frees).
  c.memory_bytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE)) / ranks;
  c.memory_reserved_bytes = cal.base_rss_bytes;
  c.memory_bandwidth = rate(cal.memory_bandwidth, cal.memory_bandwidth_1);
  c.devices_per_node = std::max(1, ranks_per_node);
  c.intra_bandwidth = cal.comm_bandwidth > 0 ? cal.comm_bandwidth : 6e9;  // shared memory
  c.intra_latency_s = cal.comm_latency_s > 0 ? cal.comm_latency_s : 2e-6;
  c.inter_bandwidth = c.intra_bandwidth, c.inter_latency_s = c.intra_latency_s;
  // trident's CPU backend: fp32 weights, gradients, activations and Adam state, flash-style
  // attention, dropout masks rebuilt from the counter RNG.
  c.flash_attention = true;
  // With bf16, trident keeps the activations for backward in 16 bits (the residual stream stays
  // fp32: counted as 16-bit here, a small error) and, where its GEMMs are bf16, a 16-bit weight
  // copy next to the fp32 masters.
  c.activation_bytes = bf16 ? 2 : 4, c.weight_bytes = bf16_gemms ? 2 : 4, c.grad_bytes = 4;
  c.master_weights = bf16_gemms;
  c.stores_dropout_masks = false;
  c.logits_chunk_bytes = 64.0 * (1 << 20);  // model::kLogitsChunkBytes
  return c;
}

double gemm_seconds(const Cluster& c, double m, double n, double k, double batch) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  // Wave quantisation: the output tiles are spread over the compute units in whole waves.
  const double tiles = ceil_div(m, c.tile_m) * ceil_div(n, c.tile_n) * batch;
  const double waves = ceil_div(tiles, c.compute_units);
  const double wave_use = tiles / (waves * c.compute_units);
  const double k_use = k / (k + c.gemm_k_fill);
  const double compute = 2.0 * m * n * k * batch / (c.peak_flops * c.gemm_efficiency * wave_use * k_use);
  const double traffic = (m * k + k * n + m * n) * batch * c.weight_bytes / c.memory_bandwidth;
  return std::max(compute, traffic) + c.kernel_overhead_s + c.gemm_overhead_s;
}

double memory_seconds(const Cluster& c, double bytes, int kernels) {
  return bytes / c.memory_bandwidth + kernels * c.kernel_overhead_s;
}

double all_reduce_seconds(const Cluster& c, double bytes, int ranks, bool intra) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double bw = intra ? c.intra_bandwidth : c.inter_bandwidth, lat = intra ? c.intra_latency_s : c.inter_latency_s;
  return 2.0 * (ranks - 1) / ranks * bytes / bw + 2.0 * (ranks - 1) * lat;
}

double all_gather_seconds(const Cluster& c, double bytes, int ranks, bool intra) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double bw = intra ? c.intra_bandwidth : c.inter_bandwidth, lat = intra ? c.intra_latency_s : c.inter_latency_s;
  return double(ranks - 1) / ranks * bytes / bw + (ranks - 1) * lat;
}

double p2p_seconds(const Cluster& c, double bytes, bool intra) {
  if (bytes <= 0) return 0;
  return intra ? c.intra_latency_s + bytes / c.intra_bandwidth : c.inter_latency_s + bytes / c.inter_bandwidth;
}

// --- calibration file ----------------------------------------------------------------------

LocalCalibration read_calibration(const std::string& path) {
  std::ifstream in(path);
  TRIDENT_CONFIG_CHECK(in.good(), "cannot read the calibration file ", path, ": run `trident plan --calibrate`");
  std::stringstream text;
  text << in.rdbuf();
  try {
    const Json j = Json::parse(text.str());
    LocalCalibration c;
    auto num = [&](const char* key) { const Json* v = j.find(key); return v ? v->as_number() : 0.0; };
    c.cores = static_cast<int>(num("cores"));
    c.peak_fp32 = num("peak_fp32"), c.peak_bf16 = num("peak_bf16");
    c.gemm_fp32 = num("gemm_fp32"), c.gemm_bf16 = num("gemm_bf16");
    c.attention_fp32 = num("attention_fp32");
    c.memory_bandwidth = num("memory_bandwidth");
    c.gemm_fp32_1 = num("gemm_fp32_1"), c.gemm_bf16_1 = num("gemm_bf16_1");
    c.attention_fp32_1 = num("attention_fp32_1"), c.memory_bandwidth_1 = num("memory_bandwidth_1");
    c.kernel_overhead_s = num("kernel_overhead_s");
    c.gemm_overhead_s = num("gemm_overhead_s");
    c.comm_bandwidth = num("comm_bandwidth"), c.comm_latency_s = num("comm_latency_s");
    c.base_rss_bytes = num("base_rss_bytes");
    if (const Json* v = j.find("measured_at")) c.measured_at = v->as_string();
    return c;
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(path, ": ", e.what(), " (re-run `trident plan --calibrate`)"));
  }
}

void write_calibration(const LocalCalibration& c, const std::string& path) {
  Json j = Json::object();
  j.set("cores", Json(c.cores));
  j.set("peak_fp32", Json(c.peak_fp32));
  j.set("peak_bf16", Json(c.peak_bf16));
  j.set("gemm_fp32", Json(c.gemm_fp32));
  j.set("gemm_bf16", Json(c.gemm_bf16));
  j.set("attention_fp32", Json(c.attention_fp32));
  j.set("memory_bandwidth", Json(c.memory_bandwidth));
  j.set("gemm_fp32_1", Json(c.gemm_fp32_1));
  j.set("gemm_bf16_1", Json(c.gemm_bf16_1));
  j.set("attention_fp32_1", Json(c.attention_fp32_1));
  j.set("memory_bandwidth_1", Json(c.memory_bandwidth_1));
  j.set("kernel_overhead_s", Json(c.kernel_overhead_s));
  j.set("gemm_overhead_s", Json(c.gemm_overhead_s));
  j.set("comm_bandwidth", Json(c.comm_bandwidth));
  j.set("comm_latency_s", Json(c.comm_latency_s));
  j.set("base_rss_bytes", Json(c.base_rss_bytes));
  j.set("measured_at", Json(c.measured_at));
  const std::filesystem::path p(path);
  if (p.has_parent_path()) make_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out = create_file(tmp);
    TRIDENT_CHECK(out.good(), "cannot write ", tmp);
    out << j.dump() << "\n";
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace trident::plan
