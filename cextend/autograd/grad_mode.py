"""Whether operations record history for backward: no_grad, enable_grad.

The switch is thread-local, as torch's is, so a thread evaluating without
gradients does not change another thread's graph building.
"""
import functools
import inspect
import sys
import threading

from cextend._grad_state import _set_enabled, _state, is_grad_enabled  # noqa: F401  (_state: hot paths)


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
        return _decorated(self.__class__, fn)


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
        return _decorated(lambda: set_grad_enabled(mode), fn)


class _InferenceState(threading.local):
    enabled = False


_inference = _InferenceState()


def is_inference_mode_enabled():
    return _inference.enabled


class inference_mode(_GradModeContext):
    """torch.inference_mode: no history is recorded inside (as no_grad).

    torch also marks the tensors made inside as inference tensors, which
    later refuse autograd; cextend's are ordinary tensors (the one
    difference: docs/torch-parity.md).  inference_mode(False) changes nothing.
    """

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self._previous = is_grad_enabled()
        self._previous_inference = _inference.enabled
        if self.mode:
            _set_enabled(False)
            _inference.enabled = True
        return self

    def __exit__(self, *exc):
        _set_enabled(self._previous)
        _inference.enabled = self._previous_inference
        return False

    def __call__(self, fn):
        mode = self.mode
        return _decorated(lambda: inference_mode(mode), fn)


def _decorated(make_context, fn):
    """fn run inside a fresh make_context() each call.  A generator function's
    body runs inside it step by step, as torch's decorators do: the caller's
    own grad mode holds between the steps, and close() and throw() reach the
    generator inside the context too."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args, **kwargs):
            inner = fn(*args, **kwargs)
            try:
                with make_context():
                    value = next(inner)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        with make_context():
                            inner.close()
                        raise
                    except BaseException:
                        with make_context():
                            value = inner.throw(*sys.exc_info())
                    else:
                        with make_context():
                            value = inner.send(sent)
            except StopIteration as stop:
                return stop.value
        return generator

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with make_context():
            return fn(*args, **kwargs)
    return wrapper
