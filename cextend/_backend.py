"""The one place that touches cffi: arrays -> pointers, status -> exception.

Callers hand in arrays already checked by cextend._checks (dtype, shapes,
outputs).  This module turns each operand into what the C API wants
(pointer, leading dimension, transpose flag; see src/cextend.h), copying
only layouts the kernels cannot express, keeps every array alive for the
duration of the call, and raises on a non-zero status with the C message.
cffi's API mode releases the GIL around each kernel call.
"""
import numpy as np

from cextend._C import ffi, lib

_POINTER_TYPE = {
    np.dtype(np.float32): "float *",
    np.dtype(np.float64): "double *",
    np.dtype(np.int64): "int64_t *",
}
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_OP_NAMES = (
    "linear_forward", "linear_backward", "add_forward", "add_backward",
    "mul_constant_forward", "mul_constant_backward",
    "global_max_pool_forward", "global_max_pool_backward",
)
_KERNELS = {(op, dtype): getattr(lib, "cextend_%s_%s" % (op, suffix))
            for op in _OP_NAMES for dtype, suffix in _SUFFIX.items()}

NOMEM = lib.CEXTEND_ERR_NOMEM
CUDA_ERROR = lib.CEXTEND_ERR_CUDA


def check(status):
    """Raise the exception DESIGN.md assigns to a non-zero C status."""
    if status == 0:
        return
    message = ffi.string(lib.cextend_last_error()).decode("utf-8", "replace")
    if status == NOMEM:
        raise MemoryError(message)
    if -1000 < status < 0:
        raise ValueError(message)
    raise RuntimeError(message or "cextend kernel failed with status %d" % status)


def pointer(arr):
    """A typed pointer to arr's first element (NULL for None).

    The caller must keep `arr` referenced until the kernel returns.
    """
    if arr is None:
        return ffi.NULL
    ctype = _POINTER_TYPE[arr.dtype]
    if arr.flags.c_contiguous:
        return ffi.from_buffer(ctype, arr)
    return ffi.cast(ctype, arr.ctypes.data)


def _blas_layout(rows, cols, row_stride, col_stride):
    """(trans, ld) describing a rows x cols view BLAS-style, or None.

    Strides are in elements.  Size-1 dimensions have meaningless strides, so
    they never disqualify a layout.
    """
    if (cols == 1 or col_stride == 1) and (rows == 1 or row_stride >= max(1, cols)):
        return 0, (row_stride if rows > 1 else max(1, cols))
    if (rows == 1 or row_stride == 1) and (cols == 1 or col_stride >= max(1, rows)):
        return 1, (col_stride if cols > 1 else max(1, rows))
    return None


def matrix(arr):
    """(array, ld, trans) for a 2-D input operand, copying only if the kernel
    cannot read it in place (negative, zero or mixed strides, misalignment)."""
    rows, cols = arr.shape
    if rows == 0 or cols == 0:
        return arr, max(1, cols), 0
    itemsize = arr.itemsize
    row_bytes, col_bytes = arr.strides
    if arr.flags.aligned and row_bytes % itemsize == 0 and col_bytes % itemsize == 0:
        layout = _blas_layout(rows, cols, row_bytes // itemsize, col_bytes // itemsize)
        if layout is not None:
            return arr, layout[1], layout[0]
    return np.ascontiguousarray(arr), max(1, cols), 0


def vector(arr):
    """A contiguous, aligned version of arr (a copy only when needed)."""
    if arr.flags.c_contiguous and arr.flags.aligned:
        return arr
    return np.array(arr, order="C", copy=True)


def linear_forward(x, w, b, y):
    """y = x . w^T + b on 2-D x (n, k), w (m, k), b (m,) or None, y (n, m) C-contiguous."""
    if y.size == 0:
        return      # nothing to write: don't copy operands the kernel won't read
    x, ldx, transx = matrix(x)
    w, ldw, transw = matrix(w)
    b = None if b is None else vector(b)
    (n, k), m = x.shape, w.shape[0]
    check(_KERNELS["linear_forward", y.dtype](
        n, k, m, pointer(x), ldx, transx, pointer(w), ldw, transw,
        pointer(b), pointer(y), max(1, m)))


def linear_backward(dy, x, w, dx, dw, db):
    """dx = dy.w, dw = dy^T.x, db = column sums of dy; None outputs are skipped."""
    if all(out is None or out.size == 0 for out in (dx, dw, db)):
        return
    dy, lddy, transdy = matrix(dy)
    x, ldx, transx = matrix(x)
    w, ldw, transw = matrix(w)
    (n, k), m = x.shape, w.shape[0]
    check(_KERNELS["linear_backward", dy.dtype](
        n, k, m, pointer(dy), lddy, transdy, pointer(x), ldx, transx,
        pointer(w), ldw, transw, pointer(dx), max(1, k), pointer(dw), max(1, k), pointer(db)))


def add_forward(a, b, out):
    a, b = vector(a), vector(b)
    check(_KERNELS["add_forward", out.dtype](out.size, pointer(a), pointer(b), pointer(out)))


def add_backward(grad_out, grad_a, grad_b):
    grad_out = vector(grad_out)
    check(_KERNELS["add_backward", grad_out.dtype](
        grad_out.size, pointer(grad_out), pointer(grad_a), pointer(grad_b)))


def mul_constant_forward(x, c, out):
    x = vector(x)
    check(_KERNELS["mul_constant_forward", out.dtype](x.size, pointer(x), c, pointer(out)))


def mul_constant_backward(grad_out, c, grad_x):
    grad_out = vector(grad_out)
    check(_KERNELS["mul_constant_backward", grad_x.dtype](
        grad_out.size, pointer(grad_out), c, pointer(grad_x)))


def global_max_pool_forward(x, planes, plane_size, values, indices):
    x = vector(x)
    check(_KERNELS["global_max_pool_forward", x.dtype](
        planes, plane_size, pointer(x), pointer(values), pointer(indices)))


def global_max_pool_backward(grad_values, indices, planes, plane_size, grad_x):
    grad_values, indices = vector(grad_values), vector(indices)
    check(_KERNELS["global_max_pool_backward", grad_x.dtype](
        planes, plane_size, pointer(grad_values), pointer(indices), pointer(grad_x)))
