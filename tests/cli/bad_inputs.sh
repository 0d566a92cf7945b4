#!/usr/bin/env bash
# Every file of tests/data/bad/ is fed to the command that reads its kind, which must exit 2
# with the message its FILE.expect holds (an extended regex): configs (*.ini) to train, JSONL
# (*.jsonl) and text (*.txt) to prep, tokenizer files (*.json) to prep --tokenizer, shard
# indexes (*.idx, with their .bin) to inspect, checkpoints (*.h5) to inspect and to train's
# resume, Hugging Face model directories (*.hf) to convert --from hf and to train's init_from.
# usage: bad_inputs.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
failures=0
count=0
check() {  # check FILE COMMAND...
  local file=$1 rc=0
  shift
  "$@" > "$work/out" 2> "$work/err" || rc=$?
  count=$((count + 1))
  if [[ ! -f $file.expect ]]; then
    echo "FAIL: $file has no $file.expect"
    failures=$((failures + 1))
  elif [[ $rc -ne 2 ]] || ! grep -qE -- "$(cat "$file.expect")" "$work/err"; then
    echo "FAIL: $file: exit $rc, stderr: $(head -c 300 "$work/err") (want /$(cat "$file.expect")/)"
    failures=$((failures + 1))
  else
    echo "ok: $(basename "$file"): $(grep -v '^ *$' "$work/err" | head -n 1 | cut -c1-160)"
  fi
}
for f in tests/data/bad/*; do
  case "$f" in
    *.ini) check "$f" "$trident" train --config "$f" --data.train=input/data/pystdlib --log.run_dir="$work/run" ;;
    *.jsonl | *.txt) check "$f" "$trident" prep --input "$f" --output "$work/out_$(basename "$f")" ;;
    *.json) check "$f" "$trident" prep --input README.md --output "$work/out_tok" --tokenizer "$f" ;;  # tokenizers
    *.idx) check "$f" "$trident" inspect "${f%.idx}" ;;
    *.h5)
      check "$f" "$trident" inspect "$f"
      check "$f" "$trident" train --config input/configs/tiny.ini --checkpoint.resume="$f" --log.run_dir="$work/run" ;;
    *.hf)  # Hugging Face model directories: converted, and as model.init_from
      check "$f" "$trident" convert --from hf --input "$f" --output "$work/converted.h5"
      check "$f" "$trident" train --model.init_from="$f" --data.train=input/data/pystdlib --log.run_dir="$work/run" ;;
    *.bin | *.expect) ;;  # the data half of an .idx case; expectations
    *) echo "FAIL: $f: no rule for this kind of file"; failures=$((failures + 1)) ;;
  esac
done
[[ -e $work/run ]] && { echo "FAIL: a rejected input created a run directory"; failures=$((failures + 1)); }
echo "$count bad inputs, $failures failures"
exit $((failures > 0))
