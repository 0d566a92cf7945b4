#!/usr/bin/env bash
# The Slurm batch scripts submitted for real to a local Slurm (utils/slurm-local.sh starts
# slurmctld + slurmd on this machine): a training job (output, exit state, run directory,
# metrics), a failing job's exit state, and a preempted job (SIGUSR1 to the batch shell, as
# --signal=B:USR1@120 sends it) that checkpoints, requeues itself and resumes to the last step.
# usage: slurm_jobs.sh TRIDENT SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

if [[ $(id -u) -ne 0 ]] && ! scontrol ping > /dev/null 2>&1; then
  echo "SKIP: no Slurm controller answers and not root (utils/slurm-local.sh needs root to start one)"
  exit 0
fi
if [[ $(id -u) -eq 0 ]]; then
  utils/slurm-local.sh start || fail "utils/slurm-local.sh could not start a local Slurm (logs in /var/log/trident-slurm)"
fi

cleanup() {  # cancels what this test submitted and is still queued or running
  [[ -s $work/job_ids ]] && scancel $(cat "$work/job_ids") 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export TRIDENT=$trident TRIDENT_RUNS=$work/runs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

submit() {  # submit SBATCH_ARGS... : prints the job id
  local id
  id=$(sbatch --parsable --output="$work/%j.out" "$@") || fail "sbatch $* was refused"
  echo "$id" >> "$work/job_ids"
  echo "$id"
}
field() { scontrol show job -o "$1" | grep -o "$2=[^ ]*" | head -n 1 | cut -d= -f2; }
# wait_state JOB SECONDS STATE...: polls until the job is in one of the states.
wait_state() {
  local id=$1 limit=$2 s=""
  shift 2
  local end=$((SECONDS + limit))
  while ((SECONDS < end)); do
    s=$(field "$id" JobState)
    for want in "$@"; do [[ $s == "$want" ]] && return 0; done
    sleep 0.2
  done
  fail "job $id is $s after ${limit}s, expected $*; output: $(tail -n 20 "$work/$id.out" 2> /dev/null)"
}
metric_steps() { grep -o '"step": [0-9]*' "$1/metrics.jsonl" | cut -d' ' -f2 | xargs; }

# 1. jobs/train.sbatch, tiny config, 2 ranks, launcher picked by the script.
t0=$SECONDS
id=$(submit jobs/train.sbatch input/configs/tiny.ini)
wait_state "$id" 240 COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL OUT_OF_MEMORY
out=$work/$id.out
[[ $(field "$id" JobState) == COMPLETED && $(field "$id" ExitCode) == 0:0 ]] ||
  fail "train.sbatch: $(field "$id" JobState) exit $(field "$id" ExitCode): $(tail -n 20 "$out")"
launch=$(grep -o 'launch: [a-z]*\( --mpi=[a-z0-9]*\)*' "$out") || fail "no launch line in the output"
echo "train.sbatch job $id: COMPLETED in $((SECONDS - t0)) s, $launch"
grep -q "trident-job .*done: .*steps complete" "$out" || fail "no completion line: $(tail -n 5 "$out")"
run=$work/runs/tiny-$id
[[ -f $run/config.ini && -f $run/metrics.jsonl && -f $run/slurm.txt ]] || fail "run directory $run incomplete: $(ls "$run")"
grep -q '^dp = 2$' "$run/config.ini" || fail "2 tasks did not become parallel.dp = 2"
[[ $(metric_steps "$run") == "$(seq -s ' ' 1 20)" ]] || fail "metrics steps: $(metric_steps "$run")"
python3 - "$run/metrics.jsonl" << 'PY' || fail "metrics are not sane"
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert all(math.isfinite(l["loss"]) and l["tokens_per_s"] > 0 for l in lines)
assert lines[-1]["loss"] < lines[0]["loss"], "loss did not go down"
PY
if sacct -c -j "$id" -n -P -o state,exitcode > /dev/null 2>&1; then  # jobcomp/filetxt record
  [[ $(sacct -c -j "$id" -n -P -o state,exitcode | head -n 1) == "COMPLETED|0:0" ]] || fail "sacct: $(sacct -c -j "$id")"
fi

# 2. A job whose trident run fails (bad override): FAILED with trident's exit code 2.
id=$(submit jobs/train.sbatch input/configs/tiny.ini --train.steps=many)
wait_state "$id" 120 COMPLETED FAILED
[[ $(field "$id" JobState) == FAILED && $(field "$id" ExitCode) == 2:0 ]] ||
  fail "bad config: $(field "$id" JobState) exit $(field "$id" ExitCode), expected FAILED 2:0"
grep -q "train.steps" "$work/$id.out" || fail "the failed job's output does not name the key"
echo "failing job $id: FAILED, exit 2:0, key named in its output"

# 3. Preemption: jobs/train-multinode.sbatch on this one node with mpirun (the other launch
# style). SIGUSR1 to the batch shell after 3 steps: checkpoint, requeue, resume, 40 steps.
t0=$SECONDS
id=$(TRIDENT_LAUNCHER=mpirun submit --nodes=1 --ntasks-per-node=2 jobs/train-multinode.sbatch \
  input/configs/tiny.ini --train.steps=40)
run=$work/runs/tiny-$id
end=$((SECONDS + 240))
until [[ -f $run/metrics.jsonl && $(wc -l < "$run/metrics.jsonl") -ge 3 ]]; do
  ((SECONDS < end)) || fail "no 3 steps after 240 s: $(tail -n 5 "$work/$id.out" 2> /dev/null)"
  [[ $(field "$id" JobState) == @(PENDING|RUNNING|CONFIGURING) ]] || fail "job ended early: $(tail -n 5 "$work/$id.out")"
  sleep 0.2
done
scancel --signal=USR1 --batch "$id"
# A requeued job waits for a begin time ~2 min ahead (Slurm's requeue delay): release it now.
end=$((SECONDS + 120))
until [[ $(field "$id" Restarts) -ge 1 && $(field "$id" JobState) == PENDING ]]; do
  ((SECONDS < end)) || fail "not requeued: $(field "$id" JobState), restarts $(field "$id" Restarts): $(tail -n 5 "$work/$id.out")"
  sleep 0.2
done
# The node refuses a launch whose credential dates from the second the old one was revoked
# ("Job credential revoked"): release once the clock is past the requeue (SubmitTime) + 1 s.
requeued=$(date -d "$(field "$id" SubmitTime)" +%s)
while (($(date +%s) <= requeued + 1)); do sleep 0.1; done
scontrol update JobId="$id" StartTime=now
wait_state "$id" 240 COMPLETED FAILED CANCELLED TIMEOUT
out=$work/$id.out
[[ $(field "$id" JobState) == COMPLETED && $(field "$id" ExitCode) == 0:0 ]] ||
  fail "requeued job: $(field "$id" JobState) exit $(field "$id" ExitCode): $(tail -n 20 "$out")"
grep -q "launch: mpirun" "$out" || fail "TRIDENT_LAUNCHER=mpirun not used"
grep -q "got SIGUSR1" "$out" || fail "the batch shell did not report the signal"
step=$(sed -n 's/^preempted: checkpoint of step \([0-9]*\).*/\1/p' "$out")
[[ -n $step ]] || fail "no checkpoint on preemption: $(grep -v '^step ' "$out" | tail -n 10)"
grep -q "requeueing job $id" "$out" || fail "the job did not requeue itself"
grep -q "restart 1 of job $id" "$out" || fail "no restart line (SLURM_RESTART_COUNT)"
grep -q "resumed from $run/checkpoints/step_0*$step.h5: $step steps done" "$out" ||
  fail "did not resume from step $step: $(grep -i resum "$out")"
[[ -f $run/checkpoints/step_$(printf %08d "$step").h5 ]] || fail "checkpoint step $step missing"
((step < 40)) || fail "the signal came too late to test a resume (step $step)"
[[ $(metric_steps "$run") == "$(seq -s ' ' 1 40)" ]] || fail "metrics steps across the requeue: $(metric_steps "$run")"
[[ $(grep -c "^job $id restart" "$run/slurm.txt") -eq 2 ]] || fail "slurm.txt: $(cat "$run/slurm.txt")"
echo "preempted job $id: checkpoint at step $step, requeued, resumed, 40 steps, COMPLETED in $((SECONDS - t0)) s"
