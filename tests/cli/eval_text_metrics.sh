#!/usr/bin/env bash
# eval.metrics on a generation task end to end: the GPT-2 fixture's greedy answers scored
# against written references by exact match, F1, ROUGE-1/2/L/Lsum and corpus BLEU, recomputed
# here from the predictions file (eval.predictions) by a separate implementation of
# rouge-score's and sacrebleu's rules (the unit test checks the packages themselves); per level,
# under a perturbation, and the same under dp = 2 and tp = 2 (BLEU's statistics summed over
# ranks); eval.rouge_stem leaves the other scores as they are; bad metric names are exit 2.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

fixture=tests/data/hf/gpt2
# The fixture's prompts with written references around the model's own answers (its greedy
# continuations are the fixture's outputs): partial n-gram overlap for ROUGE and BLEU, one
# example with several references, one with newlines (ROUGE-Lsum's sentences), one exact.
python3 - $fixture/task.jsonl "$work/task.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for i, line in enumerate(open(sys.argv[1])):
        t = json.loads(line)
        answer = t["output"]
        refs = [[f"the running dogs {answer} ran", "dogs running"], [f"{answer} the end"],
                [f"x {answer} y\n{answer} again"], [f"Alalal, alalal; {answer}."], [answer]][i]
        out.write(json.dumps({"input": t["input"], "output": refs[0], "answers": refs[1:],
                              "level": ["easy", "hard"][i % 2]}) + "\n")
PY
all_metrics=em,f1,rouge1,rouge2,rougeL,rougeLsum,bleu
common=(--model.init_from=$fixture --model.seq_len=32 --eval.batch=2 --eval.task="$work/task.jsonl" --eval.max_new_tokens=6
        --eval.metrics=$all_metrics --eval.predictions=true)
"$trident" eval "${common[@]}" --log.run_dir="$work/one" --eval.perturb=typo --eval.perturb_rate=0.3 > "$work/one.log"
grep -q "ROUGE-Lsum" "$work/one.log" || fail "no ROUGE in the summary: $(cat "$work/one.log")"
for layout in dp tp; do
  mpirun -np 2 "$trident" eval "${common[@]}" --log.run_dir="$work/$layout" --eval.perturb=typo --eval.perturb_rate=0.3 \
    --parallel.$layout=2 > "$work/$layout.log"
done
"$trident" eval "${common[@]}" --log.run_dir="$work/stem" --eval.rouge_stem=true > "$work/stem.log"

python3 - "$work" <<'PY'
import collections, json, math, re, sys
work = sys.argv[1]

def rouge_tokens(s):
    return re.findall(r"[a-z0-9]+", re.sub("\u0130", "i", s).replace("\u212a", "k").lower())

def f(p, r):
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)

def rouge_n(pred, ref, n):
    grams = lambda t: collections.Counter(tuple(t[i:i + n]) for i in range(len(t) - n + 1))
    p, r = grams(pred), grams(ref)
    hit = sum(min(c, r[g]) for g, c in p.items())
    return f(hit / max(sum(p.values()), 1), hit / max(sum(r.values()), 1))

def lcs(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            t[i + 1][j + 1] = t[i][j] + 1 if a[i] == b[j] else max(t[i][j + 1], t[i + 1][j])
    return t[-1][-1]

def rouge_l(pred, ref):
    if not pred or not ref:
        return 0.0
    n = lcs(pred, ref)
    return f(n / len(pred), n / len(ref))

def rouge_lsum(pred, ref):  # union LCS over newline-separated sentences, each reference token once
    ps = [rouge_tokens(s) for s in pred.split("\n") if s]
    rs = [rouge_tokens(s) for s in ref.split("\n") if s]
    ps, rs = [s for s in ps if s], [s for s in rs if s]
    np_, nr = sum(map(len, ps)), sum(map(len, rs))
    if not np_ or not nr:
        return 0.0
    pc, rc = collections.Counter(t for s in ps for t in s), collections.Counter(t for s in rs for t in s)
    hits = 0
    for r in rs:
        union = set()
        for p in ps:  # indices of r in an LCS with p
            t = [[0] * (len(p) + 1) for _ in range(len(r) + 1)]
            for i in range(len(r)):
                for j in range(len(p)):
                    t[i + 1][j + 1] = t[i][j] + 1 if r[i] == p[j] else max(t[i][j + 1], t[i + 1][j])
            i, j = len(r), len(p)
            while i and j:
                if r[i - 1] == p[j - 1]:
                    union.add(i - 1); i -= 1; j -= 1
                elif t[i - 1][j] >= t[i][j - 1]:
                    i -= 1
                else:
                    j -= 1
        for k in sorted(union):
            tok = r[k]
            if pc[tok] > 0 and rc[tok] > 0:
                hits += 1; pc[tok] -= 1; rc[tok] -= 1
    return f(hits / np_, hits / nr)

def tok13a(s):
    s = s.rstrip().replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    s = s.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    s = re.sub(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])", r" \1 ", " " + s + " ")
    s = re.sub(r"([^0-9])([\.,])", r"\1 \2 ", s)
    s = re.sub(r"([\.,])([^0-9])", r" \1 \2", s)
    s = re.sub(r"([0-9])(-)", r"\1 \2 ", s)
    return s.split()

def bleu(pairs):
    correct, total, hl, rl = [0] * 4, [0] * 4, 0, 0
    for pred, refs in pairs:
        h, rs = tok13a(pred), [tok13a(r) for r in refs]
        hl += len(h)
        rl += min((abs(len(r) - len(h)), len(r)) for r in rs)[1]
        for n in range(1, 5):
            hc = collections.Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
            rmax = collections.Counter()
            for r in rs:
                for g, c in collections.Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1)).items():
                    rmax[g] = max(rmax[g], c)
            total[n - 1] += sum(hc.values())
            correct[n - 1] += sum(min(c, rmax[g]) for g, c in hc.items())
    if not any(correct):
        return 0.0
    bp = 1.0 if hl >= rl else (math.exp(1 - rl / hl) if hl else 0.0)
    prec, smooth = [], 1.0
    for c, t in zip(correct, total):
        if t == 0:
            prec.append(0.0)
        elif c == 0:
            smooth *= 2; prec.append(100.0 / (smooth * t))
        else:
            prec.append(100.0 * c / t)
    return bp * math.exp(sum(math.log(p) if p else -9999999999.0 for p in prec) / 4)

task = [json.loads(l) for l in open(f"{work}/task.jsonl")]
refs = [[t["output"]] + t["answers"] for t in task]

def expected(preds, level=None):
    keep = [i for i in range(len(preds)) if level is None or task[i]["level"] == level]
    out = {"examples": len(keep)}
    for name, fn in [("rouge1", lambda p, r: rouge_n(rouge_tokens(p), rouge_tokens(r), 1)),
                     ("rouge2", lambda p, r: rouge_n(rouge_tokens(p), rouge_tokens(r), 2)),
                     ("rougeL", lambda p, r: rouge_l(rouge_tokens(p), rouge_tokens(r))),
                     ("rougeLsum", rouge_lsum)]:
        out[name] = sum(max(fn(preds[i], r) for r in refs[i]) for i in keep) / len(keep)
    out["bleu"] = bleu([(preds[i], refs[i]) for i in keep])
    return out

def records(run):
    return {(l["metric"], l.get("level", ""), l.get("perturbation", "")): l["value"]
            for l in map(json.loads, open(f"{work}/{run}/eval.jsonl"))
            if l["metric"] not in ("gen_tokens_per_s", "gen_samples_per_s", "mem_mb")}

lines = [json.loads(l) for l in open(f"{work}/one/predictions/step_00000000.jsonl")]
assert all(set(l) >= {"prompt", "prediction", "reference"} for l in lines), lines[0]
clean = [l for l in lines if "perturbation" not in l]
typo = [l for l in lines if l.get("perturbation") == "typo"]
assert len(clean) == len(task) == len(typo), (len(clean), len(typo))
assert [l["reference"] for l in clean] == [t["output"] for t in task]
preds = [l["prediction"] for l in clean]
got = records("one")
checks = [(expected(preds), ""), (expected(preds, "easy"), "easy"), (expected(preds, "hard"), "hard")]
for want, level in checks:
    for metric, value in want.items():
        assert abs(got[(metric, level, "")] - value) < 1e-9, (metric, level, got[(metric, level, "")], value)
typo_want = expected([l["prediction"] for l in typo])
for metric, value in typo_want.items():
    assert abs(got[(metric, "", "typo")] - value) < 1e-9, (metric, "typo", got[(metric, "", "typo")], value)
assert 0 < got[("rouge1", "", "")] < 1 and 0 < got[("bleu", "", "")] < 100, got
for layout in ("dp", "tp"):
    other = records(layout)
    assert other.keys() == got.keys(), set(other) ^ set(got)
    bad = {k: (got[k], other[k]) for k in got if abs(got[k] - other[k]) > 1e-9}
    assert not bad, f"{layout}=2 differs: {bad}"
stem = records("stem")
assert stem[("bleu", "", "")] == got[("bleu", "", "")] and stem[("exact_match", "", "")] == got[("exact_match", "", "")]
print("text metrics equal the recomputation:", {k[0]: round(v, 4) for k, v in got.items() if not k[1] and not k[2]})
PY

expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN in the message
  local pattern=$1 code
  shift
  set +e
  "$trident" eval --model.init_from=$fixture --model.seq_len=32 --log.run_dir="$work/err_run" "$@" > "$work/err" 2>&1
  code=$?
  set -e
  [ "$code" -eq 2 ] || fail "$*: exit $code, want 2: $(cat "$work/err")"
  grep -q -- "$pattern" "$work/err" || fail "$*: unclear message: $(cat "$work/err")"
  [ ! -e "$work/err_run/eval.jsonl" ] || fail "$*: wrote eval.jsonl before refusing"
}
expect_error "eval.metrics: unknown metric 'rouge3'" --eval.task="$work/task.jsonl" --eval.metrics=em,rouge3
expect_error "eval.metrics: 'bleu' is named twice" --eval.task="$work/task.jsonl" --eval.metrics=bleu,bleu
expect_error "eval.metrics: no metric named" --eval.task="$work/task.jsonl" --eval.metrics=,
expect_error "eval.metrics applies to generate tasks" --eval.task=tests/data/lmeval/choice_qa.jsonl --eval.metrics=bleu
echo "eval_text_metrics: ok"
