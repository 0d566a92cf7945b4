#!/usr/bin/env bash
# train.backend: auto falls back to the CPU backend with one line where no GPU can be used,
# cuda is then an error (exit 2), a bad value is an error (exit 2), cpu never mentions GPUs.
# On a machine with GPUs only the checks that do not depend on their absence run.
# usage: backend.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
cfg=input/configs/tiny.ini

grep -q "train.backend" <<<"$("$trident" train --help)" || fail "--help does not list train.backend"

out=$("$trident" train --config $cfg --train.steps=2 --train.backend=bogus --log.run_dir="$work/bogus" 2>&1)
rc=$?
[[ $rc -eq 2 ]] || fail "backend=bogus: exit $rc, want 2: $out"
grep -q "train.backend must be auto, cpu or cuda" <<<"$out" || fail "backend=bogus: message: $out"

out=$("$trident" train --config $cfg --train.steps=2 --train.backend=cpu --log.run_dir="$work/cpu" 2>&1) ||
  fail "backend=cpu failed: $out"
grep -q "step 2/2" <<<"$out" || fail "backend=cpu did not train: $out"
! grep -q "no GPU" <<<"$out" || fail "backend=cpu mentions GPUs: $out"

out=$("$trident" train --config $cfg --train.steps=2 --train.backend=auto --log.run_dir="$work/auto" 2>&1)
rc=$?
if grep -q "backend: no GPU" <<<"$out"; then
  [[ $rc -eq 0 ]] || fail "backend=auto without GPU: exit $rc: $out"
  grep -q "step 2/2" <<<"$out" || fail "backend=auto did not train: $out"
  [[ $(grep -c "backend: no GPU (.*): using the CPU backend" <<<"$out") -eq 1 ]] ||
    fail "backend=auto: want one fallback line: $out"

  out=$("$trident" train --config $cfg --train.steps=2 --train.backend=cuda --log.run_dir="$work/cuda" 2>&1)
  rc=$?
  [[ $rc -eq 2 ]] || fail "backend=cuda without GPU: exit $rc, want 2: $out"
  grep -q "train.backend = cuda, but no GPU" <<<"$out" || fail "backend=cuda: message: $out"
  [[ ! -e "$work/cuda" ]] || fail "backend=cuda without GPU created the run directory"

  # Two ranks: the line once (rank 0), both ranks on the CPU backend.
  out=$(mpirun -np 2 "$trident" train --config $cfg --parallel.dp=2 --train.steps=2 --train.backend=auto \
        --log.run_dir="$work/auto2" 2>&1) || fail "backend=auto on 2 ranks failed: $out"
  [[ $(grep -c "backend: no GPU" <<<"$out") -eq 1 ]] || fail "2 ranks: want one fallback line: $out"
  echo "ok: no GPU here: auto falls back to the CPU backend (one line), cuda exits 2"
else
  echo "a GPU is visible: the no-GPU checks do not apply (auto -> exit $rc)"
fi
echo "ok: train.backend"
