#!/usr/bin/env bash
# Installs every system dependency of trident from Debian packages. Safe to re-run:
# packages already present are skipped, so a warm machine returns in about a second.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  openmpi-bin libopenmpi-dev                 # MPI runtime and headers
  libhdf5-openmpi-dev hdf5-tools             # parallel HDF5 (MPI-IO driver) + h5dump
  libssl-dev                                 # OpenSSL libcrypto: AES-256-GCM, SHA-256 (encryption at rest)
  libboost-program-options-dev               # INI + command-line configuration
  libdnnl-dev                                # oneDNN: the CPU GEMM library
  libgtest-dev googletest                    # unit and MPI tests
  libbenchmark-dev                           # Google Benchmark: kernel micro-benchmarks (tests/bench)
  python3                                    # demo corpus lives in the Python stdlib sources
  python3-venv                               # /opt/trident-tools: PyPI tools (tensorboard, scikit-learn), below
  python3-h5py python3-numpy                 # utils/read_checkpoint.py: checkpoints read without trident
  slurm-wlm munge                            # jobs/*.sbatch tested on a local Slurm (utils/slurm-local.sh)
  python3-matplotlib                         # utils/scaling_report.py plots
  qemu-user-static                           # tests/cli/cpu_paths.sh runs the binary as older x86 CPUs
  chromium                                   # headless (--no-sandbox as root): tests/cli/report_html.sh opens report.html
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

# --- Python tools from PyPI, not packaged by Debian -------------------------------------------
# A virtual environment at /opt/trident-tools (tests/cli/tensorboard.sh reads event files with
# tensorboard's EventAccumulator; scikit-learn serves other tests). Pinned versions; the stamp
# file holds the pins installed, so a re-run with the same pins returns at once.
tools=/opt/trident-tools
tool_pins=(tensorboard==2.20.0 scikit-learn==1.7.2)
if [[ -x $tools/bin/python && $(cat "$tools/.pins" 2>/dev/null) == "${tool_pins[*]}" ]]; then
  echo "setup: $tools present (${tool_pins[*]})"
else
  echo "setup: installing ${tool_pins[*]} into $tools"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO /usr/bin/python3 -m venv "$tools"
  $SUDO "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "${tool_pins[@]}"
  echo "${tool_pins[*]}" | $SUDO tee "$tools/.pins" > /dev/null
fi
