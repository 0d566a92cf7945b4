// trident parameter name -> HF tensor name, shape and element mapping, per family.
#include "trident/interop/hf_names.hpp"

#include <memory>

#include "trident/core/error.hpp"
#include "trident/model/block.hpp"
#include "trident/model/embedding.hpp"
#include "trident/model/lm_head.hpp"

namespace trident::interop {

using model::ModelConfig;

namespace {

// "blocks.3.attn.q.weight" -> layer 3, rest "attn.q.weight"; false for non-block names.
bool split_block_name(const std::string& name, int* layer, std::string* rest) {
  const std::string prefix = "blocks.";
  if (name.rfind(prefix, 0) != 0) return false;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos) return false;
  *layer = std::stoi(name.substr(prefix.size(), dot - prefix.size()));
  *rest = name.substr(dot + 1);
  return true;
}

std::string kind_of(const std::string& rest) { return rest.substr(rest.rfind('.') + 1); }  // weight | bias

HfSource gpt2_source(const HfModelInfo& info, const std::string& name) {
  const ModelConfig& m = info.config;
  const int64_t c = m.hidden, f = m.ffn_hidden, v = m.vocab;
  const std::string t = "transformer.";
  if (name == "embed.tok.weight") return {t + "wte.weight", {v, c}};
  if (name == "embed.pos.weight") return {t + "wpe.weight", {m.positions(), c}};
  if (name == "final_norm.weight") return {t + "ln_f.weight", {c}};
  if (name == "final_norm.bias") return {t + "ln_f.bias", {c}};
  if (name == "head.weight") return {"lm_head.weight", {v, c}};
  int layer = 0;
  std::string rest;
  if (split_block_name(name, &layer, &rest)) {
    const std::string h = t + "h." + std::to_string(layer) + ".";
    const std::string kind = kind_of(rest);
    const bool w = kind == "weight";
    if (rest == "attn_norm.weight" || rest == "attn_norm.bias") return {h + "ln_1." + kind, {c}};
    if (rest == "mlp_norm.weight" || rest == "mlp_norm.bias") return {h + "ln_2." + kind, {c}};
    const std::string proj = rest.substr(0, rest.rfind('.'));
    const int64_t fused = proj == "attn.q" ? 0 : proj == "attn.k" ? c : proj == "attn.v" ? 2 * c : -1;
    if (fused >= 0)
      return w ? HfSource{h + "attn.c_attn.weight", {c, 3 * c}, true, fused}
               : HfSource{h + "attn.c_attn.bias", {3 * c}, false, fused};
    if (proj == "attn.o") return w ? HfSource{h + "attn.c_proj.weight", {c, c}, true} : HfSource{h + "attn.c_proj.bias", {c}};
    if (proj == "mlp.up") return w ? HfSource{h + "mlp.c_fc.weight", {c, f}, true} : HfSource{h + "mlp.c_fc.bias", {f}};
    if (proj == "mlp.down") return w ? HfSource{h + "mlp.c_proj.weight", {f, c}, true} : HfSource{h + "mlp.c_proj.bias", {c}};
  }
  throw ConfigError("parameter " + name + " has no place in a Hugging Face gpt2 model");
}

// An MoE layer's tensors ("moe.router.weight", "moe.experts.3.up.weight", "moe.shared...") under
// layer prefix l: Mixtral's block_sparse_moe.{gate, experts.E.w1 (gate) / w3 (up) / w2 (down)},
// the Qwen MoE families' mlp.{gate, experts.E.*_proj, shared_expert.*_proj, shared_expert_gate}.
HfSource moe_source(const HfModelInfo& info, const std::string& l, const std::string& rest) {
  const ModelConfig& m = info.config;
  const int64_t c = m.hidden, f = m.moe.ffn_hidden, fs = int64_t(m.moe.shared_experts) * f;
  const bool mixtral = info.family == HfFamily::kMixtral;
  const std::string moe = l + (mixtral ? "block_sparse_moe." : "mlp.");
  if (rest == "moe.router.weight") return {moe + "gate.weight", {m.moe.experts, c}};
  if (rest == "moe.shared_gate.weight" && fs > 0) return {moe + "shared_expert_gate.weight", {1, c}};
  // "<mlp>.<proj>.weight": an expert's or the shared MLP's projection.
  const std::string experts = "moe.experts.", shared = "moe.shared.";
  std::string mlp, proj;
  int64_t width = f;
  if (rest.rfind(experts, 0) == 0) {
    const size_t dot = rest.find('.', experts.size());
    mlp = "experts." + rest.substr(experts.size(), dot - experts.size()) + ".";
    proj = rest.substr(dot + 1);
  } else if (rest.rfind(shared, 0) == 0 && fs > 0) {
    mlp = "shared_expert.";
    proj = rest.substr(shared.size());
    width = fs;
  }
  if (proj == "gate.weight") return {moe + mlp + (mixtral ? "w1.weight" : "gate_proj.weight"), {width, c}};
  if (proj == "up.weight") return {moe + mlp + (mixtral ? "w3.weight" : "up_proj.weight"), {width, c}};
  if (proj == "down.weight") return {moe + mlp + (mixtral ? "w2.weight" : "down_proj.weight"), {c, width}};
  throw ConfigError(detail::concat("parameter ", l, rest, " has no place in a Hugging Face ",
                                   hf_family_name(info.family), " model"));
}

HfSource llama_source(const HfModelInfo& info, const std::string& name) {
  const ModelConfig& m = info.config;
  const int64_t c = m.hidden, f = m.ffn_hidden, v = m.vocab, hs = m.head_size();
  const int64_t q = m.heads * hs, kv = m.kv_heads * hs;
  if (name == "embed.tok.weight") return {"model.embed_tokens.weight", {v, c}};
  if (name == "final_norm.weight") return {"model.norm.weight", {c}};
  if (name == "head.weight") return {"lm_head.weight", {v, c}};
  int layer = 0;
  std::string rest;
  if (split_block_name(name, &layer, &rest)) {
    const std::string l = "model.layers." + std::to_string(layer) + ".";
    if (rest == "attn_norm.weight") return {l + "input_layernorm.weight", {c}};
    if (rest == "mlp_norm.weight") return {l + "post_attention_layernorm.weight", {c}};
    if (rest == "attn.q.weight") return {l + "self_attn.q_proj.weight", {q, c}};
    if (rest == "attn.k.weight") return {l + "self_attn.k_proj.weight", {kv, c}};
    if (rest == "attn.v.weight") return {l + "self_attn.v_proj.weight", {kv, c}};
    if (rest == "attn.o.weight") return {l + "self_attn.o_proj.weight", {c, q}};
    if (m.qkv_bias) {
      if (rest == "attn.q.bias") return {l + "self_attn.q_proj.bias", {q}};
      if (rest == "attn.k.bias") return {l + "self_attn.k_proj.bias", {kv}};
      if (rest == "attn.v.bias") return {l + "self_attn.v_proj.bias", {kv}};
    }
    if (m.o_bias && rest == "attn.o.bias") return {l + "self_attn.o_proj.bias", {c}};
    if (m.qk_norm) {
      if (rest == "attn.q_norm.weight") return {l + "self_attn.q_norm.weight", {m.qk_norm_width(m.heads)}};
      if (rest == "attn.k_norm.weight") return {l + "self_attn.k_norm.weight", {m.qk_norm_width(m.kv_heads)}};
    }
    if (rest.rfind("moe.", 0) == 0) return moe_source(info, l, rest);
    if (rest == "mlp.gate.weight") return {l + "mlp.gate_proj.weight", {f, c}};
    if (rest == "mlp.up.weight") return {l + "mlp.up_proj.weight", {f, c}};
    if (rest == "mlp.down.weight") return {l + "mlp.down_proj.weight", {c, f}};
  }
  throw ConfigError(detail::concat("parameter ", name, " has no place in a Hugging Face ", hf_family_name(info.family),
                                   " model"));
}

}  // namespace

std::vector<std::pair<std::string, Shape>> stored_parameter_shapes(const ModelConfig& config) {
  ModelConfig cfg = config;
  cfg.resolve();
  model::ParamStore store;  // the layers only register their parameters; nothing is allocated
  model::Embedding embedding(store, cfg, {});
  std::vector<std::unique_ptr<model::TransformerBlock>> blocks;
  for (int l = 0; l < cfg.layers; ++l) blocks.push_back(std::make_unique<model::TransformerBlock>(store, l, cfg, model::TensorParallel{}));
  model::LMHead head(store, cfg, cfg.tie_embeddings ? &embedding.token_weight() : nullptr, {});
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& p : store.all()) out.emplace_back(p->spec.name, p->spec.global_shape);
  return out;
}

HfSource hf_source(const HfModelInfo& info, const std::string& trident_name) {
  return info.family == HfFamily::kGPT2 ? gpt2_source(info, trident_name) : llama_source(info, trident_name);
}

std::vector<std::string> hf_name_candidates(const HfModelInfo& info, const std::string& hf_name) {
  std::vector<std::string> out{hf_name};
  const std::string t = "transformer.";
  if (info.family == HfFamily::kGPT2 && hf_name.rfind(t, 0) == 0) out.push_back(hf_name.substr(t.size()));
  return out;
}

}  // namespace trident::interop
