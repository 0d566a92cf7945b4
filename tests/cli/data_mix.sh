#!/usr/bin/env bash
# Data mixtures end to end (data.train = w1 P1 w2 P2 ...): three sources of very different sizes,
# one smaller than its share needs (it repeats, a start-up line says so; data.max_repeat refuses
# it). Every prefix of the first 1000 global batches holds each source within one row of its
# target (trident inspect --batches); extreme weights and 100+ sources; losses under other
# layouts and micro-batch splits equal one rank's; loss/<name> averages to loss; preempted and
# resumed it is bitwise the uninterrupted run; a stage switch repeats nothing; a changed mix on
# resume is refused unless data.mix_change = continue, which equals the staged run; bad input
# exits 2.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

py=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')  # Python's own sources
"$trident" prep --input "$py"/email/*.py "$py"/json/*.py --output "$work/en" --valid-permille 100 > /dev/null
"$trident" prep --input "$py"/asyncio/*.py --output "$work/code" --valid-permille 100 > /dev/null
"$trident" prep --input "$py"/json/scanner.py --output "$work/zh" > /dev/null  # ~2.4k tokens

cat > "$work/mix.ini" <<EOF
[model]
arch = gpt2
layers = 8
hidden = 64
heads = 4
vocab = 320
seq_len = 64
[train]
steps = 30
micro_batch = 2
global_batch = 16
lr = 1e-3
min_lr = 1e-4
warmup = 5
seed = 1234
threads = 1
[data]
train = 0.6 $work/en 0.3 $work/code 0.1 $work/zh
[log]
interval = 1
[checkpoint]
interval = 2
EOF
cfg=(--config "$work/mix.ini")

# 1. One rank: the sources and zh's repeat factor at start; per-source metrics, held-out loss
# per source (data.valid with two prefixes), TensorBoard and the report show them.
"$trident" train "${cfg[@]}" --data.valid="$work/en-valid $work/code-valid" --log.eval_interval=15 \
  --log.run_dir="$work/one" > "$work/one.log"
grep -q "data: source zh ($work/zh): .* weight 0.1; .* repeat factor 1\.[0-9]" "$work/one.log" \
  || fail "no repeat line for zh: $(grep 'data:' "$work/one.log")"
grep -q "data: source en ($work/en): .* repeat factor 0\.0" "$work/one.log" || fail "no line for en"
set +e
"$trident" train "${cfg[@]}" --data.max_repeat=1 --log.run_dir="$work/capped" > "$work/capped.log" 2>&1; code=$?
set -e
[[ $code -eq 2 ]] && grep -q "data.max_repeat = 1: source zh ($work/zh) has [0-9]* rows but train.steps = 30 need 48" \
  "$work/capped.log" || fail "max_repeat: exit $code, $(tail -2 "$work/capped.log")"
[[ ! -e $work/capped/metrics.jsonl ]] || fail "a refused run wrote metrics"
python3 - "$work/one/eval.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
got = {(l["step"], l["dataset"].split("/")[-1]) for l in lines if l["metric"] == "loss"}
assert got == {(s, d) for s in (15, 30) for d in ("en-valid", "code-valid")}, got
PY
/opt/trident-tools/bin/python utils/read_tensorboard.py "$work/one/tensorboard" --metrics "$work/one/metrics.jsonl" \
  --eval "$work/one/eval.jsonl" > "$work/tb.txt" || fail "TensorBoard: $(tail -3 "$work/tb.txt")"
grep -q "loss/zh" "$work/tb.txt" && grep -q "eval/code-valid/loss" "$work/tb.txt" || fail "TensorBoard lacks per-source tags"
/usr/bin/python3 utils/run_report.py "$work/one" > /dev/null || fail "run_report.py failed on a mixture"
for label in 'data-plot="loss_per_source"' "training loss (zh)" "validation loss ($work/code-valid)" \
  'data-plot="tokens_per_source"'; do
  grep -qF "$label" "$work/one/report/report.html" || fail "report.html lacks $label"
done

# 1b. data.mix_alpha: weights proportional to tokens^alpha, the tokens prep.json counted.
"$trident" train "${cfg[@]}" --train.steps=1 --data.train="$work/en $work/code $work/zh" --data.mix_alpha=0.3 \
  --log.run_dir="$work/alpha" > "$work/alpha.log"
python3 - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
tokens = {s: json.load(open(f"{work}/{s}.prep.json"))["train_tokens"] for s in ("en", "code", "zh")}
total = sum(t ** 0.3 for t in tokens.values())
log = open(f"{work}/alpha.log").read()
for s, t in tokens.items():
    got = float(re.search(rf"data: source {s} .*; weight ([0-9.e-]+) \(tokens\^0.3\)", log).group(1))
    assert abs(got - t ** 0.3 / total) < 1e-5, (s, got, t ** 0.3 / total)
PY

# 2. Every prefix of 1000 global batches (16,000 rows) within one row of n w_i.
"$trident" inspect "${cfg[@]}" --batches 1000 --json > "$work/rows.jsonl"
"$trident" inspect "${cfg[@]}" --batches 2 > "$work/rows.txt"
grep -q "^batch 0: en 10 code 5 zh 1$" "$work/rows.txt" || fail "inspect text: $(head -1 "$work/rows.txt")"
grep -q "^  row 17: " "$work/rows.txt" || fail "inspect text has no row 17"
python3 - "$work/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 16000 and [r["row"] for r in rows] == list(range(16000)), "rows missing or out of order"
assert all(r["batch"] == r["row"] // 16 for r in rows)
weights = {"en": 0.6, "code": 0.3, "zh": 0.1}
count = dict.fromkeys(weights, 0)
worst = 0.0
for n, r in enumerate(rows, 1):
    count[r["source"]] += 1
    worst = max(worst, max(abs(count[s] - n * w) for s, w in weights.items()))
assert worst < 1, f"a prefix is {worst} rows off its target"
# zh (one short document) repeats in reshuffled epochs: each epoch holds every row once
zh = [(r["document"], r["offset"]) for r in rows if r["source"] == "zh"]
epoch = len(set(zh))
assert all(len(set(zh[k:k + epoch])) == epoch for k in range(0, len(zh) - epoch, epoch)), "a zh epoch repeats a row"
assert zh[:epoch] != zh[epoch:2 * epoch], "zh's second epoch is not reshuffled"
print(f"inspect: 16000 rows, every prefix within {worst:.3f} rows; zh repeats every {epoch} rows, reshuffled")
PY

# 3. Extreme weights and 101 sources: inspect reads them all and holds every prefix.
many=()
i=0
for f in "$py"/*.py; do
  [[ $(stat -c %s "$f") -gt 2000 ]] || continue
  "$trident" prep --input "$f" --output "$work/many/s$i" > /dev/null
  if ((i == 0)); then many+=(1e-4 "$work/many/s$i"); else many+=(1 "$work/many/s$i"); fi
  i=$((i + 1)); ((i < 101)) || break
done
((i == 101)) || fail "only $i stdlib files to make sources from"
"$trident" inspect "${cfg[@]}" --data.train="${many[*]}" --batches 200 --json > "$work/many.jsonl"
python3 - "$work/many.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
total = 1e-4 + 100
w = {f"s{i}": (1e-4 if i == 0 else 1) / total for i in range(101)}
count = dict.fromkeys(w, 0)
worst = 0.0
for n, r in enumerate(rows, 1):
    count[r["source"]] += 1
    worst = max(worst, max(abs(count[s] - n * x) for s, x in w.items()))
assert worst < 1 and len(rows) == 3200, (worst, len(rows))
print(f"101 sources (one at 1e-4): 3200 rows, every prefix within {worst:.3f} rows; s0 drew {count['s0']}")
PY

# 4. Layouts and another micro-batch split give one rank's losses (1e-5), per source too.
layout() {  # layout NAME NP ARGS...
  local name=$1 np=$2
  shift 2
  mpirun -np "$np" "$trident" train "${cfg[@]}" --train.steps=12 "$@" --log.run_dir="$work/$name" > "$work/$name.log"
}
layout ref 1
layout dp2 2 --parallel.dp=2
layout dp2tp2 4 --parallel.dp=2 --parallel.tp=2
layout tp2pp2 4 --parallel.tp=2 --parallel.pp=2
layout micro4 1 --train.micro_batch=4
python3 - "$work" <<'PY'
import json, math, pathlib, sys
work = pathlib.Path(sys.argv[1])
def metrics(run):
    return [json.loads(l) for l in (work / run / "metrics.jsonl").read_text().splitlines()]
names = ["en", "code", "zh"]
ref = metrics("ref")
assert len(ref) == 12
for m in ref:  # token-weighted, the per-source losses are the step's loss
    tokens = sum(m[f"tokens/{s}"] for s in names)
    mean = sum(m[f"loss/{s}"] * m[f"tokens/{s}"] for s in names if m[f"tokens/{s}"]) / tokens
    assert abs(mean - m["loss"]) < 1e-6, (m["step"], mean, m["loss"])
    assert m["tokens/en"] > m["tokens/code"] > m["tokens/zh"] > 0, m
for run in ["dp2", "dp2tp2", "tp2pp2", "micro4"]:
    got = metrics(run)
    worst = max(abs(a[k] - b[k]) for a, b in zip(ref, got) for k in ["loss"] + [f"loss/{s}" for s in names])
    assert len(got) == 12 and worst < 1e-5, f"{run}: {worst}"
    assert all(a[f"tokens/{s}"] == b[f"tokens/{s}"] for a, b in zip(ref, got) for s in names), run
    print(f"{run}: losses and per-source losses within {worst:.1e} of one rank's")
PY

# 5. Preempted at step 12 and resumed: bitwise the uninterrupted run.
TRIDENT_TEST_PREEMPT=12 "$trident" train "${cfg[@]}" --log.run_dir="$work/split" > "$work/split1.log"
"$trident" train "${cfg[@]}" --log.run_dir="$work/split" > "$work/split2.log"
grep -q "resumed from .*step_00000012.h5" "$work/split2.log" || fail "did not resume from step 12"
losses() { python3 -c 'import json,sys; [print(json.loads(l)["loss"]) for l in open(sys.argv[1])]' "$1"; }
[[ $(losses "$work/one/metrics.jsonl") == $(losses "$work/split/metrics.jsonl") ]] \
  || fail "the resumed losses differ from the uninterrupted run"
h5diff "$work/one/checkpoints/step_00000030.h5" "$work/split/checkpoints/step_00000030.h5" /model /model \
  || fail "parameters differ after resume"

# 6. Stages: from step 10 other weights. Resumed across the switch it is the same run; inspect
# shows nothing repeated (en and code never run out: every row of theirs is new).
stages=(--data.mix_stages="10: 0.2 0.3 0.5")
"$trident" inspect "${cfg[@]}" "${stages[@]}" --batches 30 --json > "$work/staged.jsonl"
python3 - "$work/staged.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for s in ["en", "code"]:
    seen = [(r["document"], r["offset"]) for r in rows if r["source"] == s]
    assert len(seen) == len(set(seen)), f"{s}: a row repeats across the stage switch"
before = [r["source"] for r in rows[:160]].count("zh")
after = [r["source"] for r in rows[160:]].count("zh")
assert abs(before - 16) < 1 and abs(after - 160) < 1, (before, after)
print(f"stages: zh {before} rows before step 10, {after} after; en and code repeat nothing")
PY
"$trident" train "${cfg[@]}" "${stages[@]}" --train.steps=16 --log.run_dir="$work/staged" > /dev/null
TRIDENT_TEST_PREEMPT=8 "$trident" train "${cfg[@]}" "${stages[@]}" --train.steps=16 --log.run_dir="$work/staged2" > /dev/null
"$trident" train "${cfg[@]}" "${stages[@]}" --train.steps=16 --log.run_dir="$work/staged2" > /dev/null
h5diff "$work/staged/checkpoints/step_00000016.h5" "$work/staged2/checkpoints/step_00000016.h5" /model /model \
  || fail "a run resumed across the stage switch differs"

# 7. A changed mix on resume: refused (exit 2, checkpoints untouched); with mix_change =
# continue each source goes on from its cursor, which is the staged run exactly.
TRIDENT_TEST_PREEMPT=10 "$trident" train "${cfg[@]}" --train.steps=16 --log.run_dir="$work/changed" > /dev/null
before=$(ls -l --time-style=full-iso "$work/changed/checkpoints")
changed=(--data.train="0.2 $work/en 0.3 $work/code 0.5 $work/zh" --train.steps=16 --log.run_dir="$work/changed")
set +e
"$trident" train "${cfg[@]}" "${changed[@]}" > "$work/refused.log" 2>&1; code=$?
set -e
[[ $code -eq 2 ]] && grep -q "data.train: the checkpoint's data mixture (.*) differs from this configuration's" \
  "$work/refused.log" || fail "changed mix: exit $code, $(tail -2 "$work/refused.log")"
[[ $before == $(ls -l --time-style=full-iso "$work/changed/checkpoints") ]] || fail "a refused resume touched checkpoints"
"$trident" train "${cfg[@]}" "${changed[@]}" --data.mix_change=continue > "$work/continued.log"
grep -q "data.mix_change = continue: .* from step 10 each source goes on from its cursor" "$work/continued.log" \
  || fail "continue did not say so"
h5diff "$work/staged/checkpoints/step_00000016.h5" "$work/changed/checkpoints/step_00000016.h5" /model /model \
  || fail "continue differs from the run staged at the same step"

# 8. Bad input: exit 2 naming the problem.
refuse() {  # refuse PATTERN ARGS...
  local pattern=$1
  shift
  set +e
  "$trident" train "${cfg[@]}" "$@" --log.run_dir="$work/bad" > "$work/bad.log" 2>&1; local code=$?
  set -e
  [[ $code -eq 2 ]] && grep -q -- "$pattern" "$work/bad.log" || fail "$*: exit $code, $(tail -1 "$work/bad.log")"
  [[ ! -e $work/bad/metrics.jsonl ]] || fail "$*: a refused run wrote metrics"
}
refuse "odd number" --data.train="0.6 $work/en 0.3"
refuse "weight" --data.train="0 $work/en 1 $work/code"
refuse "weight" --data.train="-1 $work/en 1 $work/code"
refuse "no token shards at $work/nowhere" --data.train="0.5 $work/en 0.5 $work/nowhere"
refuse "data.mix_stages" --data.mix_stages="10: 0.5 0.5"
refuse "two sources are named 'en'" --data.train="0.5 $work/en 0.5 $work/many/../en"
echo "data mixtures: ok"
