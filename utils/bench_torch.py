#!/usr/bin/env python3
"""The PyTorch reference for `trident bench step`: the same GPT-2 model (pre-LayerNorm, GELU-tanh,
learned positions, tied embeddings), batch, AdamW and thread count as a trident INI config, on
synthetic tokens, timed the same way (warm-up steps, then N timed steps). Prints tokens/s and
model TFLOP/s with trident's formula (6 x matmul parameters + 12 x layers x seq x hidden per
token), or one JSON object with --json.

    /usr/bin/python3 utils/bench_torch.py --config input/configs/bench-gpt2-124m.ini --threads 2

Uses Debian's python3-torch (or any PyTorch); fp32, or bf16 autocast with --precision bf16;
eager, or torch.compile (inductor) with --compile. --ddp N runs N processes under
DistributedDataParallel (gloo on 127.0.0.1), each with the config's batch and --threads threads,
as `mpirun -np N trident bench step --parallel.dp=N` with N times the global batch; tokens/s count
all N.

A mixture-of-experts config (arch = llama with [moe] experts > 0, e.g. bench-moe.ini) is timed
with transformers' MixtralForCausalLM of the same shapes (the model users would pick; needs
transformers >= 5, e.g. /opt/ref/bin/python), with its default experts implementation or
--experts-implementation NAME; FLOPs count the k active experts per token, as trident does.
"""
import argparse
import configparser
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_config(path):
    ini = configparser.ConfigParser()
    with open(path) as f:
        ini.read_string(f.read())
    m, t = ini["model"], ini["train"]
    cfg = {
        "arch": m.get("arch", "gpt2"),
        "layers": m.getint("layers"),
        "hidden": m.getint("hidden"),
        "heads": m.getint("heads"),
        "vocab": m.getint("vocab"),
        "seq_len": m.getint("seq_len"),
        "ffn": m.getint("ffn_hidden", fallback=4 * m.getint("hidden")),
        "micro_batch": t.getint("micro_batch"),
        "global_batch": t.getint("global_batch", fallback=t.getint("micro_batch")),
        "lr": t.getfloat("lr", fallback=6e-4),
        "weight_decay": t.getfloat("weight_decay", fallback=0.1),
        "threads": t.getint("threads", fallback=0),
    }
    moe = ini["moe"] if ini.has_section("moe") else {}
    cfg["experts"] = int(moe.get("experts", 0))
    if cfg["experts"]:
        if cfg["arch"] != "llama":
            raise SystemExit("bench_torch.py: mixture-of-experts configs must be arch = llama (Mixtral)")
        cfg["kv_heads"] = m.getint("kv_heads", fallback=cfg["heads"])
        cfg["top_k"] = int(moe.get("top_k", 2))
        cfg["expert_ffn"] = int(moe.get("ffn_hidden", 0)) or cfg["ffn"]
        cfg["tied"] = m.getboolean("tie_embeddings", fallback=True)
    elif cfg["arch"] != "gpt2":
        raise SystemExit("bench_torch.py: only arch = gpt2 configs, or llama mixtures of experts, are supported")
    return cfg


def mixtral(cfg, experts_implementation):
    """transformers' MixtralForCausalLM with the config's shapes; forward(tokens, targets) -> loss."""
    import transformers
    c = cfg["hidden"]
    kwargs = {"experts_implementation": experts_implementation} if experts_implementation else {}
    config = transformers.MixtralConfig(
        vocab_size=cfg["vocab"], hidden_size=c, intermediate_size=cfg["expert_ffn"], num_hidden_layers=cfg["layers"],
        num_attention_heads=cfg["heads"], num_key_value_heads=cfg["kv_heads"], max_position_embeddings=cfg["seq_len"],
        num_local_experts=cfg["experts"], num_experts_per_tok=cfg["top_k"], tie_word_embeddings=cfg["tied"],
        attn_implementation="sdpa", **kwargs)
    model = transformers.MixtralForCausalLM(config)

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, tokens, targets):
            logits = self.model(input_ids=tokens).logits
            return F.cross_entropy(logits.reshape(-1, cfg["vocab"]), targets.reshape(-1))

    return Wrapped()


def matmul_params(cfg):
    c, L = cfg["hidden"], cfg["layers"]
    if not cfg["experts"]:
        return L * (4 * c * c + 2 * c * cfg["ffn"]) + cfg["vocab"] * c
    hs = c // cfg["heads"]
    attention = c * c + 2 * c * cfg["kv_heads"] * hs + c * c
    moe = c * cfg["experts"] + cfg["top_k"] * 3 * c * cfg["expert_ffn"]
    return L * (attention + moe) + cfg["vocab"] * c


class Block(nn.Module):
    def __init__(self, c, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(c)
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)
        self.ln2 = nn.LayerNorm(c)
        self.up = nn.Linear(c, ffn)
        self.down = nn.Linear(ffn, c)

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0: its fused kernel
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            y = scores.masked_fill(mask, float("-inf")).softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c = cfg["hidden"]
        self.wte = nn.Embedding(cfg["vocab"], c)
        self.wpe = nn.Embedding(cfg["seq_len"], c)
        self.blocks = nn.ModuleList(Block(c, cfg["heads"], cfg["ffn"]) for _ in range(cfg["layers"]))
        self.ln_f = nn.LayerNorm(c)

    def forward(self, tokens, targets):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied head
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="0: the config's train.threads, else all cores")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model (inductor; the warm-up steps include the compilation)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--experts-implementation", default=None,
                    help="mixtures of experts: transformers' experts_implementation (default: its own default)")
    ap.add_argument("--profile", action="store_true",
                    help="after timing, profile --steps more steps and print the time per phase and per operator "
                         "(torch.profiler self time), in trident bench step's phases")
    ap.add_argument("--ddp", type=int, default=1, help="data-parallel processes (DistributedDataParallel, gloo)")
    args = ap.parse_args()
    if args.ddp > 1:
        import socket
        with socket.socket() as s:  # a free port on the loopback for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        torch.multiprocessing.spawn(run, args=(args, port), nprocs=args.ddp)
    else:
        run(0, args, None)


def run(rank, args, port):
    cfg = read_config(args.config)
    threads = args.threads or cfg["threads"] or os.cpu_count()
    torch.set_num_threads(threads)
    # Denormals flushed to zero (FTZ/DAZ), as any user timing PyTorch on a CPU sets: without it the
    # fp32 steps here run about 4x slower (AdamW's second moments and small gradients go subnormal).
    # trident sets neither flag: its kernels do not slow down on subnormals (measured, README).
    torch.set_flush_denormal(True)
    torch.manual_seed(1234)
    world = args.ddp
    if world > 1:
        torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                             world_size=world)

    model = mixtral(cfg, args.experts_implementation) if cfg["experts"] else GPT(cfg)
    trained = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    forward = torch.compile(trained) if args.compile else trained
    embedding = ("wte", "wpe", "embed_tokens")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and not any(e in n for e in embedding)]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and not any(e in n for e in embedding))]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=cfg["lr"])
    B, T, G = cfg["micro_batch"], cfg["seq_len"], cfg["global_batch"]
    accumulation = G // B
    generator = torch.Generator().manual_seed(rank)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_value = 0.0
        for _ in range(accumulation):
            tokens = torch.randint(0, cfg["vocab"], (B, T + 1), generator=generator)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
                loss = forward(tokens[:, :-1], tokens[:, 1:]) / accumulation
            loss.backward()
            loss_value += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss_value

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    seconds = (time.perf_counter() - start) / args.steps

    if world > 1:
        torch.distributed.destroy_process_group()
        if rank > 0:
            return
    c, L = cfg["hidden"], cfg["layers"]
    flops_per_token = 6 * matmul_params(cfg) + 12 * L * T * c
    tokens_per_s = world * G * T / seconds
    result = {"engine": "pytorch " + torch.__version__ + (" compiled" if args.compile else " eager")
              + (f" DDP x {world}" if world > 1 else ""), "threads": threads,
              "precision": args.precision, "compiled": args.compile,
              "step_s": seconds, "tokens_per_s": tokens_per_s, "tflops": tokens_per_s * flops_per_token / 1e12,
              "loss": loss}
    if args.profile:
        result["breakdown_s"], result["operators_s"] = profile(step, args.steps)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"pytorch {torch.__version__}, {world} x {threads} thread(s), {args.precision}: {tokens_per_s:.1f} tokens/s, "
              f"{result['tflops'] * 1e3:.1f} model GFLOP/s, {seconds:.4f} s per step")
        if args.profile:
            print("time per step by phase (profiled steps, operators' self time):")
            for name, s in result["breakdown_s"].items():
                print(f"  {name:18s} {s:9.4f} s")
            print("operators per step, slowest first:")
            for name, s in list(result["operators_s"].items())[:15]:
                print(f"  {name:40s} {s:9.4f} s")


# torch operators by the phase trident's bench step would count them in. The attention phase
# holds the score and value matmuls (inside trident's fused attention kernel).
PHASES = {
    "gemm": ("aten::mm", "aten::addmm"),
    "attention": ("aten::bmm", "aten::_softmax", "aten::_softmax_backward_data", "aten::masked_fill", "aten::triu",
                  "aten::masked_fill_", "aten::div", "aten::_scaled_dot_product"),
    "loss": ("aten::_log_softmax", "aten::_log_softmax_backward_data", "aten::nll_loss", "aten::nll_loss_forward",
             "aten::nll_loss_backward"),
    "optimizer": ("aten::_foreach", "aten::addcdiv", "aten::addcmul", "aten::lerp", "aten::sqrt", "aten::norm",
                  "aten::linalg_vector_norm", "aten::stack", "aten::mul_", "aten::clamp", "aten::reciprocal"),
}


def phase_of(op):
    for phase, prefixes in PHASES.items():
        if op.startswith(prefixes):
            return phase
    return "elementwise_norm"


def profile(step, steps):
    from torch.profiler import ProfilerActivity, profile as torch_profile
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    phases = {name: 0.0 for name in ["gemm", "attention", "elementwise_norm", "loss", "optimizer"]}
    operators = {}
    for event in prof.key_averages():
        if not event.key.startswith("aten::"):
            continue  # autograd nodes and Python-level scopes: their operators are counted
        seconds = event.self_cpu_time_total / 1e6 / steps
        operators[event.key] = seconds
        phases[phase_of(event.key)] += seconds
    operators = dict(sorted(operators.items(), key=lambda kv: -kv[1]))
    return phases, operators


if __name__ == "__main__":
    main()
