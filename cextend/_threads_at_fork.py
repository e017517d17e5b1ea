"""Making fork() safe from the other threads of this process.

A forked child has one thread, but it inherits every lock as the parent's
threads held it at that instant; a lock held by a thread that did not come
along is never released.  glibc's malloc guards its own locks around fork,
but not every allocator does: the AddressSanitizer runtime of gcc 12 (what
`make sanitize` preloads) has no fork handler, and a child forked while
another thread was inside its malloc or free waits forever on the size
class's mutex at its first allocation of that size (seen in CI: opcheck's
child hung 900 s; reproduced here at 20 of 5,000 forks made just after
joining a thread, on a loaded 2-core machine; 0 of 5,000 with these waits).

A thread Python has joined is not gone yet: it still frees its interpreter
state and its thread-local buffers (the kernels' scratch) on its way out,
and a busy machine may preempt it there.  So cextend waits for the threads
it starts to leave, and forks (opcheck's isolated checks) only once no
other thread is running.  Both waits read /proc, and return at once where
there is none.
"""
import os
import threading
import time

_TASKS = "/proc/self/task"


def _running(task):
    """Whether the thread `task` (a /proc/self/task entry) is running, preempted, or in the kernel mid-step.

    R: on a CPU or waiting for one; D: inside the kernel without sleeping
    interruptibly (a page fault, say), between two of its own instructions.
    S, an interruptible wait, is where idle threads are.
    """
    try:
        with open("%s/%s/stat" % (_TASKS, task), "rb") as stat:
            fields = stat.read()
    except OSError:
        return False        # exited meanwhile
    # "pid (comm) state ...": comm may hold spaces and parentheses, so the state follows the last ")".
    return fields[fields.rindex(b")") + 2:][:1] in (b"R", b"D")


def wait_until_exited(native_ids, limit=1.0):
    """Wait, at most limit seconds, until the threads with these native ids have left the process."""
    deadline = time.monotonic() + limit
    pending = [str(n) for n in native_ids if n is not None]
    while pending and os.path.isdir(_TASKS):
        pending = [n for n in pending if os.path.exists("%s/%s" % (_TASKS, n))]
        if not pending or time.monotonic() >= deadline:
            return
        time.sleep(0.0005)


def wait_until_others_idle(limit=2.0):
    """Wait, at most limit seconds, until no thread but the calling one is running.

    A thread blocked in a system call (a pipe read, a futex: an idle OpenMP
    worker, a thread waiting for the GIL) holds no allocator lock; one that
    is running or preempted may.  A thread that computes for longer than
    limit is waited for no further: the fork then takes its chances, as
    it would without this wait.
    """
    own = str(threading.get_native_id())
    deadline = time.monotonic() + limit
    while True:
        try:
            tasks = os.listdir(_TASKS)
        except OSError:
            return
        if not any(task != own and _running(task) for task in tasks) or time.monotonic() >= deadline:
            return
        time.sleep(0.0005)
