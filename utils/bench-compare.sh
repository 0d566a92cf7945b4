#!/usr/bin/env bash
# Runs trident and the PyTorch reference on one config, same batch and threads, in one go, and
# prints both and the ratio. Extra arguments go to `trident bench step` (e.g. --train.precision=bf16).
#   ./utils/bench-compare.sh input/configs/bench-gpt2-124m.ini [--steps N] [--threads T] [trident overrides]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:?usage: utils/bench-compare.sh CONFIG [--steps N] [--threads T] [--section.key=value ...]}
shift
steps=10 threads=$(nproc) extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
[ -x build/trident ] || ./utils/build.sh
python=/usr/bin/python3
"$python" -c "import torch" 2>/dev/null || { echo "bench-compare: PyTorch not found for $python (apt install python3-torch)" >&2; exit 2; }
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

precision=fp32
for arg in "${extra[@]+"${extra[@]}"}"; do
  case "$arg" in --train.precision=*) precision=${arg#--train.precision=} ;; esac
done
trident_json=$(./build/trident bench step --config "$config" --steps "$steps" --json --train.threads="$threads" "${extra[@]+"${extra[@]}"}")
torch_json=$("$python" utils/bench_torch.py --config "$config" --steps "$steps" --threads "$threads" --precision "$precision" --json)
"$python" - "$trident_json" "$torch_json" <<'PY'
import json, sys
t, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"trident : {t['tokens_per_s']:10.1f} tokens/s  {t['tflops']*1e3:8.1f} GFLOP/s  MFU {100*t['mfu']:.1f}%  peak RSS {t['peak_rss_mb']:.0f} MiB")
print(f"pytorch : {p['tokens_per_s']:10.1f} tokens/s  {p['tflops']*1e3:8.1f} GFLOP/s  ({p['engine']}, {p['threads']} threads)")
print(f"ratio   : {t['tokens_per_s'] / p['tokens_per_s']:.2f}x tokens/s (trident / pytorch)")
PY
