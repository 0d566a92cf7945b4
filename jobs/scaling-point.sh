#!/usr/bin/env bash
# One point of a scaling study (submitted by jobs/scaling-study.sh, or run by it directly in
# local mode): `trident bench step --json` on the allocation's ranks, its JSON merged with the
# point's description into OUT/NAME.json.
# usage: scaling-point.sh OUT NAME POINT_JSON [bench step arguments...]
#   inside Slurm: ranks = SLURM_NTASKS, launcher as jobs/lib.sh picks it;
#   outside: ranks = TRIDENT_NP, mpirun (with --oversubscribe when ranks x threads > cores).
#SBATCH --job-name=trident-scaling
#SBATCH --time=00:30:00
set -euo pipefail
out=$1 name=$2 point=$3
shift 3
if [[ -n ${SLURM_JOB_ID:-} ]]; then
  lib=${TRIDENT_HOME:-$(dirname "$(scontrol show job -o "$SLURM_JOB_ID" | grep -o 'Command=[^ ]*' | cut -d= -f2)")/..}/jobs/lib.sh
  [[ -f $lib ]] || lib=${SLURM_SUBMIT_DIR:-.}/jobs/lib.sh
else
  lib=$(dirname "$0")/lib.sh
fi
# shellcheck source=jobs/lib.sh
source "$lib"
TRIDENT=${TRIDENT:-$(cd "$(dirname "$lib")/.." && pwd)/build/trident}
[[ -x $TRIDENT ]] || job_die "trident binary '$TRIDENT' not found: build it or set TRIDENT"

oversubscribed=false
if [[ -n ${SLURM_JOB_ID:-} ]]; then
  job_pick_launcher "$SLURM_NTASKS"
  mode=slurm
  # e.g. SLURM_TASKS_PER_NODE=4(x2): ranks on this node; --overcommit allows more than its CPUs.
  per_node=${SLURM_TASKS_PER_NODE%%[(,]*}
  ((per_node * ${SLURM_CPUS_PER_TASK:-1} > ${SLURM_CPUS_ON_NODE:-per_node})) && oversubscribed=true
else
  np=${TRIDENT_NP:?TRIDENT_NP (ranks) is not set}
  threads=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("threads", 1))' "$point")
  job_launch=(mpirun -np "$np")
  [[ $(id -u) -eq 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  if ((np * threads > $(nproc))); then
    job_launch+=(--oversubscribe --bind-to none)
    oversubscribed=true
  fi
  mode=local
fi
job_say "$name: ${job_launch[*]} $TRIDENT bench step --json $*"
rc=0
"${job_launch[@]}" "$TRIDENT" bench step --json "$@" > "$out/$name.raw" || rc=$?
((rc == 0)) || job_die "$name: trident bench step exited with $rc (output in $out/$name.raw)"
summary=$(python3 - "$out/$name.raw" "$out/$name.json" "$point" "$mode" "$oversubscribed" "${job_launch[*]}" << 'PY'
import json, os, socket, sys
raw, dest, point, mode, oversubscribed, launcher = sys.argv[1:]
lines = [l for l in open(raw) if l.lstrip().startswith("{")]
if not lines:
    sys.exit(f"no JSON line in {raw}")
result = json.loads(point)
result.update(mode=mode, oversubscribed=oversubscribed == "true", launcher=launcher,
              host=socket.gethostname(), job_id=os.environ.get("SLURM_JOB_ID"),
              nodes=int(os.environ.get("SLURM_JOB_NUM_NODES", "1")), load_avg_1min=os.getloadavg()[0])
result["bench"] = json.loads(lines[-1])
tmp = dest + ".tmp"
with open(tmp, "w") as f:
    json.dump(result, f, indent=1)
os.replace(tmp, dest)
b = result["bench"]
print(f"{b['tokens_per_s']:.0f} tokens/s, {1000 * b['tflops_per_rank']:.1f} GFLOP/s per rank, MFU {100 * b['mfu']:.1f}%")
PY
)
rm -f "$out/$name.raw"
job_say "$name: $summary -> $out/$name.json"
