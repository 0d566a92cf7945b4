#!/usr/bin/env bash
# LISA end to end: a dp=2 run draws its blocks every lisa.interval steps (logged with the
# optimizer state, which is that of the drawn blocks only), writes checkpoints and resumes
# mid-period with the same losses as the uninterrupted run; bad LISA settings are clear errors.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

lisa=(--config input/configs/tiny.ini --lisa.enabled=true --lisa.layers=2 --lisa.interval=4 --parallel.dp=2
      --log.interval=1)
mpirun -np 2 "$trident" train "${lisa[@]}" --train.steps=10 --log.run_dir="$work/full" > "$work/full.log"
[ "$(grep -c "LISA at step" "$work/full.log")" -eq 3 ] || fail "want draws at steps 1, 5, 9: $(grep LISA "$work/full.log")"
grep -q "blocks \[[0-7], [0-7]\] of 8 trained, embedding, head; optimizer state" "$work/full.log" || fail "$(grep LISA "$work/full.log")"
# Stopped after step 6 (mid-period), then resumed to step 10.
mpirun -np 2 "$trident" train "${lisa[@]}" --train.steps=6 --checkpoint.interval=6 --log.run_dir="$work/cut" > /dev/null
mpirun -np 2 "$trident" train "${lisa[@]}" --train.steps=10 --log.run_dir="$work/cut" > "$work/resumed.log"
grep -q "resumed from" "$work/resumed.log" || fail "did not resume: $(cat "$work/resumed.log")"
python3 - "$work/full/metrics.jsonl" "$work/cut/metrics.jsonl" <<'PY'
import json, sys
full, cut = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert [l["step"] for l in cut] == list(range(1, 11)), [l["step"] for l in cut]
for a, b in zip(full, cut):
    assert abs(a["loss"] - b["loss"]) <= 1e-9 * a["loss"], (a["step"], a["loss"], b["loss"])
    assert a["optim_state_mb"] == b["optim_state_mb"]
full_state = 3.23926  # tiny.ini's AdamW moments with every layer trained (MiB)
assert all(l["optim_state_mb"] < 0.5 * full_state for l in full), [l["optim_state_mb"] for l in full]
print(f"LISA resumed mid-period: 10 equal losses; optimizer state {full[0]['optim_state_mb']:.3f} MiB per rank")
PY

expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN in the message
  local pattern=$1 code
  shift
  set +e
  "$trident" train --config input/configs/tiny.ini "$@" > "$work/err" 2>&1; code=$?
  set -e
  [ "$code" -eq 2 ] || fail "$*: exit $code, want 2: $(cat "$work/err")"
  grep -q -- "$pattern" "$work/err" || fail "$*: unclear message: $(cat "$work/err")"
}
expect_error "lisa.layers = 9 must be in \[1, model.layers = 8\]" --lisa.enabled=true --lisa.layers=9
expect_error "lisa.interval must be >= 1" --lisa.enabled=true --lisa.interval=0
expect_error "choose one way of fine-tuning" --lisa.enabled=true --lora.enabled=true
echo "lisa: ok"
