#!/usr/bin/env bash
# Stragglers (log.straggler_interval, log.straggler_threshold, train.straggler_exit): 4 ranks,
# one slowed by TRIDENT_TEST_SLOW, under dp = 4 and (dp, tp) = (2, 2): that rank and its host
# are named in the log, the metrics and stragglers.jsonl within two checks of the slow-down, no
# other rank is; without a slow-down nothing is reported in 200 steps; straggler_exit
# checkpoints and exits 4; bad values exit 2. (The Slurm requeue without the host:
# tests/cli/slurm_jobs.sh.)
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

host=$(hostname)
tiny=(--config input/configs/tiny.ini --log.interval=10)

# 1. No slow-down: 20 checks in 200 steps, none names a rank.
mpirun -np 4 "$trident" train "${tiny[@]}" --parallel.dp=4 --train.steps=200 --log.straggler_interval=10 --log.run_dir="$work/clean" \
  > "$work/clean.log"
[[ $(grep -c "stragglers at step [0-9]*: none below 0.75" "$work/clean.log") -eq 20 ]] ||
  fail "not 20 quiet checks: $(grep -i straggler "$work/clean.log" | head -n 5)"
! grep -q "straggler at step" "$work/clean.log" || fail "a rank was named without a slow-down: $(grep 'straggler at' "$work/clean.log")"
[[ ! -e $work/clean/stragglers.jsonl ]] || fail "stragglers.jsonl without a straggler"

# 2. One rank sleeps 60 ms in its compute from step 15 (checks at 20, 30, ...): named by step 30.
slowed() {  # slowed NAME RANK ARGS...
  local name=$1 rank=$2
  shift 2
  TRIDENT_TEST_SLOW=rank=$rank,ms=60,from=15 mpirun -np 4 "$trident" train "${tiny[@]}" --train.steps=40 --log.straggler_interval=10 "$@" \
    --log.run_dir="$work/$name" > "$work/$name.log"
  python3 - "$work/$name" "$rank" "$host" <<'PY' || fail "$name: $(grep -i 'straggler at' "$work/$name.log")"
import json, pathlib, sys
run, rank, host = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lines = [json.loads(l) for l in (run / "stragglers.jsonl").read_text().splitlines()]
assert lines and lines[0]["step"] <= 30, f"first report at {lines[0]['step'] if lines else None}"
assert all(l["rank"] == rank and l["host"] == host and l["relative"] < 0.75 for l in lines), lines
assert all(l["section"] == "compute" and l["section_s"] > l["median_s"] + 0.01 for l in lines), lines
metrics = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines()]
named = {m["step"]: (m["straggler_rank"], m["straggler_host"]) for m in metrics if "straggler_rank" in m}
assert named == {l["step"]: (rank, host) for l in lines}, (named, lines)
print(f"{run.name}: rank {rank} on {host} named at steps {sorted(named)}, relative {lines[0]['relative']:.2f}")
PY
  grep -q "straggler at step 30: rank $rank on $host: relative score 0\.[0-9]*, individual [0-9.]*; compute " \
    "$work/$name.log" || fail "$name: no log line at step 30"
}
slowed dp4 2 --parallel.dp=4
slowed dp2tp2 3 --parallel.dp=2 --parallel.tp=2

# 3. train.straggler_exit = 2: named two checks in a row (every 5 steps), checkpointed at that
# step, exit 4. (Which check is the second depends on the load beside the test: read it.)
set +e
TRIDENT_TEST_SLOW=rank=1,ms=80 mpirun -np 4 "$trident" train "${tiny[@]}" --parallel.dp=4 --log.straggler_interval=5 \
  --train.straggler_exit=2 --log.run_dir="$work/exit" > "$work/exit.log" 2>&1
code=$?
set -e
[[ $code -eq 4 ]] || fail "straggler_exit: exit $code, not 4: $(tail -n 3 "$work/exit.log")"
grep -q "train.straggler_exit = 2: host $host was named a straggler 2 checks in a row (rank 1 on $host" "$work/exit.log" ||
  fail "no straggler exit message: $(grep -i straggler "$work/exit.log" | tail -n 3)"
step=$(sed -n 's/.*checkpoint of step \([0-9]*\) written.*/\1/p' "$work/exit.log")
[[ -n $step && $(cat "$work/exit/checkpoints/latest") == step_$(printf %08d "$step").h5 ]] ||
  fail "no checkpoint of the exit step $step: $(ls "$work/exit/checkpoints")"

# 3b. The straggler exit's checkpoint is checked like any other (train.replica_check_interval,
# here only before checkpoints): a bit flipped after step 1 stops the run (exit 5) there
# instead of reaching a checkpoint.
set +e
TRIDENT_TEST_SLOW=rank=1,ms=80 TRIDENT_TEST_BITFLIP=rank=3,step=1 mpirun -np 4 "$trident" train "${tiny[@]}" \
  --parallel.dp=4 --log.straggler_interval=5 --train.straggler_exit=2 --train.replica_check_interval=1000 \
  --log.run_dir="$work/exit-checked" > "$work/exit-checked.log" 2>&1
code=$?
set -e
[[ $code -eq 5 ]] && grep -q "replica check after step [0-9]*: the parameters of rank 3 on $host differ" \
  "$work/exit-checked.log" || fail "straggler exit with a flipped bit: exit $code, $(grep -i 'stopped' "$work/exit-checked.log")"
[[ -z $(ls "$work/exit-checked/checkpoints" 2> /dev/null | grep '^step_') ]] || fail "the straggler exit wrote an unchecked checkpoint"

# 4. Bad values: exit 2.
refuse() {  # refuse PATTERN ARGS...
  local pattern=$1
  shift
  set +e
  "$trident" train --config input/configs/tiny.ini "$@" --log.run_dir="$work/bad" > "$work/bad.log" 2>&1
  local code=$?
  set -e
  [[ $code -eq 2 ]] && grep -q -- "$pattern" "$work/bad.log" || fail "$*: exit $code, $(tail -n 1 "$work/bad.log")"
}
refuse "log.straggler_threshold must be in (0, 1)" --log.straggler_threshold=1.5
refuse "train.straggler_exit needs the straggler checks" --train.straggler_exit=2 --log.straggler_interval=0
TRIDENT_TEST_SLOW=rank=1 refuse "TRIDENT_TEST_SLOW='rank=1'"
echo "stragglers: ok"
