#!/usr/bin/env bash
# A NaN in one rank's gradient is seen by every rank in the same step: the step is skipped
# everywhere and training goes on; train.max_bad_steps consecutive bad steps stop the run with
# a clear message, the newest checkpoint still the last good one.
# usage: numerical_faults.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

TRIDENT_TEST_NONFINITE="rank=1,step=3,count=1,value=nan" mpirun -np 2 "$trident" train --config input/configs/tiny.ini \
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
TRIDENT_TEST_NONFINITE="rank=0,step=3,count=10" mpirun -np 2 "$trident" train --config input/configs/tiny.ini \
  --parallel.dp=2 --train.steps=10 --train.max_bad_steps=3 --checkpoint.interval=1 --log.run_dir="$work/many" \
  > "$work/many.log" 2>&1 || rc=$?
[[ $rc -ne 0 ]] || fail "three bad steps in a row did not stop the run"
grep -q "stopping: 3 consecutive steps had a non-finite loss or gradient; the newest complete checkpoint (if any) is .*step_00000002.h5" \
  "$work/many.log" || fail "no stop message naming the last good checkpoint: $(tail -n 5 "$work/many.log")"
[[ $(cat "$work/many/checkpoints/latest") == step_00000002.h5 ]] || fail "latest is not the last good checkpoint"
echo "ok: stopped after 3 bad steps (exit $rc), latest = step_00000002.h5"

# Mixed precision: bf16 and fp16 (dynamic loss scaling) track fp32 over 200 steps; an fp16
# overflow (inf in one rank's gradient) skips that step on every rank and halves the scale.
for p in fp32 bf16 fp16; do
  "$trident" train --config input/configs/tiny.ini --train.precision=$p --train.steps=200 --log.interval=50 \
    --log.run_dir="$work/$p" > "$work/$p.log" 2>&1 || fail "$p training failed: $(tail -n 3 "$work/$p.log")"
done
TRIDENT_TEST_NONFINITE="rank=1,step=5,count=1,value=inf" mpirun -np 2 "$trident" train --config input/configs/tiny.ini \
  --parallel.dp=2 --train.precision=fp16 --train.steps=8 --checkpoint.interval=8 --log.run_dir="$work/overflow" \
  > "$work/overflow.log" 2>&1 || fail "fp16 run with an overflow failed"
# The checkpoint carries the halved scale: the resumed steps go on at 32768.
mpirun -np 2 "$trident" train --config input/configs/tiny.ini --parallel.dp=2 --train.precision=fp16 --train.steps=10 \
  --checkpoint.interval=8 --log.run_dir="$work/overflow" > "$work/resumed.log" 2>&1 || fail "fp16 resume failed"
python3 - "$work" <<'PY' || exit 1
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
final = {p: [json.loads(l) for l in (work / p / "metrics.jsonl").read_text().splitlines()][-1]["loss"]
         for p in ("fp32", "bf16", "fp16")}
for p in ("bf16", "fp16"):
    rel = abs(final[p] - final["fp32"]) / final["fp32"]
    assert rel < 0.02, f"{p} final loss {final[p]} vs fp32 {final['fp32']}: {rel:.3%}"
    print(f"ok: {p} final loss {final[p]:.4f} vs fp32 {final['fp32']:.4f} ({rel:.2%})")
lines = {l["step"]: l for l in map(json.loads, (work / "overflow/metrics.jsonl").read_text().splitlines())}
assert [s for s, l in lines.items() if l["skipped"]] == [5], lines
assert lines[5]["loss_scale"] == 65536 and lines[6]["loss_scale"] == 32768, (lines[5], lines[6])
assert lines[1]["loss_scale"] == 65536, lines[1]
assert lines[8]["skipped"] == 0 and lines[8]["loss_scale"] == 32768
assert lines[9]["loss_scale"] == 32768 and lines[10]["loss_scale"] == 32768, (lines[9], lines[10])
print("ok: fp16 overflow at step 5 skipped on every rank, loss scale 65536 -> 32768, training went on, and a "
      "resume went on at 32768")
PY
