#!/usr/bin/python3
"""Reads a trident checkpoint with h5py alone (no trident): lists its attributes and tensors, and
checks that every model tensor has a matching pair of AdamW moments of the same shape.

usage: utils/read_checkpoint.py CHECKPOINT [--tensor NAME]   (prints NAME's first values)
Needs h5py and numpy (Debian: python3-h5py python3-numpy). Exit 1 if the file is inconsistent.
"""
import argparse
import sys

import h5py
import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--tensor", help="print the first values of /model/TENSOR")
    args = parser.parse_args()
    with h5py.File(args.checkpoint, "r") as f:
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
        if args.tensor:
            values = np.asarray(model[args.tensor]).ravel()
            print(f"{args.tensor}: " + " ".join(f"{v:.9g}" for v in values[:8]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
