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


FORK_AFTER_A_PARALLEL_KERNEL = r"""
import os, numpy as np, cextend as cx
from cextend import ops
cx.set_num_threads(2)
x, w = np.random.rand(256, 512), np.random.rand(512, 512)
ops.linear_forward(x, w)                    # the parent's OpenMP pool exists now
pid = os.fork()
if pid == 0:
    ok = cx.get_num_threads() == 1 and np.allclose(ops.linear_forward(x, w), x @ w.T)
    conv = cx.nn.functional.conv2d(cx.randn(8, 16, 32, 32), cx.randn(16, 16, 3, 3), padding=1)
    os._exit(0 if ok and conv.shape == (8, 16, 32, 32) else 3)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status), "parent threads", cx.get_num_threads())
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
def test_a_child_forked_after_a_parallel_kernel_runs_single_threaded():
    # libgomp's pool does not survive fork(): a child that entered a
    # multi-threaded region hung (torch's does too); cextend's at-fork
    # handler makes the child single-threaded, the parent keeps its count
    result = subprocess.run([sys.executable, "-c", FORK_AFTER_A_PARALLEL_KERNEL], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "child exit 0 parent threads 2" in result.stdout, result.stdout


THREAD_LIMIT_SCRIPT = r'''
import resource
import cextend
cextend.set_num_threads(1)
with open("/proc/self/status") as f:
    size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize"))
# 2 MiB more address space: no room for another thread's stack.
resource.setrlimit(resource.RLIMIT_AS, (size + (2 << 20), resource.RLIM_INFINITY))
try:
    cextend.set_num_threads(1000)
    print("no error")
except RuntimeError as error:
    print("RuntimeError:", error)
print(cextend.get_num_threads(), float(cextend.ones(10).sum()))
'''


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the kernels never start a second thread")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_set_num_threads_raises_when_threads_cannot_be_created():
    """issue 25 item 8: under a limit, libgomp ended the process ('Thread creation failed') in the
    next parallel kernel; set_num_threads now starts the threads it would use first, and raises."""
    result = subprocess.run([sys.executable, "-c", THREAD_LIMIT_SCRIPT], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("RuntimeError: set_num_threads(1000): only 1 of the "), lines
    assert "thread limit (ulimit -u) or its memory limit is too low; the kernels keep 1 thread(s)" in lines[0]
    assert lines[1] == "1 10.0"          # the old count is kept and the kernels still run
