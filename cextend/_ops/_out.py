"""out=: the checks and the writes of torch's *_out overloads, for every op family.

An out= tensor is a plain buffer: torch refuses it where the op would need
history, resizes it (with a warning) when its shape differs, and casts
into its dtype where the op allows.
"""
import math
import warnings

import numpy as np

from cextend import _capture
from cextend._device import DeviceArray
from cextend._overlap import check_not_read_while_written
from cextend._promotion import _torch_name, check_inplace_cast, result_type
from cextend.autograd import grad_mode
from cextend.autograd.record import check_writable, needs_grad
from cextend.tensor import Tensor


def check_out(out, name, *inputs, differentiable=True):
    """out= is a plain buffer: torch refuses it when a differentiable op
    would need history (non-differentiable ops, comparisons say, accept it)."""
    if not isinstance(out, Tensor):
        raise TypeError("%s(): argument 'out' must be Tensor, not %s" % (name, type(out).__name__))
    if differentiable and grad_mode.is_grad_enabled() and (needs_grad(*inputs) or out.requires_grad):
        raise RuntimeError("%s(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad." % name)


def no_out(out, name):
    """torch has no out= overload for this call: refuse it as its parser does."""
    if out is not None:
        raise TypeError("%s() received an invalid combination of arguments - got an unexpected "
                        "keyword argument 'out' for this overload" % name)


def write_out(out, array, name, strict=False, cast=False, reads=()):
    """Store a result into out= (resized if its shape differs, cast to its dtype).

    strict: out must have the result's dtype (torch's rule for reductions
    such as amax, sort's values; "same_dtype" for the unary ops that keep
    their input's dtype, with TensorIterator's message; "c_type" with the
    message of ATen's structured kernels; or a message of the op's own,
    formatted with %(out)s and %(result)s); cast: any dtype is accepted
    (the op computes in out's dtype, as cumsum does).
    reads: the inputs of a reduction or matrix product, which out may not
    share memory with: torch fills out with the reduction's identity (or
    zeros) before it reads them, so its answer there is that of the
    overwritten input; cextend refuses, as for other order-dependent writes."""
    check_writable(out)
    if reads:
        check_not_read_while_written(out._data, reads)
    source = np.dtype(array.dtype)
    if source != out._data.dtype:
        if strict:
            if strict == "same_dtype":      # TensorIterator's check_all_same_dtype
                raise RuntimeError("Found dtype %s but expected %s"
                                   % (_torch_name(out._data.dtype), _torch_name(source)))
            if strict == "c_type":          # ATen's check for fixed-dtype outputs
                raise RuntimeError("Expected out tensor to have dtype %s, but got %s instead"
                                   % (c_type_name(source), c_type_name(out._data.dtype)))
            if "%(" in str(strict):         # an op's own wording
                raise RuntimeError(strict % {"out": _torch_name(out._data.dtype), "result": _torch_name(source)})
            raise RuntimeError("%s(): expected out to have dtype %s, but got %s"
                               % (name, _torch_name(source), _torch_name(out._data.dtype)))
        if not cast:
            check_inplace_cast(source, out._data.dtype)
    if out._data.shape != array.shape:
        if out._data.size:
            warnings.warn("An output with one or more elements was resized since it had shape %s, "
                          "which does not match the required output shape %s. This behavior is "
                          "deprecated; pass an out= of the right shape." % (
                              list(out._data.shape), list(array.shape)), UserWarning, stacklevel=3)
        if out._base is not None:
            _restride_view(out, array.shape, name)
            out._data[...] = array
        else:
            # (np.asarray: a numpy scalar result would give a read-only scalar)
            out._data = (np.asarray(array).astype(out._data.dtype) if type(array) is not DeviceArray
                         else array.astype(out._data.dtype))
    else:
        out._data[...] = array
    out._version_counter.bump()
    if _capture._active is not None:
        _capture.in_place(out)
    return out


def _restride_view(out, shape, name):
    """Resize a view, as torch's resize_ does: where its storage (the base's
    buffer) holds enough elements from the view's offset, the view becomes a
    contiguous block there; torch would grow a storage that is too small,
    which a numpy buffer cannot, so that case is refused."""
    root, data = out._base._data, out._data
    count = math.prod(shape)
    if (type(root) is np.ndarray and type(data) is np.ndarray and root.flags.c_contiguous
            and root.dtype == data.dtype):
        start = (data.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // root.itemsize
        if 0 <= start and start + count <= root.size:
            out._data = root.reshape(-1)[start:start + count].reshape(shape)
            out._view_fn = lambda base: base.reshape(-1)[start:start + count].view(shape)
            return
    raise RuntimeError("%s(): out= is a view whose storage is too small to be resized from %s to %s "
                       "(torch would grow the storage; pass an out= of the right shape)"
                       % (name, list(data.shape), list(shape)))


_C_TYPE_NAMES = {"float64": "double", "float32": "float", "float16": "c10::Half", "int64": "long int",
                 "int32": "int", "uint8": "unsigned char", "bool": "bool"}


def c_type_name(numpy_dtype):
    """The C++ type name ATen prints for a dtype in some of its checks."""
    name = np.dtype(numpy_dtype).name
    return _C_TYPE_NAMES.get(name, name)


def finish_out(out, result, name, *inputs, reads=(), **options):
    """An op computed as usual, then stored into out= with torch's checks
    (the result carries no history: out= refuses inputs that need grad)."""
    check_out(out, name, *inputs)
    return write_out(out, result._data, name, reads=reads, **options)


def write_outs(out, values, indices, name, return_type):
    """out=(values, indices) of a reduction with indices: both written (torch
    requires the input's dtype and int64), returned as torch's *_out tuple."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError("%s(): argument 'out' must be tuple of Tensors" % name)
    out_values, out_indices = out
    check_out(out_values, name)
    check_out(out_indices, name)
    if out_indices._data.dtype != np.int64:
        raise RuntimeError("Expected out tensor to have dtype long int, but got %s instead"
                           % c_type_name(out_indices._data.dtype))
    write_out(out_values, values._data, name, strict=True)
    write_out(out_indices, indices._data, name, strict=True)
    return return_type(out_values, out_indices)


def common_dtype(*operands):
    return result_type(*operands)
