#!/usr/bin/env python3
"""`trident eval` against lm-evaluation-harness's Hugging Face backend: the same random GPT-2 model
(save_pretrained, fp32 safetensors) and the same multiple-choice task, one run of each, timed end
to end (wall clock around the whole command: start-up, model load, tokenization, scoring), on the
same 2 threads. Prints both tools' acc / acc_norm (which must be equal, to 1e-9) and the time ratio
lm-eval / trident; exits 1 when a command fails or the accuracies differ.

  /opt/ref/bin/python utils/lmeval_speed.py [WORK_DIR] [options]     (default /tmp/lmeval_speed)
  utils/lmeval_speed.sh [WORK_DIR] [options]      the same; creates /opt/ref first when it lacks
                                                  the packages below

Under WORK_DIR:
  model/          GPT2LMHeadModel (default n_embd 512, n_layer 8, n_head 8, n_positions 512: 25.84M
                  parameters with the repo's 704-token byte-level BPE
                  tests/data/tokenizers/gpt2/tokenizer.json; every parameter drawn by
                  make_hf_fixtures.randomize, seeded) + tokenizer.json + tokenizer_config.json
  task.jsonl      --examples (500) lines {"context", "choices": [4 strings], "gold"}: contexts of
                  100-250 tokens, choices of 5-30 tokens (" " + choice, as both tools score it),
                  cut from the docstrings of the Python standard library in /usr/lib/python3.*/
                  (top-level modules, sorted; doctest lines dropped; read with ast, not imported).
                  The gold choice is the text that follows the context, the three others are
                  spans from elsewhere; gold's position is drawn. All drawn from --seed.
  lmeval/         the harness's custom task YAML (as utils/make_lmeval_fixtures.py writes it), its
                  results JSON and log, and a fresh HF_HOME (so the datasets cache is rebuilt
                  inside each timed run)
  trident         a copy of --trident (default build/trident), so that a rebuild during the
                  measurement cannot give the two trident runs different binaries
  runs/<name>/    trident's --log.run_dir per run (removed first), logs beside them

Runs (each one process tree, timed by this script, exit codes from the processes themselves):
  lm-eval         lm-eval run --model hf --model_args pretrained=model,dtype=float32,max_length=P
                  --batch_size 16 --device cpu, in a Python that calls torch.set_num_threads(2)
                  first, with OMP_NUM_THREADS=MKL_NUM_THREADS=2
  trident 1x2     build/trident eval --model.init_from=model --model.seq_len=P --train.micro_batch=16
                  --train.global_batch=16 --train.threads=2 --eval.task=task.jsonl, OMP_NUM_THREADS=2
  trident dp2x1   mpirun -np 2 build/trident eval ... --train.global_batch=32 --parallel.dp=2
                  --train.threads=1, OMP_NUM_THREADS=1
where P = n_positions. Each run prints the load average (os.getloadavg) before it and, after it,
the CPU time its process tree used and the CPU time the rest of the machine used meanwhile (busy
time of /proc/stat less the tree's rusage): on a 2-core machine anything else running (a compiler)
disturbs the times, and "others" says by how much.

Made with (PyPI; torch's default wheel, with its CUDA packages: /opt/ref takes ~6.2 GB):
  python3 -m venv /opt/ref && /opt/ref/bin/pip install torch==2.15.0 transformers==5.25.0 \
      lm-eval==0.4.13 tokenizers==0.23.3 accelerate==1.16.0
(datasets 5.2.0 came with lm-eval; lm-eval's HF backend imports accelerate but does not require it.)

Measured on the 2-core machine, nothing else running (others 0.01 cores in every run), trident
built from 717a385: lm-eval 180.2 s, trident 55.5 s (1 rank x 2 threads, 3.25x) and 47.8 s
(dp 2 x 1 thread, 3.77x); acc 0.2720 and acc_norm 0.2360 in all three.
"""
import argparse
import ast
import glob
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time

root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TOKENIZER = os.path.join(root, "tests/data/tokenizers/gpt2/tokenizer.json")
TASK = "trident_speed_choice"


def make_model(out, args):
    import transformers
    from tokenizers import Tokenizer
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_hf_fixtures import randomize
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shutil.copy(TOKENIZER, out)
    vocab = Tokenizer.from_file(TOKENIZER).get_vocab_size(with_added_tokens=True)
    cfg = transformers.GPT2Config(vocab_size=vocab, n_positions=args.n_positions, n_embd=args.n_embd,
                                  n_layer=args.n_layer, n_head=args.n_head, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg)
    randomize(model, args.seed, scale=args.scale)
    model.save_pretrained(out, safe_serialization=True)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": args.n_positions,
                   "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}, f, indent=1)
    return sum(p.numel() for p in model.parameters())


def stdlib_dir():
    for d in sorted(glob.glob("/usr/lib/python3.[0-9]*"), reverse=True):
        if len(glob.glob(os.path.join(d, "*.py"))) > 50:
            return d
    import sysconfig
    return sysconfig.get_paths()["stdlib"]


def prose_words(d):
    """The words of the docstrings of d's top-level modules, in file order, doctest lines dropped."""
    words = []
    for path in sorted(glob.glob(os.path.join(d, "*.py"))):
        try:
            tree = ast.parse(open(path, encoding="utf-8").read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            lines = [l for l in doc.splitlines() if not l.strip().startswith((">>>", "..."))]
            w = " ".join(lines).split()
            if len(w) >= 12:
                words.extend(w)
    return words


def write_task(path, n, seed, ctx_range=(100, 250), choice_range=(5, 30)):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(TOKENIZER)
    src = stdlib_dir()
    words = prose_words(src)
    cost = [len(tok.encode(" " + w, add_special_tokens=False).ids) for w in words]
    count = lambda text: len(tok.encode(text, add_special_tokens=False).ids)  # noqa: E731
    rng = random.Random(seed)

    def span(start, lo, hi, lead):
        """Words from start whose text (" "-led when lead) has lo..hi tokens, or None."""
        target, total, end = rng.randint(lo, hi), 0, start
        while total < target and end < len(words):
            total += cost[end]
            end += 1
        text = " ".join(words[start:end])
        k = count((" " if lead else "") + text)
        return (text, end) if lo <= k <= hi else (None, end)

    lines, ctx_tokens, choice_tokens = [], [], []
    while len(lines) < n:
        context, end = span(rng.randrange(len(words) - 2000), *ctx_range, lead=False)
        if context is None:
            continue
        gold_text, _ = span(end, *choice_range, lead=True)
        choices = [gold_text]
        while gold_text is not None and len(choices) < 4:
            other, _ = span(rng.randrange(len(words) - 100), *choice_range, lead=True)
            if other is not None and other not in choices:
                choices.append(other)
        if gold_text is None:
            continue
        gold = rng.randrange(4)
        choices[0], choices[gold] = choices[gold], choices[0]
        lines.append({"context": context, "choices": choices, "gold": gold})
        ctx_tokens.append(count(context))
        choice_tokens += [count(" " + c) for c in choices]
    with open(path, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return src, len(words), ctx_tokens, choice_tokens


def task_yaml(d, data):
    """As utils/make_lmeval_fixtures.py writes a choice task."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, TASK + ".yaml"), "w") as f:
        f.write(f"task: {TASK}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\n"
                "test_split: test\n"
                "output_type: multiple_choice\ndoc_to_text: context\ndoc_to_choice: choices\ndoc_to_target: gold\n"
                "metric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
                "  - metric: acc_norm\n    aggregation: mean\n    higher_is_better: true\n")


def busy_seconds():
    """CPU seconds the whole machine has been busy (all cores, /proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(name, cmd, env, log):
    """Runs cmd (output to log, no pipe), returns its wall-clock seconds; exits 1 when it fails."""
    load = os.getloadavg()
    print(f"[{name}] load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {' '.join(cmd)}", flush=True)
    with open(log, "w") as out:
        busy0, cpu0 = busy_seconds(), children_cpu()
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            cwd=root).returncode
        seconds = time.perf_counter() - t0
        busy1, cpu1 = busy_seconds(), children_cpu()
    if rc != 0:
        with open(log, errors="replace") as f:
            tail = f.read()[-4000:]
        print(f"[{name}] FAILED: exit {rc} after {seconds:.1f} s; the end of {log}:\n{tail}")
        sys.exit(1)
    others = ""
    if busy0 is not None and busy1 is not None:
        rest = max(0.0, (busy1 - busy0) - (cpu1 - cpu0))
        others = f"; others on the machine meanwhile {rest:.1f} CPU s ({rest / seconds:.2f} cores on average)"
    print(f"[{name}] {seconds:.2f} s wall, {cpu1 - cpu0:.1f} CPU s{others}", flush=True)
    return seconds


def base_env(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    return env


def run_lmeval(work, model, data, args):
    d = os.path.join(work, "lmeval")
    shutil.rmtree(d, ignore_errors=True)
    task_yaml(os.path.join(d, "tasks"), data)
    env = base_env(args.threads)
    env.update(HF_HOME=os.path.join(d, "hf_home"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", RAYON_NUM_THREADS=str(args.threads))
    boot = (f"import sys, torch; torch.set_num_threads({args.threads}); sys.argv[0] = 'lm_eval'; "
            "from lm_eval.__main__ import cli_evaluate; cli_evaluate()")
    cmd = [args.python, "-c", boot, "run", "--model", "hf", "--model_args",
           f"pretrained={model},dtype=float32,max_length={args.n_positions}", "--tasks", TASK,
           "--include_path", os.path.join(d, "tasks"), "--batch_size", str(args.batch), "--device", "cpu",
           "--num_fewshot", "0", "--output_path", os.path.join(d, "out")]
    seconds = timed("lm-eval", cmd, env, os.path.join(d, "lm_eval.log"))
    found = sorted(glob.glob(os.path.join(d, "out", "**", "results_*.json"), recursive=True))
    if not found:
        print(f"[lm-eval] no results_*.json under {d}/out")
        sys.exit(1)
    res = json.load(open(found[-1]))["results"][TASK]
    return seconds, float(res["acc,none"]), float(res["acc_norm,none"])


def run_trident(work, model, data, args, ranks):
    name = f"trident-{'dp2x1' if ranks == 2 else '1x2'}"
    run_dir = os.path.join(work, "runs", name)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    threads = args.threads // ranks
    env = base_env(threads)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [args.trident, "eval", f"--model.init_from={model}", f"--model.seq_len={args.n_positions}",
           f"--train.micro_batch={args.batch}", f"--train.global_batch={args.batch * ranks}",
           f"--train.threads={threads}", f"--eval.task={data}", f"--log.run_dir={run_dir}"]
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks)] + cmd + [f"--parallel.dp={ranks}"]
    seconds = timed(name, cmd, env, run_dir + ".log")
    metrics = {}
    for line in open(os.path.join(run_dir, "eval.jsonl")):
        m = json.loads(line)
        if not m.get("level") and not m.get("perturbation"):
            metrics[m["metric"]] = m["value"]
    if "acc" not in metrics or "acc_norm" not in metrics:
        print(f"[{name}] no acc / acc_norm in {run_dir}/eval.jsonl: {metrics}")
        sys.exit(1)
    return name, seconds, float(metrics["acc"]), float(metrics["acc_norm"])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("work", nargs="?", default="/tmp/lmeval_speed")
    p.add_argument("--trident", default=os.path.join(root, "build/trident"))
    p.add_argument("--python", default=sys.executable, help="the Python that runs lm-eval (default: this one)")
    p.add_argument("--examples", type=int, default=500)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--n-embd", type=int, default=512)
    p.add_argument("--n-layer", type=int, default=8)
    p.add_argument("--n-head", type=int, default=8)
    p.add_argument("--n-positions", type=int, default=512)
    p.add_argument("--scale", type=float, default=0.1, help="std of the random matrices (randomize)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--skip-dp", action="store_true", help="no mpirun -np 2 run")
    args = p.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    model, data = os.path.join(work, "model"), os.path.join(work, "task.jsonl")

    binary = os.path.join(work, "trident")
    shutil.copy2(args.trident, binary)
    head = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h %ci"], capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    print(f"trident: {args.trident}, built {time.ctime(os.path.getmtime(args.trident))}; source {head.strip()}"
          f"{' + uncommitted changes' if dirty else ''}; copied to {binary}")
    args.trident = binary

    params = make_model(model, args)
    src, nwords, ctx, ch = write_task(data, args.examples, args.seed)
    print(f"model: GPT-2 n_embd {args.n_embd} n_layer {args.n_layer} n_head {args.n_head} n_positions "
          f"{args.n_positions}, {params / 1e6:.2f}M parameters ({model})")
    print(f"task: {args.examples} x 4 choices from {nwords} docstring words of {src}; context tokens "
          f"{min(ctx)}-{max(ctx)} (mean {sum(ctx) / len(ctx):.0f}), choice tokens {min(ch)}-{max(ch)} "
          f"(mean {sum(ch) / len(ch):.1f}) ({data})", flush=True)

    rows = [("lm-eval (HF)",) + run_lmeval(work, model, data, args)]
    rows.append(run_trident(work, model, data, args, 1))
    if not args.skip_dp:
        rows.append(run_trident(work, model, data, args, 2))

    ref = rows[0]
    print(f"\n{'tool':<14} {'seconds':>9} {'acc':>8} {'acc_norm':>9} {'lm-eval/tool':>13}")
    for tool, seconds, acc, acc_norm in rows:
        print(f"{tool:<14} {seconds:>9.2f} {acc:>8.4f} {acc_norm:>9.4f} {ref[1] / seconds:>12.2f}x")
    bad = [r[0] for r in rows[1:] if abs(r[2] - ref[2]) > 1e-9 or abs(r[3] - ref[3]) > 1e-9]
    if bad:
        print(f"FAIL: accuracies differ from lm-eval's: {', '.join(bad)}")
        sys.exit(1)
    print("accuracies equal (1e-9)")


if __name__ == "__main__":
    main()
