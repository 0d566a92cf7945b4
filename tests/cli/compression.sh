#!/usr/bin/env bash
# End to end: comm.compression on the tiny config with dp 4 (a shorter version of the 300-step
# comparison of utils/compression_convergence.sh): bytes on the wire cut by >= 70% in every mode,
# final loss close to the uncompressed run (int8, powersgd within 3%; plain topk 1% within 20%),
# then the full 300 steps of top-k 1% with nothing but comm.compression = topk (its default
# dense start and warm-up, scaled to train.steps) within 5%, every pipeline
# schedule with pp 2, a NaN skipped through every compressor, and a resume under another dp
# warned about and continued.
# usage: compression.sh TRIDENT SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

steps=80
for mode in none int8 topk powersgd; do
  mpirun -np 4 "$trident" train --config input/configs/tiny.ini --parallel.dp=4 --train.steps=$steps \
    --comm.compression=$mode --log.run_dir="$work/$mode" \
    $([ $mode = topk ] && echo --comm.topk_dense_steps=0 --comm.topk_warmup=0) > "$work/$mode.log"  # plain top-k
done
grep -q "compression int8" "$work/int8.log" || fail "the data-parallel line does not name the compression"

python3 - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
def load(m): return [json.loads(l) for l in (work / m / "metrics.jsonl").read_text().splitlines()]
final = lambda r: sum(l["loss"] for l in r[-10:]) / 10
base = final(load("none"))
bounds = {"int8": 0.03, "powersgd": 0.03, "topk": 0.20}
for mode, bound in bounds.items():
    r = load(mode)
    cut = 1 - r[-1]["comm_bytes"] / r[-1]["comm_bytes_raw"]
    gap = final(r) / base - 1
    print(f"{mode}: final loss {final(r):.4f} vs {base:.4f} ({100*gap:+.2f}%), bytes cut {100*cut:.1f}%")
    assert cut >= 0.70, f"{mode}: bytes on the wire cut by only {100*cut:.1f}%"
    assert abs(gap) <= bound, f"{mode}: final loss {100*gap:+.2f}% off the uncompressed run (bound {100*bound}%)"
    assert all(l["comm_bytes"] < l["comm_bytes_raw"] for l in r), f"{mode}: a step sent uncompressed bytes"
none = load("none")
assert all(l["comm_bytes"] == l["comm_bytes_raw"] for l in none), "uncompressed: comm_bytes must equal comm_bytes_raw"
PY

# Top-k 1%, 300 steps, by default: comm.topk_dense_steps and topk_warmup = auto give a dense
# start of 40 steps (AdamW's variance frozen after it) and a 200-step density warm-up; within 5%
# of the uncompressed run, and the bytes over the whole run (dense steps included) cut by >= 70%.
for mode in none topk; do
  mpirun -np 4 "$trident" train --config input/configs/tiny.ini --parallel.dp=4 --train.steps=300 \
    --comm.compression=$mode --log.run_dir="$work/long_$mode" > "$work/long_$mode.log"
done
python3 - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
def load(m): return [json.loads(l) for l in (work / m / "metrics.jsonl").read_text().splitlines()]
final = lambda r: sum(l["loss"] for l in r[-10:]) / 10
base, r = load("long_none"), load("long_topk")
gap = final(r) / final(base) - 1
cut = 1 - sum(l["comm_bytes"] for l in r) / sum(l["comm_bytes_raw"] for l in r)
print(f"topk 1% (defaults: dense 40, warm-up 200), 300 steps: final loss {final(r):.4f} vs {final(base):.4f} ({100*gap:+.2f}%), "
      f"bytes cut over the run {100*cut:.1f}%")
assert abs(gap) <= 0.05, f"topk: final loss {100*gap:+.2f}% off the uncompressed run (bound 5%)"
assert cut >= 0.70, f"topk: bytes over the run cut by only {100*cut:.1f}%"
assert [l["comm_bytes"] == l["comm_bytes_raw"] for l in r[:5]] == [True] * 5, "topk: the dense steps must be uncompressed"
PY

# Pipeline schedules with pp 2 (dp 2): compressed runs finish with a falling loss.
for schedule in gpipe 1f1b interleaved; do
  vs=1; [ $schedule = interleaved ] && vs=2
  mpirun -np 4 "$trident" train --config input/configs/tiny.ini --parallel.dp=2 --parallel.pp=2 \
    --parallel.schedule=$schedule --parallel.virtual_stages=$vs --train.steps=10 --comm.compression=powersgd \
    --log.run_dir="$work/pp_$schedule" > "$work/pp_$schedule.log" || fail "pp 2, $schedule, powersgd failed"
  grep -q "step 10/10" "$work/pp_$schedule.log" || fail "pp 2, $schedule: no step 10"
done

# A NaN in one rank's gradient reaches every rank through each compressor: that step is skipped,
# the residuals start afresh, and the following steps are finite.
for mode in int8 topk powersgd; do
  TRIDENT_TEST_NONFINITE="rank=1,step=3,count=1,value=nan" mpirun -np 2 "$trident" train --config input/configs/tiny.ini \
    --parallel.dp=2 --train.steps=6 --comm.compression=$mode --log.run_dir="$work/nan_$mode" > "$work/nan_$mode.log" 2>&1 \
    || fail "$mode: run with one bad step failed"
  python3 - "$work/nan_$mode/metrics.jsonl" "$mode" <<'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["step"] for l in lines if l["skipped"]] == [3], f"{sys.argv[2]}: skipped {[l['step'] for l in lines if l['skipped']]}"
assert all(math.isfinite(l["loss"]) and math.isfinite(l["grad_norm"]) for l in lines if l["step"] > 3), sys.argv[2]
PY
done

# Resume: the same layout continues exactly (the MPI test checks bitwise); another dp starts the
# residuals at zero with one warning.
mpirun -np 4 "$trident" train --config input/configs/tiny.ini --parallel.dp=4 --train.steps=6 --comm.compression=int8 \
  --checkpoint.interval=3 --log.run_dir="$work/resume" > "$work/resume1.log"
rm "$work/resume/checkpoints/step_00000006.h5"; echo step_00000003.h5 > "$work/resume/checkpoints/latest"
mpirun -np 2 "$trident" train --config input/configs/tiny.ini --parallel.dp=2 --train.steps=6 --comm.compression=int8 \
  --log.run_dir="$work/resume" > "$work/resume2.log"
grep -q "error-feedback residuals start at zero" "$work/resume2.log" || fail "no warning on a resume under another dp"
grep -q "step 6/6" "$work/resume2.log" || fail "the resumed run did not finish"
echo "compression: all checks passed"
