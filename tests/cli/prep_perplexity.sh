#!/usr/bin/env bash
# prep --ppl-model: the tiny model trained on the demo corpus (the Python standard library, 500
# steps, byte level, 64-byte windows) scores a mix of 40 pieces of standard-library code and 30
# planted junk documents (10 of random characters, 10 of repeated spam words, 10 of standard-
# library code with its words shuffled); keeping the 40 of lowest perplexity drops every random
# one and mostly junk (this weak scorer: at least 22 of the 30 dropped; measured 25-26); 2 ranks
# write the same shards; prep.json has the histogram; bad options are exit 2.
# usage: prep_perplexity.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
[[ -f input/data/pystdlib.idx ]] || { echo "SKIP: no demo corpus (utils/prepare_data.sh)"; exit 77; }

"$trident" train --config input/configs/tiny.ini --train.steps=500 --train.threads=1 --log.run_dir="$work/run" \
  --checkpoint.dir="$work/ck" --checkpoint.interval=500 > "$work/train.log" 2>&1 || fail "train: $(tail -3 "$work/train.log")"
model=$work/ck/step_00000500.h5

python3 - "$work" <<'EOF' || fail "corpus"
import glob, json, random, sys
rng = random.Random(1)
files = sorted(glob.glob("/usr/lib/python3*/*.py"))
docs = []
for f in rng.sample(files, 40):
    t = open(f, encoding="utf-8", errors="replace").read()
    a = rng.randint(0, max(0, len(t) - 1300))
    docs.append(("real", t[a:a + 1200]))
for _ in range(10):
    docs.append(("random", "".join(chr(rng.randint(33, 126)) for _ in range(1200))))
spam = ["Click", "here", "to", "subscribe", "now!", "Best", "prices", "Buy", "cheap", "online"]
for _ in range(10):
    docs.append(("spam", " ".join(rng.choice(spam) for _ in range(200))))
for _ in range(10):
    words = rng.choice([t for k, t in docs if k == "real"]).split()
    rng.shuffle(words)
    docs.append(("shuffled", " ".join(words)))
rng.shuffle(docs)
with open(sys.argv[1] + "/mix.jsonl", "w") as f:
    for _, t in docs:
        f.write(json.dumps({"text": t}) + "\n")
json.dump([[k, t] for k, t in docs], open(sys.argv[1] + "/kinds.json", "w"))
EOF
# The heuristic filters would catch some of the junk first: off, so the model alone decides.
off=(--max-non-text-ratio 1 --max-repeated-ngram-ratio 1 --max-repeated-line-ratio 1)
"$trident" prep --input "$work/mix.jsonl" --output "$work/p1" --ppl-model "$model" --ppl-keep-percentile 57.14 \
  "${off[@]}" > "$work/log" 2>&1 || fail "prep with the scorer: $(cat "$work/log")"
grep -q "scoring perplexity with checkpoint $model (gpt2, 8 layers, hidden 64, context 64), tokenizer byte" "$work/log" \
  || fail "scorer line: $(cat "$work/log")"
grep -q "30 dropped" "$work/log" || fail "perplexity drops: $(cat "$work/log")"
"$trident" inspect "$work/p1" --decode all > "$work/kept.txt" || fail "inspect"
python3 - "$work" <<'EOF' || fail "kept: $(cat "$work/verdict")"
import json, sys
kinds = json.load(open(sys.argv[1] + "/kinds.json"))
kept = {p.strip("\n") for p in open(sys.argv[1] + "/kept.txt").read().split("<|endoftext|>")}
counts = {}
for kind, text in kinds:
    counts.setdefault(kind, [0, 0])[0] += text.strip("\n") in kept
    counts[kind][1] += 1
verdict = ", ".join(f"{k} {c[0]}/{c[1]} kept" for k, c in sorted(counts.items()))
open(sys.argv[1] + "/verdict", "w").write(verdict)
print("perplexity filter:", verdict)
junk_dropped = sum(c[1] - c[0] for k, c in counts.items() if k != "real")
sys.exit(0 if counts["random"][0] == 0 and junk_dropped >= 22 else 1)
EOF
python3 -c "
import json, sys
p = json.load(open('$work/p1.prep.json'))['perplexity']
assert p['keep_percentile'] == 57.14 and p['threshold'] > 1, p
assert sum(b['documents'] for b in p['histogram']) == 70, p
" || fail "prep.json perplexity: $(cat "$work/p1.prep.json")"

mpirun -np 2 "$trident" prep --input "$work/mix.jsonl" --output "$work/p2" --ppl-model "$model" \
  --ppl-keep-percentile 57.14 "${off[@]}" --split-mb 0.02 > /dev/null 2>&1 || fail "prep on 2 ranks"
cat "$work/p1.bin" "$work/p1.idx" | cmp -s - <(cat "$work/p2.bin" "$work/p2.idx") || fail "2 ranks differ"

# Every option at once (PII, exact and near dedup, perplexity, length balance, 2 shards, a
# validation split): the same files from 1, 2 and 4 ranks.
{ cat "$work/mix.jsonl"; head -5 "$work/mix.jsonl" | sed 's/"}$/ one more word"}/'; } > "$work/all.jsonl"  # 5 near duplicates
all=(--input "$work/all.jsonl" --scrub-pii --near-dedup --ppl-model "$model" --ppl-keep-percentile 80
     --length-buckets 300,900 --max-share 0.9 --shards 2 --valid-permille 100 --split-mb 0.01 "${off[@]}")
"$trident" prep "${all[@]}" --output "$work/all1" > "$work/log" 2>&1 || fail "all options: $(cat "$work/log")"
grep -q "5 near duplicates dropped" "$work/log" && grep -q "; 4[0-9] dropped" "$work/log" \
  || fail "all options: near duplicates or length balance: $(cat "$work/log")"
for np in 2 4; do
  mpirun -np $np "$trident" prep "${all[@]}" --output "$work/all$np" > "$work/log$np" 2>&1 \
    || fail "all options on $np ranks: $(cat "$work/log$np")"
  for f in all1-00000-of-00002 all1-00001-of-00002 all1-valid-00000-of-00002 all1-valid-00001-of-00002; do
    for ext in bin idx; do
      cmp -s "$work/$f.$ext" "$work/${f/all1/all$np}.$ext" || fail "all options: $f.$ext differs on $np ranks"
    done
  done
done

# Against transformers: the tiny GPT-2 fixture's perplexities of three texts
# (utils/make_ppl_fixture.py) put each threshold within 1e-5 of where it splits them.
fixture=tests/data/hf/gpt2_perplexity.jsonl
mapfile -t refs < <(python3 -c "import json; [print(json.loads(l)['perplexity']) for l in open('$fixture')]")
for ref in "${refs[@]}"; do
  for side in 0.99999 1.00001; do
    limit=$(python3 -c "print($ref * $side)")
    want=$(python3 -c "print(sum(r <= $limit for r in [${refs[0]}, ${refs[1]}, ${refs[2]}]))")
    [[ $want == 0 ]] && continue
    "$trident" prep --input "$fixture" --output "$work/hf" --ppl-model tests/data/hf/gpt2 --ppl-max "$limit" "${off[@]}" \
      > "$work/log" 2>&1 || fail "gpt2 scorer at $limit: $(cat "$work/log")"
    grep -q "prep: $want written" "$work/log" || fail "gpt2 perplexity $ref, limit $limit: want $want kept: $(cat "$work/log")"
  done
done

expect2() {  # expect2 MESSAGE ARGS...: exit 2 and the message
  local message=$1
  shift
  "$trident" prep --input "$work/mix.jsonl" --output "$work/bad" "$@" > "$work/out" 2>&1
  local rc=$?
  [[ $rc == 2 ]] || fail "prep $*: exit $rc, want 2: $(cat "$work/out")"
  grep -qF -- "$message" "$work/out" || fail "prep $*: message: $(cat "$work/out")"
}
expect2 "--ppl-max and --ppl-keep-percentile need --ppl-model" --ppl-max 20
expect2 "--ppl-model needs one of --ppl-max X or --ppl-keep-percentile P" --ppl-model "$model"
expect2 "--ppl-model needs one of" --ppl-model "$model" --ppl-max 20 --ppl-keep-percentile 50
expect2 "--ppl-model $work/none.h5: neither a Hugging Face model directory" --ppl-model "$work/none.h5" --ppl-max 20
expect2 "--ppl-keep-percentile must be in (0, 100]" --ppl-model "$model" --ppl-keep-percentile 150
[[ ! -e $work/bad.bin ]] || fail "a refused prep wrote shards"
echo "prep_perplexity: ok"
