#!/usr/bin/env bash
# Training reads what prep writes in every form: a set of hash-sharded shards, packed rows
# (document masking) and one document per padded row (data.packing = false, padding share in
# metrics); a set of 3 shards trains like one shard holding the same documents in the same order.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

inputs=(/usr/lib/python3*/json/*.py /usr/lib/python3*/email/*.py)
"$trident" prep --input "${inputs[@]}" --output "$work/set" --shards 3 > "$work/prep.log"
ls "$work"/set-0000{0,1,2}-of-00003.idx > /dev/null || fail "prep --shards 3 did not write three shards"

common=(--config input/configs/tiny.ini --train.steps=3 --log.interval=1 --train.global_batch=8)
"$trident" train "${common[@]}" --data.train="$work/set" --log.run_dir="$work/packed" > "$work/packed.log"
"$trident" train "${common[@]}" --data.train="$work/set" --data.packing=false --log.run_dir="$work/unpacked" \
  > "$work/unpacked.log"
"$trident" train "${common[@]}" --data.train="$work/set" --data.packing=false --data.bucket=true \
  --log.run_dir="$work/bucketed" > "$work/bucketed.log"
set +e
"$trident" train "${common[@]}" --data.train="$work/set" --data.bucket=true > "$work/err" 2>&1; code=$?
set -e
[ "$code" -eq 2 ] && grep -q "needs data.packing = false" "$work/err" || fail "bucket with packing: exit $code, $(cat "$work/err")"
grep -q "packed rows of 64" "$work/packed.log" || fail "packed run did not say so: $(cat "$work/packed.log")"
grep -q "one-document rows of 64" "$work/unpacked.log" || fail "unpacked run did not say so"

python3 - "$work" <<'PY'
import json, math, pathlib, sys
work = pathlib.Path(sys.argv[1])
def metrics(run):
    return [json.loads(l) for l in (work / run / "metrics.jsonl").read_text().splitlines()]
packed, unpacked, bucketed = metrics("packed"), metrics("unpacked"), metrics("bucketed")
assert len(packed) == 3 and len(unpacked) == 3 and len(bucketed) == 3
for m in packed + unpacked + bucketed:
    assert math.isfinite(m["loss"]) and abs(m["loss"] - math.log(320)) < 1.0, m
assert all(m["padding"] == 0 for m in packed), [m["padding"] for m in packed]
# rows of short documents and the last piece of long ones are padded
assert all(0 <= m["padding"] < 1 for m in unpacked) and sum(m["padding"] for m in unpacked) > 0, \
    [m["padding"] for m in unpacked]
# bucketed micro-batches are cut to their longest row: less padding computed
assert sum(m["padding"] for m in bucketed) <= sum(m["padding"] for m in unpacked), (bucketed, unpacked)
print("packed: padding 0; unpacked:", [round(m["padding"], 3) for m in unpacked],
      "bucketed:", [round(m["padding"], 3) for m in bucketed])
PY
echo "train data modes: ok"
