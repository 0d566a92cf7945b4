#!/usr/bin/env bash
# A run's record is never lost: evaluation, benchmarks, conversion and inspection leave every
# file of a finished run byte-identical (eval only appends to eval.jsonl and adds its own
# TensorBoard events file), with and without
# checkpoints; a fresh start in a directory holding an earlier run's metrics is refused (exit 2)
# unless log.overwrite moves that record aside; a resume moves the lines logged after its
# checkpoint to metrics.jsonl.lost-<step> and continues elapsed_s; checkpoint.keep never
# prunes the checkpoint just written nor another run's newer ones; a torn last metrics line is
# dropped on resume.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

tiny=(--config input/configs/tiny.ini --log.eval_batches=2)
# sha256 of every file of a run directory, one "sum  path" line each, in name order.
sums() { (cd "$1" && find . -type f | sort | xargs sha256sum); }
# The files that differ between two sums listings.
changed() { diff <(echo "$1") <(echo "$2") | grep '^[<>]' | awk '{print $3}' | sort -u | xargs; }

# --- 1. Read-only commands on finished runs, without and with checkpoints -------------------
for ckpt in 0 3; do
  run="$work/finished-$ckpt"
  "$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=6 --checkpoint.interval=$ckpt > "$work/train.log"
  before=$(sums "$run")
  [[ $(wc -l < "$run/metrics.jsonl") -eq 6 ]] || fail "want 6 metrics lines"
  "$trident" eval "${tiny[@]}" --log.run_dir="$run" > "$work/eval.log" 2>&1 || fail "eval: $(cat "$work/eval.log")"
  mpirun -np 2 "$trident" eval "${tiny[@]}" --log.run_dir="$run" --parallel.dp=2 > "$work/eval2.log" 2>&1 ||
    fail "eval dp=2: $(cat "$work/eval2.log")"
  "$trident" bench step "${tiny[@]}" --log.run_dir="$run" --steps 1 --warmup 0 > "$work/bench.log" 2>&1 ||
    fail "bench step: $(cat "$work/bench.log")"
  "$trident" plan --model input/configs/tiny.ini --ranks 2 --cluster a100-80g > /dev/null
  if ((ckpt > 0)); then
    "$trident" convert --to hf --input "$run/checkpoints/step_00000006.h5" --output "$work/hf-$ckpt" > /dev/null
    "$trident" inspect "$run/checkpoints/step_00000006.h5" > /dev/null
    grep -q "evaluating $run/checkpoints/step_00000006.h5 (6 steps done)" "$work/eval.log" ||
      fail "eval did not take the newest checkpoint: $(cat "$work/eval.log")"
  fi
  after=$(sums "$run")
  # eval appends to eval.jsonl and adds events files of its own to tensorboard/ (one per eval)
  python3 - "$before" "$after" <<'PY' || fail "checkpoint.interval=$ckpt: read-only commands changed the run directory"
import sys
before, after = ({l.split()[1]: l.split()[0] for l in text.splitlines()} for text in sys.argv[1:])
changed = sorted(p for p in after if after[p] != before.get(p) and not p.startswith("./tensorboard/"))
added = sorted(p for p in after if p not in before and p.startswith("./tensorboard/"))
assert changed == ["./eval.jsonl"], f"changed {changed} (only eval.jsonl may change)"
assert all(after.get(p) == before[p] for p in before if p.startswith("./tensorboard/")), "an events file changed"
assert len(added) == 2 and all(p.startswith("./tensorboard/events.out.tfevents.") for p in added), f"added {added}"
PY
  [[ $(grep -c '"metric":"perplexity"' "$run/eval.jsonl") -eq 2 ]] || fail "want two eval.jsonl perplexity lines"
done
echo "eval (1 and 2 ranks), bench step, plan, convert, inspect: run directories unchanged but eval.jsonl"

# --- 2. A fresh start over an earlier run's record ------------------------------------------
run="$work/finished-0"
before=$(sums "$run")
set +e
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=4 > "$work/again.log" 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "a fresh start over an earlier run's metrics: exit $rc, want 2"
grep -q "holds the record of an earlier run" "$work/again.log" || fail "no message naming the record: $(cat "$work/again.log")"
grep -q "log.overwrite=true" "$work/again.log" || fail "the message does not say what to do"
[[ $(sums "$run") == "$before" ]] || fail "the refused start changed $(changed "$before" "$(sums "$run")")"
old_metrics=$(sha256sum < "$run/metrics.jsonl") old_config=$(sha256sum < "$run/config.ini") old_eval=$(sha256sum < "$run/eval.jsonl")
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=4 --log.overwrite=true > "$work/overwrite.log"
grep -q "moved to metrics.jsonl.1" "$work/overwrite.log" || fail "log.overwrite: no line saying where the record went"
[[ $(sha256sum < "$run/metrics.jsonl.1") == "$old_metrics" && $(sha256sum < "$run/config.ini.1") == "$old_config" &&
   $(sha256sum < "$run/eval.jsonl.1") == "$old_eval" ]] || fail "log.overwrite: the old record was not kept as .1"
[[ $(wc -l < "$run/metrics.jsonl") -eq 4 && ! -e $run/eval.jsonl ]] || fail "log.overwrite: the new record is not the new run's"
grep -q "^steps = 4" "$run/config.ini" || fail "log.overwrite: config.ini is not the new run's"
echo "a fresh start over a record: exit 2 with the way out; log.overwrite keeps the old one as .1"

# --- 3. A job that died after its checkpoint: the resume neither repeats nor loses lines -----
run="$work/died"
set +e
TRIDENT_TEST_FAIL=rank=0,step=7 "$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=8 \
  --checkpoint.interval=4 > "$work/died.log" 2>&1
rc=$?
set -e
[[ $rc -ne 0 && $(wc -l < "$run/metrics.jsonl") -eq 6 ]] || fail "the planted failure at step 7 (rc $rc)"
head -c 40 "$run/metrics.jsonl" >> "$run/metrics.jsonl"  # and a torn last line (a crash mid-write)
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=8 --checkpoint.interval=4 > "$work/resume.log" 2>&1
grep -q "resumed from .*step_00000004.h5" "$work/resume.log" || fail "did not resume from step 4"
grep -q "partial line" "$work/resume.log" || fail "the torn line was not reported: $(cat "$work/resume.log")"
grep -q "moved to $run/metrics.jsonl.lost-4" "$work/resume.log" || fail "the lines past step 4 were not moved aside"
python3 - "$run" <<'PY'
import json, sys
run = sys.argv[1]
lines = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]   # every line parses
assert [l["step"] for l in lines] == list(range(1, 9)), [l["step"] for l in lines]
lost = [json.loads(l) for l in open(f"{run}/metrics.jsonl.lost-4")]
assert [l["step"] for l in lost] == [5, 6], lost
e = [l["elapsed_s"] for l in lines]
assert all(b > a for a, b in zip(e, e[1:])), f"elapsed_s does not continue across the resume: {e}"
print(f"resumed at step 4: steps 1-8 once each, 5-6 of the dead job in metrics.jsonl.lost-4, elapsed_s {e[3]:.3f} -> {e[4]:.3f}")
PY

# --- 4. checkpoint.keep beside another run's newer checkpoints ------------------------------
run="$work/keep"
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=8 --checkpoint.interval=2 --checkpoint.keep=3 > /dev/null
ls "$run/checkpoints" | grep -q step_00000002 && fail "keep = 3 left step 2"
TRIDENT_TEST_PREEMPT=1 "$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=8 --checkpoint.keep=3 \
  --checkpoint.resume=none --log.overwrite=true > "$work/preempt.log"
for s in 1 4 6 8; do [[ -f $run/checkpoints/step_0000000$s.h5 ]] || fail "step_$s.h5 is gone: $(ls "$run/checkpoints")"; done
[[ $(cat "$run/checkpoints/latest") == step_00000001.h5 ]] || fail "latest names $(cat "$run/checkpoints/latest"), not step 1"
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=3 --checkpoint.keep=3 > "$work/requeued.log"
grep -q "resumed from .*step_00000001.h5" "$work/requeued.log" || fail "the requeued run resumed another run's checkpoint"
echo "checkpoint.keep: the new run's step 1 kept and resumed; the earlier run's 4, 6, 8 untouched"

# --- 5. One run per directory at a time ----------------------------------------------------
run="$work/locked"
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=100000 --log.interval=1000 > "$work/first.log" 2>&1 &
first=$!
for _ in $(seq 1 200); do [[ -s $run/.lock && -f $run/config.ini ]] && break; sleep 0.1; done
rc=0; "$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=3 --log.overwrite=true > "$work/second.log" 2>&1 || rc=$?
grep -q "is in use by another run (trident pid $first on host $(hostname)" "$work/second.log" ||
  fail "the second run did not name the holder: $(tail -n 2 "$work/second.log")"
[[ $rc -eq 2 ]] || fail "a second run on a locked directory: exit $rc, want 2"
kill -9 "$first"; wait "$first" 2> /dev/null || true
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=3 --log.overwrite=true > "$work/third.log" 2>&1 ||
  fail "the lock of a killed run was not released: $(tail -n 2 "$work/third.log")"
echo "run directory lock: a second run is exit 2 naming pid $first; the lock of a killed run is gone"
