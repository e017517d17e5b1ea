"""Whether operations record history for backward: no_grad, enable_grad.

The switch is thread-local, as torch's is, so a thread evaluating without
gradients does not change another thread's graph building.
"""
import functools
import threading

class _GradState(threading.local):
    enabled = True      # the default in every new thread


# Hot paths read `_state.enabled` directly (one attribute load).
_state = _GradState()


def is_grad_enabled():
    return _state.enabled


def _set_enabled(mode):
    _state.enabled = mode


class _GradModeContext:
    """Base for the context managers; each also works as a decorator."""

    _mode = True

    def __enter__(self):
        self._previous = is_grad_enabled()
        _set_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _set_enabled(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Operations inside do not record history (and in-place ops on leaves are allowed)."""

    _mode = False


class enable_grad(_GradModeContext):
    """Re-enable history recording inside a no_grad block."""

    _mode = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode to `mode` for the block (or for good, when not used as a context)."""

    def __init__(self, mode):
        self._previous = is_grad_enabled()
        self._mode = mode
        _set_enabled(mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        mode = self._mode
        _set_enabled(self._previous)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper
