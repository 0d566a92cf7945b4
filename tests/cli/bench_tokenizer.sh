#!/usr/bin/env bash
# `trident bench tokenizer`: trains a byte-level BPE tokenizer on a few Python sources, then
# encodes them with it and with the Qwen2-style fixture; both must round-trip exactly and
# report MB/s. A tokenizer of an unsupported kind is refused with exit 2 naming the file.
# When the `tokenizers` library is importable (python3 or /opt/trident-fixtures-venv), it must
# encode the trained tokenizer's input to the same ids.
# usage: bench_tokenizer.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

inputs=(src/data/*.cpp include/trident/data/*.hpp)
out=$("$trident" bench tokenizer --tokenizer "$work/tok.json" --train-vocab 600 --input "${inputs[@]}" \
      --seconds 0.1 --dump-ids "$work/ids.txt") || fail "bench tokenizer with training: exit $?"
echo "$out"
grep -q "^trained .*: 600 ids" <<<"$out" || fail "training did not report 600 ids"
grep -q "round trip: exact" <<<"$out" || fail "trained tokenizer does not round-trip"
grep -qE "later passes \(cache warm\) +[0-9.]+" <<<"$out" || fail "no MB/s line"

out=$("$trident" bench tokenizer --tokenizer tests/data/tokenizers/qwen2 --input "${inputs[@]}" --seconds 0.1) ||
  fail "bench tokenizer on the qwen2 fixture: exit $?"
grep -q "round trip: exact" <<<"$out" || fail "qwen2 fixture does not round-trip on ASCII sources"

sed 's/"type":"BPE"/"type":"WordPiece"/' tests/data/tokenizers/gpt2/tokenizer.json > "$work/wordpiece.json"
err=$("$trident" bench tokenizer --tokenizer "$work/wordpiece.json" --input "${inputs[0]}" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "unsupported tokenizer: exit $rc, want 2"
grep -q "wordpiece.json: model type \"WordPiece\" is not supported" <<<"$err" || fail "unsupported tokenizer: $err"

for py in /opt/trident-fixtures-venv/bin/python python3; do
  if "$py" -c "import tokenizers" 2>/dev/null; then
    "$py" utils/make_tokenizer_fixtures.py check --tokenizer "$work/tok.json" --input "${inputs[0]}" \
      --ids "$work/ids.txt" || fail "the tokenizers library encodes differently"
    break
  fi
done
echo "ok"
