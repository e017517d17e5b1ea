"""Epoch times of several implementations, measured fairly on a busy machine.

One measurement per implementation is noise: on a shared machine a single
epoch can take twice as long as the next.  So the implementations take turns
(interleaved rounds, the first one alternating), a warm-up round is thrown
away, and the report gives medians, each ratio as baseline_time / our_time
(above 1: cextend is faster), and the spread of that ratio over the rounds.

Every library runs on the same number of threads (one by default).  With
several threading runtimes in one process (cextend's OpenMP, numpy's
OpenBLAS, torch's), worker threads that spin while waiting for work take
the cores from whichever library runs next; on a 2-core machine that made
one epoch vary tenfold.  threadpoolctl, when installed, sets OpenBLAS's and
OpenMP's thread counts for the duration.
"""
import contextlib
import time

import numpy as np

import cextend as cx


@contextlib.contextmanager
def threads_each(count, torch=None):
    """Run cextend, torch (when given), numpy's BLAS and OpenMP on `count` threads.

    Yields a note (a string) when numpy's BLAS could not be limited, else None.
    """
    saved = cx.get_num_threads()
    saved_torch = torch.get_num_threads() if torch is not None else None
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        limits, note = contextlib.nullcontext(), "numpy's BLAS uses its own thread count (pip install threadpoolctl)"
    else:
        limits, note = threadpool_limits(limits=count), None
    try:
        with limits:
            cx.set_num_threads(count)
            if torch is not None:
                torch.set_num_threads(count)
            yield note
    finally:
        cx.set_num_threads(saved)
        if torch is not None:
            torch.set_num_threads(saved_torch)


def interleaved_epochs(runners, rounds, warmup=1):
    """runners: {name: callable running one epoch}, in display order.

    Returns {name: [seconds of each counted round]}.
    """
    names = list(runners)
    times = {name: [] for name in names}
    for index in range(warmup + rounds):
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            start = time.perf_counter()
            runners[name]()
            elapsed = time.perf_counter() - start
            if index >= warmup:
                times[name].append(elapsed)
    return times


def report(times, ours, labels, stream=None):
    """Print each implementation's median epoch and its ratio to `ours`.

    labels: {name: what to print for it}.  Returns {name: median ratio}.
    """
    base = np.asarray(times[ours])
    ratios = {}
    for name, seconds in times.items():
        seconds = np.asarray(seconds)
        line = "   %-32s %8.1f ms  (%.1f to %.1f)" % (labels[name], 1e3 * np.median(seconds),
                                                     1e3 * seconds.min(), 1e3 * seconds.max())
        print(line, file=stream)
    for name, seconds in times.items():
        if name == ours:
            continue
        per_round = np.asarray(seconds) / base
        ratios[name] = float(np.median(seconds) / np.median(base))
        print("   %s/%s = %.2f  (rounds: %.2f to %.2f)" % (name, ours, ratios[name], per_round.min(),
                                                          per_round.max()), file=stream)
    return ratios


def compare(runners, labels, rounds, threads, torch=None, stream=None, notes=()):
    """Section 3: time runners (cextend's first) in turns and print the report,
    then the notes (why a row is missing)."""
    print("3. one training epoch, the same model and batches: %d interleaved" % rounds, file=stream)
    print("   rounds after a warm-up, %d thread(s) each; medians (ranges)" % threads, file=stream)
    with threads_each(threads, torch) as note:
        if note:
            print("   (%s)" % note, file=stream)
        print(file=stream, flush=True)
        times = interleaved_epochs(runners, rounds)
    ratios = report(times, next(iter(runners)), labels, stream)
    for note in notes:
        print("   (%s)" % note, file=stream)
    return ratios
