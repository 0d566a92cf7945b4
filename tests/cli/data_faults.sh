#!/usr/bin/env bash
# Data that used to break training: fine-tuning examples whose prompts are longer than
# seq_len (cut from the left or left out, counted, never an abort); a token id a shard's
# header vocab does not allow (exit 2 at open, naming the shard, document and id); re-running
# prep without a validation split (the old split goes, it would hold training documents).
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

# --- long prompts: 200 examples, prompts of ~150 bytes, seq_len 64 ------------------------
python3 - "$work/long.jsonl" <<'PY'
import json, random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    for i in range(200):
        prompt = " ".join(random.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(30))
        f.write(json.dumps({"input": f"{prompt} #{i}?", "output": f" answer {i % 10}"}) + "\n")
PY
"$trident" prep --input "$work/long.jsonl" --output "$work/long" > /dev/null
tiny=(--config input/configs/tiny.ini --data.train="$work/long" --data.valid= --train.steps=6)
"$trident" train "${tiny[@]}" --log.run_dir="$work/left" > "$work/left.log" 2>&1 || fail "left: $(tail -n 3 "$work/left.log")"
grep -q "data.truncate = left: 200 fine-tuning examples with prompts longer than seq_len = 64" "$work/left.log" ||
  fail "the cut examples were not counted: $(grep -i trunc "$work/left.log")"
python3 - "$work/left/metrics.jsonl" <<'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 6 and all(l["truncated"] > 0 for l in lines), [l.get("truncated") for l in lines]
assert all(l["loss"] is not None and math.isfinite(l["loss"]) for l in lines), "a step had no target"
PY
rc=0; "$trident" train "${tiny[@]}" --log.run_dir="$work/skip" --data.truncate=skip > "$work/skip.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "make only 0 rows" "$work/skip.log" || fail "skip of every example: exit $rc, $(tail -n 2 "$work/skip.log")"
echo "ok: prompts longer than seq_len cut from the left (200 counted, every step trained); skip leaves none: exit 2"

# --- a token id the shard's vocab does not allow -------------------------------------------
printf 'def f(x):\n    return x + 1\n' > "$work/a.py"
"$trident" prep --input "$work/a.py" README.md --output "$work/ids" > /dev/null
python3 - "$work/ids.bin" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:   # token 3 of the stream: 0x0140 = 320 >= the byte vocab 257
    f.seek(6); f.write(bytes([0x40, 0x01]))
PY
# The changed block fails its digest first (docs/design.md section 8) ...
rc=0; "$trident" train --config input/configs/tiny.ini --data.train="$work/ids" --log.run_dir="$work/ids-run" \
  > "$work/ids.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "ids.bin: block 0 (bytes 0..[0-9]*) fails its SHA-256 digest" "$work/ids.log" ||
  fail "a changed byte of a shard: exit $rc, $(tail -n 2 "$work/ids.log")"
[[ ! -e "$work/ids-run/metrics.jsonl" ]] || fail "a changed shard still trained"
# ... and with its digest and the index trailer made to match, the id is still refused.
python3 - "$work/ids" <<'PY'
import hashlib, struct, sys
prefix = sys.argv[1]
data = open(prefix + ".bin", "rb").read()
idx = bytearray(open(prefix + ".idx", "rb").read())
docs, total = struct.unpack_from("<QQ", idx, 24)
block = struct.unpack_from("<I", idx, 44)[0]
table = 144 + 8 * (2 * docs + 1)
for b in range((len(data) + block - 1) // block):
    idx[table + 32 * b: table + 32 * b + 32] = hashlib.sha256(data[b * block:(b + 1) * block]).digest()
trailer = len(idx) - 48
idx[trailer:trailer + 32] = hashlib.sha256(bytes(idx[:trailer])).digest()
open(prefix + ".idx", "wb").write(idx)
PY
rc=0; "$trident" train --config input/configs/tiny.ini --data.train="$work/ids" --log.run_dir="$work/ids-run" \
  > "$work/ids.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "ids.bin: document 0 (token 3 of it) holds id 320, not below the vocab 257" "$work/ids.log" ||
  fail "a token id out of the vocab: exit $rc, $(tail -n 2 "$work/ids.log")"
echo "ok: an id out of the shard's vocab: exit 2 naming the shard, document and id"

# --- prep again without a validation split ------------------------------------------------
"$trident" prep --input README.md input/configs/*.ini --output "$work/split" --valid-permille 300 > /dev/null
ls "$work"/split-valid.* > /dev/null 2>&1 || fail "no validation split was written"
"$trident" prep --input README.md input/configs/*.ini --output "$work/split" > /dev/null 2> "$work/again.log"
! ls "$work"/split-valid.* > /dev/null 2>&1 || fail "the old validation split was left beside the new training split"
grep -q "removed .* files of an older .*split-valid split" "$work/again.log" || fail "no word of the removed split"
echo "ok: prep without --valid-permille removes the old validation split and says so"
