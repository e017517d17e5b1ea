"""Whether operations record history: the per-thread switch itself.

It sits below Tensor and autograd (both read it); the context managers
that flip it are cextend.autograd.grad_mode's.
"""
import threading


class _GradState(threading.local):
    enabled = True      # the default in every new thread


# Hot paths read `_state.enabled` directly (one attribute load).
_state = _GradState()


def is_grad_enabled():
    return _state.enabled


def _set_enabled(mode):
    _state.enabled = mode
