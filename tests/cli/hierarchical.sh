#!/usr/bin/env bash
# comm.hierarchical: under a 2-node model (TRIDENT_NODE_SIZE=2, 4 ranks, dp = 4) the node-aware
# reduction (reduce-scatter inside the node, all-reduce across, all-gather inside) gives the flat
# reduction's and one rank's loss curve, with and without ZeRO-1, sends half the bytes across
# the node boundary, and its ZeRO-1 checkpoint resumes flat; misuse is exit 2.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1

common=(--config input/configs/tiny.ini --train.steps=20 --log.interval=1)
"$trident" train "${common[@]}" --log.run_dir="$work/one" > "$work/one.log" || fail "one rank: $(tail -5 "$work/one.log")"
for run in flat hier flat-zero hier-zero; do
  mode=on
  [ "${run%-zero}" = flat ] && mode=off
  zero=0
  [ "${run#*-}" = zero ] && zero=1
  TRIDENT_NODE_SIZE=2 mpirun -np 4 "$trident" train "${common[@]}" --parallel.dp=4 --parallel.zero=$zero \
    --comm.hierarchical=$mode --checkpoint.interval=10 --log.run_dir="$work/$run" > "$work/$run.log" 2>&1 \
    || fail "$run run failed: $(tail -5 "$work/$run.log")"
done
grep -q "dp reduction: hierarchical, 2 dp ranks per node x 2 nodes" "$work/hier.log" || fail "hier: no hierarchical line"
if grep -q "dp reduction: hierarchical" "$work/flat.log"; then fail "comm.hierarchical = off reduced hierarchically"; fi

# The hierarchical ZeRO-1 checkpoint (blocks owned by (node rank, cross rank)) resumed flat.
TRIDENT_NODE_SIZE=2 mpirun -np 4 "$trident" train "${common[@]}" --parallel.dp=4 --parallel.zero=1 \
  --comm.hierarchical=off --checkpoint.resume="$work/hier-zero/checkpoints/step_00000010.h5" \
  --log.run_dir="$work/resumed" > "$work/resumed.log" 2>&1 || fail "resume failed: $(tail -5 "$work/resumed.log")"

python3 - "$work" <<'PY'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
def metrics(run):
    return [json.loads(l) for l in (work / run / "metrics.jsonl").read_text().splitlines()]
one = metrics("one")
def close(run, ref, refname, tol=1e-5, start=0):
    m = metrics(run)
    assert len(m) + start == len(ref), f"{run}: {len(m)} steps"
    for a, b in zip(m, ref[start:]):
        for key in ("loss", "grad_norm"):
            assert abs(a[key] - b[key]) <= tol * max(1, abs(b[key])), f"{run} step {a['step']}: {key} {a[key]} vs {refname} {b[key]}"
for run in ("flat", "hier", "flat-zero", "hier-zero"):
    close(run, one, "one rank")
close("hier", metrics("flat"), "flat")
close("hier-zero", metrics("flat-zero"), "flat ZeRO-1")
close("resumed", metrics("hier-zero"), "uninterrupted", start=10)
for hier, flat in (("hier", "flat"), ("hier-zero", "flat-zero")):
    h, f = metrics(hier)[-1], metrics(flat)[-1]
    ratio = h["comm_inter_node_bytes"] / f["comm_inter_node_bytes"]
    # Each rank sends its 1/2 shard across (not 2/3 of a flat 4-rank collective's bytes).
    assert abs(ratio - 0.5) < 1e-9, f"{hier}: {h['comm_inter_node_bytes']} inter-node bytes vs flat {f['comm_inter_node_bytes']}"
    assert h["comm_bytes"] == f["comm_bytes"], f"{hier}: {h['comm_bytes']} bytes on the wire vs flat {f['comm_bytes']}"
    print(f"{hier}: {h['comm_inter_node_bytes']} inter-node bytes per step vs flat {f['comm_inter_node_bytes']} ({ratio:.2f})")
print("hierarchical = flat = one rank over 20 steps (1e-5)")
PY

# Misuse: on where the dp group sits on one node, on with compression, a bad node size.
expect_exit2() {  # expect_exit2 PATTERN ENV... -- ARGS...
  local pattern=$1; shift
  set +e
  env "$@" > "$work/err" 2>&1; local code=$?
  set -e
  [ "$code" -eq 2 ] && grep -q -- "$pattern" "$work/err" || fail "expected exit 2 with '$pattern', got $code: $(tail -3 "$work/err")"
}
expect_exit2 "comm.hierarchical = on needs every dp group" TRIDENT_NODE_SIZE=4 mpirun -np 4 "$trident" train \
  "${common[@]}" --parallel.dp=4 --comm.hierarchical=on --log.run_dir="$work/bad1"
expect_exit2 "reduces uncompressed buckets only" "$trident" train "${common[@]}" --comm.hierarchical=on \
  --comm.compression=int8 --log.run_dir="$work/bad2"
expect_exit2 "TRIDENT_NODE_SIZE must be" TRIDENT_NODE_SIZE=two "$trident" train "${common[@]}" --log.run_dir="$work/bad3"
expect_exit2 "comm.hierarchical must be" "$trident" train "${common[@]}" --comm.hierarchical=yes --log.run_dir="$work/bad4"
echo "hierarchical: ok"
