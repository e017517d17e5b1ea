"""Recording the C calls a JIT extension makes, so they can be replayed elsewhere.

opcheck(..., sanitize=True) runs the op once inside recording(); every call
through a load()/load_inline() function then notes its symbol and, for each
argument, what C received: a buffer's exact bytes (a non-contiguous input is
recorded as the contiguous copy the wrapper hands C), or a scalar.  A
subprocess replays those calls against a sanitizer build of the same
sources with exactly sized heap buffers (cextend/library/_replay.py).
Outside recording() and guarding() the cost is one list test per call.

guarding() (opcheck's checking process) moves every buffer into the middle
of a larger one whose margins hold a known pattern, and checks the pattern
after the call: a kernel that writes a little past either end of a buffer
raises OutOfBoundsError naming the kernel, the argument and the call,
before anything of the caller's is touched.
"""
import contextlib
import pickle
import threading

import numpy as np
from cextend.tensor import Tensor
from cextend.utils._calls import _POINTER_DTYPES

_ACTIVE = []
_LOCK = threading.Lock()
_GUARDING = []


class OutOfBoundsError(RuntimeError):
    """A C kernel wrote outside a buffer it was given (caught in guard margins)."""

    __module__ = "cextend.library"


class Recording:
    """The calls made while active: list of dicts (extension, symbol, args, description)."""

    def __init__(self, stream=None):
        self.calls = []
        self.problems = []      # why a call could not be recorded faithfully
        self.stream = stream    # a binary file: each call is also pickled there before it runs
        self.extensions = {}    # id(extension) -> its number in the stream


@contextlib.contextmanager
def recording(stream=None):
    """Record the calls made inside; with stream, also pickle each one there
    before it runs, so a call that crashes the process is still on file."""
    record = Recording(stream)
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
        if not (_ACTIVE or _GUARDING):
            return function(*args)
        number = _note(extension, symbol, params, args, ffi) if _ACTIVE else None
        guarded, finish = _guarded(args, params, const)
        result = function(*guarded)
        finish(symbol, number)
        return result

    call.__name__ = getattr(function, "__name__", symbol)
    call.__doc__ = getattr(function, "__doc__", None)
    call.__wrapped__ = function
    return call


@contextlib.contextmanager
def guarding():
    """Every call made inside runs on guarded copies of its buffers (see the module's docstring)."""
    _GUARDING.append(True)
    try:
        yield
    finally:
        _GUARDING.pop()


_GUARD = 256        # bytes of slack on each side of every buffer during a recorded call
# Not a repeated byte: a kernel that writes zeros or a constant past the end still changes it.
_PATTERN = np.random.default_rng(0x5EED).integers(0, 256, _GUARD, dtype=np.uint8)


def _guarded(args, params, const):
    """args with each array buffer moved into the middle of a larger one.

    The recorded run executes the user's kernel in this process; a kernel
    that writes a little past a buffer then lands in slack instead of
    corrupting this process's heap, and the replay reports it precisely.
    finish(symbol, call_number) checks the margins, then copies outputs back
    into the caller's arrays.
    """
    copies, moved, backs, margins = {}, [], [], []
    for position, (value, cname, is_const) in enumerate(zip(args, params, const), 1):
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
            storage[:_GUARD] = _PATTERN
            storage[_GUARD + array.nbytes:] = _PATTERN
            inner = storage[_GUARD:_GUARD + array.nbytes].view(array.dtype).reshape(array.shape)
            inner[...] = array
            copies[identity] = inner
            margins.append((storage, position, cname, array))
            if not is_const:
                backs.append((array, inner))
                if isinstance(value, Tensor):
                    value._bump_version()
        moved.append(copies[identity])

    def finish(symbol, number):
        for storage, position, cname, array in margins:
            _check_margins(storage, position, cname, array, symbol, number)
        for array, inner in backs:
            array[...] = inner
    return moved, finish


def _check_margins(storage, position, cname, array, symbol, number):
    before = np.flatnonzero(storage[:_GUARD] != _PATTERN)
    after = np.flatnonzero(storage[_GUARD + array.nbytes:] != _PATTERN)
    if not (before.size or after.size):
        return
    which = "argument %d (%s, %s[%s])" % (position, cname, array.dtype.name,
                                          ", ".join(str(s) for s in array.shape))
    where = []
    if after.size:
        where.append("bytes %d to %d after its end" % (after[0] + 1, after[-1] + 1))
    if before.size:
        where.append("bytes %d to %d before its start" % (_GUARD - before[-1], _GUARD - before[0]))
    raise OutOfBoundsError("%s wrote outside %s: %s changed%s" % (
        symbol, which, " and ".join(where), "" if number is None else " (recorded call %d)" % number))


def _refused(params, args):
    """True if the Tensor-aware wrapper will refuse these arguments (a dtype that does not match
    its pointer type) before C runs: such a call is not recorded."""
    for value, cname in zip(args, params):
        array = value._data if isinstance(value, Tensor) else value
        expected = _POINTER_DTYPES.get(cname[:-1].strip()) if cname.endswith("*") else None
        if expected is not None and isinstance(array, np.ndarray) and array.dtype != expected:
            return True
    return len(args) != len(params)


def _note(extension, symbol, params, args, ffi):
    if _refused(params, args):
        return None
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
    call["problems"] = problems
    for record in list(_ACTIVE):
        record.calls.append(call)
        record.problems.extend("%s: %s" % (call["description"], p) for p in problems)
        if record.stream is not None:
            _stream(record, call, problems)
    return len(_ACTIVE[-1].calls) if _ACTIVE else None


def _stream(record, call, problems):
    extension = call["extension"]
    if id(extension) not in record.extensions:
        record.extensions[id(extension)] = len(record.extensions)
        pickle.dump(("extension", record.extensions[id(extension)], extension), record.stream)
    pickle.dump(("call", record.extensions[id(extension)], call["symbol"], call["args"], call["description"],
                 problems), record.stream)
    record.stream.flush()


def read_stream(path):
    """(extensions by number, calls as (number, symbol, args, description, problems)) from a stream
    file; a record cut short by a crash ends the list."""
    extensions, calls = {}, []
    with open(path, "rb") as f:
        while True:
            try:
                item = pickle.load(f)
            except (EOFError, pickle.UnpicklingError, ValueError, AttributeError):
                break
            if item[0] == "extension":
                extensions[item[1]] = item[2]
            else:
                calls.append(item[1:6])
    return extensions, calls
