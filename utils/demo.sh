#!/usr/bin/env bash
# The main job on the embedded default: installs the dependencies, builds, prepares the demo
# data and trains input/configs/demo.ini on 2 MPI ranks (data parallel). The run directory is
# left at runs/demo/ (config.ini, metrics.jsonl, eval.jsonl, checkpoints/, report/).
set -euo pipefail
cd "$(dirname "$0")/.."
./utils/setup.sh
./utils/build.sh --target trident
./utils/prepare_data.sh
# Open MPI refuses root unless told; more ranks than cores needs oversubscription.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 2 build/trident train --config input/configs/demo.ini --parallel.dp=2 --log.run_dir=runs/demo "$@"
# The report for people: loss, learning rate, throughput and validation plots + a summary.
/usr/bin/python3 utils/run_report.py runs/demo
