"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly).

While enabled, each node records the stack of the forward call that made
it; at backward, a node whose computation raises gets that stack in a
warning ("Error detected in MulBackward0. Traceback of forward call that
caused the error: ..."), and with check_nan a node that returns NaN raises
RuntimeError naming itself and the output.  The switch is global, as
torch's; off, it costs one list test per node.
"""
import functools
import traceback
import warnings

import numpy as np

_state = [False, True]      # enabled, check_nan


def is_anomaly_enabled():
    return _state[0]


def is_anomaly_check_nan_enabled():
    return _state[1]


class detect_anomaly:
    """A context manager (or decorator) that enables anomaly detection inside."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        self.previous = None

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", UserWarning, stacklevel=2)
        self.previous = tuple(_state)
        _state[0], _state[1] = True, bool(self.check_nan)
        return self

    def __exit__(self, *exc):
        _state[0], _state[1] = self.previous
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return function(*args, **kwargs)
        return run


class set_detect_anomaly:
    """Turn anomaly detection on or off at once; used in a with block, the old setting comes back after."""

    def __init__(self, mode, check_nan=True):
        self.previous = tuple(_state)
        _state[0], _state[1] = bool(mode), bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state[0], _state[1] = self.previous
        return False


def forward_trace():
    """The stack of the forward call now being recorded (without cextend's own frames)."""
    frames = [f for f in traceback.extract_stack()[:-1] if "/cextend/" not in f.filename.replace("\\", "/")]
    return "".join(traceback.format_list(frames))


def run_checked(node, grads):
    """node.apply(grads) with the NaN check, and the forward call's stack in a warning if either raises."""
    try:
        results = node.apply(grads)
        if _state[1]:
            for i, g in enumerate(results):
                data = getattr(g, "_data", None)
                if isinstance(data, np.ndarray) and data.dtype.kind in "fc" and np.isnan(data).any():
                    raise RuntimeError("Function '%s' returned nan values in its %dth output."
                                       % (node.name(), i))
    except Exception:
        trace = getattr(node, "_anomaly_trace", None)
        warnings.warn("Error detected in %s. Traceback of forward call that caused the error:\n%s"
                      % (node.name(), trace or "(the node was made while anomaly detection was off)\n"),
                      UserWarning, stacklevel=2)
        raise
    return results
