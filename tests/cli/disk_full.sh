#!/usr/bin/env bash
# A full disk during a checkpoint write: the run stops with a clear error, the previous
# checkpoint stays complete and named by `latest`, and a new run resumes from it. The disk is a
# tmpfs of 8 MiB (one tiny checkpoint is ~5 MiB, so the second one cannot fit).
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
[[ $rc -ne 0 ]] || fail "a full disk did not stop the run"
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
