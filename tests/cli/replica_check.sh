#!/usr/bin/env bash
# Silent data corruption (train.replica_check_interval): one flipped bit in one rank's
# parameters (TRIDENT_TEST_BITFLIP) is named, rank and host, at the next check, under dp = 4,
# ZeRO-1 and in an expert-data-parallel group; every rank exits 5; no checkpoint holds the
# corrupted state (a flip between checks is caught before the next checkpoint) and a resume
# from `latest` gives the clean run's curve bitwise. Without a fault the checks change nothing.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

host=$(hostname)
tiny=(--config input/configs/tiny.ini --parallel.dp=4 --checkpoint.interval=5 --log.interval=1)
run4() { mpirun -np 4 "$trident" train "${tiny[@]}" "$@"; }
losses() { python3 -c 'import json,sys; [print(json.loads(l)["step"], json.loads(l)["loss"]) for l in open(sys.argv[1])]' "$1"; }
# expect_stop NAME STEP RANK: the run of NAME stopped with exit 5 after STEP, naming RANK.
expect_stop() {
  local name=$1 step=$2 rank=$3 code=$4
  [[ $code -eq 5 ]] || fail "$name: exit $code, not 5: $(tail -3 "$work/$name.log")"
  grep -q "replica check after step $step: the parameters of rank $rank on $host differ" "$work/$name.log" \
    || fail "$name: rank $rank on $host not named after step $step: $(grep -i replica "$work/$name.log")"
  [[ $(grep -c "the parameters of" "$work/$name.log") -eq 1 ]] || fail "$name: reported more than once"
  grep "the parameters of" "$work/$name.log" | grep -q "rank $rank on $host differ" \
    || fail "$name: another rank named too"
}

# 1. No fault: checks every 4 steps and before each checkpoint, the same losses as without.
run4 --log.run_dir="$work/plain" > "$work/plain.log"
run4 --train.replica_check_interval=4 --log.run_dir="$work/clean" > "$work/clean.log"
grep -q "replica check after step 4: every dp replica agrees" "$work/clean.log" || fail "no check logged"
[[ $(losses "$work/plain/metrics.jsonl") == $(losses "$work/clean/metrics.jsonl") ]] || fail "the checks changed the run"

# 2. A bit flips on rank 2 after step 8's update: named at step 8; latest stays step 5.
set +e
TRIDENT_TEST_BITFLIP=rank=2,step=8 run4 --train.replica_check_interval=4 --log.run_dir="$work/flip" > "$work/flip.log" 2>&1
code=$?
set -e
expect_stop flip 8 2 $code
[[ $(cat "$work/flip/checkpoints/latest") == step_00000005.h5 ]] || fail "latest is not step 5"
[[ ! -e $work/flip/checkpoints/step_00000010.h5 ]] || fail "a checkpoint was written after the flip"
# Resumed from latest without the fault: the clean curve, bitwise.
run4 --train.replica_check_interval=4 --log.run_dir="$work/flip" > "$work/resume.log"
grep -q "resumed from .*step_00000005.h5" "$work/resume.log" || fail "did not resume from step 5"
[[ $(losses "$work/clean/metrics.jsonl" | tail -15) == $(losses "$work/flip/metrics.jsonl" | awk '$1 > 5') ]] \
  || fail "the resumed run's losses differ from the clean run's"
h5diff "$work/clean/checkpoints/step_00000020.h5" "$work/flip/checkpoints/step_00000020.h5" /model /model \
  || fail "the resumed run's parameters differ from the clean run's"

# 3. A flip between checks (step 13, checks at 12 and 16) is caught before checkpoint 15.
set +e
TRIDENT_TEST_BITFLIP=rank=0,step=13 run4 --train.replica_check_interval=4 --log.run_dir="$work/between" \
  > "$work/between.log" 2>&1
code=$?
set -e
expect_stop between 15 0 $code
[[ $(cat "$work/between/checkpoints/latest") == step_00000010.h5 ]] || fail "latest is not step 10"
[[ ! -e $work/between/checkpoints/step_00000015.h5 ]] || fail "checkpoint 15 holds the corrupted state"

# 4. ZeRO-1 (sharded optimizer, parameters all-gathered) and an expert group (dp 8, ep 2: each
# expert has 4 replicas) name the rank as well.
set +e
TRIDENT_TEST_BITFLIP=rank=1,step=3 run4 --parallel.zero=1 --train.replica_check_interval=3 \
  --log.run_dir="$work/zero" > "$work/zero.log" 2>&1
code=$?
set -e
expect_stop zero 3 1 $code
set +e
TRIDENT_TEST_BITFLIP=rank=5,step=4,expert=1 mpirun -np 8 "$trident" train --config input/configs/moe.ini \
  --model.seq_len=32 --train.warmup=2 --parallel.dp=8 --parallel.ep=2 --train.steps=8 --log.eval_interval=0 \
  --train.replica_check_interval=2 --log.run_dir="$work/experts" > "$work/experts.log" 2>&1
code=$?
set -e
expect_stop experts 4 5 $code

# 5. Bad input: exit 2.
set +e
"$trident" train --config input/configs/tiny.ini --train.replica_check_interval=-1 --log.run_dir="$work/bad" \
  > "$work/bad.log" 2>&1
code=$?
TRIDENT_TEST_BITFLIP=rank=x "$trident" train --config input/configs/tiny.ini --log.run_dir="$work/bad2" \
  > "$work/bad2.log" 2>&1
code2=$?
set -e
[[ $code -eq 2 ]] && grep -q "train.replica_check_interval must be >= 0" "$work/bad.log" || fail "negative interval: $code"
[[ $code2 -eq 2 ]] && grep -q "TRIDENT_TEST_BITFLIP='rank=x'" "$work/bad2.log" || fail "bad BITFLIP: $code2"
echo "replica check: ok"
