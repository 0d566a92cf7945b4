#!/usr/bin/env bash
# The CUDA checks in one go, on a machine with an NVIDIA GPU and the packages of utils/setup.sh:
#  1. builds with the CUDA backend into build-gpu/ (sm_80, sm_90a, sm_90 PTX);
#  2. runs the GPU tests: every Ops kernel against the CPU backend (test_cuda), the NCCL
#     collectives through the Communicator (mpi_nccl, one rank per GPU, 2+ GPUs), and training
#     end to end (tests/cli/gpu_train.sh: GPU vs CPU losses, checkpoint and resume, and with
#     2+ GPUs dp=2 and pp=2 against the single-GPU run);
#  3. times GPT-2 124M training steps (seq 1024, bf16) on one GPU: tokens/s, MFU over 989
#     TFLOP/s (H100/H200 dense bf16), and the GEMM-only and attention-only kernel time per step.
# Results also go to $OUT (or ./gpu-check-out) as JSON and logs.
# Where the image lacks MPI, HDF5 and oneDNN (nothing can be installed), build the kit here
# (utils/gpu-kit.sh), carry gpu-kit.tar.xz and input/data there, and run with --kit:
#   ./utils/gpu-check.sh [--skip-build] [--kit DIR] [--steps N]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-out}
mkdir -p "$out"
steps=10 build=1 kit=""
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) build=0; shift ;;
    --kit) kit=$2; build=0; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "usage: utils/gpu-check.sh [--skip-build] [--kit DIR] [--steps N]" >&2; exit 2 ;;
  esac
done
trident=build-gpu/trident test_cuda=build-gpu/tests/cuda/test_cuda mpi_nccl=build-gpu/tests/mpi_nccl
if [ -n "$kit" ]; then
  [ -d "$kit" ] || tar -xJf "$kit.tar.xz"
  # shellcheck source=/dev/null
  source "$kit/env.sh"
  trident=$kit/bin/trident test_cuda=$kit/bin/test_cuda mpi_nccl=$kit/bin/mpi_nccl
fi
nvidia-smi -L | tee "$out/gpus.txt"
gpus=$(nvidia-smi -L | grep -c '^GPU' || true)
[ "$gpus" -gt 0 ] || { echo "gpu-check: no GPU visible" >&2; exit 2; }

if [ "$build" = 1 ]; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTRIDENT_CUDA=ON > "$out/configure.log"
  cmake --build build-gpu -j "$(nproc)" --target trident test_cuda mpi_nccl 2>&1 | tee "$out/build.log" | grep -E "error|warning" || true
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
echo "== GPU kernels against the CPU backend"
"$test_cuda" --gtest_output="json:$out/test_cuda.json" 2>&1 | tee "$out/test_cuda.log" | \
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran" || true
[ "${PIPESTATUS[0]}" = 0 ] || status=1
if [ "$gpus" -ge 2 ]; then  # NCCL refuses two ranks on one GPU
  echo "== NCCL collectives on $gpus GPUs"
  mpirun -np "$gpus" --oversubscribe "$mpi_nccl" 2>&1 | tee "$out/mpi_nccl.log" | \
    grep -E "^\[  (FAILED|PASSED|SKIPPED) " || true
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
else
  echo "== NCCL collectives: one GPU, not run (a rank per GPU is needed)"
fi
echo "== training on the GPU end to end"
bash tests/cli/gpu_train.sh "$(realpath "$trident")" "$PWD" 2>&1 | tee "$out/gpu_train.log" || status=1

echo "== GPT-2 124M, seq 1024, bf16, one GPU"
"$trident" bench step --config input/configs/bench-gpt2-124m-gpu.ini --steps "$steps" --json \
  > "$out/bench_step.json" || status=1
python3 - "$out/bench_step.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
k = r.get("kernels_s", {})
attention = sum(v for name, v in k.items() if name.startswith("attention"))
print(f"tokens/s {r['tokens_per_s']:.0f}   model TFLOP/s {r['tflops']:.1f}   MFU {100 * r['tflops'] / 989:.1f}% of 989 "
      f"(measured-peak MFU {100 * r['mfu']:.1f}%)   step {r['step_s'] * 1e3:.1f} ms")
print(f"per step: GEMM {k.get('gemm', 0) * 1e3:.1f} ms, attention {attention * 1e3:.1f} ms "
      f"(forward {k.get('attention_forward', 0) * 1e3:.1f}, backward {k.get('attention_backward', 0) * 1e3:.1f}); "
      f"peak GPU memory {r.get('peak_gpu_mb', 0):.0f} MiB, peak host RSS {r['peak_rss_mb']:.0f} MiB")
PY
exit $status
