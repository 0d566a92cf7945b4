#!/usr/bin/env bash
# comm.grad_dtype: data-parallel gradients reduced in bf16 or fp16 halve the bytes on the wire
# and track the fp32 reduction closely (with and without ZeRO-1); combining it with gradient
# compression is a configuration error.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

common=(--config input/configs/tiny.ini --parallel.dp=2 --train.steps=20 --log.interval=1)
for run in fp32 bf16 fp16 bf16-zero; do
  dtype=${run%-zero}
  extra=()
  [ "$run" = bf16-zero ] && extra=(--parallel.zero=1)
  mpirun -np 2 "$trident" train "${common[@]}" --comm.grad_dtype="$dtype" "${extra[@]+"${extra[@]}"}" \
    --log.run_dir="$work/$run" > "$work/$run.log" || fail "$run run failed: $(tail -5 "$work/$run.log")"
done

python3 - "$work" <<'PY'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
def metrics(run):
    return [json.loads(l) for l in (work / run / "metrics.jsonl").read_text().splitlines()]
ref = metrics("fp32")
for run in ("bf16", "fp16", "bf16-zero"):
    m = metrics(run)
    rel = abs(m[-1]["loss"] - ref[-1]["loss"]) / ref[-1]["loss"]
    assert rel < 0.01, f"{run}: final loss {m[-1]['loss']} vs fp32 {ref[-1]['loss']} ({rel:.2%})"
    assert m[-1]["loss"] != ref[-1]["loss"], f"{run}: bitwise the fp32 loss: was the gradient reduced in 16 bits?"
    # ZeRO-1's parameter all-gather (half its traffic) stays fp32: 3/4 of the bytes there
    want = 0.75 if run.endswith("zero") else 0.5
    ratio = m[-1]["comm_bytes"] / m[-1]["comm_bytes_raw"]
    assert abs(ratio - want) < 1e-9, f"{run}: {m[-1]['comm_bytes']} bytes on the wire of {m[-1]['comm_bytes_raw']}"
    print(f"{run}: final loss {m[-1]['loss']:.6f} vs fp32 {ref[-1]['loss']:.6f} ({rel:.4%}), {ratio:.2f} of the bytes")
PY

set +e
"$trident" train --config input/configs/tiny.ini --comm.grad_dtype=bf16 --comm.compression=int8 > "$work/err" 2>&1; code=$?
set -e
[ "$code" -eq 2 ] && grep -q "choose one" "$work/err" || fail "grad_dtype with compression: exit $code, $(cat "$work/err")"
echo "grad dtype: ok"
