#!/usr/bin/env bash
# Encryption at rest against the plain path, measured in one run on this machine (docs/design.md
# section 12; the issue's goals): trident prep with --key-file against without (goal >= 0.9x),
# and training tokens/s of the tiny model on encrypted shards against plain ones (goal within
# 2%; the tiny model reads the most data per FLOP, so the worst case). Runs alternate, each
# figure is the median of ROUNDS. Usage: utils/security_speed.sh [ROUNDS] (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
trident=build/trident
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
python3 -c 'import os; print(os.urandom(32).hex())' > "$work/key"
chmod 600 "$work/key"
stdlib=$(ls -d /usr/lib/python3.[0-9]* | sort -V | tail -n 1)
inputs=("$stdlib"/*.py "$stdlib"/*/*.py)
mb=$(cat "${inputs[@]}" | wc -c | awk '{printf "%.1f", $1 / 1e6}')

seconds() {  # the wall time of a command, its output discarded
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

: > "$work/prep.plain"; : > "$work/prep.key"
for ((r = 0; r < rounds; ++r)); do
  seconds "$trident" prep --input "${inputs[@]}" --output "$work/plain" --tokenizer byte >> "$work/prep.plain"
  seconds "$trident" prep --input "${inputs[@]}" --output "$work/secret" --tokenizer byte --key-file "$work/key" >> "$work/prep.key"
done
plain=$(median < "$work/prep.plain"); keyed=$(median < "$work/prep.key")
echo "prep of $mb MB (${#inputs[@]} files, byte tokenizer): plain $plain s, encrypted $keyed s: encrypted runs at $(echo "$plain / $keyed" | bc -l | cut -c1-5)x the plain speed"

tokens_per_second() {  # median tokens/s of steps 6.. of a tiny run on the given shards
  local run=$work/run-$RANDOM
  "$trident" train --config input/configs/tiny.ini --data.train="$1" --data.valid= --train.steps=80 \
    --log.run_dir="$run" --log.tensorboard=false "${@:2}" > /dev/null
  python3 -c '
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
print(statistics.median(l["tokens_per_s"] for l in lines[5:]))' "$run/metrics.jsonl"
  rm -rf "$run"
}
: > "$work/train.plain"; : > "$work/train.key"
for ((r = 0; r < rounds; ++r)); do
  tokens_per_second "$work/plain" >> "$work/train.plain"
  tokens_per_second "$work/secret" --security.key_file="$work/key" >> "$work/train.key"
done
plain=$(median < "$work/train.plain"); keyed=$(median < "$work/train.key")
echo "training (tiny model, 1 rank): plain shards $plain tokens/s, encrypted $keyed tokens/s: ratio $(echo "$keyed / $plain" | bc -l | cut -c1-5)"
