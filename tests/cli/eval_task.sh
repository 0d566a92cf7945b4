#!/usr/bin/env bash
# Generation tasks end to end: `trident eval --eval.task` on the GPT-2 fixture, whose task.jsonl
# answers are transformers' greedy continuations, scores 100% exact match under 1 rank, dp=2,
# tp=2 and pp=2; a wrong answer costs exactly its share; log.eval_interval with eval.task scores
# during training; perturbed prompts and per-level rows (the same under dp = 2); bad task files are
# clear errors.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

fixture=tests/data/hf/gpt2
run="$work/run"
common=(--model.init_from=$fixture --model.seq_len=32 --eval.batch=2 --log.run_dir="$run")
task=(--eval.task=$fixture/task.jsonl --eval.max_new_tokens=6)
"$trident" eval "${common[@]}" "${task[@]}" > "$work/eval1.log"
grep -q "exact match 100.00%" "$work/eval1.log" || fail "single rank: $(cat "$work/eval1.log")"
for layout in dp tp pp; do
  mpirun -np 2 "$trident" eval "${common[@]}" "${task[@]}" --parallel.$layout=2 > "$work/eval_$layout.log"
done

# One more line whose reference the model does not produce: 5 of 6 right.
cp $fixture/task.jsonl "$work/task.jsonl"
echo '{"input": "def main(", "output": "something else entirely"}' >> "$work/task.jsonl"
"$trident" eval "${common[@]}" --eval.task="$work/task.jsonl" --eval.max_new_tokens=6 > "$work/eval_wrong.log"

python3 - "$run/eval.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
em = [l["value"] for l in lines if l["metric"] == "exact_match"]
f1 = [l["value"] for l in lines if l["metric"] == "f1"]
n = [l["value"] for l in lines if l["metric"] == "examples"]
assert em[:4] == [1.0] * 4 and f1[:4] == [1.0] * 4, (em, f1)  # 1 rank, dp2, tp2, pp2
assert n == [5, 5, 5, 5, 6], n
assert abs(em[4] - 5 / 6) < 1e-12 and 0 < f1[4] <= 5 / 6 + 1e-12, (em, f1)
print(f"exact match 100% under 1 rank, dp=2, tp=2, pp=2; with a wrong answer {em[4]:.4f}")
PY

# During training: the byte-level tiny model scored on a byte task at steps 2 and 4.
printf '%s\n' '{"input": "def ", "output": "main"}' '{"input": "import ", "output": "os"}' > "$work/bytes.jsonl"
"$trident" train --config input/configs/tiny.ini --train.steps=4 --log.eval_interval=2 --eval.task="$work/bytes.jsonl" \
  --eval.max_new_tokens=4 --log.run_dir="$work/train" > "$work/train.log"
grep -q "task eval at step 2" "$work/train.log" || fail "no task evaluation at step 2: $(cat "$work/train.log")"
[ "$(grep -c '"metric":"exact_match"' "$work/train/eval.jsonl")" -eq 2 ] || fail "want 2 exact_match lines: $(cat "$work/train/eval.jsonl")"

# eval.template = auto: the template data.train's prep.json names, in `trident eval` too.
"$trident" prep --input "$work/bytes.jsonl" --output "$work/sft" --template alpaca > /dev/null
"$trident" eval --config input/configs/tiny.ini --data.train="$work/sft" --eval.task="$work/bytes.jsonl" \
  --eval.max_new_tokens=4 --log.run_dir="$work/train" > "$work/auto.log"
grep -q "prompt: ### Instruction: def   ### Response:" "$work/auto.log" || fail "not alpaca: $(grep prompt "$work/auto.log")"

# Robustness and levels on a generation task: the fixture's prompts with typos, case flips and a
# distractor sentence, each line given a level; per-level rows add up, the worst case is no
# better than any perturbation, and the same under dp = 2.
python3 - $fixture/task.jsonl "$work/levels.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for i, line in enumerate(open(sys.argv[1])):
        out.write(json.dumps({**json.loads(line), "level": ["easy", "hard"][i % 2]}) + "\n")
PY
robust=(--eval.task="$work/levels.jsonl" --eval.max_new_tokens=6 --eval.perturb=typo,case,distractor --eval.perturb_rate=0.3)
"$trident" eval "${common[@]/--log.run_dir=*/--log.run_dir=$work/robust1}" "${robust[@]}" > "$work/robust1.log"
mpirun -np 2 "$trident" eval "${common[@]/--log.run_dir=*/--log.run_dir=$work/robust2}" "${robust[@]}" --parallel.dp=2 \
  > "$work/robust2.log"
grep -q "worst case over perturbations: exact match" "$work/robust1.log" || fail "no worst case: $(cat "$work/robust1.log")"
python3 - "$work/robust1/eval.jsonl" "$work/robust2/eval.jsonl" <<'PY'
import json, sys
def rows(path):
    return {(l["metric"], l.get("level", ""), l.get("perturbation", "")): l["value"] for l in map(json.loads, open(path))
            if l["metric"] in ("exact_match", "f1", "examples", "exact_match_worst", "exact_match_drop")}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert a == b, "the perturbed generation scores differ under dp = 2"
em = a[("exact_match", "", "")]
n = {lv: a[("examples", lv, "")] for lv in ("easy", "hard")}
assert abs(sum(a[("exact_match", lv, "")] * n[lv] for lv in n) / sum(n.values()) - em) < 1e-12, a
per = {p: a[("exact_match", "", p)] for p in ("typo", "case", "distractor")}
worst = a[("exact_match_worst", "", "")]
assert worst <= min(per.values()) + 1e-12 and abs(a[("exact_match_drop", "", "")] - (em - worst)) < 1e-12, (per, worst)
assert min(per.values()) < em, f"perturbing every prompt at rate 0.3 changed no answer: {per}"
print(f"generation robustness: clean {em:.3f}, {per}, worst case {worst:.3f}")
PY

expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN in the message
  local pattern=$1 code
  shift
  set +e
  "$trident" eval "${common[@]}" "$@" > "$work/err" 2>&1; code=$?
  set -e
  [ "$code" -eq 2 ] || fail "$*: exit $code, want 2: $(cat "$work/err")"
  grep -q -- "$pattern" "$work/err" || fail "$*: unclear message: $(cat "$work/err")"
}
expect_error "eval.task: no such file" --eval.task="$work/missing.jsonl" --eval.max_new_tokens=6
echo '{"text": "no answer here"}' > "$work/text.jsonl"
expect_error "text.jsonl:1: a task line needs an answer" --eval.task="$work/text.jsonl" --eval.kind=generate \
  --eval.max_new_tokens=6
printf '%s\n' '{"input": "a", "output": "b"}' '{"input": "a", "output": ' > "$work/cut.jsonl"
expect_error "cut.jsonl:2:" --eval.task="$work/cut.jsonl" --eval.max_new_tokens=6
expect_error "eval.max_new_tokens must be in" "${task[0]}" --eval.max_new_tokens=0
echo "eval_task: ok"
