"""cextend's benchmark: Linear forward, backward and autograd against numpy
(and torch, when installed), in one process, interleaved, medians.

Every ratio is other_time / our_time: above 1 means cextend is faster.
% of peak is against this core's FMA peak measured by peak_probe.c.

    python bench/bench.py [--repeats 11] [--quick] [--json bench/results.json]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

# Interleaving three libraries' thread pools on few cores is only fair if
# none keeps spinning on a core after its call: make libgomp (cextend's and
# torch's) and OpenBLAS (numpy's) threads wait passively.  Must precede the
# imports that start those pools.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cextend as cx                      # noqa: E402
import cextend.nn as cnn                  # noqa: E402
from cextend import ops                   # noqa: E402
from cextend.autograd import Function     # noqa: E402
from cextend.functions import MulConstant  # noqa: E402
import peak                               # noqa: E402

try:
    from threadpoolctl import threadpool_limits
except ImportError:                       # numpy's BLAS threads then stay as they are
    threadpool_limits = None

try:
    import torch
    import torch.nn.functional as torch_F
except ImportError:
    torch = None

SHAPES = [(1, 8, 8), (32, 128, 128), (64, 512, 512), (128, 1024, 1024), (256, 2048, 2048)]
LARGER = (512, 4096, 4096)                # forward and backward only: autograd adds nothing new
OPS = ("forward", "backward", "autograd")
FLOPS_PER_NKM = {"forward": 2, "backward": 4, "autograd": 6}


def calibrate(fn, target=0.004):
    """Calls per sample so that one sample takes about `target` seconds."""
    fn()
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= target or number >= 1 << 20:
            return number
        number = max(number * 2, int(number * target / max(elapsed, 1e-9)))


def interleaved(candidates, repeats):
    """{name: [seconds per call] * repeats}, candidates run in rotating order."""
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
    return samples


def linear_candidates(n, k, m, dtype, op):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    dy = rng.standard_normal((n, m)).astype(dtype)
    out = {}
    if op == "forward":
        out["ours"] = lambda: ops.linear_forward(x, w, b)
        out["numpy"] = lambda: x @ w.T + b
    elif op == "backward":
        out["ours"] = lambda: ops.linear_backward(dy, x, w)
        out["numpy"] = lambda: (dy @ w, dy.T @ x, dy.sum(0))
    else:
        layer = cnn.Linear(k, m, dtype=np.dtype(dtype))
        layer.weight.data = cx.from_numpy(w.copy())
        layer.bias.data = cx.from_numpy(b.copy())
        xt = cx.from_numpy(x.copy()).requires_grad_()

        def ours():
            xt.grad = layer.weight.grad = layer.bias.grad = None
            layer(xt).sum().backward()

        def numpy_manual():
            y = x @ w.T + b
            g = np.ones_like(y)
            return y, g @ w, g.T @ x, g.sum(0)
        out["ours"] = ours
        out["numpy"] = numpy_manual
    if torch is not None:
        tx, tw, tb, tdy = (torch.from_numpy(a.copy()) for a in (x, w, b, dy))
        if op == "forward":
            def torch_forward():
                with torch.no_grad():
                    return torch_F.linear(tx, tw, tb)
            out["torch"] = torch_forward
        elif op == "backward":
            def torch_backward():
                with torch.no_grad():
                    return tdy.mm(tw), tdy.t().mm(tx), tdy.sum(0)
            out["torch"] = torch_backward
        else:
            for t in (tx, tw, tb):
                t.requires_grad_()

            def torch_autograd():
                tx.grad = tw.grad = tb.grad = None
                torch_F.linear(tx, tw, tb).sum().backward()
            out["torch"] = torch_autograd
    return out


def set_threads(threads):
    cx.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)


def run_case(op, shape, dtype, threads, repeats, peaks):
    n, k, m = shape
    set_threads(threads)
    limiter = threadpool_limits(limits=threads) if threadpool_limits else None
    try:
        samples = interleaved(linear_candidates(n, k, m, dtype, op), repeats)
    finally:
        if limiter is not None:
            limiter.unregister()
    med = {name: statistics.median(s) for name, s in samples.items()}
    flops = FLOPS_PER_NKM[op] * n * k * m
    gflops = flops / med["ours"] / 1e9
    peak_total = peaks.get(np.dtype(dtype).name, 0) * threads
    return {
        "op": op, "N": n, "K": k, "M": m, "dtype": np.dtype(dtype).name, "threads": threads,
        "seconds": {name: {"median": med[name], "min": min(s), "max": max(s)} for name, s in samples.items()},
        "ratio_numpy": med["numpy"] / med["ours"],
        "ratio_torch": med["torch"] / med["ours"] if "torch" in med else None,
        "gflops": gflops,
        "percent_of_peak": 100 * gflops / peak_total if peak_total else None,
    }


def fmt_time(seconds):
    if seconds < 1e-3:
        return "%.1fus" % (seconds * 1e6)
    return "%.2fms" % (seconds * 1e3)


def print_row(r):
    s = r["seconds"]
    ours = "%s [%s-%s]" % (fmt_time(s["ours"]["median"]), fmt_time(s["ours"]["min"]), fmt_time(s["ours"]["max"]))
    torch_t = fmt_time(s["torch"]["median"]) if "torch" in s else "-"
    torch_r = "%.2f" % r["ratio_torch"] if r["ratio_torch"] else "-"
    peak_pct = "%.0f%%" % r["percent_of_peak"] if r["percent_of_peak"] else "-"
    print("%-9s %4d %5d %5d %-8s %2d  %-28s %10s %10s %7.2f %7s %8.1f %6s" % (
        r["op"], r["N"], r["K"], r["M"], r["dtype"], r["threads"], ours,
        fmt_time(s["numpy"]["median"]), torch_t, r["ratio_numpy"], torch_r, r["gflops"], peak_pct))
    sys.stdout.flush()


class _Identity(Function):
    @staticmethod
    def forward(ctx, a):
        return a

    @staticmethod
    def backward(ctx, g):
        return g


def overheads(repeats):
    """Per-call overhead of Function.apply (trivial and C-backed) vs torch."""
    x = cx.randn(1, requires_grad=True)
    candidates = {"ours trivial Function.apply": lambda: _Identity.apply(x),
                  "ours C-backed MulConstant.apply": lambda: MulConstant.apply(x, 2.0)}
    if torch is not None:
        class TorchIdentity(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a.view_as(a)

            @staticmethod
            def backward(ctx, g):
                return g
        tx = torch.randn(1, requires_grad=True)
        candidates["torch trivial Function.apply"] = lambda: TorchIdentity.apply(tx)
    samples = interleaved(candidates, repeats)
    return {name: statistics.median(s) for name, s in samples.items()}


def cpu_model():
    """The CPU's model name (platform.processor() is empty on Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11, help="samples per case (default 11)")
    parser.add_argument("--quick", action="store_true", help="small shapes and one thread only")
    parser.add_argument("--json", default=os.path.join(HERE, "results.json"), help="where to write results")
    parser.add_argument("--threads", type=int, nargs="+", help="thread counts to run (default 1 2)")
    parser.add_argument("--min-n", type=int, default=0, help="skip shapes with fewer rows")
    args = parser.parse_args(argv)

    isa = cx.get_isa()
    peaks = peak.measure(isa)
    print("cextend %s, ISA %s, numpy %s%s; %s; cores %d" % (
        cx.__version__, isa, np.__version__, ", torch %s" % torch.__version__ if torch else " (torch not installed)",
        cpu_model(), os.cpu_count()))
    if threadpool_limits is None:
        print("note: threadpoolctl missing, numpy's BLAS threads are not pinned")
    print("measured FMA peak per core: %s" % ", ".join("%s %.0f GFLOP/s" % kv for kv in peaks.items()))
    print("ratios are other_time / our_time (above 1: cextend is faster); %d interleaved samples, medians\n"
          % args.repeats)
    print("%-9s %4s %5s %5s %-8s %2s  %-28s %10s %10s %7s %7s %8s %6s" % (
        "op", "N", "K", "M", "dtype", "th", "ours median [min-max]", "numpy", "torch",
        "np/ours", "th/ours", "GFLOP/s", "%peak"))
    shapes = SHAPES[:3] if args.quick else SHAPES + [LARGER]
    shapes = [s for s in shapes if s[0] >= args.min_n]
    thread_counts = args.threads or ((1,) if args.quick else (1, 2))
    results = []
    for shape in shapes:
        for dtype in (np.float32, np.float64):
            for threads in thread_counts:
                for op in OPS:
                    if shape == LARGER and op == "autograd":
                        continue
                    row = run_case(op, shape, dtype, threads, args.repeats, peaks)
                    print_row(row)
                    results.append(row)
    set_threads(1)
    over = overheads(args.repeats)
    print("\nper-call overhead (1-element tensors): " +
          ", ".join("%s %.1fus" % (name, t * 1e6) for name, t in over.items()))
    record = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"processor": cpu_model(), "machine": platform.machine(),
                    "cores": os.cpu_count(), "isa": isa, "peak_gflops_per_core": peaks},
        "versions": {"cextend": cx.__version__, "numpy": np.__version__,
                     "torch": torch.__version__ if torch else None},
        "repeats": args.repeats, "results": results,
        "overhead_seconds": over,
    }
    with open(args.json, "w") as f:
        json.dump(record, f, indent=1)
    print("wrote %s" % args.json)


if __name__ == "__main__":
    main()
