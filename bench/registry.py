"""The benchmark's cases and how one is measured.

A suite is a function registered with @suite(name) that returns Case
objects for the options given; bench.py runs every case of the suites
asked for.  Adding a benchmark (autograd overhead, conv, ...) is one more
suite in its own module, imported by bench.py; nothing else changes.

A case's candidates are zero-argument callables named "ours", "numpy",
"torch" (any may be missing but "ours"), plus optional extra ones.  They
run interleaved in one process, in a new order each round, each sample long enough
to swamp the timer; every ratio is other_time / our_time over the medians
(above 1: cextend is faster).

Clocks: on one thread every library computes in the calling thread, so
its CPU time (time.thread_time) is the cost of the call, and time the
thread spends descheduled on a shared machine does not count; with more
threads the workers run elsewhere and only wall time (perf_counter) tells
the speed-up.  clock_for(threads, choice) picks.
"""
import itertools
import resource
import statistics
import time

_SUITES = {}


def suite(name):
    """Register fn(options) -> [Case, ...] as the suite `name`."""
    def register(fn):
        _SUITES[name] = fn
        return fn
    return register


def suites():
    return dict(_SUITES)


class Case:
    """One row of the table.

    make() builds the operands and returns {candidate name: callable}; it
    runs only when the case is measured, so a suite can list large cases
    cheaply.  flops is the floating-point work of one "ours" call (for
    GFLOP/s and % of peak), or None.  threads is what cextend, numpy's BLAS
    and torch are each limited to while the case runs.
    """

    def __init__(self, suite, name, shape, dtype, threads, make, flops=None):
        self.suite, self.name, self.shape = suite, name, tuple(shape)
        self.dtype, self.threads, self.make, self.flops = dtype, threads, make, flops

    def label(self):
        return "%s %s %s %dt" % (self.name, "x".join(map(str, self.shape)), self.dtype, self.threads)


CLOCKS = {"wall": time.perf_counter, "thread_cpu": time.thread_time}


def clock_for(threads, choice="auto"):
    """The clock's name: `choice`, or for "auto" thread CPU time on one
    thread and wall time on more."""
    if choice != "auto":
        return choice
    return "thread_cpu" if threads == 1 else "wall"


def calls_per_sample(fn, target, clock=time.perf_counter):
    """How many calls make one sample of about `target` seconds."""
    fn()
    number = 1
    while True:
        start = clock()
        for _ in range(number):
            fn()
        elapsed = clock() - start
        if elapsed >= target or number >= 1 << 20:
            return number
        number = max(number * 2, int(number * target / max(elapsed, 1e-9)))


def interleaved(candidates, repeats, target=0.01, clock="wall", wall_samples=None,
                system_samples=None):
    """{name: [seconds per call, one per repeat]} on `clock`: the
    candidates take turns, in a different order each round, so drifting
    machine load falls on all of them alike.  The rounds cycle through
    every order, not only rotations of one: what a candidate leaves behind
    lands on each of the others alike.  (Rotations kept cextend right after
    torch, whose 4 KiB pages leave no 2 MiB pages to recycle: on a VM that
    hands freed huge pages back to its host, cextend's 128 MiB dW at
    1024 x 4096 x 4096 met fresh ones, up to 380 ms of system time.)  Wall times of the same samples go into
    wall_samples when a dict is given, and the kernel's (system) time spent
    for the calling thread (on thread_cpu) or the process (on wall) into
    system_samples: page faults on fresh outputs show there, not in the
    kernels."""
    now = CLOCKS[clock]
    wall = time.perf_counter
    who = resource.RUSAGE_THREAD if clock == "thread_cpu" else resource.RUSAGE_SELF
    numbers = {name: calls_per_sample(fn, target, now) for name, fn in candidates.items()}
    samples = {name: [] for name in candidates}
    orders = list(itertools.permutations(candidates))
    for r in range(repeats):
        for name in orders[r % len(orders)]:
            fn, number = candidates[name], numbers[name]
            start_system = resource.getrusage(who).ru_stime
            start, start_wall = now(), wall()
            for _ in range(number):
                fn()
            samples[name].append((now() - start) / number)
            if system_samples is not None:
                system_samples.setdefault(name, []).append(
                    (resource.getrusage(who).ru_stime - start_system) / number)
            if wall_samples is not None:
                wall_samples.setdefault(name, []).append((wall() - start_wall) / number)
    return samples


def summarise(samples):
    """Medians, ranges and ratios of one case's samples."""
    seconds = {name: {"median": statistics.median(s), "min": min(s), "max": max(s)}
               for name, s in samples.items()}
    ours = seconds["ours"]["median"]
    ratios = {name: seconds[name]["median"] / ours for name in seconds if name != "ours"}
    return seconds, ratios
