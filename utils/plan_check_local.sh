#!/usr/bin/env bash
# Checks `trident plan --cluster local` against trident itself on this machine: calibrates the
# local preset (MPI measured on 2 ranks), then for several layouts of the benchmark configs runs
# `trident bench step --json` and `trident plan --layout ... --json` and prints predicted vs
# measured step time and memory per rank (peak RSS). Timings depend on the host's load: the
# script prints it; run it on a quiet machine.
#   utils/plan_check_local.sh [BUILD_DIR]      (default build; STEPS=N timed steps, default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
T=$BUILD/trident
STEPS=${STEPS:-5}
[ -x "$T" ] || { echo "no $T: build trident first (utils/test.sh or cmake --build $BUILD --target trident)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
CAL=$WORK/calibration.json

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
mpirun -np 2 "$T" plan --calibrate --calibration "$CAL"

# config | ranks | dp,tp,pp,micro_batch[,v] | extra bench overrides
CASES=(
  "input/configs/bench-small.ini|1|1,1,1,8|"
  "input/configs/bench-small.ini|2|2,1,1,4|"
  "input/configs/bench-small.ini|2|1,2,1,8|"
  "input/configs/bench-small.ini|2|1,1,2,4|--parallel.schedule=1f1b"
  "input/configs/bench-small.ini|1|1,1,1,8|--train.recompute=full"
  "input/configs/tiny.ini|1|1,1,1,2|--train.threads=0"
  "input/configs/tiny.ini|2|2,1,1,2|--train.threads=0"
)
printf "%-14s %-26s %10s %10s %7s %10s %10s %7s\n" config "layout (dp,tp,pp,mb) extra" "pred s" "meas s" "err" "pred MiB" "RSS MiB" "err"
for c in "${CASES[@]}"; do
  IFS='|' read -r cfg ranks layout extra <<<"$c"
  IFS=',' read -r dp tp pp mb <<<"$layout"
  recompute=none
  [[ "$extra" == *recompute=full* ]] && recompute=full
  measured=$(mpirun -np "$ranks" "$T" bench step --config "$cfg" --steps "$STEPS" --warmup 2 --json \
      --parallel.dp="$dp" --parallel.tp="$tp" --parallel.pp="$pp" --train.micro_batch="$mb" $extra | tail -1)
  predicted=$("$T" plan --model "$cfg" --cluster local --calibration "$CAL" --layout "$layout" --recompute "$recompute" --json)
  python3 - "$cfg" "$layout $extra" "$measured" "$predicted" <<'PY'
import json, sys
cfg, layout, m, p = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
ps, ms = p["step_s"], m["step_s"]
pm, mm = p["mem_gb_per_gpu"] * 1e9 / 2**20, m["peak_rss_mb"]
name = cfg.split("/")[-1].replace(".ini", "")
print(f"{name:<14} {layout.replace('--parallel.','').replace('--train.',''):<26} {ps:10.4f} {ms:10.4f} {100*(ps/ms-1):+6.1f}% {pm:10.1f} {mm:10.1f} {100*(pm/mm-1):+6.1f}%")
PY
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
