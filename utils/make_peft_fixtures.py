#!/usr/bin/env python3
"""Hugging Face PEFT LoRA adapters for the tiny HF fixtures, and their logits, for trident's tests.

  make_peft_fixtures.py [OUT_DIR]        write the adapters (default tests/data/peft), one per
                                         base fixture in tests/data/hf: llama, qwen2, gpt2
  make_peft_fixtures.py --check ADAPTER_DIR BASE [EXPECTED.safetensors]
                                         load the base fixture BASE (a name in tests/data/hf, or
                                         a directory) with transformers, the adapter ADAPTER_DIR
                                         (e.g. trident's LoRA export) with PeftModel.from_pretrained,
                                         and compare the logits on BASE's expected.json input_ids
                                         with EXPECTED (default ADAPTER_DIR/expected_logits.safetensors;
                                         without either, print them); exits 1 unless
                                         max |diff| / max |expected| < 1e-4
  make_peft_fixtures.py --check-merged ADAPTER_DIR BASE MERGED_DIR
                                         peft's base + ADAPTER_DIR against transformers on
                                         MERGED_DIR (trident's `convert --to peft` and `--merge`
                                         outputs of one checkpoint): the same logits (< 1e-4)
  make_peft_fixtures.py --check-auto ADAPTER_DIR MERGED_DIR
                                         AutoPeftModelForCausalLM.from_pretrained(ADAPTER_DIR), the
                                         base found through its base_model_name_or_path, against
                                         transformers on MERGED_DIR: the same logits (< 1e-4)

Each adapter directory holds adapter_config.json and adapter_model.safetensors as PEFT's
save_pretrained writes them (r = 4, lora_alpha = 8, so scaling 2; every lora_A and lora_B
random, lora_B not zero, so the adapter changes the logits), expected_logits.safetensors
("logits", [B, T, V] float32: the adapted model, eager attention, in float32, on the base
fixture's input_ids) and expected.json (input_ids, base, peft and transformers versions).
The tensors are named as PEFT names them, e.g.
  base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight   [r, in]
  base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight   [out, r]
  base_model.model.transformer.h.0.attn.c_attn.lora_A.weight       [r, n_embd]     (GPT-2 Conv1D,
  base_model.model.transformer.h.0.attn.c_attn.lora_B.weight       [3 n_embd, r]    fan_in_fan_out)

Needs the venv of make_hf_fixtures.py (Debian's python3-torch 1.13, transformers 4.44.2) plus
peft and accelerate; --no-deps, or pip replaces the Debian torch (1.13.0a0 < 1.13.0) with a new one:
  /opt/trident-hf-venv/bin/pip install --no-deps peft==0.12.0 accelerate==0.33.0
"""
import json
import os
import shutil
import sys

import peft
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF_FIXTURES = os.path.join(ROOT, "tests", "data", "hf")

# base fixture -> (target_modules, fan_in_fan_out, seed)
ADAPTERS = {
    "llama": (["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], False, 100),
    "qwen2": (["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], False, 200),
    # "c_proj" is both attn.c_proj and mlp.c_proj; GPT-2's Conv1D stores weights [in, out].
    "gpt2": (["c_attn", "c_proj", "c_fc"], True, 300),
}
R, ALPHA = 4, 8


def load_base(base):
    d = base if os.path.isdir(base) else os.path.join(HF_FIXTURES, base)
    model = transformers.AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32,
                                                              attn_implementation="eager")
    with open(os.path.join(d, "expected.json")) as f:
        ids = torch.tensor(json.load(f)["input_ids"])
    return model, ids


def logits_of(model, ids):
    model = model.float().eval()
    with torch.no_grad():
        return model(input_ids=ids).logits.float().contiguous()


def randomize_lora(model, seed):
    """Every lora_A and lora_B weight 0.1 * randn (seeded, in name order)."""
    g = torch.Generator().manual_seed(seed)
    n = 0
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if ".lora_A." in name or ".lora_B." in name:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
                n += 1
    assert n > 0
    return n


def write_adapter(out, name):
    targets, fan_in_fan_out, seed = ADAPTERS[name]
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    torch.manual_seed(seed)
    base, ids = load_base(name)
    config = peft.LoraConfig(r=R, lora_alpha=ALPHA, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                             target_modules=targets, fan_in_fan_out=fan_in_fan_out)
    model = peft.get_peft_model(base, config)
    saved = model.peft_config["default"]
    saved.base_model_name_or_path = f"tests/data/hf/{name}"  # not this machine's path
    saved.target_modules = sorted(saved.target_modules)  # a set: its order would change run to run
    n = randomize_lora(model, seed)
    model.create_or_update_model_card = lambda _dir: None  # no README.md (and no Jinja2 needed)
    model.save_pretrained(d, safe_serialization=True)

    logits = logits_of(model, ids)
    save_file({"logits": logits}, os.path.join(d, "expected_logits.safetensors"))
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump({"input_ids": ids.tolist(), "base": name, "peft": peft.__version__,
                   "transformers": transformers.__version__}, f)

    # The adapter must matter: the base model's logits differ.
    with model.disable_adapter():
        plain = logits_of(model, ids)
    want = load_file(os.path.join(HF_FIXTURES, name, "expected_logits.safetensors"))["logits"]
    assert float((plain - want).abs().max()) < 1e-4 * float(want.abs().max()), "base logits != base fixture"
    effect = float((logits - plain).abs().max())
    assert effect > 1e-2, effect

    # Merged weights give the same logits.
    merged = model.merge_and_unload()
    merged_diff = float((logits_of(merged, ids) - logits).abs().max())
    assert merged_diff < 1e-5, merged_diff

    files = sorted(os.listdir(d))
    sizes = {f: os.path.getsize(os.path.join(d, f)) for f in files}
    print(f"{name}: {n} LoRA tensors, {sizes}; max |adapted - base logits| {effect:.3f}, "
          f"max |merged - unmerged| {merged_diff:.2e}")
    with safe_open(os.path.join(d, "adapter_model.safetensors"), "pt") as f:
        for key in f.keys():
            t = f.get_slice(key)
            print(f"  {key} {t.get_shape()} {t.get_dtype()}")

    # The saved adapter, loaded back, reproduces the logits.
    assert check(d, name, os.path.join(d, "expected_logits.safetensors")) == 0


def check(adapter_dir, base, expected=None):
    model, ids = load_base(base)
    model = peft.PeftModel.from_pretrained(model, adapter_dir)
    logits = logits_of(model, ids)
    if expected is None and os.path.exists(os.path.join(adapter_dir, "expected_logits.safetensors")):
        expected = os.path.join(adapter_dir, "expected_logits.safetensors")
    if expected is None:
        torch.set_printoptions(precision=6)
        print(f"{adapter_dir} on {base}: logits {list(logits.shape)}\n{logits}")
        return 0
    want = load_file(expected)["logits"]
    if want.shape != logits.shape:
        print(f"{adapter_dir}: logits {list(logits.shape)} but {expected} holds {list(want.shape)}")
        return 1
    err = float((logits - want).abs().max() / want.abs().max())
    print(f"{adapter_dir}: adapter loaded by peft {peft.__version__} on {base}; "
          f"max |logits - expected| / max |expected| = {err:.2e}")
    return 0 if err < 1e-4 else 1


def check_merged(adapter_dir, base, merged_dir):
    """PEFT applies trident's adapter exactly as trident merges it."""
    base_dir = base if os.path.isdir(base) else os.path.join(ROOT, "tests", "data", "hf", base)
    ids = torch.tensor(json.load(open(os.path.join(base_dir, "expected.json")))["input_ids"])
    load = lambda d: transformers.AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32,
                                                                       attn_implementation="eager")
    adapted = peft.PeftModel.from_pretrained(load(base_dir), adapter_dir).eval()
    with torch.no_grad():
        a = adapted(input_ids=ids).logits
        m = load(merged_dir).eval()(input_ids=ids).logits
        b = load(base_dir).eval()(input_ids=ids).logits
    err = float((a - m).abs().max() / m.abs().max())
    moved = float((a - b).abs().max() / b.abs().max())
    print(f"{adapter_dir} on {base}: peft vs merged {err:.2e} (the adapter moves the logits {moved:.2e})")
    return 0 if err < 1e-4 else 1


def check_auto(adapter_dir, merged_dir):
    """AutoPeftModelForCausalLM finds the base trident names and applies the adapter as trident
    merges it."""
    model = peft.AutoPeftModelForCausalLM.from_pretrained(adapter_dir, dtype=torch.float32,
                                                          attn_implementation="eager").eval()
    merged = transformers.AutoModelForCausalLM.from_pretrained(merged_dir, dtype=torch.float32,
                                                               attn_implementation="eager").eval()
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, merged.config.vocab_size, (2, 16), generator=g)
    with torch.no_grad():
        a, m = model(input_ids=ids).logits, merged(input_ids=ids).logits
    err = float((a - m).abs().max() / m.abs().max())
    base = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))["base_model_name_or_path"]
    print(f"{adapter_dir}: AutoPeftModelForCausalLM (base {base}) vs merged {err:.2e}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check-auto":
        sys.exit(check_auto(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 5 and sys.argv[1] == "--check-merged":
        sys.exit(check_merged(sys.argv[2], sys.argv[3], sys.argv[4]))
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None))
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        sys.exit(__doc__)
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "peft")
    os.makedirs(out, exist_ok=True)
    for name in ADAPTERS:
        write_adapter(out, name)
