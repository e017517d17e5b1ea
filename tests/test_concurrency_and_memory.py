"""Threads, memory and determinism.

The kernels run with the GIL released (cffi API mode) and keep their
scratch per thread (src/scratch.c), so concurrent callers must get exactly
the serial results; long call loops must not grow memory, nor threads that
come and go; and the same inputs must give the same bits in every run and
for every thread count.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
from cextend import ops

PROBLEMS = [(1, 8, 8), (7, 33, 19), (64, 128, 96), (130, 257, 65), (300, 64, 520)]


def make_problem(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    n, k, m = shape
    return (rng.standard_normal((n, k)).astype(dtype), rng.standard_normal((m, k)).astype(dtype),
            rng.standard_normal(m).astype(dtype), rng.standard_normal((n, m)).astype(dtype))


def compute(problem):
    x, w, b, dy = problem
    y = ops.linear_forward(x, w, b)
    dx, dw, db = ops.linear_backward(dy, x, w)
    values, indices = ops.global_max_pool_forward(y.reshape(1, 1, *y.shape)) if y.size else (None, None)
    return [y, dx, dw, db] + ([values, indices] if values is not None else [])


def test_concurrent_callers_get_the_serial_results():
    problems = [make_problem(i, shape, dtype) for i, shape in enumerate(PROBLEMS)
                for dtype in (np.float32, np.float64)]
    expected = [compute(p) for p in problems]
    failures = []
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)         # switch threads as often as possible

    def worker(offset):
        try:
            for round_ in range(12):
                i = (offset + round_) % len(problems)
                for got, want in zip(compute(problems[i]), expected[i]):
                    if not np.array_equal(got, want):
                        failures.append((offset, i))
        except Exception as error:      # any exception is a failure of the test
            failures.append(repr(error))

    try:
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(previous)
    assert failures == []


# Convolutions whose patch and packing scratch grows and shrinks from one call to the next.
CONVOLUTIONS = [((2, 3, 9, 7), (4, 3, 3, 3), 1, 1), ((16, 8, 20, 20), (16, 8, 3, 3), 1, 1),
                ((1, 2, 5, 5), (3, 2, 2, 2), 2, 0), ((8, 16, 12, 12), (32, 16, 3, 3), 2, 1)]


def convolve(problem):
    x, w, b, stride, padding = problem
    y = ops.conv2d_forward(x, w, b, stride=stride, padding=padding)
    return [y] + list(ops.conv2d_backward(np.ones_like(y) * 0.5 + y, x, w, stride=stride, padding=padding))


def test_concurrent_convolutions_get_the_serial_results():
    problems = []
    for i, (x_shape, w_shape, stride, padding) in enumerate(CONVOLUTIONS):
        rng = np.random.default_rng(i)
        for dtype in (np.float32, np.float64):
            problems.append((rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype),
                             rng.standard_normal(w_shape[0]).astype(dtype), stride, padding))
    expected = [convolve(p) for p in problems]
    failures = []

    def worker(offset):
        try:
            for round_ in range(3 * len(problems)):
                i = (offset + round_ * (offset + 1)) % len(problems)
                for got, want in zip(convolve(problems[i]), expected[i]):
                    if not np.array_equal(got, want):
                        failures.append((offset, i))
        except Exception as error:      # any exception is a failure of the test
            failures.append(repr(error))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_concurrent_autograd_graphs_are_independent():
    results, errors = {}, []

    def worker(seed):
        try:
            cx_rng = np.random.default_rng(seed)
            layer = nn.Linear(16, 8, dtype=np.dtype(np.float64))
            x = cx.from_numpy(cx_rng.standard_normal((5, 16))).requires_grad_()
            for _ in range(30):
                x.grad = None
                (layer(x) * layer(x)).sum().backward()
            w = layer.weight.detach().numpy()
            y = x.detach().numpy() @ w.T + layer.bias.detach().numpy()
            results[seed] = np.abs(x.grad.numpy() - 2 * y @ w).max()
        except Exception as error:
            errors.append(repr(error))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 6
    assert max(results.values()) < 1e-12


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc to read RSS")
@pytest.mark.skipif(os.environ.get("CEXTEND_SANITIZED") == "1",
                    reason="ASan's quarantine keeps freed memory resident by design; "
                           "make test measures growth on the normal build")
def test_long_call_loops_do_not_grow_memory():
    x, w, b, dy = make_problem(0, (4, 16, 8), np.float32)
    layer = nn.Linear(16, 8)
    xt = cx.from_numpy(x).requires_grad_()

    def loop(count):
        for _ in range(count):
            ops.linear_forward(x, w, b)
            ops.linear_backward(dy, x, w)
        for _ in range(count // 20):
            xt.grad = None
            layer(xt).sum().backward()

    loop(5000)                           # warm up allocator pools and caches
    before = resident_bytes()
    loop(100_000)                        # 100,000 forward + backward kernel calls, 5,000 autograd steps
    growth = resident_bytes() - before
    assert growth < 4 * 2 ** 20, "resident memory grew by %.1f MiB" % (growth / 2 ** 20)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc to read RSS")
@pytest.mark.skipif(os.environ.get("CEXTEND_SANITIZED") == "1",
                    reason="ASan's quarantine keeps freed memory resident by design; "
                           "make test measures growth on the normal build")
def test_a_threads_kept_scratch_is_freed_when_it_exits():
    """Each thread keeps its GEMM packing buffer (4 MiB for this product) between calls;
    40 threads that each run one and exit must not leave 160 MiB behind."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((64, 256)).astype(np.float32), rng.standard_normal((4096, 256)).astype(np.float32)
    expected = ops.linear_forward(x, w)

    def one_call():
        assert np.array_equal(ops.linear_forward(x, w), expected)

    def run_threads(count):
        for _ in range(count):
            t = threading.Thread(target=one_call)
            t.start()
            t.join()

    run_threads(5)                       # warm up the allocator
    before = resident_bytes()
    run_threads(40)
    growth = resident_bytes() - before
    assert growth < 40 * 2 ** 20, "resident memory grew by %.1f MiB" % (growth / 2 ** 20)


DIGEST = """
import hashlib, sys, numpy as np, cextend as cx
from cextend import ops
cx.set_num_threads(int(sys.argv[1]))
h = hashlib.sha256()
for i, (n, k, m) in enumerate([(3, 5, 7), (130, 257, 65), (300, 600, 520)]):
    for dtype in (np.float32, np.float64):
        rng = np.random.default_rng(i)
        x, w = rng.standard_normal((n, k)).astype(dtype), rng.standard_normal((m, k)).astype(dtype)
        b, dy = rng.standard_normal(m).astype(dtype), rng.standard_normal((n, m)).astype(dtype)
        for a in (ops.linear_forward(x, w, b),) + ops.linear_backward(dy, x, w):
            h.update(a.tobytes())
print(h.hexdigest())
"""


def test_results_are_bitwise_identical_across_runs_and_thread_counts():
    digests = {subprocess.run([sys.executable, "-c", DIGEST, str(threads)], capture_output=True,
                              text=True, check=True).stdout.strip()
               for threads in (1, 2, 1, 2)}
    assert len(digests) == 1, digests
