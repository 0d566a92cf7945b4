#!/usr/bin/env bash
# A failure on one rank (injected on rank 1 at step 3) ends the whole 2-rank job promptly with
# a non-zero exit and the failing rank's message, instead of leaving rank 0 in a collective.
# usage: rank_failure.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

start=$(date +%s)
TRIDENT_TEST_FAIL="rank=1,step=3" timeout 120 mpirun -np 2 "$trident" train --config input/configs/tiny.ini \
  --parallel.dp=2 --log.run_dir="$work/run" > "$work/out.log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$work/out.log" | tail -n 20
if [[ $rc -eq 0 || $rc -eq 124 ]]; then
  echo "FAIL: exit code $rc (want non-zero, not a timeout)"
  exit 1
fi
if ! grep -q "rank 1.*injected failure (TRIDENT_TEST_FAIL) on rank 1 at step 3" "$work/out.log"; then
  echo "FAIL: the failing rank's message is missing"
  exit 1
fi
if grep -q "step 3/20" "$work/out.log"; then
  echo "FAIL: step 3 completed although rank 1 failed before it"
  exit 1
fi
echo "ok: the job ended with exit $rc after ${elapsed}s"
