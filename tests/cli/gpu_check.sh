#!/usr/bin/env bash
# utils/gpu-check.sh tells the truth: a dry run here (no GPU) prints the stage table, the GPU
# stages "skipped: no GPU", and exits 0; with a planted failing GPU test it exits 1, the table
# and summary.json naming the stage and the test.
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
build=$(dirname "$trident")
[[ -x $build/tests/cuda/test_cuda ]] || { echo "skipped: no test_cuda in $build"; exit 77; }

bash utils/gpu-check.sh --dry-run --skip-build --build-dir "$build" --out "$work/dry" > "$work/dry.log" 2>&1
rc=$?
[[ $rc -eq 0 ]] || fail "dry run: exit $rc: $(tail -n 12 "$work/dry.log")"
for s in gpus cuda_core cuda_attention bench_gpt2 gpu_train mpi_nccl; do
  grep -qE "^$s +(passed|skipped)" "$work/dry.log" || fail "dry run: no row for $s: $(cat "$work/dry.log")"
done
grep -qE "^bench_gpt2 +skipped: no GPU" "$work/dry.log" || fail "dry run: the GPU stages do not say why they skipped"
[[ -f $work/dry/summary.json && -f $work/dry/cuda_core.log && $(cat "$work/dry/cuda_core.rc") == 0 ]] ||
  fail "dry run: no summary.json or stage log and exit code"
echo "ok: dry run: $(grep -cE '^[a-z0-9_]+ +(passed|skipped)' "$work/dry.log") stages in the table, exit 0"

TRIDENT_GPU_CHECK_PLANTED_FAILURE=1 bash utils/gpu-check.sh --dry-run --skip-build --build-dir "$build" \
  --out "$work/planted" > "$work/planted.log" 2>&1
rc=$?
[[ $rc -eq 1 ]] || fail "a planted failing GPU test: exit $rc, want 1"
grep -qE "^cuda_core +FAILED \(exit 1\)" "$work/planted.log" || fail "the table does not show cuda_core failed"
python3 - "$work/planted/summary.json" <<'PY' || fail "summary.json does not name the failed test"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["failed"] == ["cuda_core"], s["failed"]
assert s["cuda_core"]["failed"] == ["GpuCheck.PlantedFailure"], s["cuda_core"]
PY
echo "ok: a planted failing GPU test: exit 1, cuda_core FAILED, GpuCheck.PlantedFailure named"
