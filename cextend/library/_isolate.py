"""Run a function in a forked child and bring its result back.

opcheck runs the user's kernels here rather than in the caller's process:
a kernel that corrupts memory or crashes takes the child down, never the
caller.  The child is a fork, not a fresh interpreter, because ops and
their samples are usually defined inside functions and cannot be
re-imported; cextend's at-fork handler leaves the child single-threaded,
so its kernels run even when the parent's OpenMP pool was in use.

The child writes where it is (which test, which C call) into a progress
file as it goes, so a crash is reported with the last thing it started.

OpenMP does not survive fork(): libgomp's thread pool stays behind in the
parent, and a child that enters a parallel region with more than one
thread waits for it forever.  The child therefore asks libgomp (the user's
kernels' OpenMP as well as cextend's) for one thread; checks that need
several threads run in the caller (opcheck's test_determinism).  A child
that runs past the time limit (a kernel in an endless loop) is killed and
reported as such.

Before forking, run_in_child waits (at most 2 s) until no other thread is
running: one caught inside an allocator that has no fork handler leaves
the child waiting forever on its lock (see cextend._threads_at_fork).
"""
import ctypes
import os
import pickle
import select
import signal
import sys
import tempfile
import time
import warnings

from cextend._threads_at_fork import wait_until_others_idle

TIME_LIMIT = float(os.environ.get("CEXTEND_OPCHECK_TIME_LIMIT", "900"))      # seconds for one child


class ChildCrashed(RuntimeError):
    """The checking process died (a signal or an exit) before returning its result."""

    __module__ = "cextend.library"


def fork_available():
    return hasattr(os, "fork") and sys.platform != "win32"


_progress_fd = []


def note_progress(text):
    """In the child: record what is starting now (one short line, overwritten each time)."""
    if _progress_fd:
        data = text.encode("utf-8", "replace")[:1000].ljust(1000)
        try:
            os.pwrite(_progress_fd[0], data, 0)
        except OSError:
            pass


def run_in_child(function, time_limit=None):
    """function() run in a forked child; its return value, or the exception it raised.

    Raises ChildCrashed, naming the signal (or the time limit) and the last
    progress note, if the child dies without answering.  The return value
    must pickle; exceptions that do not are brought back as RuntimeError
    with their text.
    """
    time_limit = TIME_LIMIT if time_limit is None else time_limit
    with tempfile.TemporaryFile() as progress:
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        wait_until_others_idle()
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork() with other threads alive (pytest-xdist's, say);
            # the child only runs the op on this thread.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:                                # pragma: no cover (runs in the child)
            os.close(read_end)
            _progress_fd.append(progress.fileno())
            _child(function, write_end)
        os.close(write_end)
        chunks, deadline, timed_out = [], time.monotonic() + time_limit, False
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([pipe], [], [], min(left, 1.0))[0]:
                    if left <= 0:
                        timed_out = True
                        os.kill(pid, signal.SIGKILL)
                        break
                    continue
                chunk = pipe.read(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
        data = b"".join(chunks)
        if data:
            kind, value = pickle.loads(data)
            if kind == "error":
                raise value
            return value
        progress.seek(0)
        last = progress.read().decode("utf-8", "replace").strip()
    how = ("ran past its time limit of %g s (CEXTEND_OPCHECK_TIME_LIMIT) and was killed" % time_limit
           if timed_out else _describe_status(status))
    raise ChildCrashed("the checking process %s%s" % (how, " during %s" % last if last else ""))


def _describe_status(status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal %d" % number
        return "was killed by %s" % name
    return "exited with status %d without a result" % os.WEXITSTATUS(status)


def _one_openmp_thread():
    """Keep every OpenMP region of this (forked) process to one thread: see the module docstring."""
    try:
        libgomp = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return                  # nothing in this process uses OpenMP
    libgomp.omp_set_num_threads(ctypes.c_int(1))


def _child(function, write_end):                   # pragma: no cover (runs in the child)
    status = 0
    try:
        # Another thread of the parent may have held sys.stdout's or sys.stderr's lock at the fork
        # (pytest-xdist's, say); the child's output goes through streams of its own.
        sys.stdout = open(1, "w", closefd=False, buffering=1)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        _one_openmp_thread()
        try:
            result = ("ok", function())
        except BaseException as error:              # noqa: BLE001 (every failure goes to the parent)
            result = ("error", error)
        try:
            data = pickle.dumps(result)
        except Exception:
            data = pickle.dumps(("ok", portable(result[1])) if result[0] == "ok"
                                else ("error", RuntimeError("%s: %s" % (type(result[1]).__name__, result[1]))))
        sys.stdout.flush()
        sys.stderr.flush()
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view):]
    except BaseException:
        status = 70
    finally:
        # No atexit handlers, no finalizers of the parent's objects: the parent owns them.
        os._exit(status)


def portable(value):
    """value with every exception that does not pickle replaced by a RuntimeError with its text."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, BaseException):
        try:
            pickle.loads(pickle.dumps(value))
            return value
        except Exception:
            return RuntimeError("%s: %s" % (type(value).__name__, value))
    return value
