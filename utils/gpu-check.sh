#!/usr/bin/env bash
# The GPU checks in one call, each stage under a timeout, its log and exit code kept, and a
# summary table at the end (stage, result, seconds) that tells the truth: the script exits 1
# when any stage failed or timed out. Stages, in this order (the timing before the
# multi-process test, the attention tests in a process of their own so that an illegal address
# there cannot spoil the rest):
#   gpus            nvidia-smi -L
#   build           the CUDA build into build-gpu/ (not with --kit or --skip-build)
#   cuda_core       test_cuda without the attention tests: every other Ops kernel vs the CPU
#   cuda_attention  test_cuda's attention tests (fp32 and tensor-core kernels) vs the CPU
#   bench_gpt2      GPT-2 124M, seq 1024, bf16, one GPU: tokens/s, MFU over 989 TFLOP/s, kernels
#   gpu_train       tests/cli/gpu_train.sh: GPU vs CPU losses, checkpoint and resume (2+ GPUs:
#                   dp=2 and pp=2 against one GPU)
#   mpi_nccl        the NCCL collectives through the Communicator (one rank per GPU, 2+ GPUs)
# The stage timeouts add up to 8 minutes. Logs, the bench JSON and summary.json (every stage's
# result and seconds, and the figures) go to --out DIR (default $OUT, else gpu-check-out).
#   utils/gpu-check.sh [--kit DIR] [--skip-build] [--build-dir DIR] [--steps N] [--out DIR] [--dry-run]
# --kit DIR: the binaries and libraries of utils/gpu-kit.sh (unpacked from DIR.tar.xz if need
# be, with Python's tarfile where the image has no xz). --dry-run: a machine without a GPU (this
# one): the stages that need a GPU report "skipped: no GPU"; test_cuda still runs (its tests
# skip themselves), so a planted failure shows (tests/cli/gpu_check.sh).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-gpu-check-out} steps=10 build=1 kit="" build_dir=build-gpu dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) build=0; shift ;;
    --kit) kit=$2; build=0; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    *) echo "usage: utils/gpu-check.sh [--kit DIR] [--skip-build] [--build-dir DIR] [--steps N] [--out DIR] [--dry-run]" >&2
       exit 2 ;;
  esac
done
mkdir -p "$out" || exit 2
trident=$build_dir/trident test_cuda=$build_dir/tests/cuda/test_cuda mpi_nccl=$build_dir/tests/mpi_nccl
if [ -n "$kit" ]; then
  if [ ! -d "$kit" ]; then
    if command -v xz > /dev/null; then
      tar -xJf "$kit.tar.xz" || exit 2
    else
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall()' "$kit.tar.xz" || exit 2
    fi
  fi
  # shellcheck source=/dev/null
  source "$kit/env.sh"
  trident=$kit/bin/trident test_cuda=$kit/bin/test_cuda mpi_nccl=$kit/bin/mpi_nccl
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

names=() results=() seconds=()
# stage NAME TIMEOUT_S CMD...: runs CMD under timeout, its output to $out/NAME.log, its exit code
# to $out/NAME.rc (read back from the file: nothing in a pipeline can mask it).
stage() {
  local name=$1 limit=$2
  shift 2
  local start rc
  start=$(date +%s.%N)
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
  echo $? > "$out/$name.rc"
  rc=$(cat "$out/$name.rc")
  local result=passed
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then result="timeout (${limit}s)"
  elif [ "$rc" = 77 ]; then result="skipped: $(grep -m1 -o 'skipped: .*' "$out/$name.log" | cut -c10- || echo 'by the test')"
  elif [ "$rc" != 0 ]; then result="FAILED (exit $rc)"
  fi
  names+=("$name") results+=("$result") seconds+=("$(echo "$(date +%s.%N) - $start" | bc)")
  echo "== $name: $result"
}
skip() {  # skip NAME WHY
  names+=("$1") results+=("skipped: $2") seconds+=(0)
  echo "== $1: skipped: $2"
}

gpus=0
if [ "$dry" = 1 ]; then
  skip gpus "no GPU (--dry-run)"
else
  stage gpus 20 nvidia-smi -L
  gpus=$(grep -c '^GPU' "$out/gpus.log")
fi
if [ "$build" = 1 ]; then
  stage build 900 bash -c "cmake -S . -B '$build_dir' -DCMAKE_BUILD_TYPE=Release -DTRIDENT_CUDA=ON &&
                           cmake --build '$build_dir' -j $(nproc) --target trident test_cuda mpi_nccl"
fi
if [ -x "$test_cuda" ]; then
  stage cuda_core 60 "$test_cuda" --gtest_filter='-*Attention*:*TensorCore*' --gtest_output="json:$out/cuda_core.json"
  stage cuda_attention 120 "$test_cuda" --gtest_filter='*Attention*:*TensorCore*' --gtest_output="json:$out/cuda_attention.json"
else
  skip cuda_core "no $test_cuda (build with the CUDA backend)"
  skip cuda_attention "no $test_cuda"
fi
if [ "$gpus" -ge 1 ]; then
  stage bench_gpt2 120 bash -c "'$trident' bench step --config input/configs/bench-gpt2-124m-gpu.ini --steps $steps --json \
                                 > '$out/bench_step.json'"
  stage gpu_train 120 bash tests/cli/gpu_train.sh "$(realpath "$trident")" "$PWD"
else
  skip bench_gpt2 "no GPU"
  skip gpu_train "no GPU"
fi
if [ "$gpus" -ge 2 ] && [ -x "$mpi_nccl" ]; then  # NCCL refuses two ranks on one GPU
  stage mpi_nccl 60 mpirun -np "$gpus" --oversubscribe "$mpi_nccl"
else
  skip mpi_nccl "needs 2+ GPUs (this machine: $gpus)"
fi

# The table, summary.json (stages and figures), and the exit code.
printf '%s\n' "${names[@]}" > "$out/stages.txt"
printf '%s\n' "${results[@]}" > "$out/results.txt"
printf '%s\n' "${seconds[@]}" > "$out/seconds.txt"
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
read = lambda name: open(os.path.join(out, name)).read().splitlines()
stages = [{"stage": n, "result": r, "seconds": round(float(s), 1), "log": f"{n}.log"}
          for n, r, s in zip(read("stages.txt"), read("results.txt"), read("seconds.txt"))]
summary = {"stages": stages, "failed": [s["stage"] for s in stages if not (s["result"] == "passed" or
                                                                          s["result"].startswith("skipped"))]}
for name in ("cuda_core", "cuda_attention"):
    path = os.path.join(out, f"{name}.json")
    if os.path.exists(path):
        tests = [t for suite in json.load(open(path)).get("testsuites", []) for t in suite.get("testsuite", [])]
        summary[name] = {"tests": len(tests),
                         "failed": [f"{t['classname']}.{t['name']}" for t in tests if t.get("failures")],
                         "skipped": sum(1 for t in tests if t.get("result") == "SKIPPED")}
bench = os.path.join(out, "bench_step.json")
if os.path.exists(bench) and os.path.getsize(bench) > 0:
    r = json.load(open(bench))
    k = r.get("kernels_s", {})
    summary["gpt2_124m_bf16"] = {
        "tokens_per_s": r["tokens_per_s"], "model_tflops": r["tflops"], "mfu_of_989": r["tflops"] / 989,
        "step_ms": r["step_s"] * 1e3, "peak_gpu_mb": r.get("peak_gpu_mb", 0),
        "kernels_ms": {name: v * 1e3 for name, v in sorted(k.items(), key=lambda kv: -kv[1])}}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(f"\n{'stage':<16} {'result':<40} {'seconds':>8}")
for s in stages:
    print(f"{s['stage']:<16} {s['result']:<40} {s['seconds']:>8.1f}")
for name in ("cuda_core", "cuda_attention"):
    if name in summary and summary[name]["failed"]:
        print(f"{name}: failed tests: {', '.join(summary[name]['failed'])}")
if "gpt2_124m_bf16" in summary:
    g = summary["gpt2_124m_bf16"]
    print(f"GPT-2 124M bf16: {g['tokens_per_s']:.0f} tokens/s, {g['model_tflops']:.1f} TFLOP/s, "
          f"MFU {100 * g['mfu_of_989']:.1f}% of 989, step {g['step_ms']:.1f} ms, peak GPU {g['peak_gpu_mb']:.0f} MiB")
    for name, ms in list(g["kernels_ms"].items())[:8]:
        print(f"  {name:<32} {ms:9.2f} ms")
print(f"\nlogs and summary.json in {out}/; " + (f"FAILED: {', '.join(summary['failed'])}" if summary["failed"] else "no stage failed"))
sys.exit(1 if summary["failed"] else 0)
PY
