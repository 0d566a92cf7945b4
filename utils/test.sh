#!/usr/bin/env bash
# Builds everything and runs every test through CTest (unit, MPI, end-to-end). Works on a
# fresh clone: installs missing dependencies and prepares the test data first.
set -euo pipefail
cd "$(dirname "$0")/.."
./utils/setup.sh
./utils/build.sh
./utils/prepare_data.sh
cd build
ctest --output-on-failure -j 2 "$@"
