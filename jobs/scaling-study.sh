#!/usr/bin/env bash
# A scaling study: `trident bench step` at a list of rank counts and layouts, strong scaling
# (fixed global batch) and/or weak scaling (fixed batch per rank), one result JSON per point in
# one folder; then utils/scaling_report.py FOLDER makes the CSV, table and plots.
# usage: jobs/scaling-study.sh [options] [-- --section.key=value ...]
#   --config FILE        model and training config (default input/configs/bench-small.ini)
#   --ranks LIST         rank counts, e.g. 1,2,4,8 (default 1,2)
#   --layouts LIST       tensor x pipeline shapes TPxPP, e.g. 1x1,2x1,1x2; dp = ranks / (tp x pp);
#                        a shape that does not divide a rank count is skipped (default 1x1)
#   --scaling KIND       strong | weak | both (default both)
#   --global-batch B     strong: the global batch of every point; weak: the global batch of the
#                        smallest rank count, scaled with the ranks (default: the config's)
#   --micro-batch B      micro-batch per rank (default: the config's, lowered until it divides)
#   --steps N, --warmup N  timed and warm-up steps per point (default 5 and 1)
#   --threads N          threads per rank (default 1: resources grow with the ranks)
#   --out DIR            results folder (default runs/scaling-<UTC time>)
#   --mode MODE          slurm (one sbatch job per point) | local (mpirun, one point after the
#                        other; more ranks x threads than cores runs oversubscribed, and the
#                        point says so); default slurm where sbatch answers, else local
#   --tasks-per-node N   slurm: ranks per node (nodes = ceil(ranks / N)); default: one node
#   --gpus-per-task N    slurm: GPUs per rank (GPU partitions)
#   --sbatch-args "..."  slurm: more sbatch options (partition, account, time, --overcommit)
#   --wait               slurm: wait for the jobs, then write the report
#   --dry-run            print the points and commands, run nothing
# Each point job gets --exclusive nodes so that no other job shares its cores or links.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
home=$(cd "$here/.." && pwd)

config=input/configs/bench-small.ini ranks=1,2 layouts=1x1 scaling=both global_batch="" micro_batch=""
steps=5 warmup=1 threads=1 out="" mode="" tasks_per_node="" gpus_per_task="" sbatch_args="" wait=0 dry=0
overrides=()
die() {
  echo "scaling-study: error: $*" >&2
  exit 2
}
while (($#)); do
  [[ $1 == --*=* ]] && set -- "${1%%=*}" "${1#*=}" "${@:2}"  # --option=value
  case $1 in
    --config) config=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --layouts) layouts=$2; shift ;;
    --scaling) scaling=$2; shift ;;
    --global-batch) global_batch=$2; shift ;;
    --micro-batch) micro_batch=$2; shift ;;
    --steps) steps=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --threads) threads=$2; shift ;;
    --out) out=$2; shift ;;
    --mode) mode=$2; shift ;;
    --tasks-per-node) tasks_per_node=$2; shift ;;
    --gpus-per-task) gpus_per_task=$2; shift ;;
    --sbatch-args) sbatch_args=$2; shift ;;
    --wait) wait=1 ;;
    --dry-run) dry=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; overrides=("$@"); break ;;
    *) die "unknown option $1 (--help lists them)" ;;
  esac
  shift
done
[[ -f $config ]] || die "config $config not found"
[[ $scaling == @(strong|weak|both) ]] || die "--scaling must be strong, weak or both"
if [[ -z $mode ]]; then
  if command -v sbatch > /dev/null && scontrol ping > /dev/null 2>&1; then mode=slurm; else mode=local; fi
fi
[[ $mode == @(slurm|local) ]] || die "--mode must be slurm or local"
# shellcheck source=jobs/lib.sh disable=SC2034  # job_overrides, job_config: read by key_value
source "$here/lib.sh"
job_overrides=("${overrides[@]}") job_config=$config
global_batch=${global_batch:-$(key_value train.global_batch)}
micro_batch=${micro_batch:-$(key_value train.micro_batch)}
[[ -n $global_batch && -n $micro_batch ]] || die "the config sets no train.global_batch / micro_batch: give --global-batch and --micro-batch"
out=${out:-runs/scaling-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export TRIDENT=${TRIDENT:-$home/build/trident}
[[ -x $TRIDENT || $dry -eq 1 ]] || die "trident binary '$TRIDENT' not found: build it or set TRIDENT"

IFS=, read -r -a rank_list <<< "$ranks"
IFS=, read -r -a layout_list <<< "$layouts"
min_ranks=$(printf '%s\n' "${rank_list[@]}" | sort -n | head -n 1)
kinds=(strong weak)
[[ $scaling == both ]] || kinds=("$scaling")
echo "scaling-study: $mode mode, config $config, ranks ${rank_list[*]}, layouts ${layout_list[*]}, $scaling scaling," \
  "global batch $global_batch (at $min_ranks ranks for weak), $threads thread(s) per rank -> $out"
printf 'name\tkind\tranks\tdp\ttp\tpp\tglobal_batch\tmicro_batch\tjob\n' > "$out/points.tsv"
job_ids=()
for kind in "${kinds[@]}"; do
  for r in "${rank_list[@]}"; do
    for shape in "${layout_list[@]}"; do
      tp=${shape%x*} pp=${shape#*x}
      if ((r % (tp * pp))); then
        echo "  skip $kind $r ranks ${shape}: not a multiple of tp x pp"
        continue
      fi
      dp=$((r / (tp * pp)))
      gb=$global_batch
      [[ $kind == weak ]] && gb=$((global_batch * r / min_ranks))
      if ((gb % dp)); then
        echo "  skip $kind $r ranks ${shape}: global batch $gb not divisible by dp $dp"
        continue
      fi
      # The largest micro-batch <= --micro-batch that divides the batch per dp rank and, with a
      # pipeline, leaves at least 2 x pp micro-batches to fill it (when the batch allows).
      mb=$((micro_batch < gb / dp ? micro_batch : gb / dp))
      while ((mb > 1 && ((gb / dp) % mb || (pp > 1 && gb / dp / mb < 2 * pp)))); do mb=$((mb - 1)); done
      name=$kind-r$r-dp$dp-tp$tp-pp$pp
      point=$(printf '{"kind": "%s", "ranks": %d, "dp": %d, "tp": %d, "pp": %d, "global_batch": %d, "micro_batch": %d, "threads": %d, "config": "%s"}' \
        "$kind" "$r" "$dp" "$tp" "$pp" "$gb" "$mb" "$threads" "$config")
      bench=(--config "$config" --steps "$steps" --warmup "$warmup" --parallel.dp="$dp" --parallel.tp="$tp"
        --parallel.pp="$pp" --train.global_batch="$gb" --train.micro_batch="$mb" --train.threads="$threads" "${overrides[@]}")
      job=-
      if [[ $mode == slurm ]]; then
        opts=(--parsable --exclusive --job-name="scaling-$name" --output="$out/$name.out" --ntasks="$r"
          --cpus-per-task="$threads")
        if [[ -n $tasks_per_node ]]; then
          opts+=(--nodes=$(((r + tasks_per_node - 1) / tasks_per_node)) --ntasks-per-node="$((r < tasks_per_node ? r : tasks_per_node))")
        else
          opts+=(--nodes=1)
        fi
        [[ -n $gpus_per_task ]] && opts+=(--gpus-per-task="$gpus_per_task")
        # shellcheck disable=SC2206
        opts+=($sbatch_args)
        echo "  $name: sbatch ${opts[*]} jobs/scaling-point.sh ..."
        if ((!dry)); then
          job=$(sbatch "${opts[@]}" "$here/scaling-point.sh" "$out" "$name" "$point" "${bench[@]}") ||
            die "sbatch refused point $name"
          job_ids+=("$job")
        fi
      else
        echo "  $name: mpirun -np $r trident bench step ${bench[*]}"
        if ((!dry)); then
          TRIDENT_NP=$r "$here/scaling-point.sh" "$out" "$name" "$point" "${bench[@]}" > "$out/$name.out" 2>&1 ||
            echo "scaling-study: point $name failed: $(tail -n 3 "$out/$name.out")" >&2
          grep -h "^trident-job.*->" "$out/$name.out" || true
        fi
      fi
      printf '%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n' "$name" "$kind" "$r" "$dp" "$tp" "$pp" "$gb" "$mb" "$job" >> "$out/points.tsv"
    done
  done
done
((dry)) && exit 0

if [[ $mode == slurm ]]; then
  echo "scaling-study: submitted ${#job_ids[@]} jobs (${job_ids[*]}); results land in $out"
  if ((!wait)); then
    echo "scaling-study: when they are done: python3 utils/scaling_report.py $out"
    exit 0
  fi
  while squeue -h -j "$(IFS=,; echo "${job_ids[*]}")" 2> /dev/null | grep -q .; do sleep 1; done
fi
missing=$(awk -F'\t' 'NR > 1 {print $1}' "$out/points.tsv" | while read -r n; do [[ -f $out/$n.json ]] || echo "$n"; done)
[[ -z $missing ]] || echo "scaling-study: no result for: $missing (see $out/<name>.out)" >&2
# Debian's python3-matplotlib belongs to /usr/bin/python3, which another python3 may shadow.
python=python3
python3 -c 'import matplotlib' 2> /dev/null || [[ ! -x /usr/bin/python3 ]] || python=/usr/bin/python3
"$python" "$home/utils/scaling_report.py" "$out"
