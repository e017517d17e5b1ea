"""CUDA: cextend's optional nvcc-built kernels, and whether they can run here.

The library (cextend/libcextend_cuda.so) exists only in a CUDA build
(`make cuda`, or `CEXTEND_CUDA=1 pip install .`); it is loaded with cffi on
first use.  is_available() is True only when it loaded and a CUDA device
answered; otherwise unavailable_reason() says which of those failed.

    from cextend import cuda
    if cuda.is_available():
        buffer = cuda.to_device(array)        # device memory, freed once
        back = cuda.to_host(buffer, array.shape, array.dtype)
"""
import os
import threading
import weakref

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARY = os.path.join(_HERE, "libcextend_cuda.so")
_CDEF = os.path.join(_HERE, "_cuda_cdef.h")
_lock = threading.Lock()
_state = None               # (ffi, lib, reason unavailable or None)


def _load():
    global _state
    with _lock:
        if _state is not None:
            return _state
        if not (os.path.exists(_LIBRARY) and os.path.exists(_CDEF)):
            _state = (None, None, "cextend was built without CUDA (no libcextend_cuda.so); build it "
                                  "with `make cuda` or `CEXTEND_CUDA=1 pip install .`")
            return _state
        from cffi import FFI
        ffi = FFI()
        with open(_CDEF) as f:
            ffi.cdef(f.read())
        try:
            lib = ffi.dlopen(_LIBRARY)
        except OSError as error:
            _state = (None, None, "libcextend_cuda.so could not be loaded: %s" % error)
            return _state
        count = ffi.new("int *")
        if lib.cextend_cuda_device_count(count) != 0:
            reason = "the CUDA runtime reports no usable device: %s" % ffi.string(
                lib.cextend_cuda_last_error()).decode("utf-8", "replace")
        elif count[0] == 0:
            reason = "the CUDA runtime found no GPU"
        else:
            reason = None
        _state = (ffi, lib, reason)
        return _state


def is_available():
    """True when the CUDA library is built, loads, and a GPU answers."""
    return _load()[2] is None


def unavailable_reason():
    """Why is_available() is False (None when it is True)."""
    return _load()[2]


def device_count():
    ffi, lib, reason = _load()
    if lib is None:
        return 0
    count = ffi.new("int *")
    return count[0] if lib.cextend_cuda_device_count(count) == 0 else 0


def library():
    """(ffi, lib) of the CUDA library, which loads even without a GPU (its
    argument checks run on the host), or a RuntimeError saying why not."""
    ffi, lib, reason = _load()
    if lib is None:
        raise RuntimeError(reason)
    return ffi, lib


def check(status):
    """Raise what DESIGN.md assigns to a non-zero status, with the message."""
    if status == 0:
        return
    ffi, lib = library()
    message = ffi.string(lib.cextend_cuda_last_error()).decode("utf-8", "replace")
    if status == -1000:
        raise MemoryError(message)
    if -1000 < status < 0:
        raise ValueError(message)
    raise RuntimeError(message)


def _require_device():
    if not is_available():
        raise RuntimeError("CUDA is not available: %s" % unavailable_reason())


class DeviceBuffer:
    """nbytes of device memory, freed exactly once (when collected or by free())."""

    def __init__(self, nbytes):
        _require_device()
        ffi, lib = library()
        slot = ffi.new("void **")
        check(lib.cextend_cuda_malloc(slot, int(nbytes)))
        self.ptr = slot[0]
        self.nbytes = int(nbytes)
        self._finalizer = weakref.finalize(self, _release, lib, self.ptr)

    def free(self):
        self._finalizer()

    @property
    def freed(self):
        return not self._finalizer.alive


def _release(lib, ptr):
    lib.cextend_cuda_free(ptr)      # errors here cannot be raised (finalizer): the memory is gone anyway


def to_device(array):
    """A DeviceBuffer holding a copy of a numpy array (made C-contiguous)."""
    ffi, lib = library()
    array = np.ascontiguousarray(array)
    buffer = DeviceBuffer(array.nbytes)
    if array.nbytes:
        check(lib.cextend_cuda_memcpy(buffer.ptr, ffi.from_buffer(array), array.nbytes, 0))
    return buffer


def to_host(buffer, shape, dtype):
    """A numpy array copied back from a DeviceBuffer."""
    ffi, lib = library()
    out = np.empty(shape, dtype)
    if out.nbytes:
        check(lib.cextend_cuda_memcpy(ffi.from_buffer(out), buffer.ptr, out.nbytes, 1))
    return out


def synchronize():
    ffi, lib = library()
    check(lib.cextend_cuda_synchronize())
