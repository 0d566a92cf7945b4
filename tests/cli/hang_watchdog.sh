#!/usr/bin/env bash
# A rank that stops responding (injected on rank 1 at step 3): the watchdog of a rank waiting
# for it reports the operation, the group, its world ranks and the step, and ends the job after
# comm.timeout_s instead of hanging.
# usage: hang_watchdog.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

start=$(date +%s)
TRIDENT_TEST_HANG="rank=1,step=3" timeout 120 mpirun -np 2 "$trident" train --config input/configs/tiny.ini \
  --parallel.dp=2 --comm.timeout_s=2 --log.run_dir="$work/run" > "$work/out.log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
grep watchdog "$work/out.log"
if [[ $rc -eq 0 || $rc -eq 124 ]]; then echo "FAIL: exit $rc (want an abort, not success or a timeout)"; exit 1; fi
grep -qE "\[rank 0\] watchdog: [a-z_]+ on the (dp group|world) \(world ranks 0, 1\) has waited [0-9.]+ s \(comm.timeout_s = 2\) at step 3" \
  "$work/out.log" || { echo "FAIL: no watchdog report naming op, group, ranks and step"; exit 1; }
[[ $elapsed -lt 60 ]] || { echo "FAIL: took ${elapsed}s"; exit 1; }
echo "ok: the job ended after ${elapsed}s with exit $rc"
