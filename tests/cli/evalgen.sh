#!/usr/bin/env bash
# End-to-end evalgen: every suite and level in both formats (line shapes, counts, distinct
# choices, gold spread); the same options write the same bytes, another seed other cases; an
# existing output is kept unless --overwrite; every bad input is exit 2 with its message and
# leaves no file; `trident eval` scores a generated file as eval.task on a fresh tiny model.
# usage: evalgen.sh TRIDENT SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
source "$(dirname "$0")/../support/evalgen_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1

"$trident" evalgen --help > "$work/help" || fail "--help: exit $?"
grep -q -- "--suite NAME" "$work/help" || fail "--help: no usage: $(cat "$work/help")"
"$trident" --help | grep -q "evalgen" || fail "trident --help does not list evalgen"

# 1. Every suite and level, generate format.
"$trident" evalgen --suite all --n 6 --seed 5 --output "$work/gen.jsonl" > "$work/gen.log" \
  || fail "evalgen: $(cat "$work/gen.log")"
grep -q "126 generate cases (seed 5)" "$work/gen.log" || fail "summary: $(cat "$work/gen.log")"
python3 - "$work/gen.jsonl" <<'PY'
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
counts = collections.Counter((l["suite"], l["level"]) for l in lines)
suites = ["arithmetic", "last_digit", "copy", "reverse", "sort", "kv_lookup", "date"]
assert counts == {(s, v): 6 for s in suites for v in ["easy", "medium", "hard"]}, counts
for l in lines:
    assert list(l) == ["input", "output", "answers", "suite", "template", "level"], l
    assert l["input"] == l["input"].rstrip() and l["output"] == l["output"].strip() and l["output"], l
    assert isinstance(l["answers"], list) and l["output"] not in l["answers"], l
    if l["suite"] == "arithmetic" and l["template"] == "add":  # recomputed from the prompt
        a, b = [int(x) for x in l["input"].replace("?", " ").replace(".", " ").split() if x.isdigit()]
        assert int(l["output"]) == a + b, l
print(f"generate: {len(lines)} lines, {len(counts)} (suite, level) pairs")
PY

# 2. Same options, same bytes; another seed, other cases.
"$trident" evalgen --suite all --n 6 --seed 5 --output "$work/gen2.jsonl" > /dev/null
cmp "$work/gen.jsonl" "$work/gen2.jsonl" || fail "the same options wrote different files"
"$trident" evalgen --suite all --n 6 --seed 6 --output "$work/gen3.jsonl" > /dev/null
cmp -s "$work/gen.jsonl" "$work/gen3.jsonl" && fail "seeds 5 and 6 wrote the same file"

# 3. Multiple choice: K choices, distinct, gold spread over the positions.
"$trident" evalgen --suite arithmetic,sort,copy,date --levels hard,easy --n 40 --format choice --choices 5 \
  --output "$work/choice.jsonl" > "$work/choice.log" || fail "choice: $(cat "$work/choice.log")"
python3 - "$work/choice.jsonl" <<'PY'
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 4 * 2 * 40, len(lines)
assert [l["level"] for l in lines[:80]] == ["hard"] * 40 + ["easy"] * 40  # levels in the order given
gold = collections.Counter(l["gold"] for l in lines)
for l in lines:
    assert list(l) == ["context", "choices", "gold", "suite", "template", "level"], l
    c = l["choices"]
    assert len(c) == 5 and len(set(c)) == 5 and all(x == x.strip() and x for x in c), l
    assert l["context"] == l["context"].rstrip(), l
    if l["suite"] == "arithmetic" and l["template"] == "add":
        a, b = [int(x) for x in l["context"].replace("?", " ").replace(".", " ").split() if x.isdigit()]
        assert int(c[l["gold"]]) == a + b and all(int(x) != a + b for i, x in enumerate(c) if i != l["gold"]), l
assert sorted(gold) == [0, 1, 2, 3, 4] and min(gold.values()) > 30, gold
print(f"choice: {len(lines)} lines, gold positions {dict(sorted(gold.items()))}")
PY

# 4. An existing output is kept unless --overwrite.
cp "$work/gen.jsonl" "$work/before.jsonl"
set +e
"$trident" evalgen --suite copy --n 2 --output "$work/gen.jsonl" > "$work/out" 2> "$work/err"; code=$?
set -e
[ "$code" -eq 2 ] || fail "over an existing file: exit $code"
grep -q "trident evalgen: error: .*gen.jsonl exists: pass --overwrite" "$work/err" || fail "message: $(cat "$work/err")"
cmp "$work/gen.jsonl" "$work/before.jsonl" || fail "the existing file was changed"
"$trident" evalgen --suite copy --n 2 --output "$work/gen.jsonl" --overwrite > /dev/null
[ "$(wc -l < "$work/gen.jsonl")" -eq 6 ] || fail "--overwrite did not replace the file"

# 5. Bad input: exit 2, the message, no file left.
cp -r input/eval "$work/lib"
python3 - "$work/lib" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/sort.json"))
d["templates"][0]["levels"]["medium"]["count_max"] = "nine"
json.dump(d, open(sys.argv[1] + "/sort.json", "w"))
d = json.load(open(sys.argv[1] + "/date.json"))
d["templates"][1]["levels"]["easy"]["days_min"] = 40  # a month never holds 40 more days
d["templates"][1]["levels"]["easy"]["days_max"] = 45
json.dump(d, open(sys.argv[1] + "/date.json", "w"))
PY
printf '{"suite": "copy", "templates": [' > "$work/lib/copy.json"
out=(--output "$work/bad.jsonl")
expect_error 'unknown suite "algebra" (known: arithmetic, last_digit, copy, reverse, sort, kv_lookup, date, or all)' \
  --suite arithmetic,algebra "${out[@]}"
expect_error 'unknown level "extreme" (known: easy, medium, hard)' --suite copy --levels easy,extreme "${out[@]}"
expect_error 'unknown format "cloze" (known: generate, choice)' --suite copy --format cloze "${out[@]}"
expect_error "--n 0: must be in" --suite copy --n 0 "${out[@]}"
expect_error "--n -3: must be in" --suite copy --n=-3 "${out[@]}"
expect_error "--choices 1: must be at least 2" --suite copy --format choice --choices 1 "${out[@]}"
expect_error "--choices 8: must be at least 2 and at most 7 for suite date" --suite arithmetic,date --format choice \
  --choices 8 "${out[@]}"
expect_error "--choices needs --format choice" --suite copy --choices 3 "${out[@]}"
expect_error "the option '--output' is required" --suite copy
expect_error "the option '--suite' is required" "${out[@]}"
expect_error "sort.json: templates\[0\](numbers).levels.medium.count_max: expected an integer" --suite sort \
  --templates "$work/lib" "${out[@]}"
expect_error "copy.json: line 1" --suite copy --templates "$work/lib" "${out[@]}"
expect_error "nowhere/arithmetic.json: cannot read" --suite arithmetic --templates "$work/nowhere" "${out[@]}"
expect_error "date.json: template date_plus, level easy: date: date_plus: no start date .* crossing = none" --suite date --templates "$work/lib" "${out[@]}"

# 6. A generated file is an eval.task: scored on a freshly initialised tiny model.
"$trident" evalgen --suite arithmetic,reverse,date --levels easy,medium --n 2 --output "$work/task.jsonl" > /dev/null
"$trident" eval --config input/configs/tiny.ini --eval.task="$work/task.jsonl" --eval.max_new_tokens=4 \
  --log.run_dir="$work/run" > "$work/eval.log" 2>&1 || fail "eval on the generated task: $(cat "$work/eval.log")"
grep -q "task eval at step 0 on .*task.jsonl (12 examples" "$work/eval.log" || fail "no task evaluation: $(cat "$work/eval.log")"
grep -q '"metric":"examples","value":12' "$work/run/eval.jsonl" || fail "eval.jsonl: $(cat "$work/run/eval.jsonl")"
echo "evalgen: ok"
