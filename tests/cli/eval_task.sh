#!/usr/bin/env bash
# Generation tasks end to end: `trident eval --eval.task` on the GPT-2 fixture, whose task.jsonl
# answers are transformers' greedy continuations, scores 100% exact match under 1 rank, dp=2,
# tp=2 and pp=2; a wrong answer costs exactly its share; log.eval_interval with eval.task scores
# during training; bad task files are clear errors.
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
