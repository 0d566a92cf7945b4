#!/usr/bin/env bash
# trident eval against lm-evaluation-harness's HF backend, timed (utils/lmeval_speed.py says what it
# runs): creates the reference venv (REF_VENV, default /opt/ref) from PyPI first when it lacks the
# packages, then runs utils/lmeval_speed.py with it. Arguments go to the script:
#   utils/lmeval_speed.sh [WORK_DIR] [--examples N --n-layer L ... --skip-dp]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${REF_VENV:-/opt/ref}
if ! "$venv/bin/python" -c "import torch, transformers, lm_eval, tokenizers, accelerate" 2>/dev/null; then
  echo "lmeval_speed: installing torch, transformers, lm-eval into $venv (~6 GB with torch's CUDA packages)"
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q torch==2.15.0 transformers==5.25.0 lm-eval==0.4.13 tokenizers==0.23.3 accelerate==1.16.0
fi
[[ -x build/trident ]] || ./utils/build.sh --target trident
exec "$venv/bin/python" utils/lmeval_speed.py "$@"
