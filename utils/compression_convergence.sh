#!/usr/bin/env bash
# The full comm.compression convergence comparison (issue 13): tiny config, dp=4, 300 steps, every
# mode; prints final loss (mean of the last 10 steps), its gap to none, bytes per step on the wire
# against uncompressed, and the median step time. Slow on 2 cores (a few minutes). Also the
# bytes/step-time measurement on other configs, e.g.
#   utils/compression_convergence.sh build/trident 20 2 input/configs/demo.ini --log.interval=1
# usage: utils/compression_convergence.sh [TRIDENT] [STEPS] [DP] [CONFIG] [--key=value ...]
set -euo pipefail
trident=${1:-build/trident}
steps=${2:-300}
dp=${3:-4}
config=${4:-input/configs/tiny.ini}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
out=$(mktemp -d)
for mode in none int8 topk powersgd; do
  mpirun -np "$dp" "$trident" train --config "$config" --parallel.dp="$dp" --train.steps="$steps" \
    --comm.compression="$mode" --log.run_dir="$out/$mode" "${@:5}" > "$out/$mode.log"
done
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
def load(m): return [json.loads(l) for l in (out / m / "metrics.jsonl").read_text().splitlines()]
base = load("none")
final = lambda r: sum(l["loss"] for l in r[-10:]) / len(r[-10:])
for m in ["none", "int8", "topk", "powersgd"]:
    r = load(m)
    b, raw = r[-1]["comm_bytes"], r[-1]["comm_bytes_raw"]
    st = sorted(l["step_s"] for l in r[1:] or r)[len(r[1:] or r) // 2]
    print(f"{m:9s} final loss {final(r):.4f} ({100*(final(r)/final(base)-1):+.2f}% vs none)  "
          f"bytes/step {b:.0f} of {raw:.0f} raw ({100*(1-b/raw):.1f}% cut)  median step {st*1000:.1f} ms")
PY
rm -rf "$out"
