#!/usr/bin/env bash
# Two-tier checkpoints under a 2-node model (TRIDENT_NODE_SIZE=2, 4 ranks, dp 2 x tp 2): global
# checkpoints every 10 steps, the local tier every 2 with partner copies (written from the
# writer thread: checkpoint.async). A rank killed at step
# 16 (after the local save of 14, before the global one of 20): the job resumes from the local
# tier with the uninterrupted losses; with one node's local directory gone, from the partners'
# copies; with a rank's file and its copy both gone, from the global tier; a corrupt local file
# is skipped for the older local step; another layout resumes from the global tier; bad keys
# are exit 2.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
export TRIDENT_NODE_SIZE=2

common=(--config input/configs/tiny.ini --train.steps=20 --log.interval=1 --checkpoint.interval=10)
layout=(--parallel.dp=2 --parallel.tp=2)
tiers=(--checkpoint.local_dir="$work/local" --checkpoint.local_interval=2 --checkpoint.local_replicas=1)
mpirun -np 4 "$trident" train "${common[@]}" "${layout[@]}" --log.run_dir="$work/straight" > "$work/straight.log" 2>&1 \
  || fail "uninterrupted run: $(tail -5 "$work/straight.log")"

set +e
TRIDENT_TEST_FAIL=rank=1,step=16 mpirun -np 4 "$trident" train "${common[@]}" "${layout[@]}" "${tiers[@]}" \
  --checkpoint.async=true --log.run_dir="$work/run" > "$work/killed.log" 2>&1
code=$?
set -e
[ "$code" -ne 0 ] || fail "the killed run exited 0"
grep -q "injected failure (TRIDENT_TEST_FAIL) on rank 1 at step 16" "$work/killed.log" || fail "no injected failure"
node0=$(echo "$work"/local/trident-*/node_0)
node2=$(echo "$work"/local/trident-*/node_2)
for f in rank_00000 rank_00001 replica_00002 replica_00003; do
  [ "$(ls "$node0/$f")" = "$(printf 'step_00000012.bin\nstep_00000014.bin')" ] || fail "$node0/$f holds $(ls "$node0/$f")"
done
for f in rank_00002 rank_00003 replica_00000 replica_00001; do
  [ -f "$node2/$f/step_00000014.bin" ] || fail "$node2/$f/step_00000014.bin missing"
done
[ "$(ls "$work/run/checkpoints")" = "$(printf 'latest\nstep_00000010.h5')" ] || fail "global tier: $(ls "$work/run/checkpoints")"
cp -a "$work/run" "$work/run.saved"
cp -a "$work/local" "$work/local.saved"

# resume NAME [ARGS...]: the killed run's files as they were, then a resume (the rest of ARGS
# changes them first through the $prepare command).
resume() {
  local name=$1; shift
  rm -rf "$work/run" "$work/local"
  cp -a "$work/run.saved" "$work/run"
  cp -a "$work/local.saved" "$work/local"
  eval "$prepare"
  mpirun -np 4 "$trident" train "${common[@]}" "$@" "${tiers[@]}" --log.run_dir="$work/run" > "$work/$name.log" 2>&1 \
    || fail "$name: resume failed: $(tail -5 "$work/$name.log")"
  python3 - "$work/straight/metrics.jsonl" "$work/run/metrics.jsonl" "$name" <<'PY'
import json, sys
ref = {r["step"]: r for r in map(json.loads, open(sys.argv[1]))}
got = [json.loads(l) for l in open(sys.argv[2])]
assert [r["step"] for r in got] == list(range(1, 21)), f"{sys.argv[3]}: steps {[r['step'] for r in got]}"
worst = max(abs(r["loss"] - ref[r["step"]]["loss"]) for r in got)
assert worst < 1e-5, f"{sys.argv[3]}: losses differ from the uninterrupted run by {worst}"
print(f"{sys.argv[3]}: 20 steps, losses within {worst:.1e} of the uninterrupted run")
PY
}

prepare=":"
resume local "${layout[@]}"
grep -q "resumed from the local tier ($work/local): 14 steps done; the global tier's newest has 10" "$work/local.log" \
  || fail "did not resume from the local tier: $(grep -i resum "$work/local.log")"

prepare='rm -rf "$node2"'  # node 2 lost: ranks 2 and 3 get their files back from ranks 0 and 1
resume partner "${layout[@]}"
grep -q "step 14 of ranks 2, 3 restored from their partners' copies" "$work/partner.log" || fail "no partner restore"
grep -q "resumed from the local tier .*14 steps done" "$work/partner.log" || fail "partner: not from the local tier"

prepare='rm -rf "$node2" "$node0/replica_00002"'  # rank 2's file and its copy gone
resume global "${layout[@]}"
grep -q "local tier: step 14 is not complete on every rank" "$work/global.log" || fail "global: no incomplete line"
grep -q "resumed from .*step_00000010.h5: 10 steps done" "$work/global.log" || fail "global: not from step 10"

# A flipped byte in rank 1's newest file: its checksum fails, the older local step resumes.
prepare='python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,\"rb\").read()); b[len(b)//2]^=1; open(p,\"wb\").write(b)" "$node0/rank_00001/step_00000014.bin"'
resume corrupt "${layout[@]}"
grep -q "local checkpoint of step 14 not resumed: .*checksum mismatch" "$work/corrupt.log" || fail "corrupt: no warning"
grep -q "resumed from the local tier .*12 steps done" "$work/corrupt.log" || fail "corrupt: not from local step 12"

prepare=":"  # another layout: the local files are not its own, the global tier resumes
resume relayout --parallel.dp=4
grep -q "resumed from .*step_00000010.h5: 10 steps done (written by dp 2 tp 2" "$work/relayout.log" \
  || fail "relayout: not from the global tier"

# One node and replicas asked: the tier runs without copies, saying so.
unset TRIDENT_NODE_SIZE
mpirun -np 2 "$trident" train --config input/configs/tiny.ini --train.steps=4 --parallel.dp=2 --checkpoint.local_dir="$work/one" \
  --checkpoint.local_interval=2 --checkpoint.local_replicas=1 --log.run_dir="$work/onenode" > "$work/onenode.log" 2>&1 \
  || fail "one node: $(tail -5 "$work/onenode.log")"
grep -q "the local tier keeps no copies" "$work/onenode.log" || fail "one node: no warning"
[ -f "$(echo "$work"/one/trident-*/node_0/rank_00001/step_00000002.bin)" ] || fail "one node: no local file"

# Nodes of unequal size (2 + 1 ranks): no partners, said once; the run goes on.
TRIDENT_NODE_SIZE=2 mpirun -np 3 "$trident" train --config input/configs/tiny.ini --train.steps=4 --parallel.dp=3 \
  --train.global_batch=12 --checkpoint.local_dir="$work/uneven" --checkpoint.local_interval=2 \
  --checkpoint.local_replicas=1 --log.run_dir="$work/uneven-run" > "$work/uneven.log" 2>&1 \
  || fail "uneven nodes: $(tail -5 "$work/uneven.log")"
[ "$(grep -c "the local tier keeps no copies" "$work/uneven.log")" -eq 1 ] || fail "uneven nodes: no single warning"

expect_exit2() {  # expect_exit2 PATTERN ARGS...
  local pattern=$1; shift
  set +e
  "$trident" train --config input/configs/tiny.ini --train.steps=2 --log.run_dir="$work/bad" "$@" > "$work/err" 2>&1
  local code=$?
  set -e
  [ "$code" -eq 2 ] && grep -q -- "$pattern" "$work/err" || fail "expected exit 2 with '$pattern', got $code: $(tail -3 "$work/err")"
}
expect_exit2 "needs checkpoint.local_dir" --checkpoint.local_interval=5
expect_exit2 "checkpoint.local_replicas must be 0 or 1" --checkpoint.local_dir="$work/x" --checkpoint.local_replicas=2
touch "$work/afile"
expect_exit2 "is a file, not a directory" --checkpoint.local_dir="$work/afile" --checkpoint.local_interval=1
expect_exit2 "checkpoint.local_interval must be >= 0" --checkpoint.local_dir="$work/x" --checkpoint.local_interval=-1
echo "two-tier checkpoints: ok"
