"""How many threads the parallel kernels use on a busy machine
(cextend_threads_available, src/threads.c): never more than the cores other
processes leave idle, so a loop's barrier does not wait on a thread that
shares its core with someone else's work.  (Whether that is faster is
measured by the benchmarks, not asserted here; results are the same bits
for any count, which the kernels' own tests check.)"""
import os
import subprocess
import sys
import time

import pytest

from cextend._C import lib


def cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def test_the_count_stays_between_one_and_what_was_asked():
    for wanted in (1, 2, 3, 64):
        assert 1 <= lib.cextend_threads_available(wanted) <= wanted
    assert lib.cextend_threads_available(0) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="measured from /proc/stat on Linux only")
def test_cores_kept_busy_by_other_processes_are_left_to_them():
    n = cores()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.5)                     # the spinners are running
        seen = []
        for _ in range(6):                  # a few sampling windows (0.2 s each)
            seen.append(lib.cextend_threads_available(n))
            time.sleep(0.25)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert seen[-1] == 1 and seen[-2] == 1, seen
