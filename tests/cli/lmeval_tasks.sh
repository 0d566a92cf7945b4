#!/usr/bin/env bash
# Log-likelihood tasks against lm-evaluation-harness: the tiny GPT-2 and Llama fixtures
# (utils/make_lmeval_fixtures.py) score two multiple-choice tasks (acc, acc_norm) and a rolling
# perplexity task (word/byte perplexity, bits per byte) as the harness's HF backend scored them
# (tests/data/lmeval/expected.json): acc to 1e-6, perplexities to 1e-4 relative, on one rank
# and under dp=2, tp=2 and pp=2; per-level rows add up; perturbations are seeded and
# reported with the worst case; per-choice log-likelihoods (eval.predictions) equal the harness's under
# every layout; an MoE model under ep = 2 scores as one rank; bad task lines
# are clear errors (exit 2).
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

tasks=tests/data/lmeval
score() {  # score MODEL TASK RANKS ARGS... -> appends to $work/${run:-MODEL}/eval.jsonl
  local model=$1 task=$2 ranks=$3
  shift 3
  mpirun -np "$ranks" "$trident" eval --model.init_from=tests/data/hf/lmeval_$model --model.seq_len=64 \
    --train.micro_batch=3 --train.global_batch=12 --eval.task=$tasks/$task.jsonl --log.run_dir="$work/${run:-$model}" "$@" \
    > "$work/$model-$task-$ranks.log" 2>&1 || { cat "$work/$model-$task-$ranks.log"; fail "$model $task on $ranks ranks"; }
}
for model in gpt2 llama; do
  for task in choice_qa choice_complete rolling; do
    score $model $task 1
  done
done
for layout in dp tp pp; do
  score gpt2 choice_complete 2 --parallel.$layout=2
  score llama rolling 2 --parallel.$layout=2
done
score llama choice_qa 2 --parallel.tp=2

python3 - "$work" $tasks/expected.json <<'PY'
import json, sys
work, expected = sys.argv[1], json.load(open(sys.argv[2]))
for model in ["gpt2", "llama"]:
    lines = [json.loads(l) for l in open(f"{work}/{model}/eval.jsonl")]
    runs = {}
    for l in lines:  # one run per (dataset, position in the file): group consecutive runs of a task
        task = l["dataset"].rsplit("/", 1)[-1][:-len(".jsonl")]
        key = (l["metric"], l.get("level", ""), l.get("perturbation", ""))
        runs.setdefault(task, []).append((key, l["value"]))
    for task, values in runs.items():
        want = expected[model][task]["metrics"]
        for metric, ref in want.items():
            got = [v for (m, level, p), v in values if m == metric and not level and not p]
            assert got, (model, task, metric)
            for g in got:
                tol = 1e-6 if metric.startswith("acc") else 1e-4 * abs(ref)
                assert abs(g - ref) <= tol, f"{model} {task} {metric}: trident {g} vs lm-eval {ref}"
        print(f"{model} {task}: {len(got)} runs equal lm-eval's {want}")
    # Per level: the levels' example-weighted accuracies give the overall one.
    qa = [(k, v) for k, v in runs["choice_qa"]]
    acc = [v for (m, level, p), v in qa if m == "acc" and not level][0]
    by_level = {level: v for (m, level, p), v in qa if m == "acc" and level}
    n = {level: v for (m, level, p), v in qa if m == "examples" and level}
    assert set(by_level) == {"easy", "hard"}, by_level
    assert abs(sum(by_level[l] * n[l] for l in n) / sum(n.values()) - acc) < 1e-12, (by_level, n, acc)
PY

# Robustness: every perturbation scored, seeded (the same numbers twice and under dp = 2), the
# worst case no better than any of them.
perturb=(--eval.perturb=typo,case,whitespace,shuffle_choices,distractor --eval.perturb_rate=0.2)
run=p1 score gpt2 choice_qa 1 "${perturb[@]}"
run=p2 score gpt2 choice_qa 2 "${perturb[@]}" --parallel.dp=2
grep -q "worst case over perturbations" "$work/gpt2-choice_qa-1.log" || fail "no worst-case line"
python3 - "$work/p1/eval.jsonl" "$work/p2/eval.jsonl" <<'PY'
import json, sys
def metrics(path):
    return {(l["metric"], l.get("level", ""), l.get("perturbation", "")): l["value"]
            for l in map(json.loads, open(path)) if l["metric"] not in ("samples_per_s", "mem_mb")}
a, b = metrics(sys.argv[1]), metrics(sys.argv[2])
assert a == b, "perturbed scores differ between 1 rank and dp = 2"
per = {p: v for (m, level, p), v in a.items() if m == "acc" and p}
assert set(per) == {"typo", "case", "whitespace", "shuffle_choices", "distractor"}, per
worst, clean = a[("acc_worst", "", "")], a[("acc", "", "")]
assert worst <= min(per.values()) + 1e-12 and abs(a[("acc_drop", "", "")] - (clean - worst)) < 1e-12, (worst, per)
print(f"clean acc {clean:.4f}, perturbed {per}, worst case {worst:.4f}")
PY

# Per-choice log-likelihoods (eval.predictions): the shared-context scorer (each context computed
# once, logits only where a choice token is scored) equals the harness's numbers under 1 rank,
# dp=2, tp=2 and pp=2; a context too long for one row (cut from the left, as the harness cuts
# it) is scored by rows beside shared-context examples, whose numbers do not change.
run=ll1 score gpt2 choice_complete 1 --eval.predictions=true
run=ll_dp score gpt2 choice_qa 2 --parallel.dp=2 --eval.predictions=true
run=ll_tp score llama choice_qa 2 --parallel.tp=2 --eval.predictions=true
run=ll_pp score llama choice_complete 2 --parallel.pp=2 --eval.predictions=true
python3 - $tasks/choice_qa.jsonl "$work/long.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
long = {"context": "Question: " + "which of these is the answer, " * 12 + "really?\nAnswer:", "choices": ["yes", "no"], "gold": 0}
with open(sys.argv[2], "w") as out:
    for i, l in enumerate(lines[:3] + [long] + lines[3:]):
        out.write(json.dumps(l) + "\n")
PY
"$trident" eval --model.init_from=tests/data/hf/lmeval_gpt2 --model.seq_len=64 --train.micro_batch=3 \
  --train.global_batch=12 --eval.task="$work/long.jsonl" --eval.predictions=true --log.run_dir="$work/ll_long" \
  > "$work/long.log" 2>&1 || { cat "$work/long.log"; fail "a task with a context longer than a row"; }
python3 - "$work" $tasks/expected.json <<'PY'
import json, sys
work, expected = sys.argv[1], json.load(open(sys.argv[2]))
def lls(run):
    return [json.loads(l)["loglikelihoods"] for l in open(f"{work}/{run}/predictions/step_00000000.jsonl")]
worst = 0
for run, model, task in [("ll1", "gpt2", "choice_complete"), ("ll_dp", "gpt2", "choice_qa"),
                         ("ll_tp", "llama", "choice_qa"), ("ll_pp", "llama", "choice_complete")]:
    got, want = lls(run), expected[model][task]["loglikelihoods"]
    assert len(got) == len(want), (run, len(got), len(want))
    for g, w in zip(got, want):
        assert len(g) == len(w), (run, g, w)
        for a, b in zip(g, w):
            worst = max(worst, abs(a - b) / max(1, abs(b)))
            assert abs(a - b) <= 1e-4 * max(1, abs(b)), f"{run}: trident {a} vs lm-eval {b}"
mixed = lls("ll_long")
others = mixed[:3] + mixed[4:]
assert len(mixed) == 17 and len(mixed[3]) == 2 and all(
    abs(a - b) <= 1e-5 * max(1, abs(b)) for x, y in zip(others, lls("ll_dp")) for a, b in zip(x, y)), mixed
print(f"per-choice log-likelihoods equal lm-eval's under 1 rank, dp, tp, pp (largest relative gap {worst:.1e});"
      f" a long context beside them leaves them as they were")
PY

# Bad lines: a clear error naming the file and line, exit 2.
bad() {  # bad NAME LINE EXPECTED
  printf '%s\n' '{"context": "a", "choices": ["b", "c"], "gold": 0}' "$2" > "$work/$1.jsonl"
  set +e
  "$trident" eval --model.init_from=tests/data/hf/lmeval_gpt2 --model.seq_len=64 --eval.task="$work/$1.jsonl" \
    --log.run_dir="$work/bad" > "$work/$1.log" 2>&1
  local rc=$?
  set -e
  [[ $rc == 2 ]] || { cat "$work/$1.log"; fail "$1: exit $rc, not 2"; }
  grep -q "$1.jsonl:2: .*$3" "$work/$1.log" || { cat "$work/$1.log"; fail "$1: message"; }
}
bad gold_range '{"context": "a", "choices": ["b", "c"], "gold": 2}' 'is not an index'
bad one_choice '{"context": "a", "choices": ["b"], "gold": 0}' 'at least two'
bad no_context '{"choices": ["b", "c"], "gold": 0}' '"context" must be a string'
set +e
"$trident" eval --model.init_from=tests/data/hf/lmeval_gpt2 --model.seq_len=64 --eval.task=$tasks/rolling.jsonl \
  --eval.perturb=typo --log.run_dir="$work/bad" > "$work/rolling_perturb.log" 2>&1
rc=$?
"$trident" eval --model.init_from=tests/data/hf/lmeval_gpt2 --model.seq_len=64 --eval.task=$tasks/choice_qa.jsonl \
  --eval.perturb=typo,bogus --log.run_dir="$work/bad" > "$work/bogus.log" 2>&1
rc2=$?
set -e
[[ $rc == 2 ]] && grep -q "not to rolling" "$work/rolling_perturb.log" || fail "perturbing a rolling task: exit $rc"
[[ $rc2 == 2 ]] && grep -q "unknown perturbation 'bogus'" "$work/bogus.log" || fail "unknown perturbation: exit $rc2"
# A mixture-of-experts model under expert parallelism (ep = 2 exchanges rows between the
# replicas, which therefore run the same number of batches) scores as one rank does.
moe=(--config input/configs/moe.ini --eval.task=$tasks/rolling.jsonl --eval.tokenizer=byte)
"$trident" eval "${moe[@]}" --parallel.dp=1 --parallel.ep=1 --log.run_dir="$work/moe1" > "$work/moe1.log" 2>&1 ||
  { cat "$work/moe1.log"; fail "MoE on one rank"; }
mpirun -np 2 "$trident" eval "${moe[@]}" --log.run_dir="$work/moe2" > "$work/moe2.log" 2>&1 ||
  { cat "$work/moe2.log"; fail "MoE under ep = 2"; }
# A choice task on the MoE model: shared-context scoring on one rank, row scoring under ep = 2.
moe_choice=(--config input/configs/moe.ini --eval.task=$tasks/choice_complete.jsonl --eval.tokenizer=byte --eval.predictions=true)
"$trident" eval "${moe_choice[@]}" --parallel.dp=1 --parallel.ep=1 --log.run_dir="$work/moec1" > "$work/moec1.log" 2>&1 ||
  { cat "$work/moec1.log"; fail "MoE choice task on one rank"; }
mpirun -np 2 "$trident" eval "${moe_choice[@]}" --log.run_dir="$work/moec2" > "$work/moec2.log" 2>&1 ||
  { cat "$work/moec2.log"; fail "MoE choice task under ep = 2"; }
python3 - "$work/moec1" "$work/moec2" <<'PY'
import json, sys
a, b = ([json.loads(l)["loglikelihoods"] for l in open(f"{d}/predictions/step_00000000.jsonl")] for d in sys.argv[1:])
gap = max(abs(x - y) / max(1, abs(y)) for p, q in zip(a, b) for x, y in zip(p, q))
assert len(a) == len(b) == 12 and gap <= 1e-5, (len(a), len(b), gap)
print(f"MoE choice task: shared-context scoring (1 rank) equals row scoring (ep = 2), largest gap {gap:.1e}")
PY
python3 - "$work/moe1/eval.jsonl" "$work/moe2/eval.jsonl" <<'PY'
import json, sys
a, b = ({l["metric"]: l["value"] for l in map(json.loads, open(p))} for p in sys.argv[1:])
for m in ["word_perplexity", "byte_perplexity", "bits_per_byte"]:
    assert abs(a[m] - b[m]) <= 1e-6 * abs(a[m]), (m, a[m], b[m])
print(f"MoE: ep = 2 equals one rank (bits per byte {a['bits_per_byte']:.6f})")
PY
echo "lmeval_tasks: OK"
