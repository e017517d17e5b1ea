"""Autograd overhead, measured as issue 15 asks: ratios other_time / our_time
(above 1: cextend is faster) from one process, interleaved, medians.

    python bench/autograd_bench.py [--repeats 15] [--json bench/autograd_results.json]

Cases:
- chain: 100 elementwise ops on 1-element tensors (y*1.0001, y+0.5), then
  sum().backward(); reported per op, against torch.
- linear: nn.Linear(8, 8) on a (1, 8) input, layer(x).sum().backward(),
  against torch (no no_grad on either side).
- mlp: one epoch of a 64-128-128-10 MLP with ReLU, batch 32, plain SGD,
  cross-entropy, 1440 samples: against torch (1 and 2 threads) and against
  the same model in numpy with a hand-written backward and SGD update.
- cnn: one epoch of the CNN demo's model (two conv/batch-norm/ReLU/pool
  blocks, AdamW, batch 64 of 8x8 images, 1440 samples), against torch on
  1 thread.
- mlp, captured: the same epoch with the step wrapped in cextend.capture
  (its kernels replayed; the optimizer's step runs as it is), against numpy
  and torch.
- memory: arrays allocated by one MLP training step (tracemalloc), ours
  (eager and captured) and numpy's.
torch runs with its default CPU path; numpy's BLAS runs unpinned when this
process was started with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset.
"""
import argparse
import json
import os
import statistics
import time
import tracemalloc

import numpy as np

import cextend as cx

try:
    import torch
except ImportError:         # the torch columns are left out, saying so
    torch = None


def _median_ratio(ours, other, repeats, inner):
    """Interleaved medians of per-call times (seconds)."""
    mine, theirs = [], []
    for _ in range(repeats):
        for fn, acc in ((ours, mine), (other, theirs)):
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            acc.append((time.perf_counter() - t0) / inner)
    return statistics.median(mine), statistics.median(theirs), (min(theirs) / max(mine), max(theirs) / min(mine))


def chain(lib, steps=100):
    y = lib.ones(1, requires_grad=True)
    x = y
    for i in range(steps // 2):
        y = y * 1.0001
        y = y + 0.5
    y.sum().backward()
    return x


def _digits_like(rng, n=1440):
    x = rng.standard_normal((n, 64)).astype(np.float32)
    y = rng.integers(0, 10, n)
    return x, y


class NumpyMLP:
    """The reference: forward, hand-written backward, SGD, in numpy."""

    def __init__(self, rng, sizes=(64, 128, 128, 10)):
        self.w = [rng.uniform(-1, 1, (o, i)).astype(np.float32) / np.sqrt(i) for i, o in zip(sizes, sizes[1:])]
        self.b = [np.zeros(o, np.float32) for o in sizes[1:]]

    def step(self, x, y, lr=0.05):
        acts = [x]
        for k, (w, b) in enumerate(zip(self.w, self.b)):
            z = acts[-1] @ w.T + b
            acts.append(np.maximum(z, 0) if k < len(self.w) - 1 else z)
        logits = acts[-1]
        logits = logits - logits.max(1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(1, keepdims=True)
        g = p
        g[np.arange(len(y)), y] -= 1
        g /= len(y)
        for k in range(len(self.w) - 1, -1, -1):
            gw = g.T @ acts[k]
            gb = g.sum(0)
            if k:
                g = (g @ self.w[k]) * (acts[k] > 0)
            self.w[k] -= lr * gw
            self.b[k] -= lr * gb


def _model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


def _epoch(lib, model, opt, loss_fn, xs, ys, batch=32):
    for start in range(0, len(xs), batch):
        opt.zero_grad()
        loss = loss_fn(model(xs[start:start + batch]), ys[start:start + batch])
        loss.backward()
        opt.step()


def _captured_epoch(model, opt, loss_fn, xs, ys, batch=32):
    """_epoch with its step replayed by cextend.capture."""
    def step(xb, yb):
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss
    captured = cx.capture(step)

    def epoch():
        for start in range(0, len(xs), batch):
            captured(xs[start:start + batch], ys[start:start + batch])
    epoch.step = captured
    return epoch


def _cnn_epochs(repeats):
    """The CNN demo's model and optimizer on 1440 8x8 images in batches of 64, in both libraries:
    (eager against torch, captured against torch)."""
    from cextend.demo.cnn import build_model
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1440, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, 1440).astype(np.int64)
    sides = []
    for lib in (cx, cx, torch):
        model = build_model(lib.nn, (16, 32))
        opt = lib.optim.AdamW(model.parameters(), lr=3e-3)
        sides.append((lib, model, opt, lib.nn.CrossEntropyLoss(), lib.from_numpy(x), lib.from_numpy(y)))
    captured = _captured_epoch(*sides[1][1:], batch=64)
    torch_epoch = lambda: _epoch(*sides[2], batch=64)          # noqa: E731
    eager = _median_ratio(lambda: _epoch(*sides[0], batch=64), torch_epoch, repeats, 1)
    replayed = _median_ratio(captured, torch_epoch, repeats, 1)
    if captured.step.reason is not None:
        print("the captured CNN step ran eagerly: %s" % captured.step.reason)
    return eager, replayed


def run(repeats):
    results = {"load_average_start": list(os.getloadavg())}
    cx.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    rows = []

    if torch is not None:
        ours, theirs, spread = _median_ratio(lambda: chain(cx), lambda: chain(torch), repeats, 20)
        rows.append(("chain (per op)", ours / 100, theirs / 100, "torch", spread))

        layer_c, layer_t = cx.nn.Linear(8, 8), torch.nn.Linear(8, 8)
        xc, xt = cx.randn(1, 8), torch.randn(1, 8)
        ours, theirs, spread = _median_ratio(lambda: layer_c(xc).sum().backward(),
                                             lambda: layer_t(xt).sum().backward(), repeats, 200)
        rows.append(("nn.Linear 1x8x8 fwd+bwd", ours, theirs, "torch", spread))

    rng = np.random.default_rng(0)
    x, y = _digits_like(rng)
    ref = NumpyMLP(rng)
    mc = _model(cx)
    oc = cx.optim.SGD(mc.parameters(), lr=0.05)
    xc, yc = cx.from_numpy(x), cx.from_numpy(y.astype(np.int64))
    lc = cx.nn.CrossEntropyLoss()

    def numpy_epoch():
        for start in range(0, len(x), 32):
            ref.step(x[start:start + 32], y[start:start + 32])
    ours, theirs, spread = _median_ratio(lambda: _epoch(cx, mc, oc, lc, xc, yc), numpy_epoch, repeats, 1)
    rows.append(("MLP epoch", ours, theirs, "numpy (hand-written)", spread))
    mk = _model(cx)
    captured_epoch = _captured_epoch(mk, cx.optim.SGD(mk.parameters(), lr=0.05), cx.nn.CrossEntropyLoss(), xc, yc)
    ours, theirs, spread = _median_ratio(captured_epoch, numpy_epoch, repeats, 1)
    rows.append(("MLP epoch, captured", ours, theirs, "numpy (hand-written)", spread))
    if captured_epoch.step.reason is not None:
        print("the captured MLP step ran eagerly: %s" % captured_epoch.step.reason)
    if torch is not None:
        mt = _model(torch)
        ot = torch.optim.SGD(mt.parameters(), lr=0.05)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
        lt = torch.nn.CrossEntropyLoss()
        for threads in (1, 2):
            cx.set_num_threads(threads)
            torch.set_num_threads(threads)
            ours, theirs, spread = _median_ratio(lambda: _epoch(cx, mc, oc, lc, xc, yc),
                                                 lambda: _epoch(torch, mt, ot, lt, xt, yt), repeats, 1)
            rows.append(("MLP epoch, %d thread%s" % (threads, "s" if threads > 1 else ""), ours, theirs,
                         "torch", spread))
            ours, theirs, spread = _median_ratio(captured_epoch, lambda: _epoch(torch, mt, ot, lt, xt, yt),
                                                 repeats, 1)
            rows.append(("MLP epoch, captured, %d thread%s" % (threads, "s" if threads > 1 else ""), ours,
                         theirs, "torch", spread))
        cx.set_num_threads(1)
        torch.set_num_threads(1)
        eager, replayed = _cnn_epochs(repeats)
        rows.append(("CNN epoch, 1 thread",) + eager[:2] + ("torch", eager[2]))
        rows.append(("CNN epoch, captured, 1 thread",) + replayed[:2] + ("torch", replayed[2]))

    # memory: blocks a training step allocates that are still alive after it (a gradient that
    # replaces the last step's counts: the last step's blocks were made before tracing began)
    def allocations(step):
        step()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        step()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        own = [tracemalloc.Filter(False, tracemalloc.__file__)]       # the snapshots' own blocks
        stats = after.filter_traces(own).compare_to(before.filter_traces(own), "traceback")
        # numpy's array buffers (its own tracemalloc domain), apart from Python objects
        data = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
        arrays = after.filter_traces(data).compare_to(before.filter_traces(data), "traceback")
        return (sum(s.count_diff for s in stats if s.count_diff > 0),
                sum(s.count_diff for s in arrays if s.count_diff > 0))
    step_c = lambda: _epoch(cx, mc, oc, lc, xc[:32], yc[:32])        # noqa: E731
    step_n = lambda: ref.step(x[:32], y[:32])                         # noqa: E731
    step_k = lambda: captured_epoch.step(xc[:32], yc[:32])           # noqa: E731
    memory = results["memory"] = {}
    for name, step in (("cextend", step_c), ("numpy", step_n), ("captured", step_k)):
        memory[name + "_blocks"], memory[name + "_arrays"] = allocations(step)

    print("%-34s %12s %12s %8s  %s" % ("case", "ours", "other", "ratio", "other (spread of ratio)"))
    for name, ours, theirs, other, (lo, hi) in rows:
        print("%-34s %10.2fus %10.2fus %8.2f  %s (%.2f..%.2f)" % (name, ours * 1e6, theirs * 1e6, theirs / ours,
                                                              other, lo, hi))
        results[name] = {"ours_s": ours, "other_s": theirs, "other": other, "ratio": theirs / ours,
                         "ratio_spread": [lo, hi]}
    print("memory: a training step allocates %d live blocks in cextend (%d captured), %d in numpy (tracemalloc); "
          "of them array buffers: %d (%d captured), %d in numpy"
          % (memory["cextend_blocks"], memory["captured_blocks"], memory["numpy_blocks"],
             memory["cextend_arrays"], memory["captured_arrays"], memory["numpy_arrays"]))
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    results["load_average_end"] = list(os.getloadavg())
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = run(args.repeats)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
