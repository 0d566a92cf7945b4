#!/usr/bin/python3
"""Reference fixtures for trident's model and training tests (docs/design.md section 11).

Writes tests/data/fixture_gpt2.h5 and tests/data/fixture_llama.h5: tiny GPT-2 and Llama models
initialised with trident's own counter-based initialiser (ported bit-for-bit from
include/trident/core/rng.hpp), one forward/backward in float64 with torch autograd, and three
AdamW steps with gradient accumulation and clipping. Run on demand, not in CI:

    /usr/bin/python3 utils/make_fixtures.py

Layout of each file: root attributes (config + hyper-parameters), /init/<name> (pure
initialiser), /params/<name> (perturbed values everything else uses), /tokens, /targets,
/logits, /loss, /grads/<name>, /train/{losses,grad_norms,lrs}, /train/params/<name>.
"""
import math
import os

import h5py
import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
M64 = (1 << 64) - 1
SEED = 1234
HYPER = dict(lr=1e-2, min_lr=1e-3, warmup=2, steps=3, beta1=0.9, beta2=0.95, eps=1e-8,
             weight_decay=0.1, clip=0.5, global_batch=4, micro_batch=2)


# ---------------------------------------------------------------- trident's RNG, in numpy
def philox4x32_10(c0, c1, c2, c3, key):
    """Philox4x32-10 on arrays of uint32 counters; uint64 products give the hi/lo halves."""
    k0, k1 = np.uint32(key & 0xFFFFFFFF), np.uint32(key >> 32)
    mul0, mul1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    with np.errstate(over="ignore"):  # uint32 key schedule wraps around on purpose
        for _ in range(10):
            p0 = mul0 * c0.astype(np.uint64)
            p1 = mul1 * c2.astype(np.uint64)
            c0, c1, c2, c3 = ((p1 >> np.uint64(32)).astype(np.uint32) ^ c1 ^ k0,
                              p1.astype(np.uint32),
                              (p0 >> np.uint64(32)).astype(np.uint32) ^ c3 ^ k1,
                              p0.astype(np.uint32))
            k0 = k0 + np.uint32(0x9E3779B9)
            k1 = k1 + np.uint32(0xBB67AE85)
    return c0, c1, c2, c3


def rng_key(seed, name):
    """64-bit FNV-1a of the UTF-8 name, mixed with the seed by splitmix64 (Python ints mod 2^64)."""
    h = 0xCBF29CE484222325
    for c in name.encode("utf-8"):
        h = ((h ^ c) * 0x100000001B3) & M64
    z = (seed ^ h) & M64
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rng_normal(key, n):
    """rng_normal(key, i) for i in [0, n), stream 0, Box-Muller in float64.

    The block is vectorised; log/cos go through Python's math module (the C library's libm,
    like std::log/std::cos in trident) rather than numpy's SIMD kernels, which may differ by an
    ulp and could flip a float32 rounding.
    """
    idx = np.arange(n, dtype=np.uint64)
    lo = (idx & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = (idx >> np.uint64(32)).astype(np.uint32)
    zero = np.zeros(n, dtype=np.uint32)
    r0, r1, _, _ = philox4x32_10(lo, hi, zero, zero, key)
    u1 = (r0.astype(np.float64) + 0.5) * 2.0 ** -32
    u2 = (r1.astype(np.float64) + 0.5) * 2.0 ** -32
    return np.array([math.sqrt(-2.0 * math.log(a)) * math.cos(6.283185307179586 * b)
                     for a, b in zip(u1.tolist(), u2.tolist())], dtype=np.float64)


def f32(x):
    """Round to float32 and back: what a float32 parameter can hold."""
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


# ---------------------------------------------------------------- parameters
def param_specs(cfg):
    """(name, shape, init) in trident's naming; init is ('normal', std), 'ones' or 'zeros'."""
    L, C, NH, NKV, Fh, V, T = (cfg[k] for k in
                               ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len"))
    HS, gpt2 = C // NH, cfg["arch"] == "gpt2"
    w, wo = ("normal", 0.02), ("normal", 0.02 / math.sqrt(2 * L))  # residual outputs scaled
    specs = [("embed.tok.weight", (V, C), w)]
    if gpt2:
        specs.append(("embed.pos.weight", (T, C), w))

    def norm(prefix):  # LayerNorm (GPT-2) has a bias, RMSNorm (Llama) does not
        specs.append((prefix + ".weight", (C,), "ones"))
        if gpt2:
            specs.append((prefix + ".bias", (C,), "zeros"))

    def linear(prefix, out, inp, init):
        specs.append((prefix + ".weight", (out, inp), init))
        if gpt2:
            specs.append((prefix + ".bias", (out,), "zeros"))

    for i in range(L):
        b = f"blocks.{i}."
        norm(b + "attn_norm")
        linear(b + "attn.q", NH * HS, C, w)
        linear(b + "attn.k", NKV * HS, C, w)
        linear(b + "attn.v", NKV * HS, C, w)
        linear(b + "attn.o", C, NH * HS, wo)
        norm(b + "mlp_norm")
        if gpt2:
            linear(b + "mlp.up", Fh, C, w)
            linear(b + "mlp.down", C, Fh, wo)
        else:
            linear(b + "mlp.gate", Fh, C, w)
            linear(b + "mlp.up", Fh, C, w)
            linear(b + "mlp.down", C, Fh, wo)
    norm("final_norm")
    if not gpt2:
        specs.append(("head.weight", (V, C), w))
    return specs


def init_params(specs, seed):
    """Returns (init, params): trident's initialiser, and the fixture's perturbed copy."""
    init, params = {}, {}
    for name, shape, how in specs:
        n = int(np.prod(shape))
        if how == "ones":
            v = np.ones(n)
        elif how == "zeros":
            v = np.zeros(n)
        else:
            v = f32(how[1] * rng_normal(rng_key(seed, name), n))
        init[name] = v.reshape(shape)
        # Biases and norm parameters would start at 0/1, leaving their gradient paths trivial:
        # perturb them. The sum is rounded to float32 so an fp32 model can hold it exactly.
        if how in ("ones", "zeros"):
            v = f32(v + 0.1 * f32(rng_normal(rng_key(seed, name + ".perturb"), n)))
        params[name] = v.reshape(shape)
    return init, params


def decays(name):
    """AdamW weight decay only on 2-D non-embedding weights (the tied GPT-2 head is embed.tok)."""
    return name.endswith(".weight") and not name.startswith("embed.") and "norm" not in name


# ---------------------------------------------------------------- models (explicit forward)
def attention(q, k, v, NH, NKV):
    """Causal softmax attention; q [B,T,NH,HS], k/v [B,T,NKV,HS]; query head h reads kv head h//(NH/NKV)."""
    B, T, _, HS = q.shape
    rep = NH // NKV
    k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B,NH,T,HS]
    s = q @ k.transpose(-1, -2) / math.sqrt(HS)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
    return (p @ v).transpose(1, 2).reshape(B, T, NH * HS)


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)  # biased variance
    return (x - mu) / torch.sqrt(var + eps) * w + b


def rms_norm(x, w, eps=1e-5):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope(x):
    """Rotate-half RoPE on [B,T,H,HS]: angle = pos * 10000^(-2i/HS), i in [0, HS/2)."""
    T, HS = x.shape[1], x.shape[3]
    inv = 10000.0 ** (-2.0 * torch.arange(HS // 2) / HS)
    ang = torch.arange(T).to(torch.float64)[:, None] * inv[None, :]  # [T, HS/2]
    cos, sin = torch.cos(ang)[None, :, None, :], torch.sin(ang)[None, :, None, :]
    x1, x2 = x[..., :HS // 2], x[..., HS // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def forward(cfg, P, tok):
    """Logits [B,T,V] for int64 tokens [B,T]; P maps parameter names to float64 tensors."""
    B, T = tok.shape
    NH, NKV, C = cfg["heads"], cfg["kv_heads"], cfg["hidden"]
    HS, gpt2 = C // NH, cfg["arch"] == "gpt2"
    lin = lambda x, p: x @ P[p + ".weight"].T + (P[p + ".bias"] if gpt2 else 0)
    norm = ((lambda x, p: layer_norm(x, P[p + ".weight"], P[p + ".bias"])) if gpt2
            else (lambda x, p: rms_norm(x, P[p + ".weight"])))
    x = P["embed.tok.weight"][tok]
    if gpt2:
        x = x + P["embed.pos.weight"][torch.arange(T)][None]
    for i in range(cfg["layers"]):
        b = f"blocks.{i}."
        a = norm(x, b + "attn_norm")
        q = lin(a, b + "attn.q").view(B, T, NH, HS)
        k = lin(a, b + "attn.k").view(B, T, NKV, HS)
        v = lin(a, b + "attn.v").view(B, T, NKV, HS)
        if not gpt2:
            q, k = rope(q), rope(k)
        h = x + lin(attention(q, k, v, NH, NKV), b + "attn.o")
        m = norm(h, b + "mlp_norm")
        if gpt2:
            u = F.gelu(lin(m, b + "mlp.up"), approximate="tanh")
        else:
            u = F.silu(lin(m, b + "mlp.gate")) * lin(m, b + "mlp.up")
        x = h + lin(u, b + "mlp.down")
    x = norm(x, "final_norm")
    return x @ (P["embed.tok.weight"] if gpt2 else P["head.weight"]).T  # GPT-2 ties the head


def loss_sum(logits, targets, n_total):
    """Summed cross-entropy over non-ignored (-1) targets, divided by the global count n_total."""
    logp = torch.log_softmax(logits, dim=-1)
    keep = targets >= 0
    nll = -logp.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return (nll * keep).sum() / n_total


def lr_at(s, h):
    if s < h["warmup"]:
        return h["lr"] * (s + 1) / h["warmup"]
    progress = (s - h["warmup"]) / max(1, h["steps"] - h["warmup"])
    return h["min_lr"] + 0.5 * (h["lr"] - h["min_lr"]) * (1 + math.cos(math.pi * progress))


# ---------------------------------------------------------------- one fixture
def make(cfg, path):
    specs = param_specs(cfg)
    init, params = init_params(specs, cfg["seed"])
    T, V, B = cfg["seq_len"], cfg["vocab"], HYPER["global_batch"]
    rng = np.random.default_rng(7)
    tokens = rng.integers(0, V, size=(B, T))
    targets = rng.integers(0, V, size=(B, T))
    targets[1, 0:5] = -1
    targets[3, 10:] = -1
    tok, tgt = torch.from_numpy(tokens), torch.from_numpy(targets)
    n_total = int((targets >= 0).sum())

    # Reference forward/backward on all sequences at once.
    P = {n: torch.tensor(v, requires_grad=True) for n, v in params.items()}
    logits = forward(cfg, P, tok)
    loss = loss_sum(logits, tgt, n_total)
    grads = torch.autograd.grad(loss, list(P.values()))
    grads = {n: g.detach().numpy() for n, g in zip(P, grads)}

    # Sanity: central finite difference of the loss along one random direction, all parameters.
    gen = torch.Generator().manual_seed(1)
    d = {n: torch.randn(p.shape, generator=gen) for n, p in P.items()}
    scale = 1.0 / math.sqrt(sum(float((v * v).sum()) for v in d.values()))  # unit direction
    d = {n: v * scale for n, v in d.items()}
    eps = 1e-5
    with torch.no_grad():
        lp = loss_sum(forward(cfg, {n: P[n] + eps * d[n] for n in P}, tok), tgt, n_total)
        lm = loss_sum(forward(cfg, {n: P[n] - eps * d[n] for n in P}, tok), tgt, n_total)
    fd = float((lp - lm) / (2 * eps))
    an = sum(float((torch.from_numpy(grads[n]) * d[n]).sum()) for n in P)
    assert abs(fd - an) <= 1e-6 * abs(an), (fd, an)

    # Training: 3 AdamW steps, the same 4 sequences each step, 2 micro-batches of 2.
    h = HYPER
    groups = [{"params": [P[n] for n in P if decays(n)], "weight_decay": h["weight_decay"]},
              {"params": [P[n] for n in P if not decays(n)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=h["lr"], betas=(h["beta1"], h["beta2"]), eps=h["eps"])
    losses, norms, lrs = [], [], []
    mb = h["micro_batch"]
    for s in range(h["steps"]):
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for j in range(0, B, mb):  # gradient accumulation; the loss is pre-normalised globally
            l = loss_sum(forward(cfg, P, tok[j:j + mb]), tgt[j:j + mb], n_total)
            l.backward()
            total += float(l)
        if s == 0:  # accumulation must reproduce the full-batch reference
            assert abs(total - float(loss)) < 1e-12
            for n in P:
                assert np.allclose(P[n].grad.numpy(), grads[n], rtol=1e-10, atol=1e-14), n
        norm = float(torch.nn.utils.clip_grad_norm_(list(P.values()), h["clip"]))
        lr = lr_at(s, h)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        losses.append(total)
        norms.append(norm)
        lrs.append(lr)

    with h5py.File(path, "w") as f:
        for k, v in cfg.items():
            f.attrs[k] = np.bytes_(v) if isinstance(v, str) else v  # fixed-length ASCII string
        for k, v in h.items():
            f.attrs[k] = v
        for n in params:
            f[f"init/{n}"] = init[n]
            f[f"params/{n}"] = params[n]
            f[f"grads/{n}"] = grads[n]
            f[f"train/params/{n}"] = P[n].detach().numpy()
        f["tokens"] = tokens.astype(np.int32)
        f["targets"] = targets.astype(np.int32)
        f["logits"] = logits.detach().numpy()
        f["loss"] = np.array([float(loss)])
        f["train/losses"] = np.array(losses)
        f["train/grad_norms"] = np.array(norms)
        f["train/lrs"] = np.array(lrs)
    n_params = sum(v.size for v in params.values())
    print(f"{path}: {cfg['arch']}, {len(params)} tensors, {n_params} values, {n_total} targets, "
          f"{os.path.getsize(path) // 1024} KiB")
    print(f"  loss {float(loss):.15f}  directional FD {fd:.12e} vs autograd {an:.12e}")
    print("  train losses", " ".join(f"{x:.15f}" for x in losses))
    print("  grad norms  ", " ".join(f"{x:.15f}" for x in norms))
    print("  lrs         ", " ".join(f"{x:g}" for x in lrs))


def main():
    # Self-check for trident's C++ RNG: first values of rng_normal(rng_key(1234, "embed.tok.weight"), i).
    key = rng_key(SEED, "embed.tok.weight")
    print(f"rng_key(1234, 'embed.tok.weight') = 0x{key:016x}")
    print("rng_normal i=0..3:", " ".join(repr(float(x)) for x in rng_normal(key, 4)))
    out = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data"))
    os.makedirs(out, exist_ok=True)
    common = dict(layers=2, hidden=32, heads=4, vocab=67, seq_len=16, seed=SEED)
    make(dict(arch="gpt2", kv_heads=4, ffn_hidden=128, **common), os.path.join(out, "fixture_gpt2.h5"))
    make(dict(arch="llama", kv_heads=2, ffn_hidden=64, **common), os.path.join(out, "fixture_llama.h5"))


if __name__ == "__main__":
    main()
