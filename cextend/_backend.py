"""The one place that touches cffi: arrays -> pointers, status -> exception.

Callers hand in arrays already checked by cextend.ops._checks (dtype, shapes,
outputs).  This module turns each operand into what the C API wants
(pointer, leading dimension, transpose flag; see src/cextend.h), copying
only layouts the kernels cannot express, keeps every array alive for the
duration of the call, and raises on a non-zero status with the C message.
cffi's API mode releases the GIL around each kernel call.
"""
import numpy as np

from cextend import _capture
from cextend._threads_at_fork import wait_until_exited
from cextend._errors import ArgumentError, ArgumentTypeError, OutOfMemoryError

try:
    from cextend._C import ffi, lib
except ImportError as _error:
    import os as _os
    _here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    raise ImportError(
        "cextend's C extension (cextend._C) is not built in %s, the copy of cextend being imported. "
        "Build it there with `make build` (or `pip install -e .`); or, to use an installed cextend, run "
        "Python from another folder, where this source tree does not shadow it. (%s)" % (_here, _error)) from None

from cextend import _engine  # noqa: E402  (built with _C: its error above says how)

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
        raise OutOfMemoryError(message)     # a MemoryError, and a RuntimeError as torch's
    if -1000 < status < 0:
        raise ArgumentError(message)        # a ValueError, and a RuntimeError as torch's
    raise RuntimeError(message or "cextend kernel failed with status %d" % status)


def pointer(arr):
    """A typed pointer to arr's first element (NULL for None).

    The caller must keep `arr` referenced until the kernel returns.
    ffi.from_buffer costs ~0.1 us where arr.ctypes.data costs ~0.9 us, so it
    is used for C-contiguous arrays and (through the transpose, which is
    C-contiguous and starts at the same element) for Fortran-ordered ones.
    """
    if arr is None:
        return ffi.NULL
    ctype = _POINTER_TYPE[arr.dtype]
    flags = arr.flags
    if flags.c_contiguous:
        return ffi.from_buffer(ctype, arr)
    if flags.f_contiguous:
        return ffi.from_buffer(ctype, arr.T)
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
    # np.ascontiguousarray would return a misaligned contiguous array as is:
    # copy explicitly, into a fresh (aligned) buffer.
    return _copy(arr), max(1, cols), 0


def vector(arr):
    """A contiguous, aligned version of arr (a copy only when needed)."""
    if arr.flags.c_contiguous and arr.flags.aligned:
        return arr
    return _copy(arr)


def _copy(arr):
    """A C-contiguous, aligned copy of arr for a kernel (a captured step replays the copy)."""
    out = np.array(arr, order="C", copy=True)
    if _capture._active is not None:
        _capture.copy(out, arr)
    return out


def _run(function, args, reads, writes):
    """function(*args), a C kernel reading and writing those arrays; raise on its status.  A
    captured step's recording notes the call."""
    check(function(*args))
    if _capture._active is not None:
        _capture.kernel(function, args, reads, writes, check)


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_NDARRAY = np.ndarray
_FROM_BUFFER = ffi.from_buffer
_NULL = ffi.NULL
_EMPTY = np.empty
# dtype -> (kernel, pointer type) for the quick paths.
_QUICK_FORWARD = {_F32: (lib.cextend_linear_forward_contiguous_f32, ffi.typeof("float *")),
                  _F64: (lib.cextend_linear_forward_contiguous_f64, ffi.typeof("double *"))}
_QUICK_BACKWARD = {_F32: (lib.cextend_linear_backward_f32, ffi.typeof("float *")),
                   _F64: (lib.cextend_linear_backward_f64, ffi.typeof("double *"))}


def _address(name):
    return int(ffi.cast("uintptr_t", ffi.addressof(lib, name)))


# The Linear kernels' common case, called from C on the arrays' buffers (src/python/quick_linear.c):
# a (1, 8) layer's forward in about 0.6 us instead of 2.  It answers None for anything else, and
# the quick paths below run.
_engine.configure_linear(_NDARRAY, _EMPTY, _F32, _F64, _capture,
                         *(_address("cextend_linear_%s_%s" % (op, sfx))
                           for op in ("forward_contiguous", "backward") for sfx in ("f32", "f64")))
_quick_forward_in_c = _engine.linear_forward
_quick_backward_in_c = _engine.linear_backward


# The quick paths serve the common case (2-D C-contiguous operands of one
# native float dtype) in about a microsecond, most of it ffi.from_buffer.
# They check only what they rely on and hand everything else to the fully
# checked path, which then raises or copies as it should:
# - ffi.from_buffer raises ValueError for a buffer that is not C-contiguous
#   (and a tuple unpack for the wrong number of dimensions);
# - the C entry point refuses a misaligned pointer (status -i), and the
#   checked path copies misaligned views;
# - dtypes are compared by identity, so an equal but distinct dtype object
#   (a non-native byte order, say) is never mistaken for a native one.


def with_quick_forward(checked):
    """ops.linear_forward: the quick path inlined (a Python frame is a
    tenth of a small layer's call), `checked` for everything else."""
    quick = _QUICK_FORWARD

    def linear_forward(x, w, b=None, *, out=None):
        if out is None:
            y = _quick_forward_in_c(x, w, b)
            if y is not None:
                return y
        if out is None and type(x) is _NDARRAY and type(w) is _NDARRAY:
            dtype = x.dtype
            entry = quick.get(dtype)
            if entry is not None and w.dtype is dtype:
                kernel, ctype = entry
                try:
                    n, k = x.shape
                    m, k_w = w.shape
                    if b is None:
                        b_ptr = _NULL
                    elif type(b) is _NDARRAY and b.dtype is dtype and b.shape == (m,):
                        b_ptr = _FROM_BUFFER(ctype, b)
                    else:
                        k_w = -1                    # not plain: the checked path
                    if k == k_w:
                        x_ptr, w_ptr = _FROM_BUFFER(ctype, x), _FROM_BUFFER(ctype, w)
                        y = _EMPTY((n, m), dtype)
                        y_ptr = _FROM_BUFFER(ctype, y)
                        if not kernel(n, k, m, x_ptr, w_ptr, b_ptr, y_ptr):
                            if _capture._active is not None:
                                _capture.kernel(kernel, (n, k, m, x_ptr, w_ptr, b_ptr, y_ptr), (x, w, b), (y,), check)
                            return y
                except ValueError:
                    pass
        return checked(x, w, b, out=out)
    linear_forward.__doc__ = checked.__doc__
    linear_forward.__module__ = checked.__module__
    linear_forward.__qualname__ = "linear_forward"
    return linear_forward


def linear_backward_quick(dy, x, w, want_dx, want_dw, want_db):
    """(dx, dw, db) for 2-D C-contiguous dy (n, m), x (n, k), w (m, k) of
    one float dtype; None for anything else."""
    answer = _quick_backward_in_c(dy, x, w, want_dx, want_dw, want_db)
    if answer is not None:
        return answer
    if type(x) is not _NDARRAY or type(w) is not _NDARRAY or type(dy) is not _NDARRAY:
        return None
    dtype = x.dtype
    entry = _QUICK_BACKWARD.get(dtype)
    if entry is None or w.dtype is not dtype or dy.dtype is not dtype:
        return None
    x_shape, w_shape, dy_shape = x.shape, w.shape, dy.shape
    if len(x_shape) != 2 or len(w_shape) != 2 or x_shape[1] != w_shape[1] \
            or dy_shape != (x_shape[0], w_shape[0]):
        return None
    (n, k), m = x_shape, w_shape[0]
    kernel, ctype = entry
    try:
        x_ptr, w_ptr = _FROM_BUFFER(ctype, x), _FROM_BUFFER(ctype, w)
        try:
            dy_ptr = _FROM_BUFFER(ctype, dy)
        except ValueError:
            # A broadcast or strided gradient (from sum(), say): one copy
            # here is what the checked path would make too.
            strided = dy
            dy = np.array(dy, order="C", copy=True)
            dy_ptr = _FROM_BUFFER(ctype, dy)
            if _capture._active is not None:
                _capture.copy(dy, strided)
    except ValueError:
        return None
    dx = np.empty((n, k), dtype) if want_dx else None
    dw = np.empty((m, k), dtype) if want_dw else None
    db = np.empty((m,), dtype) if want_db else None
    args = (n, k, m, dy_ptr, m or 1, 0, x_ptr, k or 1, 0, w_ptr, k or 1, 0,
            _NULL if dx is None else _FROM_BUFFER(ctype, dx), k or 1,
            _NULL if dw is None else _FROM_BUFFER(ctype, dw), k or 1,
            _NULL if db is None else _FROM_BUFFER(ctype, db))
    if kernel(*args):
        return None
    if _capture._active is not None:
        _capture.kernel(kernel, args, (dy, x, w), (dx, dw, db), check)
    return dx, dw, db


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


# -- a training step's small kernels ------------------------------------------
# Each answers None (or False) for an operand it does not take -- another
# dtype, a strided or misaligned layout, a read-only output -- and the
# caller then runs its numpy formula, which gives the same values.

_TRAINING = {dtype: (ffi.typeof(ctype),
                     getattr(lib, "cextend_relu_forward_" + sfx), getattr(lib, "cextend_threshold_backward_" + sfx),
                     getattr(lib, "cextend_axpy_" + sfx), getattr(lib, "cextend_sgd_step_" + sfx),
                     getattr(lib, "cextend_adam_step_" + sfx), getattr(lib, "cextend_sum_" + sfx))
             for dtype, ctype, sfx in ((_F32, "float *", "f32"), (_F64, "double *", "f64"))}


def _training_operand(x):
    """(x's _TRAINING entry, x's data pointer) for a C-contiguous float32/float64
    ndarray; None for anything else (the caller keeps numpy's path)."""
    entry = _TRAINING.get(x.dtype) if type(x) is _NDARRAY else None
    if entry is None:
        return None
    try:
        return entry, _FROM_BUFFER(entry[0], x)
    except ValueError:
        return None


def total_sum(x):
    """np.sum(x) to the bit, as a 0-d array of x's dtype, for a C-contiguous
    float32/float64 array; None for anything else."""
    operand = _training_operand(x)
    if operand is None:
        return None
    entry, x_ptr = operand
    total = _EMPTY((), x.dtype)
    if entry[6](x.size, x_ptr, _FROM_BUFFER(entry[0], total)):
        return None
    return total


def relu(x):
    """x < 0 ? 0 : x as a new C-contiguous array, or None."""
    operand = _training_operand(x)
    if operand is None:
        return None
    entry, x_ptr = operand
    ctype = entry[0]
    out = _EMPTY(x.shape, x.dtype)
    args = (x.size, x_ptr, _FROM_BUFFER(ctype, out))
    if entry[1](*args):
        return None
    if _capture._active is not None:
        _capture.kernel(entry[1], args, (x,), (out,), check)
    return out


def threshold_backward(grad, result):
    """result <= 0 ? 0 : grad as a new C-contiguous array, or None."""
    entry = _TRAINING.get(grad.dtype) if type(grad) is _NDARRAY and type(result) is _NDARRAY else None
    if entry is None or result.dtype is not grad.dtype or result.shape != grad.shape:
        return None
    ctype = entry[0]
    try:
        g_ptr, r_ptr = _FROM_BUFFER(ctype, grad), _FROM_BUFFER(ctype, result)
    except ValueError:
        return None
    out = _EMPTY(grad.shape, grad.dtype)
    args = (grad.size, g_ptr, r_ptr, _FROM_BUFFER(ctype, out))
    if entry[2](*args):
        return None
    if _capture._active is not None:
        _capture.kernel(entry[2], args, (grad, result), (out,), check)
    return out


def _writable(ctype, arr):
    return _FROM_BUFFER(ctype, arr, require_writable=True)


def axpy(alpha, x, y, out=None):
    """y + alpha * x with one rounding (torch's add(y, x, alpha=alpha)), into out (a new array
    when None; out may be y); None when an operand is not a C-contiguous array of one float dtype
    and shape."""
    entry = _TRAINING.get(y.dtype) if type(x) is _NDARRAY and type(y) is _NDARRAY else None
    if entry is None or x.dtype is not y.dtype or x.shape != y.shape:
        return None
    ctype = entry[0]
    try:
        x_ptr, y_ptr = _FROM_BUFFER(ctype, x), _FROM_BUFFER(ctype, y)
        if out is None:
            out = _EMPTY(y.shape, y.dtype)
        elif type(out) is not _NDARRAY or out.dtype is not y.dtype or out.shape != y.shape:
            return None
        out_ptr = _writable(ctype, out)
    except (ValueError, TypeError, BufferError):
        return None
    return None if entry[3](y.size, alpha, x_ptr, y_ptr, out_ptr) else out


def sgd_step(param, grad, buffer, first_step, lr, weight_decay, momentum, dampening, nesterov, maximize):
    """torch.optim.SGD's update of one parameter's array in place (and of its momentum buffer,
    which the first step fills); False, touching nothing, when an array is not C-contiguous, of
    one float dtype and shape, and writable."""
    entry = _TRAINING.get(param.dtype) if type(param) is _NDARRAY and type(grad) is _NDARRAY else None
    if entry is None or grad.dtype is not param.dtype or grad.shape != param.shape:
        return False
    ctype = entry[0]
    try:
        p_ptr, g_ptr = _writable(ctype, param), _FROM_BUFFER(ctype, grad)
        if momentum != 0:
            if type(buffer) is not _NDARRAY or buffer.dtype is not param.dtype or buffer.shape != param.shape:
                return False
            b_ptr = _writable(ctype, buffer)
        else:
            b_ptr = _NULL
    except (ValueError, TypeError, BufferError):
        return False
    return not entry[4](param.size, p_ptr, g_ptr, b_ptr, int(first_step), -lr, weight_decay, momentum,
                        1 - dampening, int(bool(nesterov)), int(bool(maximize)))


ADAM_NO_DECAY, ADAM_L2, ADAM_DECOUPLED = 0, 1, 2


def adam_step(param, grad, exp_avg, exp_avg_sq, decay_mode, decay, lerp_weight, beta2, bias_correction2_sqrt,
              eps, neg_step_size, maximize):
    """torch.optim.Adam's (AdamW's) update of one parameter's array in place, with its two moment
    buffers; False, touching nothing, when an array is not C-contiguous, of one float dtype and
    shape, and writable."""
    entry = _TRAINING.get(param.dtype) if type(param) is _NDARRAY and type(grad) is _NDARRAY else None
    if entry is None:
        return False
    dtype, shape = param.dtype, param.shape
    for array in (grad, exp_avg, exp_avg_sq):
        if type(array) is not _NDARRAY or array.dtype is not dtype or array.shape != shape:
            return False
    ctype = entry[0]
    try:
        pointers = (_writable(ctype, param), _FROM_BUFFER(ctype, grad), _writable(ctype, exp_avg),
                    _writable(ctype, exp_avg_sq))
    except (ValueError, TypeError, BufferError):
        return False
    return not entry[5](param.size, *pointers, decay_mode, decay, lerp_weight, beta2, 1 - beta2,
                        bias_correction2_sqrt, eps, neg_step_size, int(bool(maximize)))


# -- softmax, log_softmax and nll_loss over rows -------------------------------
# A classifier's loss in one call each way.  Each answers None for operands
# it does not take (another dtype, a layout that is not C-contiguous, a
# device array), and the caller runs its numpy formula instead.

_ROWS = {dtype: (ffi.typeof(ctype), getattr(lib, "cextend_softmax_rows_" + sfx),
                 getattr(lib, "cextend_softmax_backward_rows_" + sfx), getattr(lib, "cextend_nll_forward_" + sfx),
                 getattr(lib, "cextend_nll_backward_" + sfx))
         for dtype, ctype, sfx in ((_F32, "float *", "f32"), (_F64, "double *", "f64"))}
_INT64 = np.dtype(np.int64)
_INT64_POINTER = ffi.typeof("int64_t *")
REDUCTIONS = {"none": lib.CEXTEND_REDUCTION_NONE, "mean": lib.CEXTEND_REDUCTION_MEAN,
              "sum": lib.CEXTEND_REDUCTION_SUM}


def _rows_entry(x):
    if type(x) is not _NDARRAY or x.ndim == 0 or not x.flags.c_contiguous:
        return None
    return _ROWS.get(x.dtype)


def softmax_rows(x, log_softmax):
    """softmax (or log_softmax) over the last dim of x as a new C-contiguous array, or None."""
    entry = _rows_entry(x)
    if entry is None:
        return None
    out = _EMPTY(x.shape, x.dtype)
    cols = x.shape[-1]
    if out.size:
        args = (out.size // cols, cols, _FROM_BUFFER(entry[0], x), _FROM_BUFFER(entry[0], out), int(log_softmax))
        check(entry[1](*args))
        if _capture._active is not None:
            _capture.kernel(entry[1], args, (x,), (out,), check)
    return out


def softmax_backward_rows(grad, result, log_softmax):
    """The gradient of softmax (or log_softmax) over the last dim, from the forward's result,
    as a new array; None unless both are C-contiguous arrays of one float dtype and shape."""
    entry = _rows_entry(grad)
    if entry is None or type(result) is not _NDARRAY or result.dtype is not grad.dtype \
            or result.shape != grad.shape or not result.flags.c_contiguous:
        return None
    out = _EMPTY(grad.shape, grad.dtype)
    cols = grad.shape[-1]
    if out.size:
        ctype = entry[0]
        args = (out.size // cols, cols, _FROM_BUFFER(ctype, grad), _FROM_BUFFER(ctype, result),
                _FROM_BUFFER(ctype, out), int(log_softmax))
        check(entry[2](*args))
        if _capture._active is not None:
            _capture.kernel(entry[2], args, (grad, result), (out,), check)
    return out


def nll_rows_supported(x, target, weight, ignore_index):
    """Whether the nll kernels take these operands: x (rows, classes) C-contiguous float32 or
    float64, target (rows,) C-contiguous int64, weight None or (classes,) of x's dtype."""
    entry = _rows_entry(x)
    return (entry is not None and x.ndim == 2 and type(target) is _NDARRAY and target.dtype == _INT64
            and target.shape == x.shape[:1] and target.flags.c_contiguous
            and (weight is None or (type(weight) is _NDARRAY and weight.dtype is x.dtype
                                    and weight.shape == x.shape[1:] and weight.flags.c_contiguous))
            and -2 ** 63 <= ignore_index < 2 ** 63)


def nll_forward(x, target, weight, ignore_index, reduction):
    """nll_loss of operands nll_rows_supported accepts: (loss, total_weight, bad_row), the loss of
    shape (rows,) for 'none' else (); bad_row is the first row whose target is out of range
    (-1 if none), and then nothing else is computed."""
    entry = _ROWS[x.dtype]
    ctype = entry[0]
    code = REDUCTIONS[reduction]
    out = _EMPTY(x.shape[:1] if code == lib.CEXTEND_REDUCTION_NONE else (), x.dtype)
    total = _EMPTY((), x.dtype)
    bad = _EMPTY((), _INT64)
    args = (x.shape[0], x.shape[1], _FROM_BUFFER(ctype, x), _FROM_BUFFER(_INT64_POINTER, target),
            _NULL if weight is None else _FROM_BUFFER(ctype, weight), ignore_index, code,
            _FROM_BUFFER(ctype, out), _FROM_BUFFER(ctype, total), _FROM_BUFFER(_INT64_POINTER, bad))
    check(entry[3](*args))
    if _capture._active is not None:
        # a replay raises as the eager op does when a new target is out of range
        _capture.kernel(entry[3], args, (x, target, weight), (out, total, bad),
                        lambda status: _nll_replayed(status, bad, target))
    return out, total, int(bad)


def _nll_replayed(status, bad, target):
    check(status)
    if bad >= 0:
        raise IndexError("Target %d is out of bounds." % target[int(bad)])


def nll_backward(grad, shape, target, weight, ignore_index, reduction, total_weight):
    """nll_loss's gradient for an input of `shape` (rows, classes), as a new array; grad is the
    loss's gradient, of x's dtype ((rows,) for 'none', else one value), total_weight the
    forward's 0-d array.  None when grad's dtype has no kernel."""
    entry = _ROWS.get(grad.dtype) if type(grad) is _NDARRAY else None
    if entry is None or (weight is not None and weight.dtype is not grad.dtype) \
            or total_weight.dtype is not grad.dtype \
            or grad.shape != (shape[:1] if reduction == "none" else ()):
        return None
    ctype = entry[0]
    if not grad.flags.c_contiguous:
        strided = grad
        grad = np.ascontiguousarray(grad)
        if _capture._active is not None:
            _capture.copy(grad, strided)
    out = _EMPTY(shape, grad.dtype)
    args = (shape[0], shape[1], _FROM_BUFFER(ctype, grad), _FROM_BUFFER(_INT64_POINTER, target),
            _NULL if weight is None else _FROM_BUFFER(ctype, weight), ignore_index, REDUCTIONS[reduction],
            _FROM_BUFFER(ctype, total_weight), _FROM_BUFFER(ctype, out))
    check(entry[4](*args))
    if _capture._active is not None:
        _capture.kernel(entry[4], args, (grad, target, weight, total_weight), (out,), check)
    return out


# -- instruction sets and threads ---------------------------------------------

_SPECIAL_OPS = {"erf": lib.CEXTEND_SPECIAL_ERF, "erfc": lib.CEXTEND_SPECIAL_ERFC,
                "erfinv": lib.CEXTEND_SPECIAL_ERFINV, "lgamma": lib.CEXTEND_SPECIAL_LGAMMA,
                "digamma": lib.CEXTEND_SPECIAL_DIGAMMA, "sinc": lib.CEXTEND_SPECIAL_SINC}
_SPECIAL = {_F32: lib.cextend_special_f32, _F64: lib.cextend_special_f64}


def special(name, x):
    """erf, erfc, erfinv, lgamma, digamma or sinc of a float32/float64 array (a new array);
    float16 is computed in float32 and rounded, as torch's half kernels do."""
    if x.dtype == np.float16:
        return special(name, x.astype(np.float32)).astype(np.float16)
    if x.dtype not in _SPECIAL:
        raise TypeError("%s: expected float32 or float64, got %s" % (name, x.dtype))
    source = np.require(x, x.dtype, ("C_CONTIGUOUS", "ALIGNED"))
    out = np.empty(source.shape, source.dtype)
    check(_SPECIAL[x.dtype](_SPECIAL_OPS[name], source.size, pointer(source), pointer(out)))
    return out


_POLYGAMMA = {_F32: lib.cextend_polygamma_f32, _F64: lib.cextend_polygamma_f64}


def polygamma(n, x):
    """The n-th derivative of digamma of a float32/float64 array (a new array)."""
    if x.dtype == np.float16:
        return polygamma(n, x.astype(np.float32)).astype(np.float16)
    if x.dtype not in _POLYGAMMA:
        raise TypeError("polygamma: expected float32 or float64, got %s" % x.dtype)
    source = np.require(x, x.dtype, ("C_CONTIGUOUS", "ALIGNED"))
    out = np.empty(source.shape, source.dtype)
    check(_POLYGAMMA[x.dtype](n, source.size, pointer(source), pointer(out)))
    return out


ISAS = {
    "reference": lib.CEXTEND_ISA_REFERENCE,
    "generic": lib.CEXTEND_ISA_GENERIC,
    "avx2": lib.CEXTEND_ISA_AVX2,
    "avx512": lib.CEXTEND_ISA_AVX512,
}
_ISA_NAMES = {code: name for name, code in ISAS.items()}


def available_isas():
    """The instruction sets this CPU and build can run, best last."""
    return [name for name, code in ISAS.items() if lib.cextend_isa_supported(code)]


def set_isa(name):
    """Force the GEMM microkernel ("reference", "generic", "avx2", "avx512"),
    or None / "auto" for the best this CPU supports."""
    if name is None or name == "auto":
        check(lib.cextend_set_isa(lib.CEXTEND_ISA_AUTO))
        return
    if name not in ISAS:
        raise ValueError("isa must be one of %s or 'auto', got %r" % (", ".join(ISAS), name))
    if not lib.cextend_isa_supported(ISAS[name]):
        raise ValueError("isa %r is not supported by this CPU or build; available: %s"
                         % (name, ", ".join(available_isas())))
    check(lib.cextend_set_isa(ISAS[name]))


def get_isa():
    """The instruction set the kernels use now."""
    return _ISA_NAMES[lib.cextend_get_isa()]


def gemm_blocking(isa, dtype, rows=None):
    """The GEMM plan of an instruction set for a float dtype, as a dict of
    mr, nr (register block) and kc, mc, nc (cache blocks): the plan of a
    product of `rows` rows, or of large products (None)."""
    if isa not in ISAS:
        raise ValueError("isa must be one of %s, got %r" % (", ".join(ISAS), isa))
    blocks = ffi.new("int64_t[5]")
    if rows is None:
        check(lib.cextend_gemm_blocking(ISAS[isa], np.dtype(dtype).itemsize, blocks))
    else:
        check(lib.cextend_gemm_blocking_for_rows(ISAS[isa], np.dtype(dtype).itemsize, rows, blocks))
    return dict(zip(("mr", "nr", "kc", "mc", "nc"), blocks))


def set_num_threads(n):
    """Threads for the kernels (results are bitwise identical for any count).

    Raises RuntimeError, and keeps the old count, if the threads the kernels
    would start cannot be created now (a process or memory limit): OpenMP
    would otherwise end the process in the next parallel kernel.
    """
    # torch: RuntimeError for a non-int or a count below 1, ValueError past a C int
    if isinstance(n, bool) or not isinstance(n, int):
        raise ArgumentTypeError("n must be an int, got %s" % type(n).__name__)
    if n < 1:
        raise ArgumentError("n must be >= 1, got %d" % n)
    if n > _INT_MAX:
        raise ArgumentError("n must be at most %d (a C int), got %d" % (_INT_MAX, n))
    _check_threads_can_start(n)
    check(lib.cextend_set_num_threads(n))


_INT_MAX = 2 ** 31 - 1      # cextend_set_num_threads takes an int
_threads_started = [1]      # the most threads seen alive at once by _check_threads_can_start


def _check_threads_can_start(n):
    """Start the threads a kernel would use (never more than the cores online) all at once,
    then let them go; libgomp aborts the process where Python raises."""
    import os
    import threading
    wanted = min(n, os.cpu_count() or 1)
    if wanted <= _threads_started[0]:
        return
    release, started = threading.Event(), []
    try:
        for _ in range(wanted - 1):
            thread = threading.Thread(target=release.wait, daemon=True)
            thread.start()
            started.append(thread)
    except RuntimeError as error:
        raise RuntimeError("set_num_threads(%d): only %d of the %d threads the kernels would use could be "
                           "started (%s): the process's thread limit (ulimit -u) or its memory limit is too "
                           "low; the kernels keep %d thread(s)"
                           % (n, len(started) + 1, wanted, error, lib.cextend_get_num_threads())) from None
    finally:
        release.set()
        for thread in started:
            thread.join()
        # Joined is not gone: a fork made while they free their state can inherit a held allocator lock.
        wait_until_exited([thread.native_id for thread in started])
    _threads_started[0] = wanted


def get_num_threads():
    return lib.cextend_get_num_threads()


def _isa_from_environment():
    import os
    requested = os.environ.get("CEXTEND_ISA", "").strip().lower()
    if requested:
        try:
            set_isa(requested)
        except ValueError as error:
            raise ImportError("CEXTEND_ISA=%s: %s" % (requested, error)) from None


_isa_from_environment()


# -- convolution, pooling and batch norm (src/generic/conv.c, pool2d.c, batchnorm.c) --

_NN_OP_NAMES = (
    "conv2d_forward", "conv2d_backward", "max_pool2d_forward", "max_pool2d_backward",
    "avg_pool2d_forward", "avg_pool2d_backward", "adaptive_avg_pool2d_forward",
    "adaptive_avg_pool2d_backward", "batch_norm_forward", "batch_norm_backward",
)
_NN_KERNELS = {(op, dtype): getattr(lib, "cextend_%s_%s" % (op, suffix))
               for op in _NN_OP_NAMES for dtype, suffix in _SUFFIX.items()}


def strided(arr):
    """(array, strides in elements) for an input the kernels read through
    explicit strides: used in place when aligned with non-negative whole-
    element strides (sliced, transposed, broadcast views), else copied."""
    if arr.size == 0:
        return arr, [0] * arr.ndim
    itemsize = arr.itemsize
    if arr.flags.aligned and all(s >= 0 and s % itemsize == 0 for s in arr.strides):
        return arr, [s // itemsize for s in arr.strides]
    arr = _copy(arr)
    return arr, [s // itemsize for s in arr.strides]


def _ptr(arr):
    """pointer(), with NULL for an operand that holds no elements."""
    return ffi.NULL if arr is None or arr.size == 0 else pointer(arr)


def conv2d_forward(x, w, b, y, geometry):
    """y (n, c_out, h_out, w_out) = conv(x, w) + b; geometry: ((sh, sw), (ph, pw), (dh, dw), groups)."""
    (sh, sw), (ph, pw), (dh, dw), groups = geometry
    x, xs = strided(x)
    w, b = vector(w), None if b is None else vector(b)
    n, c_in, h, wd = x.shape
    c_out, _, kh, kw = w.shape
    _run(_NN_KERNELS["conv2d_forward", y.dtype],
         (n, c_in, h, wd, c_out, kh, kw, y.shape[2], y.shape[3], sh, sw, ph, pw, dh, dw, groups,
          _ptr(x), xs, _ptr(w), _ptr(b), _ptr(y)), (x, w, b), (y,))


def conv2d_backward(dy, x_shape, x, w, w_shape, dx, dw, db, geometry):
    """dx, dw, db of conv2d_forward (each None: skip); x may be None when dw
    is, w when dx is (shapes come from x_shape and w_shape)."""
    (sh, sw), (ph, pw), (dh, dw_), groups = geometry
    dy, dys = strided(dy)
    x, xs = strided(x) if x is not None else (None, None)
    w = vector(w) if w is not None else None
    n, c_in, h, wd = x_shape
    c_out, _, kh, kw = w_shape
    _run(_NN_KERNELS["conv2d_backward", dy.dtype],
         (n, c_in, h, wd, c_out, kh, kw, dy.shape[2], dy.shape[3], sh, sw, ph, pw, dh, dw_, groups,
          _ptr(dy), dys, _ptr(x), xs if xs is not None else ffi.NULL, _ptr(w),
          _ptr(dx), _ptr(dw), _ptr(db)), (dy, x, w), (dx, dw, db))


def max_pool2d_forward(x, y, indices, window):
    """window: ((kh, kw), (sh, sw), (ph, pw), (dh, dw)); indices may be None."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window
    x, xs = strided(x)
    n, c, h, w = x.shape
    _run(_NN_KERNELS["max_pool2d_forward", y.dtype],
         (n, c, h, w, y.shape[2], y.shape[3], kh, kw, sh, sw, ph, pw, dh, dw, _ptr(x), xs,
          _ptr(y), _ptr(indices)), (x,), (y, indices))


def max_pool2d_backward(dy, indices, dx):
    dy, dys = strided(dy)
    indices = vector(indices)
    n, c, h, w = dx.shape
    _run(_NN_KERNELS["max_pool2d_backward", dx.dtype],
         (n, c, h, w, dy.shape[2], dy.shape[3], _ptr(dy), dys, _ptr(indices), _ptr(dx)), (dy, indices), (dx,))


def avg_pool2d_forward(x, y, window, count_include_pad, divisor_override):
    """window: ((kh, kw), (sh, sw), (ph, pw)); divisor_override 0: none."""
    (kh, kw), (sh, sw), (ph, pw) = window
    x, xs = strided(x)
    n, c, h, w = x.shape
    _run(_NN_KERNELS["avg_pool2d_forward", y.dtype],
         (n, c, h, w, y.shape[2], y.shape[3], kh, kw, sh, sw, ph, pw, int(count_include_pad),
          divisor_override, _ptr(x), xs, _ptr(y)), (x,), (y,))


def avg_pool2d_backward(dy, dx, window, count_include_pad, divisor_override):
    (kh, kw), (sh, sw), (ph, pw) = window
    dy, dys = strided(dy)
    n, c, h, w = dx.shape
    _run(_NN_KERNELS["avg_pool2d_backward", dx.dtype],
         (n, c, h, w, dy.shape[2], dy.shape[3], kh, kw, sh, sw, ph, pw, int(count_include_pad),
          divisor_override, _ptr(dy), dys, _ptr(dx)), (dy,), (dx,))


def adaptive_avg_pool2d_forward(x, y):
    x, xs = strided(x)
    n, c, h, w = x.shape
    _run(_NN_KERNELS["adaptive_avg_pool2d_forward", y.dtype],
         (n, c, h, w, y.shape[2], y.shape[3], _ptr(x), xs, _ptr(y)), (x,), (y,))


def adaptive_avg_pool2d_backward(dy, dx):
    dy, dys = strided(dy)
    n, c, h, w = dx.shape
    _run(_NN_KERNELS["adaptive_avg_pool2d_backward", dx.dtype],
         (n, c, h, w, dy.shape[2], dy.shape[3], _ptr(dy), dys, _ptr(dx)), (dy,), (dx,))


def batch_norm_forward(x, w, b, running_mean, running_var, training, momentum, eps, y, save_mean, save_invstd):
    """x (n, c, s) read through strides; y (n, c, s) contiguous; running stats
    (contiguous, or None) updated in place when training."""
    x, xs = strided(x)
    w, b = (None if a is None else vector(a) for a in (w, b))
    n, c, s = x.shape
    _run(_NN_KERNELS["batch_norm_forward", y.dtype],
         (n, c, s, _ptr(x), xs, _ptr(w), _ptr(b), _ptr(running_mean), _ptr(running_var),
          int(training), float(momentum), float(eps), _ptr(y), _ptr(save_mean), _ptr(save_invstd)),
         (x, w, b, running_mean, running_var), (y, save_mean, save_invstd, running_mean, running_var))


def batch_norm_backward(dy, x, w, save_mean, save_invstd, training, dx, dw, db):
    dy, dys = strided(dy)
    x, xs = strided(x)
    w, save_mean, save_invstd = (None if a is None else vector(a) for a in (w, save_mean, save_invstd))
    n, c, s = x.shape
    _run(_NN_KERNELS["batch_norm_backward", dy.dtype],
         (n, c, s, _ptr(dy), dys, _ptr(x), xs, _ptr(w), _ptr(save_mean), _ptr(save_invstd), int(training),
          _ptr(dx), _ptr(dw), _ptr(db)), (dy, x, w, save_mean, save_invstd), (dx, dw, db))


# -- recurrent cells: a time step's pointwise math, fused (src/rnn.c) ---------
# The callers (cextend/_ops/recurrent.py) have checked dtypes and shapes;
# here operands become pointers: the gates keep a row stride (a time step
# of a batch-first projection is a row-sliced view), everything else is
# made C-contiguous, and outputs are fresh C-contiguous arrays.

_RNN_KERNELS = {dtype: tuple(getattr(lib, "cextend_%s_%s" % (op, suffix)) for op in
                             ("lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"))
                for dtype, suffix in _SUFFIX.items()}


def _gates(arr):
    """(array, ld): a 2-D gate operand read in place when its columns are
    contiguous and its rows evenly spaced, else a contiguous copy."""
    arr, ld, trans = matrix(arr)
    if trans:
        arr = np.array(arr, order="C", copy=True)
        ld = max(1, arr.shape[1])
    return arr, ld


def _dense(arr):
    return None if arr is None else vector(arr)


_RNN_QUICK = {_F32: ffi.typeof("float *"), _F64: ffi.typeof("double *")}


def _quick_pointers(dtype, arrays):
    """Pointers to C-contiguous arrays of exactly `dtype` (None entries: NULL), or
    None for anything else (which the checked path then copies or refuses)."""
    ctype = _RNN_QUICK.get(dtype)
    if ctype is None:
        return None
    pointers = []
    try:
        for a in arrays:
            if a is None:
                pointers.append(_NULL)
            elif type(a) is _NDARRAY and a.dtype is dtype and a.size:
                pointers.append(_FROM_BUFFER(ctype, a))
            else:
                return None
    except ValueError:              # not C-contiguous
        return None
    return pointers


def lstm_cell_forward(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None, workspace=True):
    """(hy, cy, workspace) of one LSTM step; workspace None when not asked for."""
    dtype = cx.dtype
    quick = _quick_pointers(dtype, (input_gates, hidden_gates, cx, input_bias, hidden_bias))
    if quick is not None:           # C-contiguous operands: no layout to work out
        batch, hidden = cx.shape
        hy, cy = _EMPTY((batch, hidden), dtype), _EMPTY((batch, hidden), dtype)
        ws = _EMPTY((batch, 4 * hidden), dtype) if workspace else None
        ctype = _RNN_QUICK[dtype]
        check(_RNN_KERNELS[dtype][0](batch, hidden, quick[0], 4 * hidden, quick[1], 4 * hidden, quick[3], quick[4],
                                     quick[2], _FROM_BUFFER(ctype, hy), _FROM_BUFFER(ctype, cy),
                                     _NULL if ws is None else _FROM_BUFFER(ctype, ws)))
        return hy, cy, ws
    ig, ld_i = _gates(input_gates)
    hg, ld_h = _gates(hidden_gates)
    cx, ib, hb = vector(cx), _dense(input_bias), _dense(hidden_bias)
    batch, hidden = cx.shape
    dtype = cx.dtype
    hy, cy = _EMPTY((batch, hidden), dtype), _EMPTY((batch, hidden), dtype)
    ws = _EMPTY((batch, 4 * hidden), dtype) if workspace else None
    check(_RNN_KERNELS[dtype][0](batch, hidden, _ptr(ig), ld_i, _ptr(hg), ld_h, _ptr(ib), _ptr(hb), _ptr(cx),
                                 _ptr(hy), _ptr(cy), _ptr(ws)))
    return hy, cy, ws


def lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, gates=True, cell=True):
    """(grad_gates, grad_cx) of one LSTM step, each None when not asked for;
    grad_hy and grad_cy may be None (zeros)."""
    dtype = cx.dtype
    quick = _quick_pointers(dtype, (grad_hy, grad_cy, cx, cy, workspace))
    if quick is not None:
        batch, hidden = cx.shape
        ctype = _RNN_QUICK[dtype]
        grad_gates = _EMPTY((batch, 4 * hidden), dtype) if gates else None
        grad_cx = _EMPTY((batch, hidden), dtype) if cell else None
        check(_RNN_KERNELS[dtype][1](batch, hidden, *quick, _NULL if grad_gates is None else _FROM_BUFFER(ctype, grad_gates),
                                     _NULL if grad_cx is None else _FROM_BUFFER(ctype, grad_cx)))
        return grad_gates, grad_cx
    grad_hy, grad_cy, cx, cy, workspace = (_dense(a) for a in (grad_hy, grad_cy, cx, cy, workspace))
    batch, hidden = cx.shape
    grad_gates = _EMPTY((batch, 4 * hidden), dtype) if gates else None
    grad_cx = _EMPTY((batch, hidden), dtype) if cell else None
    check(_RNN_KERNELS[dtype][1](batch, hidden, _ptr(grad_hy), _ptr(grad_cy), _ptr(cx), _ptr(cy), _ptr(workspace),
                                 _ptr(grad_gates), _ptr(grad_cx)))
    return grad_gates, grad_cx


def gru_cell_forward(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None, workspace=True):
    """(hy, workspace) of one GRU step; workspace None when not asked for."""
    dtype = hx.dtype
    quick = _quick_pointers(dtype, (input_gates, hidden_gates, hx, input_bias, hidden_bias))
    if quick is not None:
        batch, hidden = hx.shape
        hy = _EMPTY((batch, hidden), dtype)
        ws = _EMPTY((batch, 5 * hidden), dtype) if workspace else None
        ctype = _RNN_QUICK[dtype]
        check(_RNN_KERNELS[dtype][2](batch, hidden, quick[0], 3 * hidden, quick[1], 3 * hidden, quick[3], quick[4],
                                     quick[2], _FROM_BUFFER(ctype, hy), _NULL if ws is None else _FROM_BUFFER(ctype, ws)))
        return hy, ws
    ig, ld_i = _gates(input_gates)
    hg, ld_h = _gates(hidden_gates)
    hx, ib, hb = vector(hx), _dense(input_bias), _dense(hidden_bias)
    batch, hidden = hx.shape
    dtype = hx.dtype
    hy = _EMPTY((batch, hidden), dtype)
    ws = _EMPTY((batch, 5 * hidden), dtype) if workspace else None
    check(_RNN_KERNELS[dtype][2](batch, hidden, _ptr(ig), ld_i, _ptr(hg), ld_h, _ptr(ib), _ptr(hb), _ptr(hx),
                                 _ptr(hy), _ptr(ws)))
    return hy, ws


def gru_cell_backward(grad_hy, workspace, input_gates=True, hidden_gates=True, hx=True):
    """(grad_input_gates, grad_hidden_gates, grad_hx) of one GRU step's
    pointwise math, each None when not asked for."""
    dtype = grad_hy.dtype
    quick = _quick_pointers(dtype, (grad_hy, workspace))
    if quick is not None:
        batch, hidden = grad_hy.shape
        ctype = _RNN_QUICK[dtype]
        outs = [_EMPTY((batch, 3 * hidden), dtype) if input_gates else None,
                _EMPTY((batch, 3 * hidden), dtype) if hidden_gates else None,
                _EMPTY((batch, hidden), dtype) if hx else None]
        check(_RNN_KERNELS[dtype][3](batch, hidden, *quick, *[_NULL if o is None else _FROM_BUFFER(ctype, o)
                                                              for o in outs]))
        return tuple(outs)
    grad_hy, workspace = vector(grad_hy), vector(workspace)
    batch, hidden = grad_hy.shape
    gi = _EMPTY((batch, 3 * hidden), dtype) if input_gates else None
    gh = _EMPTY((batch, 3 * hidden), dtype) if hidden_gates else None
    ghx = _EMPTY((batch, hidden), dtype) if hx else None
    check(_RNN_KERNELS[dtype][3](batch, hidden, _ptr(grad_hy), _ptr(workspace), _ptr(gi), _ptr(gh), _ptr(ghx)))
    return gi, gh, ghx
