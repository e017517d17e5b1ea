"""How far cextend's optimizer steps drift from torch 2.13's (foreach=False).

For every optimizer configuration the tests use (tests/test_optim.py
CASES), run both libraries side by side for N steps -- two parameter
groups, six parameters (one non-contiguous, one empty, one 0-d), some
parameters without a gradient on some steps, gradients fed back from the
parameters -- and print the largest elementwise relative deviation
|ours - torch| / |torch| of the parameters and of the optimizer state, and
the largest normwise one, max|ours - torch| / max|torch| per parameter.

    .venv/bin/python bench/optim_parity.py [--steps 500]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_optim import CASES, case_id, run_against_torch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    print("| optimizer (settings) | float64 params | float64 state | float64 params, normwise "
          "| float32 params | float32 state | float32 params, normwise |")
    print("|---|---|---|---|---|---|---|")
    worst = {}
    for case in CASES:
        row = []
        for dtype in (np.float64, np.float32):
            result = run_against_torch(case[0], case[1], dtype, steps=args.steps)
            row += list(result)
            key = (case[0], dtype)
            previous = worst.get(key, (0.0, 0.0))
            worst[key] = (max(previous[0], result.params, result.state), max(previous[1], result.params_normwise))
        print("| %s | %s |" % (case_id(case), " | ".join("%.1e" % v for v in row)))
    print("\nWorst per optimizer over %d steps: elementwise (params and state) / normwise (params)" % args.steps)
    for name in dict.fromkeys(c[0] for c in CASES):
        print("  %-9s float64 %.1e / %.1e   float32 %.1e / %.1e" % ((name,) + worst[(name, np.float64)]
                                                                  + worst[(name, np.float32)]))


if __name__ == "__main__":
    main()
