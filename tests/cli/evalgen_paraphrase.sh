#!/usr/bin/env bash
# End-to-end `trident evalgen --paraphrase` with the paraphrase fixture (tests/data/hf/paraphrase,
# a tiny Llama trained by utils/make_paraphrase_fixture.py): it writes kept rewrites whose cases
# still hold (recomputed here from the rewritten prompt), each naming its source case, the sample
# and the model, which `trident eval` reads as eval.task; the same seed writes the same bytes,
# another seed other rewrites, a case the same rewrites whatever else the command writes; a
# trident checkpoint of the model rewrites alike; the plain prompt (no chat template) works too;
# planted rewrites (TRIDENT_TEST_PARAPHRASE_PLANT) that change an operand, a key, a value, the
# operation, the order, the unit or the answer cue, or leak the answer, are rejected with that
# reason, and the good ones are kept; bad options and models are exit 2 and leave no file.
# usage: evalgen_paraphrase.sh TRIDENT SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
source "$(dirname "$0")/../support/evalgen_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

model=tests/data/hf/paraphrase
threads=(--threads 1)  # a tiny model: one thread is fastest, and the test shares the machine
"$trident" evalgen --help | grep -q -- "--paraphrase MODEL" || fail "--help does not show --paraphrase"

# 1. Every suite, easy: kept rewrites that verify against their sources.
opts=(--suite all --levels easy --n 3 --seed 3)
"$trident" evalgen "${opts[@]}" --output "$work/source.jsonl" > /dev/null
"$trident" evalgen "${opts[@]}" --paraphrase $model "${threads[@]}" --samples 3 --output "$work/p.jsonl" > "$work/p.log" 2>&1 \
  || fail "paraphrase: $(cat "$work/p.log")"
cat "$work/p.log"
grep -q "evalgen: paraphrasing with model $model (llama, 3 layers, hidden 96, context 512), .*its chat template" \
  "$work/p.log" || fail "no model line"
grep -q "evalgen: 21 cases, 63 rewrites sampled (3 a case; temperature 0.8, top-p 0.95, seed 3)" "$work/p.log" \
  || fail "no sampling line"
grep -qE "evalgen: diversity: [1-9][0-9]* of the [0-9]+ distinct n-grams" "$work/p.log" || fail "no diversity"
python3 - "$work/source.jsonl" "$work/p.jsonl" "$work/p.log" "$model" <<'PY'
import json, re, sys
sources = [json.loads(l) for l in open(sys.argv[1])]
kept = [json.loads(l) for l in open(sys.argv[2])]
log, model = open(sys.argv[3]).read(), sys.argv[4]
assert len(kept) > 10, f"only {len(kept)} kept"
assert re.search(rf"evalgen: kept {len(kept)} of 63 \(", log), log
assert re.search(rf"evalgen: {len(kept)} generate cases \(seed 3\) -> ", log), log
nums = lambda s: sorted(re.findall(r"\d+", s))
seen = set()
for k in kept:
    assert list(k) == ["input", "output", "answers", "suite", "template", "level", "source", "sample",
                       "paraphrase_model"], k
    s = sources[k["source"]]
    for key in ["output", "answers", "suite", "template", "level"]:
        assert k[key] == s[key], (k, s)
    assert k["paraphrase_model"] == model and 0 <= k["sample"] < 3, k
    assert " ".join(k["input"].lower().split()) != " ".join(s["input"].lower().split()), k
    assert (k["source"], " ".join(k["input"].lower().split())) not in seen, k  # no duplicates
    seen.add((k["source"], " ".join(k["input"].lower().split())))
    assert k["input"].split("\n")[-1] == s["input"].split("\n")[-1], k  # the answer cue
    assert nums(k["input"]) == nums(s["input"]), k
    text, out = k["input"], k["output"]
    if k["suite"] == "arithmetic":  # recomputed from the rewrite
        a, b = [int(x) for x in re.findall(r"\d+", text)]
        want = {"add": a + b, "multiply": a * b,
                "subtract": b - a if re.search(r"\bfrom\b", text) else a - b}[k["template"]]
        assert int(out) == want, k
    if k["suite"] == "kv_lookup":
        pairs = dict(re.findall(r"^([a-z]+): (\S+)$", text, re.M))
        asked = [w for w in re.findall(r"[a-z]+", text.split("\n")[-2]) if w in pairs]
        assert len(asked) == 1 and pairs[asked[0]] == out, k
    if k["suite"] == "sort" and k["template"] == "numbers":
        items = sorted(int(x) for x in re.findall(r"\d+", text))
        assert ", ".join(map(str, items)) == out, k
print(f"kept {len(kept)} rewrites of {len(set(k['source'] for k in kept))} of {len(sources)} cases: verified")
PY

# 2. The kept file is an eval.task.
"$trident" eval --model.init_from=$model --model.seq_len=512 --train.threads=1 --eval.task="$work/p.jsonl" \
  --eval.max_new_tokens=4 --log.run_dir="$work/run" > "$work/eval.log" 2>&1 || fail "eval: $(cat "$work/eval.log")"
n=$(wc -l < "$work/p.jsonl")
grep -q "task eval at step 0 on .*p.jsonl ($n examples" "$work/eval.log" || fail "eval: $(cat "$work/eval.log")"

# 3. Seeded: the same command, the same bytes; another seed, other rewrites (the same cases).
"$trident" evalgen "${opts[@]}" --paraphrase $model "${threads[@]}" --samples 3 --output "$work/p2.jsonl" > /dev/null 2>&1
cmp "$work/p.jsonl" "$work/p2.jsonl" || fail "the same command wrote different files"
"$trident" evalgen --suite all --levels easy --n 3 --seed 3 --paraphrase $model "${threads[@]}" --samples 3 --temperature 1.2 \
  --output "$work/p3.jsonl" > /dev/null 2>&1
cmp -s "$work/p.jsonl" "$work/p3.jsonl" && fail "another temperature wrote the same file"
"$trident" evalgen --suite all --levels easy --n 3 --seed 4 --paraphrase $model "${threads[@]}" --samples 3 --output "$work/p4.jsonl" \
  > /dev/null 2>&1
cmp -s "$work/p.jsonl" "$work/p4.jsonl" && fail "seeds 3 and 4 wrote the same file"
# A case's rewrites depend on (seed, suite, level, case, sample) alone: not on the batches they were
# generated in, nor on the other suites and levels of the command.
"$trident" evalgen --suite arithmetic --levels easy --n 2 --paraphrase $model "${threads[@]}" --samples 3 \
  --output "$work/alone.jsonl" > /dev/null 2>&1
"$trident" evalgen --suite last_digit,arithmetic --levels medium,easy --n 5 --paraphrase $model "${threads[@]}" \
  --samples 3 --output "$work/among.jsonl" > /dev/null 2>&1
python3 - "$work/alone.jsonl" "$work/among.jsonl" <<'PY'
import json, sys
alone = [json.loads(l) for l in open(sys.argv[1])]
among = [json.loads(l) for l in open(sys.argv[2])]
first = min(l["source"] for l in among if l["suite"] == "arithmetic" and l["level"] == "easy")  # its line 0 there
key = lambda l: (l["template"], l["output"], l["sample"], l["input"])
there = [key(l) for l in among if l["suite"] == "arithmetic" and l["level"] == "easy" and l["source"] - first < 2]
assert alone and [key(l) for l in alone] == there, (alone, there)
print(f"{len(alone)} rewrites the same alone and among 20 cases")
PY
# A trident checkpoint of the same model (its tokenizer and chat template: those of the HF model
# it came from) writes the same rewrites.
"$trident" convert --from hf --input $model --output "$work/model.h5" --seq-len 512 > /dev/null
"$trident" evalgen --suite arithmetic,date --levels easy --n 2 --paraphrase "$work/model.h5" "${threads[@]}" \
  --output "$work/ckpt.jsonl" > "$work/ckpt.log" 2>&1 || fail "checkpoint: $(cat "$work/ckpt.log")"
"$trident" evalgen --suite arithmetic,date --levels easy --n 2 --paraphrase $model "${threads[@]}" \
  --output "$work/hf.jsonl" > /dev/null 2>&1
grep -q "paraphrasing with checkpoint .*model.h5 (llama, 3 layers, hidden 96, context 512), .*its chat template" \
  "$work/ckpt.log" || fail "checkpoint: $(cat "$work/ckpt.log")"
[ -s "$work/hf.jsonl" ] && cmp <(sed 's/"paraphrase_model":"[^"]*"//' "$work/ckpt.jsonl") \
  <(sed 's/"paraphrase_model":"[^"]*"//' "$work/hf.jsonl") || fail "the checkpoint rewrote otherwise"
# Greedy: every sample the same, so one kept per case at most and the rest duplicates.
"$trident" evalgen --suite arithmetic --levels easy --n 4 --paraphrase $model "${threads[@]}" --samples 2 --temperature 0 \
  --output "$work/greedy.jsonl" > "$work/greedy.log" 2>&1 || fail "greedy: $(cat "$work/greedy.log")"
grep -qE "evalgen: kept [1-4] of 8 .*duplicates [1-4]," "$work/greedy.log" || fail "greedy: $(cat "$work/greedy.log")"

# 4. No chat template: the plain request, still rewrites the verifier keeps; multiple choice.
mkdir "$work/plain"
cp $model/config.json $model/model.safetensors $model/tokenizer.json "$work/plain/"
"$trident" evalgen --suite arithmetic,sort --levels easy --n 3 --paraphrase "$work/plain" "${threads[@]}" --format choice \
  --output "$work/plain.jsonl" > "$work/plain.log" 2>&1 || fail "plain: $(cat "$work/plain.log")"
grep -q "no chat template (plain prompt)" "$work/plain.log" || fail "plain: $(cat "$work/plain.log")"
python3 - "$work/plain.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines and all(list(l) == ["context", "choices", "gold", "suite", "template", "level", "source", "sample",
                                 "paraphrase_model"] for l in lines), lines
print(f"plain prompt, multiple choice: {len(lines)} kept")
PY

# 5. Planted rewrites: every model output of two runs replaced, so the counts are the plants'.
"$trident" evalgen --suite arithmetic --levels easy --n 2 --seed 8 --output "$work/arith.jsonl" > /dev/null
"$trident" evalgen --suite kv_lookup,date --levels easy --n 2 --seed 8 --output "$work/kvdate.jsonl" > /dev/null
python3 - "$work/arith.jsonl" "$work/kvdate.jsonl" "$work/plant_a.jsonl" "$work/plant_b.jsonl" <<'PY'
import json, re, sys
arith = [json.loads(l)["input"] for l in open(sys.argv[1])]
kvdate = [json.loads(l) for l in open(sys.argv[2])]
def plant(path, rows):
    with open(path, "w") as f:
        for (source, sample), text in rows.items():
            f.write(json.dumps({"source": source, "sample": sample, "text": text}) + "\n")
a, b = re.findall(r"\d+", arith[0])  # add
c, d = re.findall(r"\d+", arith[1])  # subtract, c > d
assert int(c) > int(d), arith[1]
good = f"Question: Find the sum of {a} and {b}.\nAnswer:"
plant(sys.argv[3], {
    (0, 0): f"Question: Find the sum of {int(a) + 1} and {b}.\nAnswer:",    # numbers: an operand changed
    (0, 1): f"Question: What is {a} * {b}?\nAnswer:",                       # operation: + became *
    (0, 2): good,                                                            # kept
    (0, 3): "  " + good.replace(" the ", "  the ").replace("\n", " \n"),   # a duplicate of sample 2
    (1, 0): f"Question: Calculate {d} - {c}.\nAnswer:",                     # order: b - a
    (1, 1): f"Question: Calculate {c} - {d}.",                              # answer_cue dropped
    (1, 2): f"Question: Calculate {c} - {d} - 1.\nAnswer:",                 # numbers: one added
    (1, 3): arith[1],                                                        # the source itself
})
num, word, wd, dp = kvdate
pairs = lambda t: re.findall(r"^([a-z]+): (\S+)$", t, re.M)
block = lambda t: "\n".join(f"{k}: {v}" for k, v in pairs(t))
asked = lambda t: re.findall(r"([a-z]+)\?\nAnswer:$", t)[0]
other = [k for k, _ in pairs(num["input"]) if k != asked(num["input"])][0]
value = dict(pairs(num["input"]))[asked(num["input"])]
day, days = re.search(r"((?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day)\D+(\d+) days", wd["input"]).groups()
start, count = re.search(r"(\d{4}-\d\d-\d\d)", dp["input"]).group(1), re.search(r"(\d+) days", dp["input"]).group(1)
assert wd["output"] != day, wd
q = "\nQuestion: What is the value for the key {}?\nAnswer:"
plant(sys.argv[4], {
    (0, 0): block(num["input"]) + q.format(other),                                      # operands: another key
    (0, 1): block(num["input"]).replace(f": {value}", f": {int(value) + 1}") + q.format(asked(num["input"])),  # numbers
    (1, 0): block(word["input"]) + q.format(asked(word["input"])),                        # kept
    (1, 1): block(word["input"]).replace(f": {word['output']}", ": zebraa") + q.format(asked(word["input"])),  # operands
    (2, 0): f"Question: It is {day} today. What day will it be after {days} days ({wd['output']})?\nAnswer:",  # leak
    (2, 1): f"Question: It is {day} today. What day was it {days} days ago?\nAnswer:",  # operation: backwards
    (3, 0): f"Question: Add {count} to {start} as days. What is the date?\nAnswer:",    # unit: "N days" lost
    (3, 1): f"Question: What date is {count} days after {start} (YYYY-MM-DD)?\nAnswer:",  # kept
})
PY
TRIDENT_TEST_PARAPHRASE_PLANT="$work/plant_a.jsonl" "$trident" evalgen --suite arithmetic --levels easy --n 2 --seed 8 \
  --paraphrase $model "${threads[@]}" --output "$work/plant_a.out" > "$work/plant_a.log" 2>&1 || fail "plant a: $(cat "$work/plant_a.log")"
grep -q "evalgen: kept 1 of 8 (12.5%); same as the source 1, duplicates 1, too long for the model 0" "$work/plant_a.log" \
  || fail "plant a: $(cat "$work/plant_a.log")"
grep -q "evalgen: rejected 5: length 0, answer_cue 1, numbers 2, operands 0, answer_leak 0, operation 1, order 1, unit 0, checker 0" \
  "$work/plant_a.log" || fail "plant a: $(cat "$work/plant_a.log")"
grep -q '"input":"Question: Find the sum of .*"source":0,"sample":2,' "$work/plant_a.out" || fail "the good plant is not kept"
TRIDENT_TEST_PARAPHRASE_PLANT="$work/plant_b.jsonl" "$trident" evalgen --suite kv_lookup,date --levels easy --n 2 \
  --seed 8 --paraphrase $model "${threads[@]}" --samples 2 --output "$work/plant_b.out" > "$work/plant_b.log" 2>&1 \
  || fail "plant b: $(cat "$work/plant_b.log")"
grep -q "evalgen: kept 2 of 8 (25.0%); same as the source 0, duplicates 0" "$work/plant_b.log" \
  || fail "plant b: $(cat "$work/plant_b.log")"
grep -q "evalgen: rejected 6: length 0, answer_cue 0, numbers 1, operands 2, answer_leak 1, operation 1, order 0, unit 1, checker 0" \
  "$work/plant_b.log" || fail "plant b: $(cat "$work/plant_b.log")"
[ "$(grep -c '"sample":0' "$work/plant_b.out")" -eq 1 ] && grep -q '"source":1,"sample":0' "$work/plant_b.out" \
  && grep -q '"source":3,"sample":1' "$work/plant_b.out" || fail "plant b kept: $(cat "$work/plant_b.out")"
echo "planted: rejected with their reasons, the good ones kept"

# 6. Bad input: exit 2, the message, no file left; an existing output untouched.
bad=(--suite copy --levels easy --n 1 --output "$work/bad.jsonl")
expect_error "--paraphrase $work/nowhere: neither a Hugging Face model directory" "${bad[@]}" --paraphrase "$work/nowhere"
mkdir "$work/notok"
cp $model/config.json $model/model.safetensors "$work/notok/"
expect_error "--paraphrase $work/notok has no tokenizer.json" "${bad[@]}" --paraphrase "$work/notok"
expect_error "--top-p 0: must be in (0, 1]" "${bad[@]}" --paraphrase $model "${threads[@]}" --top-p 0
expect_error "--top-p 1.5: must be in (0, 1]" "${bad[@]}" --paraphrase $model "${threads[@]}" --top-p 1.5
expect_error "--temperature -0.5: must be in \[0, 100\]" "${bad[@]}" --paraphrase $model "${threads[@]}" --temperature=-0.5
expect_error "--samples 0: must be in \[1, 64\]" "${bad[@]}" --paraphrase $model "${threads[@]}" --samples 0
expect_error "--samples needs --paraphrase MODEL" "${bad[@]}" --samples 2
expect_error "--top-p needs --paraphrase MODEL" "${bad[@]}" --top-p 0.5
echo '{"source": 0, "text": "x"}' > "$work/badplant.jsonl"
TRIDENT_TEST_PARAPHRASE_PLANT="$work/badplant.jsonl" expect_error "badplant.jsonl:1: expected {\"source\"" "${bad[@]}" \
  --paraphrase $model "${threads[@]}"
mkdir "$work/gone"
cp $model/* "$work/gone/"
"$trident" convert --from hf --input "$work/gone" --output "$work/orphan.h5" > /dev/null
rm -r "$work/gone"
expect_error "--paraphrase $work/orphan.h5: its run started from .*gone, which is no longer there" "${bad[@]}" \
  --paraphrase "$work/orphan.h5"
cp "$work/p.jsonl" "$work/before.jsonl"
set +e
"$trident" evalgen "${opts[@]}" --paraphrase $model "${threads[@]}" --output "$work/p.jsonl" > /dev/null 2> "$work/err"; code=$?
set -e
[ "$code" -eq 2 ] && grep -q "p.jsonl exists: pass --overwrite" "$work/err" || fail "existing output: exit $code $(cat "$work/err")"
cmp "$work/p.jsonl" "$work/before.jsonl" || fail "the existing file was changed"
echo "evalgen_paraphrase: ok"
