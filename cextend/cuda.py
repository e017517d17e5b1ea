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
        _count_allocation(self.nbytes)
        self._finalizer = weakref.finalize(self, _release, lib, self.ptr, self.nbytes)

    def free(self):
        self._finalizer()

    @property
    def freed(self):
        return not self._finalizer.alive


def _release(lib, ptr, nbytes):
    lib.cextend_cuda_free(ptr)      # errors here cannot be raised (finalizer): the memory is gone anyway
    _count_allocation(-nbytes)


# -- memory statistics (torch.cuda.memory_allocated and its kin) ------------------------------
# cextend allocates each buffer with cudaMalloc and frees it with its tensor (no caching
# allocator), so "reserved" is "allocated".  Without CUDA every count is 0, as torch's CPU
# build answers; reset_peak_memory_stats is a no-op there, where torch's CPU build raises.

_allocated = [0, 0]         # bytes live now, the peak since the last reset
_stats_lock = threading.RLock()     # re-entrant: a finalizer may run inside, during a collection


def _count_allocation(delta):
    with _stats_lock:
        _allocated[0] += delta
        _allocated[1] = max(_allocated[1], _allocated[0])


def memory_allocated(device=None):
    return _allocated[0]


def max_memory_allocated(device=None):
    return _allocated[1]


memory_reserved = memory_allocated
max_memory_reserved = max_memory_allocated


def reset_peak_memory_stats(device=None):
    with _stats_lock:
        _allocated[1] = _allocated[0]


reset_max_memory_allocated = reset_peak_memory_stats


def empty_cache():
    """Nothing to release: freed buffers go back to CUDA at once."""


def memory_stats(device=None):
    if not is_available():
        return {}                   # as torch's CPU build: no statistics without CUDA
    return {"allocated_bytes.all.current": _allocated[0], "allocated_bytes.all.peak": _allocated[1],
            "reserved_bytes.all.current": _allocated[0], "reserved_bytes.all.peak": _allocated[1]}


def memory_summary(device=None, abbreviated=False):
    return ("cextend CUDA memory: %d bytes allocated, %d bytes at the peak (no caching allocator)"
            % (_allocated[0], _allocated[1]))


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


# -- the runtime behind DeviceArray (cextend._device) -----------------------------

_SFX = {np.dtype(np.float32): ("f32", "float *"), np.dtype(np.float64): ("f64", "double *")}


class _CudaRuntime:
    """Device memory and kernels for DeviceArray and the C-backed Functions.

    Buffers are DeviceBuffers; kernel methods take DeviceArrays (contiguous,
    one dtype) and raise the exception their status maps to.
    """

    name = "cuda"

    def __init__(self):
        self.ffi, self.lib = library()

    # memory
    def alloc(self, nbytes):
        return DeviceBuffer(nbytes)

    def _at(self, buffer, byte_offset=0):
        return self.ffi.cast("char *", buffer.ptr) + byte_offset

    def upload(self, buffer, array):
        array = np.ascontiguousarray(array)
        if array.nbytes:
            check(self.lib.cextend_cuda_memcpy(buffer.ptr, self.ffi.from_buffer(array), array.nbytes, 0))

    def download(self, buffer, shape, dtype):
        return to_host(buffer, shape, dtype)

    def copy(self, dst, src, nbytes):
        if nbytes:
            check(self.lib.cextend_cuda_memcpy(dst.ptr, src.ptr, nbytes, 2))

    def read(self, buffer, offset, dtype):
        out = np.empty((), dtype)
        check(self.lib.cextend_cuda_memcpy(self.ffi.from_buffer(out), self._at(buffer, offset * out.itemsize),
                                           out.itemsize, 1))
        return out

    def write(self, buffer, offset, dtype, value):
        value = np.asarray(value, dtype)
        check(self.lib.cextend_cuda_memcpy(self._at(buffer, offset * value.itemsize),
                                           self.ffi.from_buffer(value), value.itemsize, 0))

    def _typed(self, name, dtype):
        sfx, ctype = _SFX[np.dtype(dtype)]
        return getattr(self.lib, "cextend_cuda_%s_%s" % (name, sfx)), ctype

    def _p(self, array_or_buffer, ctype):
        if array_or_buffer is None:
            return self.ffi.NULL
        buffer = getattr(array_or_buffer, "buffer", array_or_buffer)
        return self.ffi.cast(ctype, buffer.ptr)

    # engine helpers
    def fill(self, buffer, dtype, count, value):
        if np.dtype(dtype) == np.int64:
            self.upload(buffer, np.full(count, value, np.int64))
            return
        fn, ctype = self._typed("fill", dtype)
        check(fn(count, value, self._p(buffer, ctype)))

    def binary(self, op, dtype, count, a, b, scalar, reversed_, out):
        fn, ctype = self._typed("binary", dtype)
        check(fn(op, count, self._p(a, ctype), self._p(b, ctype), scalar, int(reversed_), self._p(out, ctype)))

    def sum(self, buffer, dtype, outer, reduce, inner, out):
        fn, ctype = self._typed("sum", dtype)
        check(fn(outer, reduce, inner, self._p(buffer, ctype), self._p(out, ctype)))

    def cast(self, src, src_dtype, dst, dst_dtype, count):
        names = {(np.dtype(np.float32), np.dtype(np.float64)): ("cextend_cuda_cast_f32_f64", "float *", "double *"),
                 (np.dtype(np.float64), np.dtype(np.float32)): ("cextend_cuda_cast_f64_f32", "double *", "float *")}
        key = (np.dtype(src_dtype), np.dtype(dst_dtype))
        if key not in names:
            raise TypeError("cuda tensors cast between float32 and float64 only, not %s to %s" % key)
        name, src_type, dst_type = names[key]
        check(getattr(self.lib, name)(count, self._p(src, src_type), self._p(dst, dst_type)))

    def strided_copy(self, shape, strides, itemsize, src, dst):
        check(self.lib.cextend_cuda_strided_copy(len(shape), self.ffi.new("int64_t[]", list(shape) or [0]),
                                                 self.ffi.new("int64_t[]", list(strides) or [0]), itemsize,
                                                 src.ptr, dst.ptr))

    def axpy(self, alpha, x, y):
        fn, ctype = self._typed("axpy", x.dtype)
        check(fn(x.size, alpha, self._p(x, ctype), self._p(y, ctype)))

    # the C-backed Functions' kernels
    def linear_forward(self, x, w, b, y):
        (n, k), m = x.shape, w.shape[0]
        fn, ctype = self._typed("linear_forward", x.dtype)
        check(fn(n, k, m, self._p(x, ctype), max(k, 1), 0, self._p(w, ctype), max(k, 1), 0,
                 self._p(b, ctype), self._p(y, ctype), max(m, 1)))

    def linear_backward(self, dy, x, w, dx, dw, db):
        (n, k), m = x.shape, w.shape[0]
        fn, ctype = self._typed("linear_backward", x.dtype)
        check(fn(n, k, m, self._p(dy, ctype), max(m, 1), 0, self._p(x, ctype), max(k, 1), 0,
                 self._p(w, ctype), max(k, 1), 0, self._p(dx, ctype), max(k, 1), self._p(dw, ctype),
                 max(k, 1), self._p(db, ctype)))

    def add_forward(self, a, b, out):
        fn, ctype = self._typed("add_forward", a.dtype)
        check(fn(a.size, self._p(a, ctype), self._p(b, ctype), self._p(out, ctype)))

    def add_backward(self, g, grad_a, grad_b):
        fn, ctype = self._typed("add_backward", g.dtype)
        check(fn(g.size, self._p(g, ctype), self._p(grad_a, ctype), self._p(grad_b, ctype)))

    def mul_constant_forward(self, x, c, out):
        fn, ctype = self._typed("mul_constant_forward", x.dtype)
        check(fn(x.size, self._p(x, ctype), c, self._p(out, ctype)))

    def mul_constant_backward(self, g, c, grad_x):
        fn, ctype = self._typed("mul_constant_backward", g.dtype)
        check(fn(g.size, self._p(g, ctype), c, self._p(grad_x, ctype)))

    def pool_forward(self, x, planes, plane_size, values, indices):
        fn, ctype = self._typed("global_max_pool_forward", x.dtype)
        check(fn(planes, plane_size, self._p(x, ctype), self._p(values, ctype), self._p(indices, "int64_t *")))

    def pool_backward(self, g, indices, planes, plane_size, grad_x):
        fn, ctype = self._typed("global_max_pool_backward", g.dtype)
        check(fn(planes, plane_size, self._p(g, ctype), self._p(indices, "int64_t *"), self._p(grad_x, ctype)))

    def relu(self, x, out):
        fn, ctype = self._typed("relu", x.dtype)
        check(fn(x.size, self._p(x, ctype), self._p(out, ctype)))

    def relu_backward(self, x, g, grad_x):
        fn, ctype = self._typed("relu_backward", x.dtype)
        check(fn(x.size, self._p(x, ctype), self._p(g, ctype), self._p(grad_x, ctype)))


_runtime = None


def runtime():
    """The CUDA runtime for DeviceArray; RuntimeError (with the reason) without a GPU."""
    global _runtime
    _require_device()
    if _runtime is None:
        _runtime = _CudaRuntime()
    return _runtime
