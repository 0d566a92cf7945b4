#!/usr/bin/env bash
# A NaN in one rank's gradient is seen by every rank in the same step: the step is skipped
# everywhere and training goes on; train.max_bad_steps consecutive bad steps stop the run with
# a clear message, the newest checkpoint still the last good one.
# usage: numerical_faults.sh TRIDENT SOURCE_DIR
set -uo pipefail
trident=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src"
fail() { echo "FAIL: $*"; exit 1; }

TRIDENT_TEST_NAN="rank=1,step=3,count=1" mpirun -np 2 "$trident" train --config input/configs/tiny.ini \
  --parallel.dp=2 --train.steps=6 --log.run_dir="$work/one" > "$work/one.log" 2>&1 || fail "run with one bad step failed"
grep -q "step 3 skipped: non-finite loss or gradient (1 in a row" "$work/one.log" || fail "no skip message"
python3 - "$work/one/metrics.jsonl" <<'PY' || exit 1
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
skipped = [l["step"] for l in lines if l["skipped"]]
assert skipped == [3], f"skipped steps {skipped}, want [3]"
assert all(l["loss"] is not None and math.isfinite(l["loss"]) for l in lines if not l["skipped"]), lines
print("ok: step 3 skipped on every rank, steps", [l["step"] for l in lines], "logged")
PY

rc=0
TRIDENT_TEST_NAN="rank=0,step=3,count=10" mpirun -np 2 "$trident" train --config input/configs/tiny.ini \
  --parallel.dp=2 --train.steps=10 --train.max_bad_steps=3 --checkpoint.interval=1 --log.run_dir="$work/many" \
  > "$work/many.log" 2>&1 || rc=$?
[[ $rc -ne 0 ]] || fail "three bad steps in a row did not stop the run"
grep -q "stopping: 3 consecutive steps had a non-finite loss or gradient; the newest complete checkpoint (if any) is .*step_00000002.h5" \
  "$work/many.log" || fail "no stop message naming the last good checkpoint: $(tail -n 5 "$work/many.log")"
[[ $(cat "$work/many/checkpoints/latest") == step_00000002.h5 ]] || fail "latest is not the last good checkpoint"
echo "ok: stopped after 3 bad steps (exit $rc), latest = step_00000002.h5"
