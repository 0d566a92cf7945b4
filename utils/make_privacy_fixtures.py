#!/usr/bin/env python3
"""Writes tests/data/privacy/accountant.json: Opacus' RDP and PRV epsilon of the Poisson-subsampled
Gaussian mechanism on a grid of (q, sigma, steps, delta), and get_noise_multiplier for a few
targets, the reference trident's accountant (src/train/privacy/) is tested against.

usage: /opt/ref/bin/python utils/make_privacy_fixtures.py [OUTPUT]   (needs opacus installed)

A PRV entry is null where Opacus cannot compute it: its domain would exceed MAX_PRV_POINTS
(trident refuses the same domains), it raises, or it returns a non-finite value; the reason is
recorded in "prv_skipped"."""
import itertools
import json
import math
import os
import sys
import time

import numpy as np
import opacus
from opacus.accountants import PRVAccountant, RDPAccountant
from opacus.accountants.utils import get_noise_multiplier

MAX_PRV_POINTS = 1 << 25  # trident's limit on a PRV discretisation (accountant.hpp)
QS = [0.001, 0.01, 0.05, 0.2, 1.0]
SIGMAS = [0.6, 1.0, 2.0, 5.0]
STEPS = [1, 100, 1000, 10000]
DELTAS = [1e-5, 1e-6]
TARGETS = [  # (target epsilon, q, steps, delta)
    (1.0, 0.01, 1000, 1e-5),
    (3.0, 0.01, 1000, 1e-5),
    (8.0, 0.05, 1000, 1e-6),
    (2.0, 0.2, 100, 1e-5),
    (5.0, 1.0, 10, 1e-5),
]


def prv_domain_size(q, sigma, steps, delta, eps_error=0.01):
    acc = PRVAccountant()
    acc.history = [(sigma, q, steps)]
    from opacus.accountants.analysis.prv import PoissonSubsampledGaussianPRV
    domain = acc._get_domain(prvs=[PoissonSubsampledGaussianPRV(q, sigma)], num_self_compositions=[steps],
                             eps_error=eps_error, delta_error=delta / 1000)
    return domain.size


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                             "privacy", "accountant.json")
    grid, targets = [], []
    for q, sigma, steps, delta in itertools.product(QS, SIGMAS, STEPS, DELTAS):
        rdp = RDPAccountant()
        rdp.history = [(sigma, q, steps)]
        entry = {"q": q, "sigma": sigma, "steps": steps, "delta": delta, "rdp": float(rdp.get_epsilon(delta)),
                 "prv": None}
        size = prv_domain_size(q, sigma, steps, delta)
        entry["prv_points"] = int(size)
        if size > MAX_PRV_POINTS:
            entry["prv_skipped"] = f"domain of {size} points > {MAX_PRV_POINTS}"
        else:
            t0 = time.time()
            try:
                prv = PRVAccountant()
                prv.history = [(sigma, q, steps)]
                eps = float(prv.get_epsilon(delta))
                if math.isfinite(eps):
                    entry["prv"] = eps
                else:
                    entry["prv_skipped"] = f"opacus returned {eps}"
            except Exception as e:  # recorded, not hidden: the test reports the skipped entries
                entry["prv_skipped"] = f"opacus raised {type(e).__name__}: {e}"
            print(f"q={q} sigma={sigma} steps={steps} delta={delta}: rdp {entry['rdp']:.6g} prv {entry['prv']} "
                  f"({size} points, {time.time() - t0:.1f} s)", flush=True)
        grid.append(entry)
    for target, q, steps, delta in TARGETS:
        row = {"target_epsilon": target, "q": q, "steps": steps, "delta": delta}
        for acc in ["rdp", "prv"]:
            row[acc] = float(get_noise_multiplier(target_epsilon=target, target_delta=delta, sample_rate=q,
                                                  steps=steps, accountant=acc, epsilon_tolerance=0.01))
        print("target", row, flush=True)
        targets.append(row)
    doc = {"opacus_version": opacus.__version__, "numpy_version": np.__version__, "eps_error": 0.01,
           "max_prv_points": MAX_PRV_POINTS, "grid": grid, "noise_multiplier": targets}
    with open(out + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(out + ".tmp", out)
    print(f"wrote {out}: {len(grid)} grid points ({sum(e['prv'] is None for e in grid)} without PRV), "
          f"{len(targets)} targets")


if __name__ == "__main__":
    main()
