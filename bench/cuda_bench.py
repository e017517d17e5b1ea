"""CUDA benchmark: cextend's Linear forward GEMM against torch's cuBLAS
F.linear (float32, TF32 off), interleaved, medians; ratio = torch / ours
(above 1: cextend is faster).  Needs a GPU, cextend's CUDA build and a
CUDA build of torch; otherwise it says which is missing and exits.

    python bench/cuda_bench.py [--repeats 11]
"""
import argparse
import statistics
import sys
import time

import numpy as np

import cextend.cuda as cuda
from cextend._device import DeviceArray, runtime

SHAPES = [(4096, 4096, 4096), (256, 2048, 2048), (1024, 1024, 1024), (128, 1024, 4096), (64, 512, 512)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    args = parser.parse_args(argv)
    if not cuda.is_available():
        print("cuda_bench: nothing to measure: %s" % cuda.unavailable_reason())
        return 0
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("cuda_bench: torch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("cuda_bench: torch has no CUDA device")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print("%-20s %12s %12s %8s %10s" % ("N x K x M", "ours", "cuBLAS", "ratio", "GFLOP/s"))
    for n, k, m in SHAPES:
        rng = np.random.default_rng(0)
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((n, k), (m, k), (m,)))
        dx, dw, db = (DeviceArray.from_host(a) for a in (x, w, b))
        dy = DeviceArray((n, m), np.float32)
        tx, tw, tb = (torch.from_numpy(a).cuda() for a in (x, w, b))
        ours_check = None

        def ours():
            runtime().linear_forward(dx, dw, db, dy)

        def theirs():
            return F.linear(tx, tw, tb)

        ours()
        cuda.synchronize()
        ours_check = dy.to_host()
        reference = theirs().cpu().numpy()
        error = np.abs(ours_check - reference).max() / max(np.abs(reference).max(), 1e-30)
        samples = {"ours": [], "torch": []}
        for r in range(args.repeats):
            for name, fn, sync in (("ours", ours, cuda.synchronize), ("torch", theirs, torch.cuda.synchronize))[::1 if r % 2 == 0 else -1]:
                sync()
                start = time.perf_counter()
                for _ in range(5):
                    fn()
                sync()
                samples[name].append((time.perf_counter() - start) / 5)
        ours_t, torch_t = statistics.median(samples["ours"]), statistics.median(samples["torch"])
        print("%-20s %10.3fms %10.3fms %8.2f %10.1f  (max rel diff %.1e)" % (
            "%dx%dx%d" % (n, k, m), ours_t * 1e3, torch_t * 1e3, torch_t / ours_t, 2 * n * k * m / ours_t / 1e9, error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
