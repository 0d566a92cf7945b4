// Model sizes for the planner: parsing "key=value" specs and counting parameters and FLOPs.
#include "trident/plan/model_shape.hpp"

#include <cstdlib>
#include <sstream>

#include "trident/core/error.hpp"

namespace trident::plan {

void ModelShape::resolve() {
  TRIDENT_CONFIG_CHECK(layers >= 1, "model: layers must be >= 1 (got ", layers, ")");
  TRIDENT_CONFIG_CHECK(hidden >= 1, "model: hidden must be >= 1 (got ", hidden, ")");
  TRIDENT_CONFIG_CHECK(heads >= 1 && (head_dim > 0 || hidden % heads == 0), "model: heads (", heads,
                       ") must divide hidden (", hidden, ")");
  if (kv_heads == 0) kv_heads = heads;
  TRIDENT_CONFIG_CHECK(kv_heads >= 1 && heads % kv_heads == 0, "model: kv_heads (", kv_heads, ") must divide heads (",
                       heads, ")");
  if (ffn == 0) ffn = arch == ModelArch::kGPT2 ? 4 * hidden : (8 * hidden / 3 + 63) / 64 * 64;
  TRIDENT_CONFIG_CHECK(ffn >= 1, "model: ffn must be >= 1");
  TRIDENT_CONFIG_CHECK(vocab >= 1, "model: vocab must be >= 1 (got ", vocab, ")");
  TRIDENT_CONFIG_CHECK(seq >= 1, "model: seq must be >= 1 (give --seq; got ", seq, ")");
  if (experts > 0) {
    if (top_k == 0) top_k = 2;
    if (moe_ffn == 0) moe_ffn = ffn;
    TRIDENT_CONFIG_CHECK(experts >= 2 && top_k >= 1 && top_k <= experts, "model: top_k (", top_k,
                         ") must be in [1, experts = ", experts, "] and experts >= 2");
    TRIDENT_CONFIG_CHECK(moe_every >= 1 && moe_every <= layers, "model: moe_every must be in [1, layers]");
  }
}

int ModelShape::moe_layers() const {
  int n = 0;
  for (int l = 0; l < layers; ++l) n += moe_layer(l);
  return n;
}

double ModelShape::mlp_params(double f) const {
  return (gated() ? 3 : 2) * double(hidden) * f + (arch == ModelArch::kGPT2 ? f + hidden : 0.0);
}

double ModelShape::block_expert_params() const {
  return experts > 0 ? moe_fraction() * experts * mlp_params(moe_ffn) : 0.0;
}

double ModelShape::layer_params(int l) const {
  const bool gpt2 = arch == ModelArch::kGPT2;
  const double h = hidden, q = double(heads) * head_size(), kvw = double(kv()) * head_size();
  double p = h * q + 2 * h * kvw + q * h;
  p += gpt2 ? 4 * h : 2 * h;                                    // two norms (gpt2: with biases)
  p += gpt2 || qkv_bias ? q + 2 * kvw : 0.0;                    // q, k, v biases
  p += gpt2 || o_bias ? h : 0.0;                                // o bias
  p += double(q_norm) + k_norm;
  if (!moe_layer(l)) return p + mlp_params(ffn);
  return p + h * experts + experts * mlp_params(moe_ffn) + (shared_ffn > 0 ? mlp_params(shared_ffn) + h : 0.0);
}

double ModelShape::block_params() const {
  double sum = 0;
  for (int l = 0; l < layers; ++l) sum += layer_params(l);
  return sum / layers;
}

double ModelShape::embedding_params() const {
  const double rows = positions > 0 ? double(positions) : double(seq);
  return double(vocab) * hidden + (arch == ModelArch::kGPT2 ? rows * hidden : 0.0);
}

double ModelShape::head_params() const { return tied ? 0.0 : double(vocab) * hidden; }

double ModelShape::final_norm_params() const { return (arch == ModelArch::kGPT2 ? 2.0 : 1.0) * hidden; }

double ModelShape::lora_params() const {
  const double h = hidden, q = double(heads) * head_size(), kvw = double(kv()) * head_size();
  const double attention = lora.q * (h + q) + lora.k * (h + kvw) + lora.v * (h + kvw) + lora.o * (q + h);
  const double per_mlp = lora.up + (gated() ? lora.gate : 0) + lora.down;  // times (h + features)
  double sum = 0;
  for (int l = 0; l < layers; ++l) {
    sum += attention;
    if (!moe_layer(l)) sum += per_mlp * (h + ffn);
    else sum += per_mlp * (experts * (h + moe_ffn) + (shared_ffn > 0 ? h + shared_ffn : 0.0));
  }
  return sum;
}

double ModelShape::total_params() const {
  double blocks = 0;
  for (int l = 0; l < layers; ++l) blocks += layer_params(l);
  return blocks + embedding_params() + head_params() + final_norm_params() + lora_params();
}

double ModelShape::matmul_params() const {
  double sum = head_flops_per_token();
  for (int l = 0; l < layers; ++l) sum += layer_gemm_flops_per_token(l);
  return sum / 2;  // 2 FLOPs (multiply, add) per parameter
}

double ModelShape::attention_gemm_flops_per_token() const {
  const double h = hidden, q = double(heads) * head_size(), kvw = double(kv()) * head_size();
  return 2.0 * (h * (q + 2 * kvw) + q * h);
}

double ModelShape::mlp_gemm_flops_per_token(int l) const {
  const double h = hidden, mlp = (gated() ? 3 : 2) * h;
  if (!moe_layer(l)) return 2.0 * mlp * ffn;
  return 2.0 * (h * experts + top_k * mlp * moe_ffn + (shared_ffn > 0 ? mlp * shared_ffn + h : 0.0));
}

double ModelShape::layer_gemm_flops_per_token(int l) const {
  return attention_gemm_flops_per_token() + mlp_gemm_flops_per_token(l);
}

double ModelShape::block_gemm_flops_per_token() const {
  double sum = 0;
  for (int l = 0; l < layers; ++l) sum += layer_gemm_flops_per_token(l);
  return sum / layers;
}

double ModelShape::block_attention_flops_per_token() const { return 4.0 * double(seq) * double(heads) * head_size(); }

double ModelShape::train_flops_per_token() const {
  const double attention = 3.0 * layers * block_attention_flops_per_token();
  const double adapters = lora_params();
  if (adapters > 0) return 4.0 * matmul_params() + 6.0 * adapters + attention;
  return 6.0 * matmul_params() + attention;
}

const char* model_arch_name(ModelArch arch) { return arch == ModelArch::kGPT2 ? "gpt2" : "llama"; }

bool looks_like_model_spec(const std::string& text) {
  return text.find('=') != std::string::npos && text.find('/') == std::string::npos;
}

ModelShape parse_model_spec(const std::string& spec) {
  ModelShape m;
  std::istringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    TRIDENT_CONFIG_CHECK(eq != std::string::npos, "--model: '", item, "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "arch") {
      TRIDENT_CONFIG_CHECK(value == "gpt2" || value == "llama", "--model: arch must be gpt2 or llama (got '", value, "')");
      m.arch = value == "gpt2" ? ModelArch::kGPT2 : ModelArch::kLlama;
      if (m.arch == ModelArch::kLlama) m.tied = false;
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    TRIDENT_CONFIG_CHECK(!value.empty() && *end == '\0' && v >= 0 && v < (1LL << 31), "--model: ", key,
                         " needs a non-negative integer (got '", value, "')");
    const int n = static_cast<int>(v);
    if (key == "layers") m.layers = n;
    else if (key == "hidden") m.hidden = n;
    else if (key == "heads") m.heads = n;
    else if (key == "kv_heads") m.kv_heads = n;
    else if (key == "ffn" || key == "ffn_hidden") m.ffn = n;
    else if (key == "vocab") m.vocab = n;
    else if (key == "seq" || key == "seq_len") m.seq = n;
    else if (key == "tied") m.tied = n != 0;
    else if (key == "dropout") m.dropout = n != 0;
    else if (key == "experts") m.experts = n;
    else if (key == "top_k") m.top_k = n;
    else if (key == "moe_ffn") m.moe_ffn = n;
    else if (key == "moe_every") m.moe_every = n;
    else if (key == "shared_ffn") m.shared_ffn = n;
    else
      throw ConfigError(detail::concat("--model: unknown key '", key,
                                       "' (expected layers, hidden, heads, vocab, ffn, arch, kv_heads, seq, tied, dropout, "
                                       "experts, top_k, moe_ffn, moe_every, shared_ffn)"));
  }
  return m;
}

}  // namespace trident::plan
