#!/usr/bin/env bash
# Mixture of experts end to end (input/configs/moe.ini, shortened): 2 ranks with expert
# parallelism (dp = ep = 2, 4 experts each) train the single rank's loss curve; the run reports
# its experts and logs each layer's expert load and the MoE metrics; a checkpoint resumes
# bitwise, and ones written under ep = 2 (2 and 4 ranks, ZeRO-1) resume on one rank onto the
# same curve; eval and
# inspect read it; it exports as Hugging Face Mixtral and reads back to the same perplexity;
# LoRA trains adapters on the experts; bad MoE settings are clear errors.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

moe=(--config input/configs/moe.ini --model.seq_len=32 --log.interval=5 --log.eval_interval=0 --train.warmup=2
     --train.threads=1)
short=("${moe[@]}" --parallel.dp=1 --parallel.ep=1)
mpirun -np 2 "$trident" train "${moe[@]}" --train.steps=10 --checkpoint.interval=5 --log.run_dir="$work/dp2" \
  > "$work/dp2.log"
grep -q "ep 2 of dp" "$work/dp2.log" || fail "the ep = 2 run does not say so: $(grep topology "$work/dp2.log")"
grep -q "blocks.0.moe.experts.3" <("$trident" inspect "$work/dp2/checkpoints/step_00000005.h5") \
  || fail "the ep = 2 checkpoint lacks expert 3 (held by the other rank)"
"$trident" train "${short[@]}" --train.steps=10 --log.run_dir="$work/one" > "$work/one.log"
grep -q "mixture of experts: 4 of 4 layers with 8 experts of ffn 96, top-2" "$work/one.log" \
  || fail "no MoE banner: $(grep -i expert "$work/one.log")"
grep -Eq "^moe: aux [0-9.]+, max/mean load [0-9.]+, dropped 0; expert load % \| layer 0:( [0-9]+){8} \|" "$work/one.log" \
  || fail "no expert load line: $(grep '^moe' "$work/one.log" | head -2)"
python3 - "$work/one/metrics.jsonl" "$work/dp2/metrics.jsonl" <<'PY'
import json, sys
one, dp2 = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert len(one) == len(dp2) == 3, (len(one), len(dp2))
for a, b in zip(one, dp2):
    for key in ("moe_aux_loss", "moe_z_loss", "moe_load_max_over_mean", "moe_dropped_tokens"):
        assert key in a and key in b, (key, a)
    assert abs(a["loss"] - b["loss"]) <= 1e-5 * a["loss"], (a["step"], a["loss"], b["loss"])
    assert abs(a["moe_aux_loss"] - b["moe_aux_loss"]) <= 1e-5 * a["moe_aux_loss"], (a, b)
    assert a["moe_load_max_over_mean"] >= 1 and a["moe_dropped_tokens"] == 0, a
    assert 0.9 < a["moe_aux_loss"] < 8, a  # E * sum f_e P_e: k = 2 when balanced
assert one[-1]["loss"] < one[0]["loss"] - 0.5, [l["loss"] for l in one]
print("MoE ep=2 on 2 ranks matches one rank:", [round(l["loss"], 4) for l in one])
PY

# Preempted at step 5 and resumed: bitwise the uninterrupted parameters at step 10.
TRIDENT_TEST_PREEMPT=5 "$trident" train "${short[@]}" --train.steps=10 --log.run_dir="$work/cut" > /dev/null
"$trident" train "${short[@]}" --train.steps=10 --checkpoint.interval=10 --log.run_dir="$work/cut" > "$work/resume.log"
grep -q "resumed from .*step_00000005.h5" "$work/resume.log" || fail "did not resume from step 5"
"$trident" train "${short[@]}" --train.steps=10 --checkpoint.interval=10 --log.run_dir="$work/straight" > /dev/null
h5diff "$work/straight/checkpoints/step_00000010.h5" "$work/cut/checkpoints/step_00000010.h5" /model /model \
  || fail "MoE parameters differ after resume"
# The ep = 2 checkpoint of step 5 resumed on one rank (ep = 1): the single rank's step 10.
mkdir -p "$work/moved/checkpoints"
cp "$work/dp2/checkpoints/step_00000005.h5" "$work/moved/checkpoints/"
"$trident" train "${short[@]}" --train.steps=10 --checkpoint.resume="$work/moved/checkpoints/step_00000005.h5" \
  --log.run_dir="$work/moved" > /dev/null
# ... and one written by 4 ranks (dp = 4, ep = 2, ZeRO-1: expert moments sharded over the
# expert-data-parallel pairs) likewise.
mpirun -np 4 "$trident" train "${moe[@]}" --parallel.dp=4 --parallel.zero=1 --train.steps=10 \
  --checkpoint.interval=5 --log.run_dir="$work/dp4" > /dev/null
mkdir -p "$work/moved4/checkpoints"
cp "$work/dp4/checkpoints/step_00000005.h5" "$work/moved4/checkpoints/"
"$trident" train "${short[@]}" --train.steps=10 --checkpoint.resume="$work/moved4/checkpoints/step_00000005.h5" \
  --log.run_dir="$work/moved4" > /dev/null
python3 - "$work/one/metrics.jsonl" "$work/moved/metrics.jsonl" "$work/moved4/metrics.jsonl" "$work/dp4/metrics.jsonl" <<'PY'
import json, sys
one, moved, moved4, dp4 = ({json.loads(l)["step"]: json.loads(l) for l in open(p)} for p in sys.argv[1:])
for run in (moved, moved4, dp4):
    assert abs(one[10]["loss"] - run[10]["loss"]) <= 1e-5 * one[10]["loss"], (one[10]["loss"], run[10]["loss"])
PY

ckpt="$work/dp2/checkpoints/step_00000010.h5"
"$trident" eval --checkpoint "$ckpt" --model.seq_len=32 --data.valid=input/data/pystdlib-valid --log.eval_batches=2 \
  > "$work/eval.log"
grep -q "perplexity" "$work/eval.log" || fail "eval of an MoE checkpoint: $(cat "$work/eval.log")"
"$trident" inspect "$ckpt" > "$work/inspect.txt"
grep -q "blocks.3.moe.experts.7.down.weight" "$work/inspect.txt" || fail "inspect lists no expert weights"
grep -q "blocks.0.moe.router.weight" "$work/inspect.txt" || fail "inspect lists no router"

# LoRA on the experts' projections (and attention), the base and router frozen.
"$trident" train "${short[@]}" --train.steps=4 --lora.enabled=true --lora.r=2 --lora.targets=q,v,up,down \
  --train.lr=1e-2 --log.run_dir="$work/lora" > "$work/lora.log"
python3 - "$work/lora/metrics.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
# q, v: 2 * (64 + 64) + 2 * (64 + 32) per layer; up, down: 2 * (64 + 96) each, for 8 experts.
per_layer = 2 * (64 + 64) + 2 * (64 + 32) + 8 * 2 * 2 * (64 + 96)
assert lines[0]["trainable_params"] == 4 * per_layer, (lines[0]["trainable_params"], 4 * per_layer)
PY

# Recompute (full, selective) reruns the routing: bitwise the same losses. bf16 GEMMs and
# stored activations: trains. Bucketed unpacked rows (shorter micro-batches, cut per rank):
# ep = 2 on 2 ranks equals one rank.
for mode in full selective; do
  "$trident" train "${short[@]}" --train.steps=4 --train.recompute=$mode --log.run_dir="$work/rc_$mode" > /dev/null
done
"$trident" train "${short[@]}" --train.steps=4 --log.run_dir="$work/rc_none" > /dev/null
"$trident" train "${short[@]}" --train.steps=4 --train.precision=bf16 --log.run_dir="$work/bf16" > /dev/null
bucket=(--data.packing=false --data.bucket=true --train.steps=4)
"$trident" train "${short[@]}" "${bucket[@]}" --log.run_dir="$work/bucket1" > /dev/null
mpirun -np 2 "$trident" train "${moe[@]}" "${bucket[@]}" --log.run_dir="$work/bucket2" > /dev/null
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
curve = lambda name: [json.loads(l)["loss"] for l in open(f"{work}/{name}/metrics.jsonl")]
assert curve("rc_full") == curve("rc_none") == curve("rc_selective"), (curve("rc_full"), curve("rc_none"))
bf16 = curve("bf16")
assert all(abs(a - b) < 0.05 * b for a, b in zip(bf16, curve("rc_none"))), (bf16, curve("rc_none"))
for a, b in zip(curve("bucket1"), curve("bucket2")):
    assert abs(a - b) <= 1e-5 * a, (curve("bucket1"), curve("bucket2"))
print("MoE recompute bitwise, bf16", [round(x, 3) for x in bf16], "bucketed ep=2 equals one rank")
PY

expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN in the message
  local pattern=$1 rc=0
  shift
  "$trident" train "${short[@]}" --train.steps=1 --log.run_dir="$work/bad" "$@" > "$work/bad.log" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "exit $rc (expected 2) for $*: $(tail -2 "$work/bad.log")"
  grep -q -- "$pattern" "$work/bad.log" || fail "no '$pattern' for $*: $(tail -2 "$work/bad.log")"
}
expect_error "moe.experts must be 0 (dense) or in \[2" --moe.experts=1
expect_error "moe.top_k must be in \[1, moe.experts = 8\]" --moe.top_k=9
expect_error "moe.every must be in \[1, model.layers = 4\]" --moe.every=5
expect_error "moe.capacity_factor must be 0" --moe.capacity_factor=-1
expect_error "moe.ffn_hidden = 95 must be divisible by parallel.tp = 2" --parallel.tp=2 --moe.ffn_hidden=95
expect_error "lisa.enabled with moe.experts > 0" --lisa.enabled=true
expect_error "lora.dropout > 0 on up/gate/down" --lora.enabled=true --lora.targets=up --lora.dropout=0.1
rc=0
"$trident" train "${moe[@]}" --train.steps=1 --parallel.dp=1 --log.run_dir="$work/bad" > "$work/bad.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "parallel.ep = 2 must divide parallel.dp = 1" "$work/bad.log" || fail "ep > dp: exit $rc"
rc=0
"$trident" train "${moe[@]}" --train.steps=1 --eval.task=tests/data/hf/gpt2/task.jsonl --eval.max_new_tokens=8 \
  --log.run_dir="$work/bad" \
  > "$work/bad.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "eval.task (generation) with parallel.ep > 1" "$work/bad.log" || fail "eval.task with ep: exit $rc"
rc=0
"$trident" train "${moe[@]}" --train.steps=1 --moe.experts=0 --log.run_dir="$work/bad" > "$work/bad.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "parallel.ep = 2 needs a mixture-of-experts model" "$work/bad.log" || fail "ep on dense: exit $rc"
# The ep = 2 checkpoint as a Hugging Face Mixtral directory, read back: the same perplexity.
"$trident" convert --to hf --input "$ckpt" --output "$work/hf" > /dev/null
python3 -c "import json,sys; c=json.load(open('$work/hf/config.json')); assert c['model_type']=='mixtral' and c['num_local_experts']==8, c"
"$trident" eval --model.init_from="$work/hf" --model.seq_len=32 --data.valid=input/data/pystdlib-valid \
  --log.eval_batches=2 > "$work/eval_hf.log"
ppl() { grep -o "perplexity [0-9.]*" "$1"; }
[[ "$(ppl "$work/eval.log")" == "$(ppl "$work/eval_hf.log")" ]] \
  || fail "exported Mixtral: $(ppl "$work/eval_hf.log") vs the checkpoint's $(ppl "$work/eval.log")"
echo "moe: OK"
