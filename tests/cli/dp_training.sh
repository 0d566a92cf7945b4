#!/usr/bin/env bash
# Differentially private training (privacy.enabled) end to end: the loss curve, per-unit norms,
# sampled units and epsilon of a full fine-tune (tiny Llama: embeddings, RMSNorm gains, every
# linear, the head) are the single rank's under (1,2,2), (2,2,1), dp=4 with ZeRO-1 and (2,2,2)
# (dp,tp,pp), and a GPT-2 LoRA run's (layernorm, biases) under (2,2,1); noise changes the curve
# and repeats exactly; target_epsilon finds the accountant's sigma; a budget stops training;
# a resumed run continues the unbroken one's curve and accounting, and a changed mechanism is
# refused; bad input is exit 2 with a message naming the key.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1

common=(--train.micro_batch=2 --train.threads=1 --train.lr=1e-2)
data=(--model.seq_len=32 --train.global_batch=8 --data.train=input/data/pystdlib "${common[@]}")
# A small clip: every unit is clipped, so the update depends on every unit's norm.
private=(--privacy.enabled=true --privacy.clip=0.05)
sigma1=(--privacy.noise_multiplier=1.0)
llama_any=(--model.init_from=tests/data/hf/llama "${data[@]}" "${private[@]}")  # no sigma, no steps
llama=("${llama_any[@]}" "${sigma1[@]}")

# Compares run directories' metrics with the first: loss and gradient norm (relative 1e-5), the
# units' mean norm (1e-6: one unit's norm off by 1e-5 would show), units sampled, epsilon.
compare() {
  python3 - "$@" <<'PY'
import json, sys
runs = [[json.loads(l) for l in open(d + "/metrics.jsonl")] for d in sys.argv[1:]]
ref = runs[0]
assert all(l["privacy_clipped"] == 1.0 for l in ref), [l["privacy_clipped"] for l in ref]
for d, run in zip(sys.argv[2:], runs[1:]):
    assert len(run) == len(ref), (d, len(run))
    for a, b in zip(ref, run):
        for key, tol in (("loss", 1e-5), ("grad_norm", 1e-5), ("privacy_unit_norm", 1e-6)):
            assert abs(a[key] - b[key]) <= tol * abs(a[key]), (d, a["step"], key, a[key], b[key])
        assert (a["privacy_units"], a["epsilon"]) == (b["privacy_units"], b["epsilon"]), (d, a, b)
print("equal to one rank:", " ".join(sys.argv[2:]), "| loss", [round(l["loss"], 6) for l in ref],
      "| units", [l["privacy_units"] for l in ref], "| epsilon", round(ref[-1]["epsilon"], 4))
PY
}

# 1. Full fine-tuning under four layouts against one rank.
"$trident" train "${llama[@]}" --train.steps=4 --log.run_dir="$work/one" > "$work/one.log" || fail "one rank: $(tail -5 "$work/one.log")"
grep -q "privacy: DP-SGD over 167 documents, poisson sampling q = 0.0479042 (8 expected per step), clip C = 0.05, sigma = 1" \
  "$work/one.log" || fail "no privacy banner: $(grep privacy "$work/one.log")"
grep -q "privacy: train.clip = 1 is not applied" "$work/one.log" || fail "train.clip not reported"
python3 - "$work/one/metrics.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert max(l["privacy_units"] for l in lines) > 8, "no step sampled more units than the global batch (a second round)"
assert all(l["epsilon"] > 0 for l in lines) and [l["epsilon"] for l in lines] == sorted(l["epsilon"] for l in lines)
PY
layouts=()
for layout in "1 2 2 0" "2 2 1 0" "4 1 1 1" "2 2 2 0"; do
  read -r dp tp pp zero <<< "$layout"
  dir="$work/dp${dp}tp${tp}pp${pp}"
  mpirun -np $((dp * tp * pp)) "$trident" train "${llama[@]}" --train.steps=4 --parallel.dp=$dp --parallel.tp=$tp --parallel.pp=$pp \
    --parallel.zero=$zero --log.run_dir="$dir" > "$dir.log" 2>&1 || fail "$layout: $(tail -5 "$dir.log")"
  layouts+=("$dir")
done
compare "$work/one" "${layouts[@]}"
# The run report plots the privacy spent per step and states it.
/usr/bin/python3 utils/run_report.py "$work/one" > /dev/null || fail "run_report on a private run"
grep -q "privacy spent (epsilon at privacy.delta)" "$work/one/report/report.html" || fail "no epsilon plot in report.html"
for key in privacy_clipped privacy_unit_norm; do
  grep -q "data-plot=\"$key\"" "$work/one/report/report.html" || fail "no $key plot in report.html"
done
grep -q "differential privacy | epsilon 0.2508 spent by step 4" "$work/one/report/report.md" \
  || fail "no privacy row in report.md: $(grep -i privacy "$work/one/report/report.md")"
[ -s "$work/one/report/privacy.png" ] || fail "no privacy.png"

# 2. GPT-2 with LoRA (layernorms and biases frozen; adapters measured), privacy.unit = row.
gpt2=(--model.init_from=tests/data/hf/gpt2 "${data[@]}" "${private[@]}" "${sigma1[@]}" --train.steps=3 --privacy.unit=row
      --lora.enabled=true --lora.r=4 --lora.targets=q,k,v,o,up,down)
"$trident" train "${gpt2[@]}" --log.run_dir="$work/lora1" > "$work/lora1.log" || fail "LoRA: $(tail -5 "$work/lora1.log")"
grep -q "privacy: DP-SGD over [0-9]* rows" "$work/lora1.log" || fail "no row units: $(grep privacy "$work/lora1.log")"
mpirun -np 4 "$trident" train "${gpt2[@]}" --parallel.dp=2 --parallel.tp=2 --log.run_dir="$work/lora4" \
  > "$work/lora4.log" 2>&1 || fail "LoRA (2,2,1): $(tail -5 "$work/lora4.log")"
compare "$work/lora1" "$work/lora4"

# 2b. Short fine-tuning documents (prompt masked, about 28 byte tokens each): several packed per
#     row, padding after the last, under pp (whole rows) and tp against one rank.
/usr/bin/python3 utils/make_finetune_data.py --train 1000 --heldout 10 --output "$work/ftdata" > /dev/null
"$trident" prep --input "$work/ftdata/train.jsonl" --output "$work/ft" --template 'Q: {input}\nA: {output}' \
  > /dev/null || fail "prep of the fine-tuning lines"
short=(--model.init_from=tests/data/hf/llama "${common[@]}" "${private[@]}" "${sigma1[@]}" --model.seq_len=64
       --train.global_batch=16 --data.train="$work/ft" --train.steps=3)
"$trident" train "${short[@]}" --log.run_dir="$work/short1" > "$work/short1.log" || fail "short: $(tail -3 "$work/short1.log")"
mpirun -np 4 "$trident" train "${short[@]}" --parallel.dp=2 --parallel.pp=2 --log.run_dir="$work/short4" \
  > "$work/short4.log" 2>&1 || fail "short (2,1,2): $(tail -3 "$work/short4.log")"
mpirun -np 2 "$trident" train "${short[@]}" --parallel.tp=2 --log.run_dir="$work/short2" \
  > "$work/short2.log" 2>&1 || fail "short (1,2,1): $(tail -3 "$work/short2.log")"
compare "$work/short1" "$work/short4" "$work/short2"
# More expected units per step than the shard has rows (1000 documents in ~430 rows): allowed.
"$trident" train --model.init_from=tests/data/hf/llama "${common[@]}" "${private[@]}" "${sigma1[@]}" \
  --model.seq_len=64 --train.global_batch=512 --data.train="$work/ft" --train.steps=1 --log.run_dir="$work/wide" \
  > "$work/wide.log" 2>&1 || fail "512 expected units from ~430 rows: $(tail -2 "$work/wide.log")"
grep -q "poisson sampling q = 0.512 (512 expected per step)" "$work/wide.log" || fail "wide: $(grep privacy "$work/wide.log")"

# 3. The noise: the same run again is the same curve; another sigma another one.
"$trident" train "${llama[@]}" --train.steps=4 --log.run_dir="$work/again" > /dev/null
"$trident" train "${llama_any[@]}" --privacy.noise_multiplier=3 --train.steps=4 --log.run_dir="$work/noisier" > /dev/null
python3 - "$work/one" "$work/again" "$work/noisier" <<'PY'
import json, sys
one, again, noisier = [[json.loads(l)["loss"] for l in open(d + "/metrics.jsonl")] for d in sys.argv[1:]]
assert one == again, (one, again)
assert one[0] == noisier[0] and all(abs(a - b) > 1e-6 for a, b in zip(one[1:], noisier[1:])), (one, noisier)
PY

# 4. target_epsilon alone: the sigma `trident privacy` finds for q, train.steps and delta = 1/N.
"$trident" train "${llama_any[@]}" --privacy.target_epsilon=2 --train.steps=6 \
  --log.run_dir="$work/target" > "$work/target.log" || fail "target: $(tail -3 "$work/target.log")"
"$trident" privacy --sample-rate 0.0479041916167665 --target-epsilon 2 --steps 6 --delta 0.0059880239520958 --json \
  > "$work/target.json"
python3 - "$work/target/metrics.jsonl" "$work/target.json" "$work/target.log" <<'PY'
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
want = json.load(open(sys.argv[2]))
sigma = float(re.search(r"sigma = ([0-9.e+-]+), delta", open(sys.argv[3]).read()).group(1))
assert len(lines) == 6 and abs(sigma - want["sigma"]) <= 1e-5 * want["sigma"], (sigma, want)
assert 0.99 * 2 <= lines[-1]["epsilon"] <= 2, lines[-1]["epsilon"]
print(f"target epsilon 2: sigma {sigma:.6g}, epsilon after 6 steps {lines[-1]['epsilon']:.6g}")
PY

# 5. A budget with a given sigma: training stops before the step that would exceed it.
"$trident" train "${llama[@]}" --train.steps=20 --privacy.target_epsilon=0.3 --checkpoint.interval=100 \
  --log.run_dir="$work/budget" > "$work/budget.log" || fail "budget: $(tail -3 "$work/budget.log")"
grep -q "privacy: the budget epsilon = 0.3 stops training after [0-9]* of 20 steps" "$work/budget.log" \
  || fail "no budget line: $(grep privacy "$work/budget.log")"
grep -q "privacy: the budget epsilon = 0.3 is spent after" "$work/budget.log" || fail "no stop line"
done_steps=$(python3 -c "import json,sys; print(len(open(sys.argv[1]).readlines()))" "$work/budget/metrics.jsonl")
[ "$done_steps" -lt 20 ] || fail "the budget did not stop training ($done_steps steps)"
[ -f "$work/budget/checkpoints/step_$(printf %08d "$done_steps").h5" ] || fail "no checkpoint at the budget's stop"
"$trident" privacy --sample-rate 0.0479041916167665 --noise 1 --steps $((done_steps + 1)) --delta 0.0059880239520958 \
  --json > "$work/next.json"
python3 - "$work/budget/metrics.jsonl" "$work/next.json" <<'PY'
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
assert last["epsilon"] <= 0.3 < json.load(open(sys.argv[2]))["epsilon"], (last["epsilon"], open(sys.argv[2]).read())
PY

# 6. Resume: 2 steps, then 2 more, is the unbroken 4-step run (constant learning rate); the
#    checkpoint records the mechanism and the epsilon spent; another sigma is refused.
const=(--train.decay=const --train.warmup=0)
"$trident" train "${llama[@]}" "${const[@]}" --train.steps=4 --log.run_dir="$work/unbroken" > /dev/null
"$trident" train "${llama[@]}" "${const[@]}" --train.steps=2 --checkpoint.interval=2 --log.run_dir="$work/resumed" > /dev/null
"$trident" inspect "$work/resumed/checkpoints/step_00000002.h5" > "$work/inspect.txt"
for key in privacy_epsilon privacy_sigma privacy_sample_rate privacy_delta privacy_clip; do
  grep -q "^  $key " "$work/inspect.txt" || fail "checkpoint lacks $key: $(grep privacy "$work/inspect.txt")"
done
set +e
"$trident" train "${llama_any[@]}" "${const[@]}" --privacy.noise_multiplier=2 --train.steps=4 \
  --log.run_dir="$work/resumed" > "$work/bad_resume.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "a resume with another sigma: exit $rc, expected 2"
grep -q "privacy: the checkpoint resumed was trained with sigma = 1, this run has 2" "$work/bad_resume.log" \
  || fail "bad resume message: $(tail -2 "$work/bad_resume.log")"
"$trident" train "${llama[@]}" "${const[@]}" --train.steps=4 --log.run_dir="$work/resumed" > "$work/resume.log" \
  || fail "resume: $(tail -3 "$work/resume.log")"
python3 - "$work/unbroken/metrics.jsonl" "$work/resumed/metrics.jsonl" "$work/inspect.txt" <<'PY'
import json, re, sys
unbroken, resumed = [[json.loads(l) for l in open(p)] for p in sys.argv[1:3]]
assert [l["step"] for l in resumed] == [1, 2, 3, 4], [l["step"] for l in resumed]
for a, b in zip(unbroken, resumed):
    assert abs(a["loss"] - b["loss"]) <= 1e-6 * a["loss"] and a["epsilon"] == b["epsilon"], (a, b)
spent = float(re.search(r"privacy_epsilon\s+(\S+)", open(sys.argv[3]).read()).group(1))
assert abs(spent - unbroken[1]["epsilon"]) <= 1e-8 * spent, (spent, unbroken[1]["epsilon"])  # metrics: 9 digits
PY
"$trident" train --model.init_from=tests/data/hf/llama "${data[@]}" --train.steps=2 --checkpoint.interval=2 \
  --log.run_dir="$work/plain" > /dev/null
set +e
"$trident" train "${llama[@]}" --train.steps=4 --log.run_dir="$work/plain" > "$work/plain_resume.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "was trained without privacy" "$work/plain_resume.log" \
  || fail "privacy on a non-private checkpoint: exit $rc: $(tail -2 "$work/plain_resume.log")"

# 7. privacy.sampling = shuffle runs and says what its epsilon is.
"$trident" train "${llama[@]}" --privacy.sampling=shuffle --train.steps=2 --log.run_dir="$work/shuffle" \
  > "$work/shuffle.log" || fail "shuffle: $(tail -3 "$work/shuffle.log")"
grep -q "not a proven bound for shuffled batches" "$work/shuffle.log" || fail "no shuffle warning"
python3 -c "import json,sys; assert all(json.loads(l)['privacy_units'] == 8 for l in open(sys.argv[1]))" \
  "$work/shuffle/metrics.jsonl"

# 8. Bad input: exit 2, the key named.
expect_error() {  # expected message, then the arguments
  local want=$1
  shift
  set +e
  "$trident" train "$@" --log.run_dir="$work/bad" > "$work/bad.log" 2>&1
  local rc=$?
  set -e
  [ $rc -eq 2 ] || fail "exit $rc (expected 2) for $*: $(tail -2 "$work/bad.log")"
  grep -q -- "$want" "$work/bad.log" || fail "no '$want' for $*: $(tail -2 "$work/bad.log")"
}
llama_base=(--model.init_from=tests/data/hf/llama "${data[@]}" --privacy.enabled=true --train.steps=2)
expect_error "needs privacy.noise_multiplier or privacy.target_epsilon" "${llama_base[@]}"
expect_error "privacy.clip must be > 0" "${llama_base[@]}" --privacy.noise_multiplier=1 --privacy.clip=0
expect_error "privacy.unit must be document or row" "${llama_base[@]}" --privacy.noise_multiplier=1 --privacy.unit=token
expect_error "privacy.accountant" "${llama_base[@]}" --privacy.noise_multiplier=1 --privacy.accountant=gdp
expect_error "privacy.delta must be in" "${llama_base[@]}" --privacy.noise_multiplier=1 --privacy.delta=1
expect_error "trainable tied token table" --model.init_from=tests/data/hf/gpt2 "${data[@]}" --privacy.enabled=true \
  --privacy.noise_multiplier=1 --train.steps=2
expect_error "privacy.enabled with moe.experts > 0" --model.init_from=tests/data/hf/qwen2_moe "${data[@]}" \
  --privacy.enabled=true --privacy.noise_multiplier=1 --train.steps=2
expect_error "privacy.enabled with comm.compression" "${llama_base[@]}" --privacy.noise_multiplier=1 \
  --comm.compression=int8
echo "dp_training: all checks passed"
