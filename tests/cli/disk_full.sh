#!/usr/bin/env bash
# A full disk during a checkpoint write: the run stops with a clear error (exit 1, no crash on
# the way out), on every rank together (dp = 2, synchronous and asynchronous: no rank left in a
# collective), the partial file removed, the previous checkpoint complete and named by `latest`,
# and a new run resumes from it; with checkpoint.on_error = warn the run logs it and trains on.
# The disk is a tmpfs of 8 MiB (one tiny checkpoint is ~5 MiB, so the second one cannot fit).
# usage: disk_full.sh TRIDENT SOURCE_DIR
set -uo pipefail
trident=$1
src=$2
work=$(mktemp -d)
disk="$work/disk"
mkdir -p "$disk"
if ! mount -t tmpfs -o size=8M tmpfs "$disk" 2>/dev/null; then
  echo "cannot mount a tmpfs here (not root, or no mount permission): the disk-full case is not run"
  rm -rf "$work"
  exit 0
fi
trap 'umount "$disk"; rm -rf "$work"' EXIT
cd "$src"
fail() { echo "FAIL: $*"; exit 1; }

rc=0
"$trident" train --config input/configs/tiny.ini --checkpoint.interval=5 --checkpoint.keep=3 \
  --checkpoint.dir="$disk/ckpt" --log.run_dir="$work/run" > "$work/full.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "a full disk: exit $rc, want 1 (no crash on the way out)"
grep -q "checkpoint: writing .* failed (disk full or I/O error); the previous checkpoint is untouched" "$work/full.log" \
  || fail "no clear error: $(tail -n 3 "$work/full.log")"
[[ ! -e $disk/ckpt/step_00000010.h5.tmp ]] || fail "the partial file was left behind on the full disk"
[[ $(cat "$disk/ckpt/latest") == step_00000005.h5 ]] || fail "latest does not name the last complete checkpoint"
"$trident" inspect "$disk/ckpt/step_00000005.h5" > /dev/null || fail "the previous checkpoint is damaged"
echo "ok: stopped with exit $rc: $(grep -h 'disk full' "$work/full.log" | head -n 1)"
cp "$disk/ckpt/step_00000005.h5" "$work/"
"$trident" train --config input/configs/tiny.ini --train.steps=6 --checkpoint.resume="$work/step_00000005.h5" \
  --log.run_dir="$work/resumed" > "$work/resumed.log" 2>&1 || fail "resume from the kept checkpoint failed"
grep -q "resumed from" "$work/resumed.log" || fail "did not resume"
echo "ok: resumed from the checkpoint the full disk left intact"

# Two ranks, synchronous and asynchronous: both stop with the error, within the timeout.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for async in false true; do
  rm -rf "${disk:?}"/* "$work/run2"
  rc=0
  timeout -s KILL 180 mpirun -np 2 "$trident" train --config input/configs/tiny.ini --parallel.dp=2 \
    --checkpoint.interval=5 --checkpoint.async=$async --checkpoint.dir="$disk/ckpt" --log.run_dir="$work/run2" \
    > "$work/full2.log" 2>&1 || rc=$?
  [[ $rc -ne 137 ]] || fail "dp=2, async=$async: the ranks hung after the full disk (killed by the timeout)"
  [[ $rc -ne 0 ]] || fail "dp=2, async=$async: a full disk did not stop the run"
  [[ $(grep -c "failed (disk full or I/O error)" "$work/full2.log") -ge 2 ]] ||
    fail "dp=2, async=$async: not every rank named the error: $(grep -v '^step' "$work/full2.log" | tail -n 5)"
  ! grep -q "watchdog" "$work/full2.log" || fail "dp=2, async=$async: the watchdog had to end it"
  [[ ! -e $disk/ckpt/step_00000010.h5.tmp ]] || fail "dp=2, async=$async: the partial file was left behind"
  [[ $(cat "$disk/ckpt/latest") == step_00000005.h5 ]] || fail "dp=2, async=$async: latest is not step 5"
  "$trident" inspect "$disk/ckpt/step_00000005.h5" > /dev/null || fail "dp=2, async=$async: step 5 is damaged"
  echo "ok: dp=2, async=$async: every rank stopped with the error (exit $rc)"
done

# checkpoint.on_error = warn: logged, and the run trains to its end.
rm -rf "${disk:?}"/* "$work/run3"
mpirun -np 2 "$trident" train --config input/configs/tiny.ini --parallel.dp=2 --checkpoint.interval=5 \
  --checkpoint.on_error=warn --checkpoint.dir="$disk/ckpt" --log.run_dir="$work/run3" > "$work/warn.log" 2>&1 ||
  fail "checkpoint.on_error = warn: the run stopped: $(grep -v '^step' "$work/warn.log" | tail -n 3)"
grep -q "a checkpoint could not be written" "$work/warn.log" || fail "checkpoint.on_error = warn: no warning"
[[ $(wc -l < "$work/run3/metrics.jsonl") -eq 20 ]] || fail "checkpoint.on_error = warn: the run did not reach step 20"
[[ $(cat "$disk/ckpt/latest") == step_00000005.h5 ]] || fail "checkpoint.on_error = warn: latest is not step 5"
echo "ok: checkpoint.on_error = warn: warned and trained to step 20"

# A full disk under metrics.jsonl: the run stops naming the file, and every line it holds is
# complete (each is appended whole or not at all).
small="$work/small"
mkdir -p "$small"
mount -t tmpfs -o size=12k tmpfs "$small" || fail "cannot mount the small tmpfs"
rc=0
# (no TensorBoard events: this case is about metrics.jsonl alone on the last free pages)
"$trident" train --config input/configs/tiny.ini --train.steps=60 --log.tensorboard=false --log.run_dir="$small/run" > "$work/metrics.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] && grep -q "cannot append to $small/run/metrics.jsonl: No space left on device" "$work/metrics.log" ||
  { umount "$small"; fail "a full disk under metrics.jsonl: exit $rc, $(tail -n 1 "$work/metrics.log")"; }
python3 - "$small/run/metrics.jsonl" <<'PY' || { umount "$small"; fail "metrics.jsonl holds a torn line"; }
import json, sys
text = open(sys.argv[1]).read()
assert text.endswith("\n"), "the last line is not complete"
steps = [json.loads(l)["step"] for l in text.splitlines()]
assert steps == list(range(1, len(steps) + 1)) and steps, steps
print(f"ok: a full disk under metrics.jsonl: exit 1, {len(steps)} complete lines kept")
PY
umount "$small"
