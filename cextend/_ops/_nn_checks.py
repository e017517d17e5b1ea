"""Argument checks and reductions shared by the nn functional ops.

torch's messages are copied where a program might match on them (dtype
names as in "not implemented for 'Long'", the legacy size_average/reduce
deprecation text, "X is not a valid value for reduction").
"""
import warnings

import numpy as np

from cextend._device import DeviceArray, _unsupported
from cextend._ops._operands import require_tensor
from cextend.autograd.grad_mode import is_grad_enabled

_TORCH_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "int64": "Long",
                "int32": "Int", "uint8": "Byte", "bool": "Bool", "int16": "Short", "int8": "Char"}


def functional_call(name):
    """The table's call(lib, *args) for an op that lives in lib.nn.functional only."""
    def call(lib, *args, **kwargs):
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    call.__name__ = "call_nn_functional_" + name
    return call


def torch_name(numpy_dtype):
    """The scalar type name torch prints for a dtype ('Float', 'Long', ...)."""
    return _TORCH_NAMES.get(np.dtype(numpy_dtype).name, np.dtype(numpy_dtype).name)


def host_tensor(x, op, name="input"):
    """x as a Tensor held in host memory (these ops have no CUDA kernels)."""
    require_tensor(x, op, name)
    if type(x._data) is DeviceArray:
        raise _unsupported(op)
    return x


def require_float(x, kernel):
    """torch's refusal of an integer tensor by a floating-point-only kernel."""
    if x._data.dtype.kind != "f":
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (kernel, torch_name(x._data.dtype)))


def cast_error(result_dtype, output_dtype):
    return RuntimeError("result type %s can't be cast to the desired output type %s"
                        % (torch_name(result_dtype), torch_name(output_dtype)))


def check_no_grad(tensor, op, name):
    """torch's refusal of a gradient for an argument it does not differentiate."""
    if tensor is not None and is_grad_enabled() and tensor.requires_grad:
        raise RuntimeError("The function '%s' is not differentiable with respect to argument '%s'. "
                           "This input cannot have requires_grad True." % (op, name))


# -- reductions ---------------------------------------------------------------------------------

def legacy_reduction(size_average, reduce, emit_warning=True, stacklevel=2):
    """The reduction the legacy size_average / reduce pair means (torch's legacy_get_string)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='%s' "
                      "instead." % ret, UserWarning, stacklevel=stacklevel)
    return ret


def reduction_arg(size_average, reduce, reduction, stacklevel=3):
    """The reduction a loss runs with: the legacy pair wins when either is given.
    The warning names the loss function's line, as torch's does (so it shows once)."""
    if size_average is not None or reduce is not None:
        return legacy_reduction(size_average, reduce, stacklevel=stacklevel)
    return check_reduction(reduction)


def check_reduction(reduction):
    if reduction in ("none", "mean", "sum"):
        return reduction
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      UserWarning, stacklevel=4)
        return "mean"
    raise ValueError("%s is not a valid value for reduction" % (reduction,))


def reduce_array(loss, reduction):
    """The numpy side of a reduction (mean of nothing is NaN, as in torch)."""
    if reduction == "none":
        return loss
    total = loss.sum(dtype=loss.dtype)
    if reduction == "sum":
        return np.asarray(total, loss.dtype)
    return np.asarray(total / loss.size if loss.size else np.nan, loss.dtype)


def reduce_tensor(loss, reduction):
    """The same on a Tensor, recorded (for losses that torch composes from other ops)."""
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def reduction_scale(reduction, numel):
    """What backward multiplies by: 1/numel for 'mean', 1 otherwise."""
    if reduction == "mean":
        return 1.0 / numel if numel else float("nan")
    return 1.0


def warn_size_mismatch(input, target, stacklevel=3):
    if input._data.shape != target._data.shape:
        warnings.warn("Using a target size (%s) that is different to the input size (%s). This will "
                      "likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size." % (target.shape, input.shape), UserWarning, stacklevel=stacklevel)
