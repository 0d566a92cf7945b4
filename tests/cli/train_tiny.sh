#!/usr/bin/env bash
# End to end: `trident train` on the tiny config writes the run directory of docs/design.md
# section 5 and the loss falls; 2 data-parallel ranks reproduce the single-rank loss curve;
# train.precision = auto | bf16 states the GEMM precision it measured its way to.
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
for p in auto bf16; do
  "$trident" train --config input/configs/tiny.ini --train.steps=2 --train.precision=$p \
    --log.run_dir="$work/precision-$p" > "$work/precision-$p.log" 2>&1 || fail "precision $p: $(tail -3 "$work/precision-$p.log")"
  used=$(sed -n 's/^mixed precision: .* kept for backward in \([a-z0-9]*\),.*/\1/p' "$work/precision-$p.log")
  used=${used:-fp32}
  grep -q "^backend: cpu, peak .* GFLOP/s per rank for $used " "$work/precision-$p.log" \
    || fail "precision $p: computing in $used but the peak line says $(grep '^backend: cpu' "$work/precision-$p.log")"
  if [ "$p" = auto ]; then
    grep -q "^train.precision = auto: $used" "$work/precision-$p.log" || fail "auto: no decision line"
  elif [ "$used" = fp32 ]; then
    grep -q "^train.precision = bf16: .*; computing in fp32" "$work/precision-$p.log" || fail "bf16 in fp32 unsaid"
  fi
  echo "train.precision = $p: GEMMs in $used"
done
