#!/usr/bin/env bash
# A run must never be deaf or silently stuck: a step or a checkpoint write that runs past
# comm.timeout_s is reported by the watchdog with what the rank is doing (exit 3); a second
# SIGTERM ends a run mid-step at once (exit 143) instead of waiting for a long step; a SIGTERM
# while a rank waits for a hung peer ends the job promptly with a message.
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Steps of several seconds each: a sequence of 4096 tokens.
long=(--config input/configs/tiny.ini --model.seq_len=4096 --train.micro_batch=1 --train.global_batch=4)

# --- a step longer than comm.timeout_s ------------------------------------------------------
rc=0; timeout 120 "$trident" train "${long[@]}" --train.steps=3 --comm.timeout_s=1 --log.run_dir="$work/slow" \
  > "$work/slow.log" 2>&1 || rc=$?
[[ $rc -eq 3 ]] || fail "a step past comm.timeout_s: exit $rc, want 3: $(tail -n 2 "$work/slow.log")"
grep -qE "watchdog: training step 1 has run [0-9.]+ s \(comm.timeout_s = 1\) at step 1; this rank is stuck in it" \
  "$work/slow.log" || fail "no report of the step: $(grep watchdog "$work/slow.log")"
echo "ok: a step past comm.timeout_s: exit 3, $(grep -o 'training step 1 has run [0-9.]* s' "$work/slow.log")"

# --- a checkpoint write past comm.timeout_s -------------------------------------------------
rc=0; TRIDENT_TEST_CHECKPOINT_DELAY=30:step_00000002.h5 timeout 120 "$trident" train --config input/configs/tiny.ini \
  --train.steps=4 --checkpoint.interval=2 --comm.timeout_s=2 --log.run_dir="$work/io" > "$work/io.log" 2>&1 || rc=$?
[[ $rc -eq 3 ]] && grep -q "watchdog: writing checkpoint .*step_00000002.h5 has run" "$work/io.log" ||
  fail "a checkpoint write past comm.timeout_s: exit $rc, $(grep -v '^step' "$work/io.log" | tail -n 2)"
echo "ok: a checkpoint write past comm.timeout_s: exit 3, named"

# --- a second SIGTERM during a long step ----------------------------------------------------
"$trident" train "${long[@]}" --train.steps=100 --log.run_dir="$work/term" > "$work/term.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "^step 1/" "$work/term.log" && break; sleep 0.1; done
kill -TERM "$pid"
sleep 0.5
kill -TERM "$pid"
start=$(date +%s.%N)
wait "$pid"
rc=$?
took=$(echo "$(date +%s.%N) - $start" | bc)
[[ $rc -eq 143 ]] || fail "a second SIGTERM: exit $rc, want 143: $(tail -n 2 "$work/term.log")"
grep -q "a second SIGTERM or SIGINT arrived at step" "$work/term.log" || fail "no message for the second SIGTERM"
(($(echo "$took < 3" | bc))) || fail "the second SIGTERM took ${took}s to end the run"
echo "ok: a second SIGTERM mid-step ended the run in ${took}s (exit 143)"

# --- SIGTERM while a rank waits for a hung peer ---------------------------------------------
TRIDENT_TEST_HANG="rank=1,step=2" mpirun -np 2 "$trident" train --config input/configs/tiny.ini --parallel.dp=2 \
  --log.run_dir="$work/hang" > "$work/hang.log" 2>&1 &
job=$!
sleep 20  # rank 0 now waits for rank 1 longer than SignalWatch::kStuckWaitSeconds (10 s)
start=$(date +%s)
pkill -TERM -P "$job" -f "trident train" || true
for _ in $(seq 1 100); do kill -0 "$job" 2> /dev/null || break; sleep 0.2; done
kill -0 "$job" 2> /dev/null && { kill -9 "$job"; fail "SIGTERM during a hang did not end the job"; }
wait "$job" 2> /dev/null
grep -q "while this rank waits for a stuck peer" "$work/hang.log" || fail "no message: $(tail -n 3 "$work/hang.log")"
took=$(( $(date +%s) - start ))
((took < 10)) || fail "SIGTERM during a hang took ${took}s to end the job"
echo "ok: SIGTERM during a hang ended the job in ${took}s with a message"
