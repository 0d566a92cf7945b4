#!/usr/bin/env bash
# Configures (once) and builds trident into build/. Extra arguments go to cmake --build
# (e.g. --target trident).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j "$(nproc)" "$@"
