"""Recording the C calls a JIT extension makes, so they can be replayed elsewhere.

opcheck(..., sanitize=True) runs the op once inside recording(); every call
through a load()/load_inline() function then notes its symbol and, for each
argument, what C received: a buffer's exact bytes (a non-contiguous input is
recorded as the contiguous copy the wrapper hands C), or a scalar.  A
subprocess replays those calls against a sanitizer build of the same
sources with exactly sized heap buffers (cextend/library/_replay.py).
Outside recording() the cost is one list test per call.
"""
import contextlib
import threading

import numpy as np
from cextend.tensor import Tensor

_ACTIVE = []
_LOCK = threading.Lock()


class Recording:
    """The calls made while active: list of dicts (extension, symbol, args, description)."""

    def __init__(self):
        self.calls = []
        self.problems = []      # why a call could not be recorded faithfully


@contextlib.contextmanager
def recording():
    record = Recording()
    with _LOCK:
        _ACTIVE.append(record)
    try:
        yield record
    finally:
        with _LOCK:
            _ACTIVE.remove(record)


def recorded(function, raw, ffi, extension, symbol, const_flags=None):
    """function (the Tensor-aware wrapper of raw) that also notes its calls."""
    try:
        params = [arg.cname for arg in ffi.typeof(raw).args]
    except (TypeError, AttributeError):
        return function
    const = [bool(const_flags and i < len(const_flags) and const_flags[i]) for i in range(len(params))]

    def call(*args):
        if not _ACTIVE:
            return function(*args)
        _note(extension, symbol, params, args, ffi)
        guarded, finish = _guarded(args, params, const)
        result = function(*guarded)
        finish()
        return result

    call.__name__ = getattr(function, "__name__", symbol)
    call.__doc__ = getattr(function, "__doc__", None)
    call.__wrapped__ = function
    return call


_GUARD = 256        # bytes of slack on each side of every buffer during a recorded call


def _guarded(args, params, const):
    """args with each array buffer moved into the middle of a larger one.

    The recorded run executes the user's kernel in this process; a kernel
    that writes a little past a buffer then lands in slack instead of
    corrupting this process's heap, and the replay reports it precisely.
    finish() copies outputs back into the caller's arrays.
    """
    copies, moved, backs = {}, [], []
    for value, cname, is_const in zip(args, params, const):
        array = value._data if isinstance(value, Tensor) else value
        if not (cname.endswith("*") and isinstance(array, np.ndarray) and array.dtype.kind in "biuf"):
            moved.append(value)
            continue
        if not is_const and not (array.flags.c_contiguous and array.flags.writeable):
            moved.append(value)         # the wrapper refuses it; let it say so
            continue
        identity = (array.__array_interface__["data"][0], array.nbytes, array.strides)
        if identity not in copies:
            storage = np.empty(array.nbytes + 2 * _GUARD, np.uint8)
            inner = storage[_GUARD:_GUARD + array.nbytes].view(array.dtype).reshape(array.shape)
            inner[...] = array
            copies[identity] = inner
            if not is_const:
                backs.append((array, inner))
                if isinstance(value, Tensor):
                    value._bump_version()
        moved.append(copies[identity])

    def finish():
        for array, inner in backs:
            array[...] = inner
    return moved, finish


def _note(extension, symbol, params, args, ffi):
    recorded_args, shapes, problems = [], [], []
    seen = {}
    for i, (value, cname) in enumerate(zip(args, params)):
        pointer = cname.endswith("*")
        if isinstance(value, (Tensor, np.ndarray)) and pointer:
            array = value._data if isinstance(value, Tensor) else value
            if not isinstance(array, np.ndarray):
                problems.append("argument %d is a device tensor" % (i + 1))
                recorded_args.append(("null",))
                continue
            c_view = np.ascontiguousarray(array)
            identity = (c_view.__array_interface__["data"][0], c_view.nbytes) if c_view is array else None
            if identity is not None and identity in seen:
                recorded_args.append(("same", seen[identity]))     # the same buffer passed twice
            else:
                if identity is not None:
                    seen[identity] = i
                recorded_args.append(("buffer", cname[:-1].strip(), c_view.tobytes(), c_view.nbytes))
            shapes.append("%s[%s]" % (array.dtype.name, ", ".join(str(s) for s in array.shape)))
        elif value is None and pointer:
            recorded_args.append(("null",))
            shapes.append("NULL")
        elif isinstance(value, (bool, int, float, np.integer, np.floating)) and not pointer:
            recorded_args.append(("scalar", value.item() if isinstance(value, np.generic) else value))
            shapes.append(repr(value))
        elif pointer and isinstance(value, ffi.CData) and value == ffi.NULL:
            recorded_args.append(("null",))
            shapes.append("NULL")
        else:
            problems.append("argument %d (%s) is a %s; only Tensors, ndarrays, None and numbers can be "
                            "replayed" % (i + 1, cname, type(value).__name__))
            recorded_args.append(("null",))
            shapes.append("?")
    call = {"extension": extension, "symbol": symbol, "args": recorded_args,
            "description": "%s(%s)" % (symbol, ", ".join(shapes))}
    for record in list(_ACTIVE):
        record.calls.append(call)
        record.problems.extend("%s: %s" % (call["description"], p) for p in problems)
