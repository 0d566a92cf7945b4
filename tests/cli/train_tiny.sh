#!/usr/bin/env bash
# End to end: `trident train` on the tiny config writes the run directory of docs/design.md
# section 5 and the loss falls; 2 data-parallel ranks reproduce the single-rank loss curve.
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
