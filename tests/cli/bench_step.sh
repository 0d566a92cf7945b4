#!/usr/bin/env bash
# `trident bench step` end to end on the tiny config: the JSON has the promised keys with sane
# values, the phase times add up to no more than the step, dp=2 under mpirun works, and bad
# options are rejected with exit 2.
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

check_json() {  # $1: JSON line, $2: expected ranks
  /usr/bin/python3 - "$1" "$2" <<'PY' || exit 1
import json, sys
r = json.loads(sys.argv[1])
for key in ("tokens_per_s", "tflops", "mfu", "peak_rss_mb", "step_s", "breakdown_s"):
    assert key in r, f"missing {key}: {r}"
assert r["ranks"] == int(sys.argv[2]), r
assert r["tokens_per_s"] > 0 and 0 < r["mfu"] < 1.5 and r["peak_rss_mb"] > 10, r
b = r["breakdown_s"]
for phase in ("gemm", "attention", "elementwise_norm", "loss", "optimizer", "comm_wait", "pipeline_bubble", "data", "other"):
    assert phase in b and b[phase] >= 0, (phase, b)
assert b["gemm"] > 0 and b["attention"] > 0 and b["optimizer"] > 0, b
assert sum(b.values()) <= r["step_s"] * 1.05 + 1e-3, (sum(b.values()), r["step_s"])
# tokens/s is tokens per step over the step time
assert abs(r["tokens_per_s"] * r["step_s"] - r["tokens_per_step"]) < 1e-6 * r["tokens_per_step"], r
PY
}

out=$("$trident" bench step --config input/configs/tiny.ini --steps 2 --warmup 1 --json) || fail "bench step failed: $out"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "--json printed more than one line: $out"
check_json "$out" 1

out=$(mpirun -np 2 "$trident" bench step --config input/configs/tiny.ini --parallel.dp=2 --steps 2 --warmup 1 --json) \
  || fail "bench step dp=2 failed: $out"
check_json "$out" 2

text=$("$trident" bench step --config input/configs/tiny.ini --steps 1 --warmup 0) || fail "text output failed"
printf '%s\n' "$text" | grep -q "model TFLOP/s" || fail "no TFLOP/s line: $text"
printf '%s\n' "$text" | grep -q "6 x .* matmul parameters" || fail "FLOP formula not stated: $text"

set +e
"$trident" bench step --config input/configs/tiny.ini --steps abc > "$work/err" 2>&1; code=$?
set -e
[ "$code" -eq 2 ] || fail "--steps abc: exit $code, want 2"
grep -q "steps needs a non-negative integer" "$work/err" || fail "no message for --steps abc: $(cat "$work/err")"
echo "bench step: ok"
