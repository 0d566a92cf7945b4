#!/usr/bin/env bash
# Checks gpu-kit.tar.xz (utils/gpu-kit.sh) as the GPU machine will meet it, here:
#  1. no AVX-512 instruction (zmm or mask registers) in the kit's own binaries: its host code
#     runs on whatever x86-64 the GPU machine has;
#  2. in a mount namespace where this machine's Open MPI, PMIx, HDF5, oneDNN and Boost are
#     hidden, the kit unpacked without xz (Python's tarfile) runs: trident --help, a singleton
#     training run (no orted), mpirun -np 2 training, test_cuda, and gpu-check.sh --dry-run;
#  3. under an emulated Haswell (qemu-x86_64 -cpu Haswell: AVX2, no AVX-512), in the same
#     namespace, the kit's CPU reference trains and test_cuda runs (no illegal instruction).
# Needs root (unshare, mount) and qemu-user for 3 (skipped, saying so, without it).
#   utils/gpu-kit-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f gpu-kit.tar.xz ] || { echo "gpu-kit-check: no gpu-kit.tar.xz (run utils/gpu-kit.sh)" >&2; exit 2; }
[ -d input/data ] || ./utils/prepare_data.sh > /dev/null

echo "== 1. AVX-512 in the kit's binaries"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar -xJf gpu-kit.tar.xz -C "$scratch"
status=0
for f in "$scratch"/gpu-kit/bin/trident "$scratch"/gpu-kit/bin/test_cuda "$scratch"/gpu-kit/bin/mpi_nccl \
         "$scratch"/gpu-kit/bin/libtrident_cuda.so; do
  n=$(objdump -d --no-show-raw-insn "$f" | grep -cE '%zmm|%k[0-7]\b' || true)
  echo "  $(basename "$f"): $n AVX-512 instructions"
  [ "$n" = 0 ] || status=1
done
[ "$status" = 0 ] || { echo "gpu-kit-check: AVX-512 in the kit (built with -march=native?)" >&2; exit 1; }
rm -rf "$scratch/gpu-kit"

echo "== 2. the kit with this machine's MPI, HDF5, oneDNN and Boost hidden"
qemu=""
if command -v qemu-x86_64 > /dev/null; then qemu=qemu-x86_64; else echo "  (qemu-user not installed: step 3 skipped)"; fi
unshare -m bash -s "$scratch" "$qemu" <<'NS'
set -euo pipefail
scratch=$1 qemu=$2
lib=/usr/lib/x86_64-linux-gnu
for d in $lib/openmpi $lib/pmix2 $lib/hdf5 /usr/share/openmpi /etc/openmpi; do
  [ -e "$d" ] && mount -t tmpfs tmpfs "$d"
done
for f in $lib/libmpi*.so* $lib/libopen-*.so* $lib/libpmix*.so* $lib/libhdf5*.so* $lib/libdnnl*.so* \
         $lib/libboost_program_options*.so* /usr/bin/mpirun /usr/bin/orted /usr/bin/orterun /usr/bin/xz; do
  [ -e "$f" ] && mount --bind /dev/null "$f"
done
! command -v xz > /dev/null || ! xz --version > /dev/null 2>&1 || { echo "xz still visible"; exit 1; }
repo=$PWD
cd "$scratch"
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall()' "$repo/gpu-kit.tar.xz"
source gpu-kit/env.sh
cd "$repo"
run() { echo "  $*"; "$@" < /dev/null > "$scratch/out.log" 2>&1 || { cat "$scratch/out.log"; echo "FAILED: $*"; exit 1; }; }
run trident --help
run trident train --config input/configs/tiny.ini --train.steps=3 --log.run_dir="$scratch/single"
pgrep -x orted > /dev/null && { echo "FAILED: a singleton started orted"; exit 1; }
run mpirun -np 2 --oversubscribe trident train --config input/configs/tiny.ini --train.steps=3 --parallel.dp=2 \
  --log.run_dir="$scratch/dp2"
run test_cuda
run bash utils/gpu-check.sh --kit "$scratch/gpu-kit" --dry-run --out "$scratch/check"
if [ -n "$qemu" ]; then
  echo "== 3. the kit on an emulated Haswell (no AVX-512)"
  run "$qemu" -cpu Haswell "$scratch/gpu-kit/bin/trident" train --config input/configs/tiny.ini --train.steps=2 \
    --train.backend=cpu --log.run_dir="$scratch/haswell"
  run "$qemu" -cpu Haswell "$scratch/gpu-kit/bin/test_cuda" --gtest_brief=1
fi
echo "gpu-kit-check: all passed"
NS
