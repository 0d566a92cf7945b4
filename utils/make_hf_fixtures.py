#!/usr/bin/env python3
"""Tiny random Hugging Face models and their logits, for trident's HF import/export tests.

  make_hf_fixtures.py [OUT_DIR]          write the fixtures (default tests/data/hf)
  make_hf_fixtures.py --transformers5 [OUT_DIR]
                                         write the fixtures saved by transformers 5 (its
                                         rope_parameters form): llama3_rope, llama_linear,
                                         qwen3, mistral, qwen2_window
  make_hf_fixtures.py --moe [OUT_DIR]    the mixture-of-experts fixtures (transformers 5):
                                         mixtral, qwen2_moe, qwen3_moe, olmoe
  make_hf_fixtures.py --bad tests/data/bad   the malformed *.hf model directories
  make_hf_fixtures.py --generation [OUT_DIR]   only (re)write every fixture's generate.json
  make_hf_fixtures.py --check-load DIR FIXTURE
                                         load DIR (trident's `convert --to hf` output) with
                                         transformers' from_pretrained and compare its logits
                                         with FIXTURE's expected ones

Each fixture directory holds config.json, model.safetensors (or shards and
model.safetensors.index.json), expected.json (input_ids, targets, mean cross-entropy) and
expected_logits.safetensors ([B, T, V] float32, computed in float32 from the stored weights)
and generate.json (prompts of different lengths and transformers' greedy continuations).

Needs transformers, safetensors and torch, e.g. Debian's python3-torch and a venv:
  /usr/bin/python3 -m venv --system-site-packages /opt/trident-hf-venv
  /opt/trident-hf-venv/bin/pip install transformers==4.44.2 safetensors
The first fixtures (gpt2, llama, llama_sharded, qwen2) were written by transformers 4.44.2, so
trident reads its config.json form; --transformers5 needs transformers >= 5 (made with 5.24.0):
  python3 -m venv /opt/ref && /opt/ref/bin/pip install torch transformers==5.24.0 safetensors
"""
import json
import os
import shutil
import sys

import torch
import transformers
from safetensors.torch import save_file

B, T = 2, 16  # the fixed input: 2 sequences of 16 tokens (trident tests use seq_len = 16)


def randomize(model, seed, scale=0.08):
    """Every parameter random (biases and norm weights too), so a wrong mapping shows; the
    matrices N(0, scale^2)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if "norm" in name or "ln_" in name:
                p.copy_(1.0 + 0.1 * noise if name.endswith("weight") else 0.05 * noise)
            else:
                p.copy_(scale * noise)


def fixed_inputs(vocab, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (B, T), generator=g), torch.randint(0, vocab, (B, T), generator=g)


def expected_outputs(model, ids, targets):
    model = model.float().eval()
    with torch.no_grad():
        logits = model(input_ids=ids).logits.float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return logits, float(loss)


def write_fixture(out, name, model, dtype, seed, shard_size=None):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    model = model.to(dtype)
    model.save_pretrained(d, safe_serialization=True, **({"max_shard_size": shard_size} if shard_size else {}))
    # Expected logits from the weights as stored (rounded to dtype), computed in float32.
    reloaded = type(model).from_pretrained(d, torch_dtype=torch.float32, attn_implementation="eager")
    ids, targets = fixed_inputs(model.config.vocab_size, seed + 1)
    logits, loss = expected_outputs(reloaded, ids, targets)
    save_file({"logits": logits.contiguous()}, os.path.join(d, "expected_logits.safetensors"))
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump({"input_ids": ids.tolist(), "targets": targets.tolist(), "loss": loss,
                   "dtype": str(dtype).replace("torch.", ""), "transformers": transformers.__version__}, f)
    files = sorted(os.listdir(d))
    size = sum(os.path.getsize(os.path.join(d, f)) for f in files)
    print(f"{name}: {files} ({size} bytes), loss {loss:.6f}")
    write_generation(d)


GEN_PROMPT_LENGTHS, GEN_NEW_TOKENS = (3, 7, 5), 8  # prompt + new tokens stay within T = 16


def write_generation(d):
    """Greedy generate (no end-of-text stop) of prompts of several lengths, one at a time, with
    the smallest gap between the two best logits seen, so a tie-break can be told from a bug."""
    model = transformers.AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    g = torch.Generator().manual_seed(7)
    config = transformers.GenerationConfig(max_new_tokens=GEN_NEW_TOKENS, do_sample=False, num_beams=1,
                                           eos_token_id=None, pad_token_id=0)
    prompts, outputs, margin = [], [], float("inf")
    for n in GEN_PROMPT_LENGTHS:
        prompt = torch.randint(0, model.config.vocab_size, (1, n), generator=g)
        with torch.no_grad():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), generation_config=config,
                                 output_scores=True, return_dict_in_generate=True)
        new = out.sequences[0, n:].tolist()
        assert len(new) == GEN_NEW_TOKENS, new
        for scores in out.scores:
            top = scores[0].topk(2).values
            margin = min(margin, float(top[0] - top[1]))
        prompts.append(prompt[0].tolist())
        outputs.append(new)
    with open(os.path.join(d, "generate.json"), "w") as f:
        json.dump({"prompts": prompts, "max_new_tokens": GEN_NEW_TOKENS, "outputs": outputs,
                   "min_top2_margin": margin}, f)
    print(f"  generate.json: {outputs}, smallest top-2 logit gap {margin:.2e}")


def write_task(d, max_new=6):
    """task.jsonl for `trident eval --eval.task`: text prompts whose "output" is transformers'
    greedy continuation (stopped at <|endoftext|>, decoded with the fixture's tokenizer), so
    trident's exact match on it must be 100%."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    eot = tok.token_to_id("<|endoftext|>")
    model = transformers.AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    config = transformers.GenerationConfig(max_new_tokens=max_new, do_sample=False, num_beams=1,
                                           eos_token_id=eot, pad_token_id=0)
    lines = []
    for prompt in ["def main(", "import os\n", "return x + ", "The fixture ", "for i in range("]:
        ids = torch.tensor([tok.encode(prompt, add_special_tokens=False).ids])
        with torch.no_grad():
            new = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=config)[0, ids.shape[1]:]
        new = [i for i in new.tolist() if i != eot]
        assert all(i < tok.get_vocab_size() for i in new), new
        lines.append({"input": prompt, "output": tok.decode(new, skip_special_tokens=False)})
    with open(os.path.join(d, "task.jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    print(f"  task.jsonl: {[line['output'] for line in lines]}")


def write_tokenizer(d, vocab):
    """A byte-level BPE tokenizer.json trained on this script, so `prep --tokenizer DIR` finds one."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    with open(__file__) as f:
        tok.train_from_iterator([f.read()], trainer)
    tok.save(os.path.join(d, "tokenizer.json"))
    print(f"  tokenizer.json: {tok.get_vocab_size()} tokens")


def make_all(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    # GPT-2: odd vocabulary (padded under tp), tied head, learned positions beyond T; a
    # tokenizer.json (vocabulary above the byte tokenizer's, so CLI tests can train on bytes).
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=301, n_positions=32, n_embd=32, n_layer=2, n_head=4, activation_function="gelu_new",
        attn_implementation="eager"))
    randomize(gpt2, 1)
    write_fixture(out, "gpt2", gpt2, torch.float32, 10)
    write_tokenizer(os.path.join(out, "gpt2"), 300)
    write_task(os.path.join(out, "gpt2"))
    # Llama with grouped-query attention (4 heads, 2 KV heads), untied head, RoPE theta 5e5.
    llama_cfg = transformers.LlamaConfig(
        vocab_size=260, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=500000.0,
        tie_word_embeddings=False, attn_implementation="eager")
    llama = transformers.LlamaForCausalLM(llama_cfg)
    randomize(llama, 2)
    write_fixture(out, "llama", llama, torch.float32, 20)
    # The same architecture in float16, sharded into several files with an index.
    llama_sharded = transformers.LlamaForCausalLM(llama_cfg)
    randomize(llama_sharded, 3)
    write_fixture(out, "llama_sharded", llama_sharded, torch.float16, 30, shard_size="20KB")
    # Qwen2: q/k/v biases, no o bias, tied embeddings, bfloat16 weights.
    qwen2 = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000000.0,
        tie_word_embeddings=True, use_sliding_window=False, attn_implementation="eager"))
    randomize(qwen2, 4)
    write_fixture(out, "qwen2", qwen2, torch.bfloat16, 40)


def make_transformers5(out):
    """Fixtures in transformers 5's config.json form, one per feature of the released models:
    RoPE scaling (llama3, linear, yarn), head_dim apart from hidden / heads, attention_bias (q, k,
    v and o), Qwen3's q/k norms, and sliding windows shorter than the T = 16 inputs (Mistral: every
    layer; Qwen2: the layers from max_window_layers on)."""
    assert int(transformers.__version__.split(".")[0]) >= 5, transformers.__version__
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    common = dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6,
                  attn_implementation="eager")
    # Llama 3.1-style: llama3 frequency-dependent scaling (head size 16: one pair in the smooth
    # band between the high- and low-frequency wavelengths), q/k/v/o biases, tied head, two eos ids.
    llama3 = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=260, hidden_size=64, intermediate_size=96, max_position_embeddings=1024,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 256},
        attention_bias=True, tie_word_embeddings=True, bos_token_id=1, eos_token_id=[2, 3], **common))
    randomize(llama3, 50)
    write_fixture(out, "llama3_rope", llama3, torch.float32, 60)
    # Linear RoPE scaling and a head size (12) that is not hidden / heads (8).
    linear = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=200, hidden_size=32, intermediate_size=64, head_dim=12, max_position_embeddings=64,
        rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
        tie_word_embeddings=False, **common))
    randomize(linear, 51)
    write_fixture(out, "llama_linear", linear, torch.float32, 61)
    # Qwen3: per-head q/k RMSNorm, head_dim 16 != 32 / 4, YaRN (factor 4 over 16 positions), bf16.
    qwen3 = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(
        vocab_size=151, hidden_size=32, intermediate_size=64, head_dim=16, max_position_embeddings=64,
        rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                         "original_max_position_embeddings": 16},
        tie_word_embeddings=True, use_sliding_window=False, bos_token_id=None, eos_token_id=150, pad_token_id=149,
        **common))
    randomize(qwen3, 52)
    write_fixture(out, "qwen3", qwen3, torch.bfloat16, 62)
    # Mistral: a 5-token window on every layer (inputs are 16 long).
    mistral_cfg = dict(vocab_size=180, hidden_size=32, intermediate_size=64, max_position_embeddings=64,
                       rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=False,
                       **common)
    mistral = transformers.MistralForCausalLM(transformers.MistralConfig(sliding_window=5, **mistral_cfg))
    randomize(mistral, 53)
    write_fixture(out, "mistral", mistral, torch.float32, 63)
    assert_window_matters(os.path.join(out, "mistral"), transformers.MistralConfig, sliding_window=None)
    # Qwen2 with use_sliding_window: layer 0 full, layer 1 within a 6-token window.
    qwen2w = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=120, hidden_size=32, intermediate_size=48, max_position_embeddings=64, use_sliding_window=True,
        sliding_window=6, max_window_layers=1, tie_word_embeddings=True, **common))
    randomize(qwen2w, 54)
    write_fixture(out, "qwen2_window", qwen2w, torch.float32, 64)
    assert_window_matters(os.path.join(out, "qwen2_window"), transformers.Qwen2Config, use_sliding_window=False,
                          layer_types=None)


def make_moe(out):
    """Mixture-of-experts fixtures: Mixtral (4 experts, top-2 renormalised, every layer), Qwen2-MoE
    (q/k/v biases, a shared expert twice an expert's width behind its sigmoid gate, raw top-k
    weights, decoder_sparse_step 2: layer 0 dense, layer 1 MoE) and Qwen3-MoE (per-head q/k
    norms, head_dim apart from hidden / heads, top-3 of 6 renormalised) and OLMoE (q/k norms over
    the whole projections, raw top-2 weights, q/k/v/o biases). The router's k-th and
    (k+1)-th logits of every token are kept apart, so a rounding difference cannot change the
    experts chosen."""
    assert int(transformers.__version__.split(".")[0]) >= 5, transformers.__version__
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    common = dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6,
                  attn_implementation="eager")
    cases = [
        ("mixtral", transformers.MixtralForCausalLM, transformers.MixtralConfig(
            vocab_size=140, hidden_size=32, intermediate_size=40, max_position_embeddings=64, num_local_experts=4,
            num_experts_per_tok=2, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            tie_word_embeddings=False, **common), torch.float32, 70),
        ("qwen2_moe", transformers.Qwen2MoeForCausalLM, transformers.Qwen2MoeConfig(
            vocab_size=130, hidden_size=32, intermediate_size=56, moe_intermediate_size=24,
            shared_expert_intermediate_size=48, num_experts=4, num_experts_per_tok=2, norm_topk_prob=False,
            decoder_sparse_step=2, max_position_embeddings=64, use_sliding_window=False, tie_word_embeddings=True,
            **common), torch.float32, 72),
        ("qwen3_moe", transformers.Qwen3MoeForCausalLM, transformers.Qwen3MoeConfig(
            vocab_size=150, hidden_size=32, intermediate_size=64, moe_intermediate_size=20, head_dim=16,
            num_experts=6, num_experts_per_tok=3, norm_topk_prob=True, max_position_embeddings=64,
            use_sliding_window=False, tie_word_embeddings=False, **common), torch.bfloat16, 74),
        ("olmoe", transformers.OlmoeForCausalLM, transformers.OlmoeConfig(
            vocab_size=120, hidden_size=32, intermediate_size=28, num_experts=4, num_experts_per_tok=2,
            norm_topk_prob=False, attention_bias=True, max_position_embeddings=64, tie_word_embeddings=False,
            pad_token_id=None, eos_token_id=None, **common), torch.float32, 76),
    ]
    for name, model_class, config, dtype, seed in cases:
        for attempt in range(20):  # a seed whose routing has no near-ties
            model = model_class(config)
            randomize(model, seed + 100 * attempt)
            gap = router_gap(model.to(dtype).float(), config.vocab_size, seed + 1)
            if gap > 2e-3:
                break
        print(f"{name}: smallest gap between the k-th and (k+1)-th router logit {gap:.2e} (attempt {attempt})")
        write_fixture(out, name, model, dtype, seed)


def router_gap(model, vocab, seed):
    ids, _ = fixed_inputs(vocab, seed)
    with torch.no_grad():
        out = model.eval()(input_ids=ids, output_router_logits=True)
    k = model.config.num_experts_per_tok
    gap = float("inf")
    for logits in out.router_logits:
        top = logits.float().reshape(-1, logits.shape[-1]).topk(k + 1, dim=-1).values
        gap = min(gap, float((top[:, k - 1] - top[:, k]).min()))
    return gap


def assert_window_matters(d, config_class, **no_window):
    """The fixture's logits differ from the same weights attending over the whole sequence, so
    a model that ignored the window would fail the tests."""
    from safetensors.torch import load_file
    config = config_class.from_pretrained(d)
    for key, value in no_window.items():
        setattr(config, key, value)
    if hasattr(config, "layer_types"):
        config.layer_types = ["full_attention"] * config.num_hidden_layers
    model = transformers.AutoModelForCausalLM.from_pretrained(d, config=config, dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    with open(os.path.join(d, "expected.json")) as f:
        expected = json.load(f)
    logits, _ = expected_outputs(model, torch.tensor(expected["input_ids"]), torch.tensor(expected["targets"]))
    want = load_file(os.path.join(d, "expected_logits.safetensors"))["logits"]
    gap = float((logits - want).abs().max() / want.abs().max())
    assert gap > 1e-2, f"{d}: the window changes the logits by only {gap:.2e}"
    print(f"  without the window the logits move by {gap:.2e}")


def make_bad(out):
    """tests/data/bad/*.hf: tiny Llama directories, each wrong in one way (no torch needed)."""
    import struct
    config = {"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 300, "tie_word_embeddings": True}
    shapes = {"model.embed_tokens.weight": [300, 8], "model.norm.weight": [8]}
    for name, shape in [("input_layernorm", [8]), ("post_attention_layernorm", [8]), ("self_attn.q_proj", [8, 8]),
                        ("self_attn.k_proj", [8, 8]), ("self_attn.v_proj", [8, 8]), ("self_attn.o_proj", [8, 8]),
                        ("mlp.gate_proj", [16, 8]), ("mlp.up_proj", [16, 8]), ("mlp.down_proj", [8, 16])]:
        shapes["model.layers.0." + name + ".weight"] = shape

    def safetensors(tensors, header_text=None, cut=0):
        header, data = {}, b""
        for name, (dtype, shape) in tensors.items():
            n = 4 * (1 if not shape else __import__("math").prod(shape)) * (2 if dtype == "I64" else 1)
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + n]}
            data += b"\0" * n
        text = (header_text or json.dumps(header)).encode()
        blob = struct.pack("<Q", len(text)) + text + data
        return blob[:len(blob) - cut] if cut else blob

    good = {k: ("F32", v) for k, v in shapes.items()}
    cases = {
        "safetensors_malformed_header": (config, safetensors(good, header_text='{"model.norm.weight": {"dtype": "F32",'),
                                         "model.safetensors: safetensors header is not valid JSON"),
        "safetensors_truncated": (config, safetensors(good, cut=64), "outside the [0-9]+ data bytes \\(truncated file"),
        "safetensors_wrong_shape": (config, safetensors({**good, "model.layers.0.self_attn.k_proj.weight": ("F32", [4, 8])}),
                                    "tensor model.layers.0.self_attn.k_proj.weight has shape \\[4, 8\\] but config.json "
                                    "implies \\[8, 8\\]"),
        "safetensors_wrong_dtype": (config, safetensors({**good, "model.norm.weight": ("I64", [8])}),
                                    "tensor model.norm.weight has dtype I64; trident reads F32, F16 and BF16"),
        "hf_rope_dynamic": ({**config, "rope_parameters": {"rope_type": "dynamic", "factor": 4.0, "rope_theta": 1e4}},
                            safetensors(good), "rope_parameters: rope_type \"dynamic\" is not supported"),
        "hf_unknown_key": ({**config, "use_parallel_residual": True}, safetensors(good),
                           "\"use_parallel_residual\" is not a llama setting trident understands"),
        "hf_interleaved_windows": ({**config, "model_type": "qwen2", "num_hidden_layers": 2, "use_sliding_window": True,
                                    "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"]},
                                   safetensors(good), "sliding-window layers must be the last ones"),
    }
    for name, (cfg, blob, expect) in cases.items():
        d = os.path.join(out, name + ".hf")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(blob)
        with open(d + ".expect", "w") as f:
            f.write(expect + "\n")
        print(f"{d}: expects /{expect}/")


def check_load(directory, fixture):
    """transformers loads trident's output; its logits equal the fixture's."""
    model = transformers.AutoModelForCausalLM.from_pretrained(directory, torch_dtype=torch.float32,
                                                              attn_implementation="eager")
    with open(os.path.join(fixture, "expected.json")) as f:
        expected = json.load(f)
    from safetensors.torch import load_file
    want = load_file(os.path.join(fixture, "expected_logits.safetensors"))["logits"]
    logits, _ = expected_outputs(model, torch.tensor(expected["input_ids"]), torch.tensor(expected["targets"]))
    err = float(((logits - want).abs().max() / want.abs().max()))
    print(f"{directory}: {type(model).__name__} loaded by transformers {transformers.__version__}; "
          f"max |logits - fixture| / max |fixture| = {err:.2e}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--bad":
        make_bad(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) >= 2 and sys.argv[1] == "--generation":
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "tests", "data", "hf")
        for name in sorted(os.listdir(out)):
            write_generation(os.path.join(out, name))
        write_task(os.path.join(out, "gpt2"))
        sys.exit(0)
    if len(sys.argv) >= 2 and sys.argv[1] == "--transformers5":
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        make_transformers5(sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "tests", "data", "hf"))
        sys.exit(0)
    if len(sys.argv) >= 2 and sys.argv[1] == "--moe":
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        make_moe(sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "tests", "data", "hf"))
        sys.exit(0)
    if len(sys.argv) == 4 and sys.argv[1] == "--check-load":
        sys.exit(check_load(sys.argv[2], sys.argv[3]))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    make_all(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "data", "hf"))
