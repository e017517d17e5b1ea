"""conv2d against torch's conv2d on one thread: forward (no autograd) and
forward + backward (autograd, input, weight and bias gradients).

Every ratio is torch_time / our_time (above 1: cextend is faster), from one
process, the two libraries interleaved, medians of `--repeats` samples.
Without torch installed the table shows cextend's times alone.

    python bench/conv_bench.py [--repeats 9] [--quick] [--json bench/conv_results.json]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")    # no spinning pool between interleaved calls

import numpy as np  # noqa: E402

import cextend as cx  # noqa: E402
import cextend.nn.functional as F  # noqa: E402
from cextend import ops  # noqa: E402

try:
    import torch
    import torch.nn.functional as torch_F
except ImportError:
    torch = None

# (name, N, C_in, H, W, C_out, k, stride, padding)
SHAPES = [
    ("CNN demo conv1", 64, 1, 8, 8, 16, 3, 1, 1),        # the demo's two convolutions (after a 2x2 pool: 4x4)
    ("CNN demo conv2", 64, 16, 4, 4, 32, 3, 1, 1),
    ("16->32 at 8x8", 64, 16, 8, 8, 32, 3, 1, 1),
    ("resnet 3x3 56", 8, 64, 56, 56, 64, 3, 1, 1),
    ("resnet 3x3 28", 8, 128, 28, 28, 128, 3, 1, 1),
    ("resnet 3x3 14", 8, 256, 14, 14, 256, 3, 1, 1),
    ("resnet 1x1 56", 8, 256, 56, 56, 64, 1, 1, 0),
    ("stem 7x7 s2", 2, 3, 224, 224, 64, 7, 2, 3),
]
QUICK = SHAPES[:3]


def calibrate(fn, target=0.02):
    """Calls per sample so that one sample takes about `target` seconds."""
    fn()
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= target or number >= 1 << 16:
            return number
        number = max(number * 2, int(number * target / max(elapsed, 1e-9)))


def interleaved(candidates, repeats):
    """{name: median seconds per call}, candidates run in rotating order."""
    numbers = {name: calibrate(fn) for name, fn in candidates.items()}
    samples = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, number = candidates[name], numbers[name]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(s) for name, s in samples.items()}


def cases(shape, dtype):
    """{op: {library: callable}} for one shape."""
    _, n, c_in, h, w, c_out, k, stride, padding = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c_in, h, w)).astype(dtype)
    weight = (rng.standard_normal((c_out, c_in, k, k)) / np.sqrt(c_in * k * k)).astype(dtype)
    bias = rng.standard_normal(c_out).astype(dtype)
    ours = {"forward": lambda: ops.conv2d_forward(x, weight, bias, stride=stride, padding=padding)}
    cx_x, cx_w, cx_b = (cx.from_numpy(a).requires_grad_() for a in (x, weight, bias))

    def ours_autograd():
        F.conv2d(cx_x, cx_w, cx_b, stride, padding).sum().backward()
    ours["forward+backward"] = ours_autograd
    result = {op: {"cextend": fn} for op, fn in ours.items()}
    if torch is not None:
        t_x, t_w, t_b = (torch.from_numpy(a) for a in (x, weight, bias))
        g_x, g_w, g_b = (torch.from_numpy(a).requires_grad_() for a in (x, weight, bias))

        def torch_forward():
            with torch.no_grad():
                torch_F.conv2d(t_x, t_w, t_b, stride, padding)

        def torch_autograd():
            torch_F.conv2d(g_x, g_w, g_b, stride, padding).sum().backward()
        result["forward"]["torch"] = torch_forward
        result["forward+backward"]["torch"] = torch_autograd
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="the first three shapes only")
    parser.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "conv_results.json"))
    args = parser.parse_args()
    cx.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print("conv2d, 1 thread, float32; ratio = torch / cextend (median of %d interleaved samples), ISA %s"
          % (args.repeats, cx.get_isa()))
    if torch is None:
        print("(torch is not installed: cextend's times only)")
    header = "%-16s %-28s %-17s %10s %10s %7s" % ("shape", "N,Cin,HxW -> Cout k/s/p", "op", "cextend",
                                                 "torch", "ratio")
    print(header)
    print("-" * len(header))
    rows = []
    for shape in (QUICK if args.quick else SHAPES):
        name, n, c_in, h, w, c_out, k, stride, padding = shape
        geometry = "%d,%d,%dx%d -> %d %d/%d/%d" % (n, c_in, h, w, c_out, k, stride, padding)
        for op, candidates in cases(shape, np.float32).items():
            times = interleaved(candidates, args.repeats)
            ours, theirs = times["cextend"], times.get("torch")
            ratio = theirs / ours if theirs else None
            print("%-16s %-28s %-17s %8.3fms %8s %7s" % (
                name, geometry, op, ours * 1e3, "%.3fms" % (theirs * 1e3) if theirs else "-",
                "%.2f" % ratio if ratio else "-"))
            rows.append(dict(shape=name, geometry=geometry, op=op, dtype="float32", threads=1,
                             cextend_s=ours, torch_s=theirs, ratio=ratio))
    with open(args.json, "w") as f:
        json.dump(dict(date=datetime.datetime.now().isoformat(timespec="seconds"), machine=platform.machine(),
                       isa=cx.get_isa(), torch=getattr(torch, "__version__", None), rows=rows), f, indent=1)
    print("\nwritten to %s" % args.json)


if __name__ == "__main__":
    main()
