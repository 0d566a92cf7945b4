#!/usr/bin/env bash
# End to end: `trident train` on the tiny config writes the run directory of docs/design.md
# section 5 and the loss falls; 2 data-parallel ranks reproduce the single-rank loss curve;
# train.precision = auto | bf16 states the GEMM precision it measured its way to, and bf16 where
# bf16 GEMMs are the slower (forced) keeps bf16 activations with fp32 GEMMs.
# usage: train_tiny.sh TRIDENT SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

"$trident" train --config input/configs/tiny.ini --log.run_dir="$work/single" > "$work/single.log"
mpirun -np 2 "$trident" train --config input/configs/tiny.ini --parallel.dp=2 --log.run_dir="$work/dp2" > "$work/dp2.log"
grep -q "step 20/20" "$work/single.log"

python3 - "$work" <<'PY'
import json, math, sys, pathlib
work = pathlib.Path(sys.argv[1])
required = ["step", "loss", "lr", "grad_norm", "tokens", "tokens_per_s", "mfu", "loss_scale", "skipped",
            "mem_mb", "elapsed_s"]
def load(run):
    assert (work / run / "config.ini").is_file(), f"{run}: config.ini missing"
    assert (work / run / "checkpoints").is_dir(), f"{run}: checkpoints/ missing"
    lines = [json.loads(l) for l in (work / run / "metrics.jsonl").read_text().splitlines()]
    assert [l["step"] for l in lines] == list(range(1, 21)), f"{run}: steps {[l['step'] for l in lines]}"
    for l in lines:
        missing = [k for k in required if k not in l]
        assert not missing, f"{run}: metrics line lacks {missing}"
    return lines
single, dp2 = load("single"), load("dp2")
first, last = single[0]["loss"], single[-1]["loss"]
print(f"single rank: loss {first:.4f} -> {last:.4f}")
assert abs(first - math.log(320)) < 0.5, f"first loss {first} should be near ln(320)"
assert last < first - 0.8, f"loss did not fall: {first} -> {last}"
for a, b in zip(single, dp2):
    rel = abs(a["loss"] - b["loss"]) / abs(a["loss"])
    assert rel < 1e-5, f"step {a['step']}: dp=1 loss {a['loss']} vs dp=2 {b['loss']} (rel {rel:.2e})"
print("dp=2 reproduces the single-rank loss curve within 1e-5")
config = (work / "dp2" / "config.ini").read_text()
assert "[parallel]\ndp = 2" in config, "resolved config.ini lacks the dp override"
PY

# train.precision = auto and bf16: the GEMM precision is decided by measuring bf16 against fp32
# GEMMs here, stated in one line, and the MFU's peak is the one of the precision really used.
# TRIDENT_TEST_SLOW_BF16=1 takes bf16 GEMMs as the slower, so that the fallback runs on any
# processor: bf16 keeps bf16 activations with fp32 GEMMs on the fp32 masters, auto goes fp32.
for case in auto bf16 auto-slow bf16-slow; do
  p=${case%-slow}
  slow=0; [ "$case" = "$p" ] || slow=1
  TRIDENT_TEST_SLOW_BF16=$slow "$trident" train --config input/configs/tiny.ini --train.steps=2 --train.precision=$p \
    --log.run_dir="$work/precision-$case" > "$work/precision-$case.log" 2>&1 || fail "precision $case: $(tail -3 "$work/precision-$case.log")"
  log="$work/precision-$case.log"
  used=$(sed -n 's/^backend: cpu, peak .* GFLOP\/s per rank for \([a-z0-9]*\) .*/\1/p' "$log")
  [ -n "$used" ] || fail "precision $case: no peak line"
  [ "$slow" = 0 ] || [ "$used" = fp32 ] || fail "precision $case: TRIDENT_TEST_SLOW_BF16 but GEMMs in $used"
  if [ "$used" = bf16 ]; then
    grep -q "^mixed precision: weights (a copy refreshed each step) and the activations kept for backward in bf16," "$log" \
      || fail "precision $case: bf16 GEMMs without the mixed-precision line"
  fi
  if [ "$p" = auto ]; then
    grep -q "^train.precision = auto: $used" "$log" || fail "$case: no decision line"
    [ "$used" = bf16 ] || ! grep -q "^mixed precision" "$log" || fail "$case: auto in fp32 kept 16-bit storage"
  elif [ "$used" = fp32 ]; then
    grep -q "^train.precision = bf16: .*; bf16 storage, GEMMs computing in fp32" "$log" || fail "$case: bf16 in fp32 unsaid"
    grep -q "^mixed precision: the activations kept for backward in bf16, GEMMs widening them to fp32" "$log" \
      || fail "$case: bf16 storage unsaid"
  fi
  echo "train.precision = $case: GEMMs in $used"
done
# bf16 storage with fp32 GEMMs follows the fp32 run's losses to bf16 rounding of the activations.
"$trident" train --config input/configs/tiny.ini --train.steps=2 --log.run_dir="$work/precision-fp32" > "$work/precision-fp32.log"
python3 - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
loss = lambda run: [json.loads(l)["loss"] for l in (work / run / "metrics.jsonl").read_text().splitlines()]
fp32, stored = loss("precision-fp32"), loss("precision-bf16-slow")
assert len(fp32) == len(stored) == 2, (fp32, stored)
for a, b in zip(fp32, stored):
    assert abs(a - b) < 1e-3 * a, f"bf16 storage loss {b} vs fp32 {a}"
print(f"bf16 storage with fp32 GEMMs: losses {stored} vs fp32 {fp32}")
PY

# Each rank measures its GEMM rates; where one rank finds bf16 no faster (forced here on rank 1
# only), every rank computes in fp32, saying which rank decided, and the curve is the one of
# bf16 storage with fp32 GEMMs on both ranks alike.
mpirun -np 1 -x TRIDENT_TEST_SLOW_BF16=0 "$trident" train --config input/configs/tiny.ini --train.steps=2 \
    --train.precision=bf16 --parallel.dp=2 --log.run_dir="$work/precision-disagree" : \
  -np 1 -x TRIDENT_TEST_SLOW_BF16=1 "$trident" train --config input/configs/tiny.ini --train.steps=2 \
    --train.precision=bf16 --parallel.dp=2 --log.run_dir="$work/precision-disagree" > "$work/precision-disagree.log" 2>&1 \
  || fail "ranks disagreeing on bf16: $(tail -3 "$work/precision-disagree.log")"
log="$work/precision-disagree.log"
# (rank 0 decides for itself where its own bf16 GEMMs are the slower: no line names rank 1 then)
if grep -q "^backend: cpu, peak .* GFLOP/s per rank for bf16 " "$work/precision-bf16.log"; then
  grep -q "^matmul precision: rank 1 of the run computes bf16 GEMMs in fp32 (measured no faster there), so every rank does" "$log" \
    || fail "ranks disagreeing on bf16: no agreement line"
fi
grep -q "^backend: cpu, peak .* GFLOP/s per rank for fp32 " "$log" || fail "ranks disagreeing on bf16: rank 0 not in fp32"
grep -q "^train.precision = bf16: .*; bf16 storage, GEMMs computing in fp32" "$log" || fail "ranks disagreeing: fp32 GEMMs unsaid"
echo "ranks disagreeing on bf16 GEMMs: all compute in fp32"
