#!/usr/bin/python3
"""Reads a trident checkpoint with h5py alone (no trident): lists its attributes and tensors, and
checks that every model tensor has a matching pair of AdamW moments of the same shape.

usage: utils/read_checkpoint.py CHECKPOINT [--tensor NAME]   (prints NAME's first values)
Needs h5py and numpy (Debian: python3-h5py python3-numpy). Exit 1 if the file is inconsistent.

An encrypted checkpoint (security.key_file; root attribute encryption) is read through trident's
HDF5 filter plugin, given in the environment before Python starts:
  HDF5_PLUGIN_PATH=build/hdf5_plugins TRIDENT_KEY_FILE=KEYFILE utils/read_checkpoint.py CHECKPOINT
Its names, shapes and attributes read without them; its tensors do not (exit 2 saying why).
"""
import argparse
import os
import sys

import h5py
import numpy as np


PLUGIN = "libtrident_h5crypt.so"


def encryption_problem(f):
    """Why this process cannot decrypt the checkpoint's tensors, or None (plain, or all set)."""
    if "encryption" not in f.attrs:
        return None
    key_id = f.attrs.get("encryption_key_id", b"?")
    key_id = key_id.decode() if isinstance(key_id, bytes) else key_id
    paths = [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(":") if p]
    if not any(os.path.isfile(os.path.join(p, PLUGIN)) for p in paths):
        return (f"the checkpoint is encrypted (key id {key_id}): set HDF5_PLUGIN_PATH to the directory of "
                f"trident's {PLUGIN} (build/hdf5_plugins) before starting Python")
    if not os.environ.get("TRIDENT_KEY_FILE"):
        return f"the checkpoint is encrypted (key id {key_id}): set TRIDENT_KEY_FILE to its key file"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--tensor", help="print the first values of /model/TENSOR")
    args = parser.parse_args()
    with h5py.File(args.checkpoint, "r") as f:
        problem = encryption_problem(f)
        if problem and args.tensor:
            print(f"error: {args.checkpoint}: {problem}", file=sys.stderr)
            return 2
        for key in sorted(f.attrs):
            value = f.attrs[key]
            if isinstance(value, bytes):
                value = value.decode()
            if isinstance(value, str) and "\n" in value:
                value = f"<{len(value.splitlines())} lines>"
            print(f"attribute {key} = {value}")
        model = f["model"]
        problems = 0
        total = 0
        for name in sorted(model):
            shape = model[name].shape
            total += int(np.prod(shape))
            for moment in ("exp_avg", "exp_avg_sq"):
                other = f.get(f"optim/{moment}/{name}")
                if other is None or other.shape != shape:
                    print(f"problem: optim/{moment}/{name} missing or of another shape")
                    problems += 1
            print(f"tensor {name} {shape} {model[name].dtype}")
        print(f"{len(model)} tensors, {total} parameters")
        if problem:
            print(f"tensors not read: {problem}")
        if args.tensor:
            try:
                values = np.asarray(model[args.tensor]).ravel()
            except OSError as e:  # the filter says why on stderr: no key, another key, a failed tag
                print(f"error: {args.checkpoint}: cannot read {args.tensor} ({e}); see the "
                      "trident AES-256-GCM filter's message above", file=sys.stderr)
                return 2
            print(f"{args.tensor}: " + " ".join(f"{v:.9g}" for v in values[:8]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
