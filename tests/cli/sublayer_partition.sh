#!/usr/bin/env bash
# parallel.partition = balanced_sublayer end to end: pipeline stages that end between a block's
# attention and its MLP (the residual stream crossing stages). The tiny GPT-2 cut to 3 layers
# trains to the single rank's curve under pp = 2 (cut at block 1.5) and pp = 4 (3 layers on 4
# stages, which block bounds cannot do), with dp and with DP-SGD; a checkpoint saved under the
# sub-layer partition resumes under pp = 1 and the other way round; evaluation of held-out data
# equals one rank's; the GPT-2 fixture's greedy generations (transformers' own) stay exact with one
# half block per stage; bad values are exit 2.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1

tiny=(--config input/configs/tiny.ini --model.layers=3)
cfg=("${tiny[@]}" --train.steps=10 --log.eval_interval=5)
sub=(--parallel.partition=balanced_sublayer)

# Compares run directories' training losses (and held-out losses, when both have them) with the
# first run's at the same steps, relative 1e-5.
compare() {
  python3 - "$@" <<'PY'
import json, os, sys
def lines(d, name):
    path = os.path.join(d, name)
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []
ref = {l["step"]: l for l in lines(sys.argv[1], "metrics.jsonl")}
ref_eval = {(l["step"], l["metric"]): l["value"] for l in lines(sys.argv[1], "eval.jsonl")}
for d in sys.argv[2:]:
    run = lines(d, "metrics.jsonl")
    assert run, d
    worst = 0.0
    for l in run:
        a = ref[l["step"]]
        for key in ("loss", "grad_norm") + (("epsilon",) if "epsilon" in a else ()):
            err = abs(a[key] - l[key]) / abs(a[key])
            assert err <= 1e-5, (d, l["step"], key, a[key], l[key])
            worst = max(worst, err)
    evals = [(l["step"], l["value"]) for l in lines(d, "eval.jsonl") if l["metric"] == "loss"]
    assert len(evals) == len([k for k in ref_eval if k[1] == "loss"]), (d, evals)
    for step, value in evals:
        assert abs(value - ref_eval[(step, "loss")]) <= 1e-5 * ref_eval[(step, "loss")], (d, step, value)
    print(f"{os.path.basename(d)}: steps {run[0]['step']}-{run[-1]['step']} within {worst:.1e} of one rank,",
          f"held-out loss at steps {[s for s, _ in evals]}")
PY
}

# 1. One rank, then pp = 2 (dp = 1 and 2) and pp = 4, each cutting a block in two.
"$trident" train "${cfg[@]}" --log.run_dir="$work/one" > "$work/one.log" || fail "one rank: $(tail -5 "$work/one.log")"
mpirun -np 2 "$trident" train "${cfg[@]}" "${sub[@]}" --parallel.pp=2 --log.run_dir="$work/pp2" > "$work/pp2.log" 2>&1 \
  || fail "pp 2: $(tail -5 "$work/pp2.log")"
grep -q "balanced_sublayer partition: \[0,1.5) \[1.5,3) (virtual stage j on rank j % pp; x.5: between block x's attention and its MLP)" \
  "$work/pp2.log" || fail "pp 2 does not cut block 1: $(grep partition "$work/pp2.log")"
mpirun -np 4 "$trident" train "${cfg[@]}" "${sub[@]}" --parallel.pp=2 --parallel.dp=2 --log.run_dir="$work/dp2pp2" \
  > "$work/dp2pp2.log" 2>&1 || fail "dp 2 pp 2: $(tail -5 "$work/dp2pp2.log")"
mpirun -np 4 "$trident" train "${cfg[@]}" "${sub[@]}" --parallel.pp=4 --log.run_dir="$work/pp4" > "$work/pp4.log" 2>&1 \
  || fail "pp 4: $(tail -5 "$work/pp4.log")"
grep -Eq "partition: \[0,[0-9.]+\) \[[0-9.]+,[0-9.]+\) \[[0-9.]+,[0-9.]+\) \[[0-9.]+,3\)" "$work/pp4.log" \
  || fail "pp 4: $(grep partition "$work/pp4.log")"
compare "$work/one" "$work/pp2" "$work/dp2pp2" "$work/pp4"
# Block bounds cannot fill 4 stages with 3 layers: exit 2, naming the rule.
set +e
mpirun -np 4 "$trident" train "${cfg[@]}" --parallel.partition=balanced --parallel.pp=4 --log.run_dir="$work/bad" \
  > "$work/bad.log" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] || fail "3 layers on 4 block-level stages: exit $code, want 2"
grep -q "model.layers = 3 must be >= parallel.pp \* parallel.virtual_stages = 4" "$work/bad.log" || fail "$(cat "$work/bad.log")"

# 2. Saved at step 5 under the sub-layer pp = 2, resumed on one rank; and saved on one rank,
# resumed under pp = 4: both continue the uninterrupted curve.
TRIDENT_TEST_PREEMPT=5 mpirun -np 2 "$trident" train "${cfg[@]}" "${sub[@]}" --parallel.pp=2 --log.run_dir="$work/split" \
  > "$work/split1.log" 2>&1 || fail "preempted pp 2: $(tail -5 "$work/split1.log")"
"$trident" train "${cfg[@]}" --log.run_dir="$work/split" > "$work/split2.log" 2>&1 || fail "resume on one rank"
grep -q "resumed from .*step_00000005.h5" "$work/split2.log" || fail "did not resume: $(tail -3 "$work/split2.log")"
TRIDENT_TEST_PREEMPT=5 "$trident" train "${cfg[@]}" --log.run_dir="$work/split4" > "$work/split41.log" 2>&1
mpirun -np 4 "$trident" train "${cfg[@]}" "${sub[@]}" --parallel.pp=4 --log.run_dir="$work/split4" > "$work/split42.log" 2>&1 \
  || fail "resume under pp 4: $(tail -5 "$work/split42.log")"
grep -q "resumed from .*step_00000005.h5" "$work/split42.log" || fail "pp 4 did not resume"
compare "$work/one" "$work/split" "$work/split4"

# 3. DP-SGD (every unit clipped: the update depends on each unit's norm) under pp = 2 cut
# mid-block equals one rank, epsilon included.
private=("${tiny[@]}" --model.tie_embeddings=false --privacy.enabled=true --privacy.clip=0.05
         --privacy.noise_multiplier=1.0 --train.steps=4)
"$trident" train "${private[@]}" --log.run_dir="$work/dp_one" > "$work/dp_one.log" 2>&1 \
  || fail "private one rank: $(tail -5 "$work/dp_one.log")"
mpirun -np 2 "$trident" train "${private[@]}" "${sub[@]}" --parallel.pp=2 --log.run_dir="$work/dp_pp2" \
  > "$work/dp_pp2.log" 2>&1 || fail "private pp 2: $(tail -5 "$work/dp_pp2.log")"
grep -q "\[0,1.5) \[1.5,3)" "$work/dp_pp2.log" || fail "private pp 2 not cut mid-block"
compare "$work/dp_one" "$work/dp_pp2"

# 4. Generation through half blocks: the 2-layer GPT-2 fixture on 4 stages (one half each)
# and on 2 (cut mid-block) reproduces transformers' greedy continuations exactly.
fixture=tests/data/hf/gpt2
gen=(--model.init_from=$fixture --model.seq_len=32 --eval.batch=2 --eval.task=$fixture/task.jsonl --eval.max_new_tokens=6
     "${sub[@]}")
for pp in 2 4; do
  mpirun -np $pp "$trident" eval "${gen[@]}" --parallel.pp=$pp --log.run_dir="$work/gen$pp" > "$work/gen$pp.log" 2>&1 \
    || fail "generation pp $pp: $(tail -5 "$work/gen$pp.log")"
  grep -q "exact match 100.00%" "$work/gen$pp.log" || fail "generation pp $pp: $(grep -i "exact\|partition" "$work/gen$pp.log")"
done

# 5. Bad values.
expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN in the message
  local pattern=$1 code
  shift
  set +e
  "$trident" train --config input/configs/tiny.ini --log.run_dir="$work/err" "$@" > "$work/err.log" 2>&1; code=$?
  set -e
  [ "$code" -eq 2 ] || fail "$*: exit $code, want 2: $(cat "$work/err.log")"
  grep -q -- "$pattern" "$work/err.log" || fail "$*: unclear message: $(cat "$work/err.log")"
}
expect_error "parallel.partition: unknown partition 'halves' (expected uniform, balanced or balanced_sublayer)" \
  --parallel.partition=halves
expect_error "model.layers = 1 has 2 halves (attention, MLP), fewer than parallel.pp \* parallel.virtual_stages = 4" \
  "${sub[@]}" --model.layers=1 --parallel.pp=4
echo "sublayer_partition: ok"
