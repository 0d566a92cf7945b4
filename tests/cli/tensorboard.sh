#!/usr/bin/env bash
# TensorBoard events of `trident train`, read back with tensorboard's EventAccumulator
# (utils/read_tensorboard.py): every metrics.jsonl key is a scalar at every logged step with the
# same value (float32), the resolved config is the text "config"; log.tensorboard = false writes
# no tensorboard/, a bad value is exit 2; a resume after a job died past its checkpoint adds a
# new events file, leaves the old one byte-identical, and TensorBoard shows each step once; a
# fresh start with log.overwrite = true moves tensorboard/ aside as tensorboard.1; a full disk
# under tensorboard/ is warned once while training and metrics.jsonl go on; under dp = 2 only
# world rank 0 writes.
# usage: tensorboard.sh TRIDENT SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

py=/opt/trident-tools/bin/python
[[ -x $py ]] && "$py" -c "import tensorboard" 2> /dev/null ||
  fail "$py with tensorboard is missing: run utils/setup.sh (it installs the venv /opt/trident-tools)"
read_tb() { "$py" utils/read_tensorboard.py "$@"; }
tiny=(--config input/configs/tiny.ini)
events() { find "$1" -maxdepth 1 -name 'events.out.tfevents.*' | sort; }

# --- 1. A tiny run: every metrics key at every logged step, the config text ------------------
run="$work/run"
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=6 --log.interval=2 > "$work/train.log"
[[ $(events "$run/tensorboard" | wc -l) -eq 1 ]] || fail "want one events file: $(ls -A "$run/tensorboard")"
[[ $(basename "$(events "$run/tensorboard")") =~ ^events\.out\.tfevents\.[0-9]{10}\.$(hostname)$ ]] ||
  fail "events file name: $(ls "$run/tensorboard")"
read_tb "$run/tensorboard" --metrics "$run/metrics.jsonl" --config "$run/config.ini" > "$work/read.log" ||
  fail "the events do not match: $(cat "$work/read.log")"
grep -q "all 4 lines" "$work/read.log" || fail "want 4 logged steps (1, 2, 4, 6): $(cat "$work/read.log")"
cat "$work/read.log"

# Evaluations during training: every eval.jsonl line (validation and a choice task with a
# perturbation, so level and perturbation labels) is a scalar at its step.
printf '%s\n' '{"context": "def", "choices": ["main", "x y"], "gold": 0, "level": "easy"}' \
  '{"context": "import", "choices": ["os", "zz"], "gold": 0, "level": "hard"}' > "$work/choice.jsonl"
"$trident" train "${tiny[@]}" --log.run_dir="$work/evals" --train.steps=4 --log.eval_interval=2 --log.eval_batches=1 \
  --eval.task="$work/choice.jsonl" --eval.perturb=case > "$work/evals.log"
read_tb "$work/evals/tensorboard" --metrics "$work/evals/metrics.jsonl" --eval "$work/evals/eval.jsonl" > "$work/read.log" ||
  fail "evaluations: $(cat "$work/read.log")"
grep -q "eval/choice.jsonl/acc/easy:" "$work/read.log" || fail "no per-level eval scalar: $(cat "$work/read.log")"
grep -q "eval/choice.jsonl/acc/case:" "$work/read.log" || fail "no perturbation eval scalar"
# Standalone trident eval adds its results in an events file of its own: still every line.
"$trident" eval "${tiny[@]}" --log.run_dir="$work/evals" --log.eval_batches=1 --eval.task="$work/choice.jsonl" \
  > "$work/standalone.log"
[[ $(ls "$work/evals/tensorboard" | wc -l) -eq 2 ]] || fail "standalone eval: $(ls "$work/evals/tensorboard")"
read_tb "$work/evals/tensorboard" --metrics "$work/evals/metrics.jsonl" --eval "$work/evals/eval.jsonl" > "$work/read.log" ||
  fail "standalone eval: $(cat "$work/read.log")"
echo "evaluations: every eval.jsonl line is a scalar at its step (trident eval's too)"

# Two data-parallel ranks: world rank 0 alone writes events.
mpirun -np 2 "$trident" train "${tiny[@]}" --parallel.dp=2 --log.run_dir="$work/dp2" --train.steps=2 > "$work/dp2.log"
[[ $(events "$work/dp2/tensorboard" | wc -l) -eq 1 ]] || fail "dp=2: want one events file: $(ls -A "$work/dp2/tensorboard")"
read_tb "$work/dp2/tensorboard" --metrics "$work/dp2/metrics.jsonl" --config "$work/dp2/config.ini" > "$work/read.log" ||
  fail "dp=2: $(cat "$work/read.log")"
echo "dp=2: one events file (rank 0), equal to metrics.jsonl"

# --- 2. log.tensorboard = false, and a bad value --------------------------------------------
"$trident" train "${tiny[@]}" --log.run_dir="$work/off" --train.steps=2 --log.tensorboard=false > /dev/null
[[ -s $work/off/metrics.jsonl && ! -e $work/off/tensorboard ]] || fail "log.tensorboard = false: $(ls -A "$work/off")"
rc=0
"$trident" train "${tiny[@]}" --log.run_dir="$work/bad" --train.steps=2 --log.tensorboard=maybe > "$work/bad.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "log.tensorboard = maybe: exit $rc, want 2"
grep -q "log.tensorboard: expected true or false, got 'maybe'" "$work/bad.log" || fail "no message: $(cat "$work/bad.log")"
[[ ! -e $work/bad/tensorboard ]] || fail "a refused start wrote events"
echo "log.tensorboard = false: no tensorboard/; 'maybe': exit 2 naming the key"

# --- 3. A job that died after its checkpoint, resumed ---------------------------------------
run="$work/died"
rc=0
TRIDENT_TEST_FAIL=rank=0,step=7 "$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=8 \
  --checkpoint.interval=4 > "$work/died.log" 2>&1 || rc=$?
[[ $rc -ne 0 ]] || fail "the planted failure at step 7 did not stop the run"
first=$(events "$run/tensorboard")
first_sum=$(sha256sum < "$first")
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=8 --checkpoint.interval=4 > "$work/resume.log" 2>&1 ||
  fail "the resume failed: $(tail -n 3 "$work/resume.log")"
grep -q "resumed from .*step_00000004.h5" "$work/resume.log" || fail "did not resume from step 4"
[[ $(events "$run/tensorboard" | wc -l) -eq 2 && $(events "$run/tensorboard" | head -n 1) == "$first" ]] ||
  fail "the resume did not add a second events file after the first: $(ls "$run/tensorboard")"
[[ $(sha256sum < "$first") == "$first_sum" ]] || fail "the resume changed the first events file"
# Steps 5 and 6 of the dead job are in the first file; the second's SessionLog START at step 5
# makes TensorBoard drop them: each step once, with the resumed run's values.
read_tb "$run/tensorboard" --metrics "$run/metrics.jsonl" --config "$run/config.ini" > "$work/read.log" ||
  fail "after the resume: $(cat "$work/read.log")"
grep -q "all 8 lines" "$work/read.log" || fail "want steps 1-8: $(cat "$work/read.log")"
echo "resume: a second events file, the first byte-identical, steps 1-8 once each"

# --- 4. A fresh start with log.overwrite = true ---------------------------------------------
sums_before=$(cd "$run/tensorboard" && sha256sum events.out.tfevents.*)
"$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=3 --checkpoint.resume=none --log.overwrite=true \
  > "$work/overwrite.log"
grep -q "and tensorboard.1" "$work/overwrite.log" || fail "log.overwrite: no line naming tensorboard.1"
[[ $(cd "$run/tensorboard.1" && sha256sum events.out.tfevents.*) == "$sums_before" ]] ||
  fail "log.overwrite: tensorboard.1 does not hold the old files unchanged"
[[ $(events "$run/tensorboard" | wc -l) -eq 1 ]] || fail "log.overwrite: want one new events file"
read_tb "$run/tensorboard" --metrics "$run/metrics.jsonl" --config "$run/config.ini" > "$work/read.log" ||
  fail "after log.overwrite: $(cat "$work/read.log")"
grep -q "all 3 lines" "$work/read.log" || fail "log.overwrite: want steps 1-3: $(cat "$work/read.log")"
echo "log.overwrite: tensorboard/ moved to tensorboard.1 unchanged, a new one for the new run"

# --- 5. A full disk under tensorboard/ ------------------------------------------------------
run="$work/full"
mkdir -p "$run/tensorboard"
if mount -t tmpfs -o size=16k tmpfs "$run/tensorboard" 2> /dev/null; then
  trap 'if mountpoint -q "$run/tensorboard"; then umount "$run/tensorboard"; fi; rm -rf "$work"' EXIT
  rc=0
  "$trident" train "${tiny[@]}" --log.run_dir="$run" --train.steps=40 > "$work/full.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || fail "a full disk under tensorboard/ stopped the run (exit $rc): $(tail -n 3 "$work/full.log")"
  [[ $(grep -c "TensorBoard events" "$work/full.log") -eq 1 ]] &&
    grep -q "warning: TensorBoard events: cannot write .*No space left on device" "$work/full.log" ||
    fail "want one warning: $(grep "TensorBoard events" "$work/full.log")"
  [[ $(wc -l < "$run/metrics.jsonl") -eq 40 ]] || fail "metrics.jsonl lost lines"
  read_tb "$run/tensorboard" > "$work/read.log" || fail "the full disk left a torn record: $(cat "$work/read.log")"
  echo "full disk: $(grep -h 'TensorBoard events' "$work/full.log" | sed 's/.*warning: //'), $(head -n 1 "$work/read.log")"
else
  echo "cannot mount a tmpfs here (not root): the full-disk case is not run"
fi
