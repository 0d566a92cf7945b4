#!/usr/bin/env bash
# Builds trident with AddressSanitizer and UndefinedBehaviorSanitizer into build-sanitize/ and
# runs the unit and MPI tests there (the end-to-end tests too unless --quick). Leak reports are
# off: MPI and OpenMP keep allocations until exit by design.
set -euo pipefail
cd "$(dirname "$0")/.."
./utils/setup.sh
./utils/prepare_data.sh 2>/dev/null || { ./utils/build.sh --target trident && ./utils/prepare_data.sh; }
# Test discovery runs the test binaries during the build: the options apply there too.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRIDENT_SANITIZE=address,undefined -DTRIDENT_CUDA=OFF
cmake --build build-sanitize -j "$(nproc)"
cd build-sanitize
if [[ ${1:-} == --quick ]]; then
  ctest --output-on-failure -j 2 -E '^cli_'
else
  ctest --output-on-failure -j 2
fi
