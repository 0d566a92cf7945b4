#!/usr/bin/env bash
# Installs every system dependency of trident from Debian packages. Safe to re-run:
# packages already present are skipped, so a warm machine returns in about a second.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  openmpi-bin libopenmpi-dev                 # MPI runtime and headers
  libhdf5-openmpi-dev hdf5-tools             # parallel HDF5 (MPI-IO driver) + h5dump
  libboost-program-options-dev               # INI + command-line configuration
  libdnnl-dev                                # oneDNN: the CPU GEMM library
  libgtest-dev googletest                    # unit and MPI tests
  libbenchmark-dev                           # Google Benchmark: kernel micro-benchmarks (tests/bench)
  python3                                    # demo corpus lives in the Python stdlib sources
  python3-h5py python3-numpy                 # utils/read_checkpoint.py: checkpoints read without trident
  slurm-wlm munge                            # jobs/*.sbatch tested on a local Slurm (utils/slurm-local.sh)
  python3-matplotlib                         # utils/scaling_report.py plots
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all system dependencies present"
fi
