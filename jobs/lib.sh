# shellcheck shell=bash
# Shared body of the jobs/*.sbatch scripts (sourced, not run): finds trident, builds the run
# directory from the job id, picks the launcher (srun --mpi=pmix|pmi2 or mpirun), forwards
# preemption signals to the ranks and requeues the job after a time-limit checkpoint.
#
# Environment (all optional):
#   TRIDENT            the binary (default <repo>/build/trident)
#   TRIDENT_RUNS       where run directories go (default $SLURM_SUBMIT_DIR/runs)
#   TRIDENT_LAUNCHER   auto (default) | srun-pmix | srun-pmi2 | mpirun
#   TRIDENT_MPIRUN_ARGS, TRIDENT_SRUN_ARGS   extra launcher arguments (word-split)
#   TRIDENT_MAX_REQUEUES  how many times a job requeues itself after SIGUSR1 (default 50)

job_say() { echo "trident-job $(date -u +%H:%M:%S): $*"; }
job_die() {
  echo "trident-job: error: $*" >&2
  exit 2
}

# The repository: TRIDENT_HOME, else two levels above the submitted script (Slurm runs a copy
# from its spool directory, so ask the controller for the original path), else the submit dir.
job_home() {
  if [[ -n ${TRIDENT_HOME:-} ]]; then echo "$TRIDENT_HOME"; return; fi
  local cmd
  cmd=$(scontrol show job -o "${SLURM_JOB_ID:-0}" 2> /dev/null | grep -o 'Command=[^ ]*' | head -n 1)
  cmd=${cmd#Command=}
  if [[ -n $cmd && -f $cmd && -f $(dirname "$cmd")/lib.sh ]]; then
    (cd "$(dirname "$cmd")/.." && pwd)
  else
    echo "${SLURM_SUBMIT_DIR:-$PWD}"
  fi
}

# has_override KEY: the user gave --KEY=... on the command line.
has_override() {
  local a
  for a in "${job_overrides[@]}"; do [[ $a == "--$1="* || $a == "--$1" ]] && return 0; done
  return 1
}

# ini_value FILE SECTION KEY: the key's value in an INI file, empty when absent.
ini_value() {
  awk -F= -v section="[$2]" -v key="$3" '
    /^[ \t]*\[/ { gsub(/[ \t]/, ""); in_section = ($0 == section); next }
    in_section { k = $1; gsub(/[ \t]/, "", k); if (k == key) { v = $2; gsub(/^[ \t]+|[ \t]+$/, "", v); print v; exit } }' "$1"
}

# key_value KEY: the override's value, else the config file's, else empty.
key_value() {
  local a
  for a in "${job_overrides[@]}"; do [[ $a == "--$1="* ]] && { echo "${a#*=}"; return; }; done
  ini_value "$job_config" "${1%%.*}" "${1#*.}"
}

# job_setup NAME_SUFFIX CONFIG [OVERRIDES...]: sets job_config, job_overrides, job_run_dir,
# job_args (what trident train gets) and job_launch (the launcher command as an array).
job_setup() {
  local suffix=$1
  shift
  [[ -n ${SLURM_JOB_ID:-} ]] || job_die "not inside a Slurm job: submit with sbatch $0 CONFIG [--section.key=value ...]"
  (($# >= 1)) || job_die "usage: sbatch $0 CONFIG [--section.key=value ...]"
  job_config=$1
  shift
  job_overrides=("$@")
  [[ -f $job_config ]] || job_die "config file '$job_config' not found (relative to $PWD)"
  job_home=$(job_home)
  TRIDENT=${TRIDENT:-$job_home/build/trident}
  [[ -x $TRIDENT ]] || job_die "trident binary '$TRIDENT' not found: build it (./utils/build.sh) or set TRIDENT"

  local name ntasks=${SLURM_NTASKS:-1}
  name=$(basename "$job_config" .ini)$suffix
  job_run_dir=$(key_value log.run_dir)
  if has_override log.run_dir; then
    : # the user's own run directory (resume still works: same path on requeue)
  else
    job_run_dir=${TRIDENT_RUNS:-${SLURM_SUBMIT_DIR:-$PWD}/runs}/$name-$SLURM_JOB_ID
    # A first start finds its directory empty; a full one means a job id used twice (a Slurm
    # whose state was reset): resuming someone else's checkpoints would be wrong.
    if [[ ${SLURM_RESTART_COUNT:-0} -eq 0 && -e $job_run_dir/metrics.jsonl ]]; then
      job_die "run directory $job_run_dir exists already but this is the job's first start (job id reused?):" \
        "move it away, or pass --log.run_dir=$job_run_dir to continue it"
    fi
  fi
  job_args=(train --config "$job_config")
  has_override log.run_dir || job_args+=(--log.run_dir="$job_run_dir")
  has_override checkpoint.resume || job_args+=(--checkpoint.resume=auto)
  # A restart that finds no checkpoint to resume (preempted before the first one) starts over:
  # the first start's record is moved aside (metrics.jsonl.N), never refused or lost.
  if [[ ${SLURM_RESTART_COUNT:-0} -gt 0 ]] && ! has_override log.overwrite; then
    job_args+=(--log.overwrite=true)
  fi
  # One rank per task: data parallelism takes what tp x pp leaves (parallel.layout = auto: trident
  # plans the layout for the tasks it gets, a requeue on more or fewer of them included).
  if ! has_override parallel.dp && [[ $(key_value parallel.layout) != auto ]]; then
    local tp pp
    tp=$(key_value parallel.tp) pp=$(key_value parallel.pp)
    tp=${tp:-1} pp=${pp:-1}
    ((ntasks % (tp * pp) == 0)) || job_die "$ntasks tasks are not a multiple of parallel.tp x parallel.pp = $tp x $pp"
    job_args+=(--parallel.dp=$((ntasks / (tp * pp))))
  fi
  if [[ -n ${SLURM_CPUS_PER_TASK:-} ]]; then
    export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK
    has_override train.threads || job_args+=(--train.threads="$SLURM_CPUS_PER_TASK")
  fi
  job_args+=("${job_overrides[@]}")
  mkdir -p "$job_run_dir"
  job_pick_launcher "$ntasks"
}

# The launcher. srun needs a Slurm MPI plugin that this Open MPI has a client for: pmix
# (Open MPI's pmix ext*/pmix* components) or pmi2 (its s2 component). Otherwise mpirun, which
# reads the allocation (SLURM_* variables) and starts its daemons with srun.
job_pick_launcher() {
  local ntasks=$1 slurm_mpi ompi_pmix choice=${TRIDENT_LAUNCHER:-auto} why
  slurm_mpi=$(srun --mpi=list 2>&1 | awk '/^[ \t]+[a-z_0-9]+$/ {print $1}' | xargs)
  ompi_pmix=$(ompi_info --parsable 2> /dev/null | awk -F: '$1 == "mca" && $2 == "pmix" {print $3}' | sort -u | xargs)
  why="Slurm MPI plugins: ${slurm_mpi:-none}; Open MPI PMI clients: ${ompi_pmix:-unknown}"
  if [[ $choice == auto ]]; then
    choice=mpirun
    if [[ " $slurm_mpi " == *" pmix "* && " $ompi_pmix " =~ \ (ext[0-9]x|pmix[0-9]x)\  ]]; then
      choice=srun-pmix
    elif [[ " $slurm_mpi " == *" pmi2 "* && " $ompi_pmix " == *" s2 "* ]]; then
      choice=srun-pmi2
    elif [[ -z $ompi_pmix && " $slurm_mpi " == *" pmix "* ]]; then
      choice=srun-pmix  # no ompi_info (another MPI): PMIx is what current MPIs speak
    fi
  fi
  local cpt=${SLURM_CPUS_PER_TASK:-1}
  case $choice in
    srun-pmix | srun-pmi2)
      # --cpus-per-task is passed on: srun in Slurm 22.05 does not inherit it from sbatch.
      # shellcheck disable=SC2206
      job_launch=(srun --mpi="${choice#srun-}" --kill-on-bad-exit=1 --ntasks="$ntasks" --cpus-per-task="$cpt"
        ${TRIDENT_SRUN_ARGS:-})
      ;;
    mpirun)
      if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
      job_launch=(mpirun -np "$ntasks")
      ((cpt > 1)) && job_launch+=(--map-by "slot:PE=$cpt")
      # shellcheck disable=SC2206
      job_launch+=(${TRIDENT_MPIRUN_ARGS:-})
      ;;
    *) job_die "TRIDENT_LAUNCHER=$choice: expected auto, srun-pmix, srun-pmi2 or mpirun" ;;
  esac
  job_say "launch: ${job_launch[*]} ($why)"
}

# Last step in metrics.jsonl and train.steps of the resolved config: the run is complete
# when they are equal.
job_finished() {
  local last steps
  [[ -f $job_run_dir/metrics.jsonl && -f $job_run_dir/config.ini ]] || return 1
  last=$(tail -n 1 "$job_run_dir/metrics.jsonl" | grep -o '"step": *[0-9]*' | grep -o '[0-9]*$')
  steps=$(ini_value "$job_run_dir/config.ini" train steps)
  [[ -n $last && -n $steps ]] && ((last >= steps))
}

job_signal=""
job_on_signal() {  # the batch shell got SIG$1: every rank gets SIGUSR1 (checkpoint, exit 0)
  job_signal=$1
  job_say "got SIG$1: asking the ranks to checkpoint and stop (SIGUSR1 to ${job_launch[0]} pid $job_pid)"
  kill -USR1 "$job_pid" 2> /dev/null || true
}

# trident exited 4 (train.straggler_exit): it checkpointed because one host was named a straggler
# check after check (the last line of stragglers.jsonl names it). The job is requeued held, that
# host added to its excluded nodes, and released: it resumes from the checkpoint elsewhere.
# The requeue signals this shell, which ignores it until the release is done.
job_requeue_without_straggler() {
  local host
  host=$(tail -n 1 "$job_run_dir/stragglers.jsonl" 2> /dev/null | sed -n 's/.*"host":"\([^"]*\)".*/\1/p')
  [[ -n $host ]] || job_die "trident exited 4 (straggler) but $job_run_dir/stragglers.jsonl names no host"
  if ((${SLURM_RESTART_COUNT:-0} >= ${TRIDENT_MAX_REQUEUES:-50})); then
    job_say "straggler $host; not requeued: ${SLURM_RESTART_COUNT:-0} restarts reached TRIDENT_MAX_REQUEUES"
    exit 4
  fi
  job_say "host $host named a straggler: requeueing job $SLURM_JOB_ID without it (checkpointed; same run directory)"
  trap '' TERM
  scontrol requeuehold "$SLURM_JOB_ID" || job_die "scontrol requeuehold $SLURM_JOB_ID failed (was the job submitted with --requeue?)"
  local excluded  # hosts excluded before (an earlier straggler) stay excluded
  excluded=$(scontrol show job -o "$SLURM_JOB_ID" | grep -o 'ExcNodeList=[^ ]*' | cut -d= -f2)
  [[ -z $excluded || $excluded == "(null)" ]] && excluded=$host || excluded=$excluded,$host
  scontrol update JobId="$SLURM_JOB_ID" ExcNodeList="$excluded" || job_say "could not exclude $host from job $SLURM_JOB_ID"
  scontrol release "$SLURM_JOB_ID" || job_die "scontrol release $SLURM_JOB_ID failed: release it by hand"
  exit 0
}

# job_run: runs trident under the launcher; on SIGUSR1 (the time-limit warning of
# --signal=B:USR1@N) the ranks checkpoint and the job requeues itself; on SIGTERM (scancel,
# preemption) they checkpoint and Slurm decides what follows (a preempting partition with
# PreemptMode=REQUEUE requeues it; `checkpoint.resume = auto` continues either way).
# Exit status: trident's when it fails, else 0.
job_run() {
  local restarts=${SLURM_RESTART_COUNT:-0} rc
  {
    echo "job $SLURM_JOB_ID restart $restarts: $(date -u +%FT%TZ) on ${SLURM_JOB_NODELIST:-?}," \
      "${SLURM_NTASKS:-1} tasks, launcher ${job_launch[*]}"
  } >> "$job_run_dir/slurm.txt"
  ((restarts > 0)) && job_say "restart $restarts of job $SLURM_JOB_ID: resuming from the newest checkpoint in $job_run_dir"
  job_say "run directory: $job_run_dir"
  job_say "${job_launch[*]} $TRIDENT ${job_args[*]}"
  trap 'job_on_signal USR1' USR1
  trap 'job_on_signal TERM' TERM
  # In the background with wait: bash runs a trap only between commands.
  "${job_launch[@]}" "$TRIDENT" "${job_args[@]}" &
  job_pid=$!
  while true; do
    rc=0
    wait "$job_pid" || rc=$?
    kill -0 "$job_pid" 2> /dev/null || break  # wait returned because the launcher ended
  done
  trap - USR1 TERM
  if ((rc == 4)); then job_requeue_without_straggler; fi
  if ((rc != 0)); then
    job_say "trident exited with $rc"
    exit "$rc"
  fi
  if job_finished; then
    job_say "done: $job_run_dir (steps complete)"
    return 0
  fi
  # trident exits 0 before its last step only after a preemption signal: SIGUSR1 to the batch
  # shell, or one Slurm sent to the ranks directly (--signal=USR1@N without B:). SIGTERM to the
  # batch shell is scancel or preemption: Slurm decides what happens to the job.
  local ckpt_dir
  ckpt_dir=$(key_value checkpoint.dir)
  ckpt_dir=${ckpt_dir:-$job_run_dir/checkpoints}
  if [[ $job_signal != TERM && -s $ckpt_dir/latest ]]; then
    if ((restarts >= ${TRIDENT_MAX_REQUEUES:-50})); then
      job_say "checkpointed; not requeued: $restarts restarts reached TRIDENT_MAX_REQUEUES"
      return 0
    fi
    job_say "checkpointed before the time limit: requeueing job $SLURM_JOB_ID (same run directory)"
    scontrol requeue "$SLURM_JOB_ID" || job_die "scontrol requeue $SLURM_JOB_ID failed (was the job submitted with --requeue?)"
    return 0
  fi
  job_say "stopped before the last step${job_signal:+ after SIG$job_signal}; resubmit (same run directory via --log.run_dir=$job_run_dir) to continue"
}
