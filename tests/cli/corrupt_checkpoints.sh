#!/usr/bin/env bash
# Damaged checkpoints: a checkpoint's root attributes (step, data position, config text) are
# covered by a checksum, so one changed attribute is found by inspect and by every load;
# checkpoint.resume = auto skips a corrupt or truncated newest checkpoint with a warning and
# resumes the newest intact one; `latest` naming anything but a step file of its directory is
# ignored; none intact is exit 2 naming the directory.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
/usr/bin/python3 -c "import h5py" 2> /dev/null || { echo "SKIP: python3-h5py is not installed"; exit 77; }

run="$work/run"
tiny=(--config input/configs/tiny.ini --log.run_dir="$run" --checkpoint.interval=2 --checkpoint.keep=0)
"$trident" train "${tiny[@]}" --train.steps=6 > /dev/null
ck="$run/checkpoints"
cp "$ck/step_00000006.h5" "$work/good.h5"

# One attribute changed (the data position): inspect and a resume of that file refuse it.
/usr/bin/python3 -c "import h5py, sys; h5py.File(sys.argv[1], 'r+').attrs['sampler_step'] = 5.0" "$ck/step_00000006.h5"
rc=0; "$trident" inspect "$ck/step_00000006.h5" > "$work/inspect.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "root attributes .* fail their checksum" "$work/inspect.log" ||
  fail "inspect of a changed attribute: exit $rc, $(cat "$work/inspect.log")"
rc=0; "$trident" train "${tiny[@]}" --train.steps=8 --checkpoint.resume="$ck/step_00000006.h5" > "$work/explicit.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "fail their checksum" "$work/explicit.log" || fail "resume of the named corrupt file: exit $rc"

# auto: the corrupt newest is skipped, step 4 resumed.
"$trident" train "${tiny[@]}" --train.steps=8 > "$work/auto.log" 2>&1 || fail "auto resume: $(tail -n 3 "$work/auto.log")"
grep -q "skipping $ck/step_00000006.h5: .*fail their checksum.*trying the next older one" "$work/auto.log" ||
  fail "no warning about the corrupt newest: $(grep -v '^step' "$work/auto.log" | head -n 5)"
grep -q "resumed from $ck/step_00000004.h5: 4 steps done" "$work/auto.log" || fail "did not resume step 4"
echo "ok: a changed attribute is found; auto resumes step 4 past the corrupt step 6"

# A truncated newest (the run's step 8 now) is skipped the same way.
truncate -s 100000 "$ck/step_00000008.h5"
"$trident" eval --config input/configs/tiny.ini --log.run_dir="$run" --log.eval_batches=1 > "$work/eval.log" 2>&1 ||
  fail "eval past a truncated newest: $(tail -n 3 "$work/eval.log")"
grep -q "skipping $ck/step_00000008.h5" "$work/eval.log" && grep -q "evaluating $ck/step_00000006.h5" "$work/eval.log" ||
  fail "eval did not skip the truncated step 8: $(grep -v '^ ' "$work/eval.log" | head -n 6)"
echo "ok: a truncated newest is skipped (eval took the rewritten step 6)"

# `latest` naming a path outside the directory or a temporary file is not followed.
for bad in ../../good.h5 step_00000004.h5.tmp; do
  echo "$bad" > "$ck/latest"
  "$trident" eval --config input/configs/tiny.ini --log.run_dir="$run" --log.eval_batches=1 > "$work/latest.log" 2>&1 ||
    fail "latest = $bad: $(tail -n 3 "$work/latest.log")"
  grep -q "evaluating $ck/step_00000006.h5" "$work/latest.log" || fail "latest = $bad was followed"
done
echo "ok: latest naming ../ or a .tmp is ignored"

# Nothing intact: exit 2, the directory named.
for f in "$ck"/step_*.h5; do truncate -s 4096 "$f"; done
rc=0; "$trident" train "${tiny[@]}" --train.steps=10 > "$work/none.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "none of the .* checkpoints in $ck is intact" "$work/none.log" ||
  fail "no intact checkpoint: exit $rc, $(tail -n 2 "$work/none.log")"
echo "ok: no intact checkpoint is exit 2"
