"""Run a function in a forked child and bring its result back.

opcheck runs the user's kernels here rather than in the caller's process:
a kernel that corrupts memory or crashes takes the child down, never the
caller.  The child is a fork, not a fresh interpreter, because ops and
their samples are usually defined inside functions and cannot be
re-imported; cextend's at-fork handler leaves the child single-threaded,
so its kernels run even when the parent's OpenMP pool was in use.

The child writes where it is (which test, which C call) into a progress
file as it goes, so a crash is reported with the last thing it started.
"""
import os
import pickle
import signal
import sys
import tempfile
import warnings


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


def run_in_child(function):
    """function() run in a forked child; its return value, or the exception it raised.

    Raises ChildCrashed, naming the signal and the last progress note, if
    the child dies without answering.  The return value must pickle;
    exceptions that do not are brought back as RuntimeError with their text.
    """
    with tempfile.TemporaryFile() as progress:
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
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
        chunks = []
        with os.fdopen(read_end, "rb") as pipe:
            while True:
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
    raise ChildCrashed("the checking process %s%s" % (
        _describe_status(status), " during %s" % last if last else ""))


def _describe_status(status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal %d" % number
        return "was killed by %s" % name
    return "exited with status %d without a result" % os.WEXITSTATUS(status)


def _child(function, write_end):                   # pragma: no cover (runs in the child)
    status = 0
    try:
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
