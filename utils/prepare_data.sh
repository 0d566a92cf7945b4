#!/usr/bin/env bash
# Prepares the embedded default data when it is missing: the Python standard library's
# sources (on every machine with python3), byte-level tokenised into input/data/pystdlib
# (train) and input/data/pystdlib-valid (2% of the files, chosen by content hash); and, as
# out-of-distribution text for `trident eval --ood`, the Debian packages' copyright notices
# (/usr/share/doc/*/copyright) into input/data/debian-doc.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=input/data/pystdlib
if [[ ! -f $prefix.bin || ! -f $prefix.idx || ! -f $prefix-valid.idx ]]; then
  stdlib=$(ls -d /usr/lib/python3.[0-9]* 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -z $stdlib ]]; then
    echo "prepare_data: no Python standard library under /usr/lib/python3.*; run utils/setup.sh" >&2
    exit 1
  fi
  build/trident prep --input "$stdlib"/*.py --output "$prefix" --tokenizer byte --valid-permille 20
fi
ood=input/data/debian-doc
if [[ ! -f $ood.bin || ! -f $ood.idx ]]; then
  docs=(/usr/share/doc/*/copyright)
  [[ -f ${docs[0]} ]] || { echo "prepare_data: no /usr/share/doc/*/copyright files" >&2; exit 1; }
  build/trident prep --input "${docs[@]}" --output "$ood" --tokenizer byte
fi
