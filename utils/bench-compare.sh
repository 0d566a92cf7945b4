#!/usr/bin/env bash
# trident against PyTorch on one config, same batch and threads, in one run of this script:
# trident fp32 and bf16 (`trident bench step`), PyTorch eager and torch.compile, each fp32 and
# bf16 autocast (utils/bench_torch.py), then one table row: the ratio of trident's best
# precision to PyTorch's best mode. Extra arguments go to `trident bench step`.
#   ./utils/bench-compare.sh input/configs/bench-small.ini [--steps N] [--threads T] [--modes eager,compile]
#        [--dp N] [--section.key=value ...]
# --dp N: data parallelism, N ranks of T/N threads each with the config's batch per rank:
# `mpirun -np N trident bench step --parallel.dp=N` against PyTorch's DistributedDataParallel over
# gloo (utils/bench_torch.py --ddp N). As root, export OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 first.
# PYTHON picks the PyTorch (default /usr/bin/python3, Debian's, multiplying through OpenBLAS;
# e.g. PYTHON=/opt/ref/bin/python for PyPI's, with its own MKL-DNN kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:?usage: utils/bench-compare.sh CONFIG [--steps N] [--threads T] [--modes eager,compile] [--dp N] [--section.key=value ...]}
shift
steps=10 threads=$(nproc) modes=eager,compile dp=1 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --dp) dp=$2; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
case "$dp" in ''|*[!0-9]*|0) echo "bench-compare: --dp takes a positive integer (got '$dp')" >&2; exit 2 ;; esac
[ -x build/trident ] || ./utils/build.sh
python=${PYTHON:-/usr/bin/python3}
"$python" -c "import torch" 2>/dev/null || { echo "bench-compare: PyTorch not found for $python (apt install python3-torch, or PYTHON=...)" >&2; exit 2; }
if [ "$python" = /usr/bin/python3 ]; then
  # Debian's PyTorch multiplies through whatever libblas.so.3 is selected; the reference BLAS
  # would make it ~20x slower than it can be, so insist on OpenBLAS (the fair reference).
  blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
  case "$blas" in
    *openblas*) ;;
    *) echo "bench-compare: libblas.so.3 is $blas, not OpenBLAS: PyTorch would be measured on the reference" \
            "BLAS. apt-get install libopenblas0-pthread first." >&2; exit 2 ;;
  esac
  # Some OpenBLAS builds compute wrong results with their AVX-512 kernels on this processor.
  export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
fi

rank_threads=$(( threads / dp > 0 ? threads / dp : 1 ))
launch=() ddp=() label=$(basename "$config" .ini)
if [ "$dp" -gt 1 ]; then
  # Each rank takes the config's batch: the global batch grows with dp, as DDP's does.
  batch=$("$python" -c 'import configparser, sys; c = configparser.ConfigParser(); c.read(sys.argv[1]); t = c["train"]; print(t.getint("global_batch", fallback=t.getint("micro_batch", fallback=1)))' "$config")
  launch=(mpirun -np "$dp") ddp=(--ddp "$dp")
  extra=(--parallel.dp="$dp" --train.global_batch=$(( batch * dp )) "${extra[@]+"${extra[@]}"}")
  label="$label dp=$dp ($dp x $rank_threads threads)"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for precision in fp32 bf16; do
  "${launch[@]+"${launch[@]}"}" ./build/trident bench step --config "$config" --steps "$steps" --json \
    --train.threads="$rank_threads" --train.precision=$precision "${extra[@]+"${extra[@]}"}" > "$out/trident-$precision.json"
done
IFS=, read -r -a mode_list <<< "$modes"
for mode in "${mode_list[@]}"; do
  case "$mode" in eager) flag=() ;; compile) flag=(--compile) ;; *) echo "bench-compare: unknown mode $mode" >&2; exit 2 ;; esac
  for precision in fp32 bf16; do
    "$python" utils/bench_torch.py --config "$config" --steps "$steps" --threads "$rank_threads" --precision $precision \
      "${flag[@]+"${flag[@]}"}" "${ddp[@]+"${ddp[@]}"}" --json > "$out/torch-$mode-$precision.json"
  done
done
"$python" - "$label" "$out" <<'PY'
import json, pathlib, sys
config, out = sys.argv[1], pathlib.Path(sys.argv[2])
runs = {f.stem: json.loads(f.read_text().strip().splitlines()[-1]) for f in sorted(out.glob("*.json"))}
for name, r in runs.items():
    extra = f"  MFU {100 * r['mfu']:.1f}%  peak RSS {r['peak_rss_mb']:.0f} MiB" if "mfu" in r else ""
    print(f"{name:22s} {r['tokens_per_s']:10.1f} tokens/s  {r['tflops'] * 1e3:8.1f} GFLOP/s{extra}")
t32, t16 = runs["trident-fp32"], runs["trident-bf16"]
torch = {k: v for k, v in runs.items() if k.startswith("torch-")}
best_name, best = max(torch.items(), key=lambda kv: kv[1]["tokens_per_s"])
mine = max((t32, t16), key=lambda r: r["tokens_per_s"])
mode = best_name.removeprefix("torch-").replace("-", ", ")
print()
print("| config | trident fp32 | trident bf16 | best PyTorch | trident best / best PyTorch |")
print("|---|---|---|---|---|")
print(f"| {config} | {t32['tokens_per_s']:.0f} tok/s, {100 * t32['mfu']:.0f}% MFU | {t16['tokens_per_s']:.0f} tok/s"
      f" ({t16['tokens_per_s'] / t32['tokens_per_s']:.2f}x fp32) | {best['tokens_per_s']:.0f} ({mode}) |"
      f" {mine['tokens_per_s'] / best['tokens_per_s']:.2f}x |")
PY
