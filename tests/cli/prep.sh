#!/usr/bin/env bash
# End-to-end prep and inspect: prep under mpirun (2 ranks, JSONL split in small pieces, 3 shards,
# valid split) writes the same files as one rank; inspect prints the statistics of the set and
# decodes documents with the tokenizer prep.json names (byte and a trained BPE tokenizer);
# --skip-bad-lines; --scrub-pii; a failed prep leaves the previous shards untouched; a tokenizer
# whose post-processor adds a BOS (Llama 3 style) starts every document with it; an unsupported
# tokenizer component is exit 2 naming it.
# usage: prep.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

in=$work/in
mkdir -p "$in"
for i in $(seq 1 30); do
  echo "{\"input\": \"What is $i + $i?\", \"output\": \"It is $((i + i)).\"}"
  (( i % 10 == 0 )) && echo "{\"input\": \"What is 1 + 1?\", \"output\": \"It is 2.\"}"  # duplicates
done > "$in/qa.jsonl"
for i in $(seq 1 12); do
  echo "{\"messages\": [{\"role\": \"user\", \"content\": \"hello $i\"}, {\"role\": \"assistant\", \"content\": \"hi $i\"}]}"
done > "$in/chat.jsonl"
printf 'The first text file.\nIt has two lines.\n' > "$in/a.txt"
printf 'Mail me at jane.doe@example.com or call (415) 555-2671. The server 10.0.0.1 runs release 4.3.2.1.\n' > "$in/pii.txt"
files=("$in/qa.jsonl" "$in/a.txt" "$in/chat.jsonl" "$in/pii.txt")

# 1. Two ranks equal one rank.
"$trident" prep --input "${files[@]}" --output "$work/one/d" --shards 3 --valid-permille 300 > "$work/one.log" \
  || fail "prep on one rank: $(cat "$work/one.log")"
mpirun -np 2 "$trident" prep --input "${files[@]}" --output "$work/two/d" --shards 3 --valid-permille 300 \
  --split-mb 0.0003 > "$work/two.log" 2> "$work/two.err" || fail "prep on two ranks: $(cat "$work/two.err")"
grep -q "on 2 ranks" "$work/two.log" || fail "summary: $(cat "$work/two.log")"
grep -q "3 duplicates" "$work/two.log" || fail "dedup count: $(cat "$work/two.log")"
for f in "$work"/one/d*-of-00003.*; do
  cmp -s "$f" "$work/two/$(basename "$f")" || fail "$(basename "$f") differs between 1 and 2 ranks"
done
[[ $(ls "$work"/two/d*-of-00003.{bin,idx} | wc -l) == 12 ]] || fail "expected 2 splits x 3 shards x 2 files"
grep -q '"documents_in":47' "$work/two/d.prep.json" || fail "prep.json: $(cat "$work/two/d.prep.json")"

# 2. inspect: statistics of the set, decoding with prep.json's tokenizer.
"$trident" inspect "$work/two/d" > "$work/stats" || fail "inspect: $(cat "$work/stats")"
grep -q "^shards     3" "$work/stats" || fail "inspect shards: $(cat "$work/stats")"
grep -q "loss mask" "$work/stats" || fail "inspect loss mask: $(cat "$work/stats")"
grep -q "length histogram" "$work/stats" || fail "inspect histogram: $(cat "$work/stats")"
"$trident" inspect "$work/two/d" --decode all > "$work/all" || fail "decode all"
"$trident" inspect "$work/two/d-valid" --decode all >> "$work/all" || fail "decode all (valid)"
grep -q "^The first text file.$" "$work/all" || fail "decoded text: $(head "$work/all")"
grep -q "^<|im_start|>assistant$" "$work/all" || fail "decoded chat: $(head "$work/all")"
[[ $(grep -c "It is 2\.<|endoftext|>" "$work/all") == 1 ]] || fail "duplicates kept: $(grep -c "It is 2\." "$work/all")"
"$trident" inspect "$work/two/d" --decode 0 > "$work/doc0" || fail "decode 0"
[[ $(tail -c 14 "$work/doc0") == "<|endoftext|>" ]] || fail "decode 0: $(cat "$work/doc0")"
"$trident" inspect "$work/two/d" --decode 999 2> "$work/err" && fail "decode 999 accepted"
grep -q "document index in \[0, " "$work/err" || fail "decode 999: $(cat "$work/err")"

# 3. --skip-bad-lines counts and warns; without it the line is an error naming file and line.
cp "$in/qa.jsonl" "$in/bad.jsonl"
echo '{"input": "no output"}' >> "$in/bad.jsonl"
echo '{"input": "x", "output": "y"}' >> "$in/bad.jsonl"
"$trident" prep --input "$in/bad.jsonl" --output "$work/bad" 2> "$work/err" && fail "bad line accepted"
grep -q "bad.jsonl:34: .*missing key \"output\"" "$work/err" || fail "bad line message: $(cat "$work/err")"
mpirun -np 2 "$trident" prep --input "$in/bad.jsonl" --output "$work/bad" --skip-bad-lines --split-mb 0.0005 \
  > "$work/log" 2> "$work/err" || fail "skip-bad-lines: $(cat "$work/err")"
grep -q "1 bad lines" "$work/log" || fail "bad line count: $(cat "$work/log")"
grep -q "warning.*bad.jsonl:34" "$work/err" || fail "bad line warning: $(cat "$work/err")"

# 4. A failed prep leaves the previous shards as they were, and no temporaries.
"$trident" prep --input "$in/a.txt" --output "$work/keep/d" > /dev/null || fail "prep a.txt"
sum_before=$(cat "$work/keep/d.bin" "$work/keep/d.idx" | md5sum)
"$trident" prep --input "$in/a.txt" "$in/bad.jsonl" --output "$work/keep/d" 2> /dev/null && fail "bad prep succeeded"
[[ $(cat "$work/keep/d.bin" "$work/keep/d.idx" | md5sum) == "$sum_before" ]] || fail "old shards changed"
ls "$work/keep" | grep -q tmp && fail "temporaries left: $(ls "$work/keep")"

# 5. --scrub-pii.
"$trident" prep --input "$in/pii.txt" --output "$work/pii" --scrub-pii > "$work/log" || fail "scrub-pii"
grep -q "1 email, 1 phone, 1 ip, 0 credit_card" "$work/log" || fail "pii counts: $(cat "$work/log")"
"$trident" inspect "$work/pii" --decode 0 | grep -q "Mail me at <EMAIL> or call <PHONE>. The server <IP> runs release 4.3.2.1." \
  || fail "pii not replaced: $("$trident" inspect "$work/pii" --decode 0)"

# 6. A trained BPE tokenizer: prep with it, inspect decodes with it through prep.json.
"$trident" prep --train-tokenizer --vocab-size 300 --input "${files[@]}" --output "$work/tok.json" > /dev/null \
  || fail "train tokenizer"
"$trident" prep --input "$in/a.txt" --output "$work/bpe" --tokenizer "$work/tok.json" > /dev/null || fail "prep bpe"
"$trident" inspect "$work/bpe" | grep -q "^vocab      300" || fail "bpe vocab: $("$trident" inspect "$work/bpe")"
printf 'The first text file.\nIt has two lines.\n<|endoftext|>\n' > "$work/want"
"$trident" inspect "$work/bpe" --decode 0 > "$work/got"
cmp -s "$work/want" "$work/got" || fail "bpe decode: $(cat "$work/got")"

# 7. A tokenizer with a TemplateProcessing BOS: every document starts with <|begin_of_text|> and
# ends with one end of text; inspect decodes them so.
"$trident" prep --input "$in/a.txt" "$in/qa.jsonl" --output "$work/bos" --tokenizer tests/data/tokenizers/llama3_bos \
  > /dev/null || fail "prep with the BOS tokenizer"
"$trident" inspect "$work/bos" --decode all > "$work/got" || fail "inspect bos"
docs=$(grep -c "<|end_of_text|>" "$work/got")
[[ $docs == 31 ]] || fail "bos documents: $docs, want 31: $(head -3 "$work/got")"
[[ $(grep -c "^<|begin_of_text|>" "$work/got") == "$docs" ]] || fail "documents without BOS: $(head -3 "$work/got")"
grep -q "^<|begin_of_text|>The first text file.$" "$work/got" || fail "bos text document: $(head -3 "$work/got")"
grep -q "^<|begin_of_text|>What is 7 + 7?It is 14.<|end_of_text|>$" "$work/got" || fail "bos qa: $(head -3 "$work/got")"
"$trident" inspect "$work/bos" | grep -q "loss mask" || fail "bos loss mask: $("$trident" inspect "$work/bos")"

# 8. An unsupported component is exit 2 naming it and the file.
sed 's/"type":"BPE"/"type":"Unigram"/' tests/data/tokenizers/llama2/tokenizer.json > "$work/unigram.json"
"$trident" prep --input "$in/a.txt" --output "$work/uni" --tokenizer "$work/unigram.json" 2> "$work/err"
rc=$?
[[ $rc == 2 ]] || fail "unigram tokenizer: exit $rc, want 2"
grep -q "unigram.json: model type \"Unigram\" is not supported" "$work/err" || fail "unigram message: $(cat "$work/err")"
# 9. --near-dedup: 40 documents of 200 pseudo-random words, every fourth with a copy that has two
# words changed (Jaccard about 0.9) right after it, and every fourth-but-one with a copy half
# rewritten (about 0.3, kept): 10 near duplicates dropped, the first of each pair kept, the same
# shards under 1 and 3 ranks; --bands without --rows is exit 2 naming both.
awk 'BEGIN { srand(7)
  for (d = 0; d < 40; d++) {
    for (k = 0; k < 200; k++) w[k] = "w" int(rand() * 5000)
    line = ""; for (k = 0; k < 200; k++) line = line (k ? " " : "") w[k]
    print "{\"text\": \"" line "\"}"
    if (d % 4 == 0) { w[50] = "near" d; w[150] = "dup" d }
    else if (d % 4 == 1) { for (k = 0; k < 200; k += 2) w[k] = "new" k }
    else continue
    line = ""; for (k = 0; k < 200; k++) line = line (k ? " " : "") w[k]
    print "{\"text\": \"" line "\"}"
  } }' > "$in/near.jsonl"
"$trident" prep --input "$in/near.jsonl" --output "$work/near1" --near-dedup > "$work/log" || fail "near-dedup: $(cat "$work/log")"
grep -q "10 near duplicates dropped" "$work/log" || fail "near-dedup count: $(cat "$work/log")"
# Not a terminal (a Slurm log): one line per phase as it ends.
grep -q "^prep: read 0.1 MB in .* s (.* MB/s): 60 documents, 0 dropped by filters$" "$work/log" \
  && grep -q "^prep: dedup done in" "$work/log" && grep -q "^prep: write done in" "$work/log" \
  || fail "phase lines: $(cat "$work/log")"
grep -q '"near_duplicate":10' "$work/near1.prep.json" || fail "near-dedup prep.json: $(cat "$work/near1.prep.json")"
"$trident" inspect "$work/near1" --decode all > "$work/got"
grep -q "near0" "$work/got" && fail "the copy was kept instead of the first document"
[[ $(grep -c "<|endoftext|>" "$work/got") == 50 ]] || fail "near-dedup kept $(grep -c "<|endoftext|>" "$work/got"), want 50"
mpirun -np 3 "$trident" prep --input "$in/near.jsonl" --output "$work/near3" --near-dedup --split-mb 0.01 > /dev/null \
  || fail "near-dedup on 3 ranks"
cat "$work/near1.bin" "$work/near1.idx" | cmp -s - <(cat "$work/near3.bin" "$work/near3.idx") || fail "near-dedup: 3 ranks differ"
"$trident" prep --input "$in/near.jsonl" --output "$work/near_bad" --near-dedup --bands 4 2> "$work/err"
rc=$?
[[ $rc == 2 ]] || fail "--bands alone: exit $rc, want 2"
grep -q "\-\-bands and \-\-rows go together" "$work/err" || fail "--bands message: $(cat "$work/err")"
# 10. --length-buckets with --max-share: the 60 near.jsonl documents (about 1200 bytes each) and
# 30 short qa lines; a share of 0.5 keeps 30 long ones, the same under 3 ranks; a share that
# cannot hold is exit 2 with the counts.
"$trident" prep --input "$in/near.jsonl" "$in/qa.jsonl" --output "$work/len1" --length-buckets 500 --max-share 0.5 \
  > "$work/log" || fail "length balance: $(cat "$work/log")"
grep -q "\[0,500) 30 -> 30, \[500,inf) 60 -> 30; 30 dropped" "$work/log" || fail "length balance counts: $(cat "$work/log")"
grep -q '"length_balance":30' "$work/len1.prep.json" || fail "length balance prep.json: $(cat "$work/len1.prep.json")"
mpirun -np 3 "$trident" prep --input "$in/near.jsonl" "$in/qa.jsonl" --output "$work/len3" --length-buckets 500 \
  --max-share 0.5 --split-mb 0.01 > /dev/null || fail "length balance on 3 ranks"
cat "$work/len1.bin" "$work/len1.idx" | cmp -s - <(cat "$work/len3.bin" "$work/len3.idx") || fail "length balance: 3 ranks differ"
"$trident" prep --input "$in/near.jsonl" --output "$work/len_bad" --length-buckets 100,500 --max-share 0.3 2> "$work/err"
rc=$?
[[ $rc == 2 ]] || fail "impossible share: exit $rc, want 2"
grep -q "max-share 0.3 cannot hold with 1 non-empty length buckets" "$work/err" || fail "share message: $(cat "$work/err")"
"$trident" prep --input "$in/near.jsonl" --output "$work/len_bad" --length-buckets 500,100 2> "$work/err"
[[ $? == 2 ]] && grep -q "edges must increase" "$work/err" || fail "decreasing edges: $(cat "$work/err")"
echo "prep: ok"
