#!/usr/bin/env bash
# train.rerun_bad_steps: a one-time NaN in one rank's gradients (TRIDENT_TEST_NONFINITE with
# count=1) is re-run in place and the run is bitwise the run without the fault (losses, norms,
# parameters), the rank and host named (dp = 4, (dp, tp) = (2, 2), and (dp, pp) = (2, 2) with
# ZeRO-1 and the token table tied across the stages); a NaN that the re-run
# meets again (count=2) is persistent and skipped as without the option; unsupported
# combinations exit 2.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

host=$(hostname)
same_run() {  # same_run A B: equal losses and norms at every step, equal final parameters
  python3 - "$work/$1/metrics.jsonl" "$work/$2/metrics.jsonl" <<'PY' || fail "$2 differs from $1"
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert len(a) == len(b) == 20, (len(a), len(b))
diff = [(x["step"], x["loss"], y["loss"]) for x, y in zip(a, b) if (x["loss"], x["grad_norm"]) != (y["loss"], y["grad_norm"])]
assert not diff, diff[:3]
PY
  h5diff "$work/$1/checkpoints/step_00000020.h5" "$work/$2/checkpoints/step_00000020.h5" /model /model \
    || fail "$2's parameters differ from $1's"
}
for layout in "dp4 --parallel.dp=4" "dp2tp2 --parallel.dp=2 --parallel.tp=2" \
  "dp2pp2zero1 --parallel.dp=2 --parallel.pp=2 --parallel.zero=1"; do
  set -- $layout
  name=$1
  shift
  cfg=(--config input/configs/tiny.ini "$@" --log.interval=1 --checkpoint.interval=20)
  mpirun -np 4 "$trident" train "${cfg[@]}" --log.run_dir="$work/$name-clean" > "$work/$name-clean.log"
  # Transient: rank 2's gradients hold a NaN in step 7's first pass only.
  TRIDENT_TEST_NONFINITE=rank=2,step=7,count=1 mpirun -np 4 "$trident" train "${cfg[@]}" --train.rerun_bad_steps=true \
    --log.run_dir="$work/$name-transient" > "$work/$name-transient.log"
  grep -q "rerun: transient on rank 2 host $host; step 7 re-run" "$work/$name-transient.log" \
    || fail "$name: no transient line naming rank 2: $(grep -i rerun "$work/$name-transient.log")"
  ! grep -q "skipped" "$work/$name-transient.log" || fail "$name: a transient fault skipped a step"
  same_run "$name-clean" "$name-transient"
  python3 -c 'import json,sys; r=[json.loads(l)["rerun"] for l in open(sys.argv[1])]; assert r == [0]*6 + [1] + [0]*13, r' \
    "$work/$name-transient/metrics.jsonl" || fail "$name: metrics rerun"
  echo "ok: $name: a one-time NaN re-run, bitwise the clean run"
done

# Persistent: the re-run meets the NaN again: skipped, as without the option (and logged).
cfg=(--config input/configs/tiny.ini --parallel.dp=4 --log.interval=1 --checkpoint.interval=20)
TRIDENT_TEST_NONFINITE=rank=1,step=7,count=2 mpirun -np 4 "$trident" train "${cfg[@]}" --train.rerun_bad_steps=true \
  --log.run_dir="$work/persistent" > "$work/persistent.log"
grep -q "rerun: persistent at step 7: the re-run gave the same loss and norm (on rank 1 host $host)" \
  "$work/persistent.log" || fail "no persistent line: $(grep -i rerun "$work/persistent.log")"
grep -q "step 7 skipped: non-finite" "$work/persistent.log" || fail "the persistent NaN was not skipped"
# ... which is the run without the option whose step 7 alone is bad.
TRIDENT_TEST_NONFINITE=rank=1,step=7,count=1 mpirun -np 4 "$trident" train "${cfg[@]}" \
  --log.run_dir="$work/skipped" > "$work/skipped.log"
same_run skipped persistent

set +e
"$trident" train --config input/configs/tiny.ini --train.rerun_bad_steps=true --comm.compression=int8 \
  --log.run_dir="$work/bad" > "$work/bad.log" 2>&1
code=$?
set -e
[[ $code -eq 2 ]] && grep -q "train.rerun_bad_steps with comm.compression is not supported" "$work/bad.log" \
  || fail "rerun with compression: exit $code"
echo "rerun bad steps: ok"
