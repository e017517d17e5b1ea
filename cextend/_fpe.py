"""Floating-point exceptions off, cheaply, around numpy calls.

torch computes 0/0, log(0) and overflow silently; numpy warns (and raises
under `-W error` or pytest's filterwarnings=error).  np.errstate would
silence it but costs about 1.5 us per use, more than many small ops take;
numpy 2 keeps the error state in a context variable, and setting that
directly costs about 0.2 us.  Older numpy falls back to np.errstate.
"""
import numpy as np

try:
    from numpy._core.umath import _extobj_contextvar, _make_extobj
    _IGNORE = _make_extobj(all="ignore")
    # (the context variable, its value with every warning off), for C code that silences alike
    NUMPY_ERROR_STATE = (_extobj_contextvar, _IGNORE)
    _set = _extobj_contextvar.set
    _reset = _extobj_contextvar.reset

    def silence():
        """Switch the warnings off; returns a token for restore() (hot paths inline this)."""
        return _set(_IGNORE)

    restore = _reset

    def quietly(fn, *args):
        """fn(*args) with numpy's floating-point warnings off."""
        token = _set(_IGNORE)
        try:
            return fn(*args)
        finally:
            _reset(token)
except ImportError:     # numpy < 2
    NUMPY_ERROR_STATE = None

    def quietly(fn, *args):
        with np.errstate(all="ignore"):
            return fn(*args)

    def silence():
        return np.seterr(all="ignore")

    def restore(token):
        np.seterr(**token)
