"""Calling a cffi function with cextend Tensors and numpy arrays.

A pointer parameter (float *, double *, int64_t *, ...) takes a Tensor or
an array of its dtype; a TH struct parameter (THFloatTensor *, ...) takes a
Tensor through the TH shim.  cffi drops const from types, so which pointers
are written through is read from the prototypes (_const_pointer_params):
those must be C-contiguous and writable, and their Tensor's version is
bumped; a const one may be copied to C order first.
"""
import re

import numpy as np

from cextend._legacy import FatalError
from cextend.tensor import Tensor
from cextend.utils import _th

_POINTER_DTYPES = {"float": np.dtype(np.float32), "double": np.dtype(np.float64),
                   "int64_t": np.dtype(np.int64), "int32_t": np.dtype(np.int32),
                   "uint8_t": np.dtype(np.uint8)}


def _const_pointer_params(header):
    """{function: [True if parameter i is a const pointer]} from prototypes.

    cffi drops const from types, so outputs are told from inputs here.
    """
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", header, flags=re.S)
    result = {}
    for match in re.finditer(r"([A-Za-z_]\w*)\s*\(([^()]*)\)\s*;", text):
        params = [p.strip() for p in match.group(2).split(",")] if match.group(2).strip() else []
        result[match.group(1)] = [p.startswith("const") or " const" in p.split("*")[0] for p in params]
    return result


def _wrap_function(function, ffi, const_flags=None, lib=None):
    """A Python function calling `function` with Tensors/arrays made pointers
    (float*, double*, int64_t*, ...) or TH tensor structs (TH*Tensor *)."""
    try:
        ctype = ffi.typeof(function)
    except TypeError:
        return function
    plans = []
    for i, arg in enumerate(ctype.args):
        const = bool(const_flags and i < len(const_flags) and const_flags[i])
        if arg.kind == "pointer" and arg.item.kind == "primitive" and arg.item.cname in _POINTER_DTYPES:
            plans.append(("pointer", _POINTER_DTYPES[arg.item.cname], arg.item.cname, const))
        elif arg.kind == "pointer" and arg.item.kind == "struct" and \
                arg.item.cname.replace("struct ", "") == "THCudaTensor":
            plans.append(("thc", None, "THCudaTensor", False))
        elif arg.kind == "pointer" and arg.item.kind == "struct" and \
                arg.item.cname.replace("struct ", "") in _th.TYPES:
            th_name = arg.item.cname.replace("struct ", "")
            plans.append(("th", _th.TYPES[th_name][2], th_name, const))
        else:
            plans.append(None)
    name = getattr(function, "__name__", "function")
    result_kind = ctype.result
    returns_th = (result_kind.kind == "pointer" and result_kind.item.kind == "struct" and
                  result_kind.item.cname.replace("struct ", "") in _th.TYPES and lib is not None)
    returned_type = result_kind.item.cname.replace("struct ", "") if returns_th else None

    def call(*args):
        if len(args) != len(plans):
            raise TypeError("%s() takes %d arguments (%d given)" % (name, len(plans), len(args)))
        converted, keep = [], []
        state = _th.CallState(ffi, lib)
        try:
            for i, (value, plan) in enumerate(zip(args, plans)):
                if plan is not None and plan[0] == "thc":
                    raise TypeError("%s(): argument %d is a THCudaTensor *; converting cextend's CUDA "
                                    "tensors to THC structs is not supported yet" % (name, i + 1))
                if plan is not None and isinstance(value, (Tensor, np.ndarray)):
                    if plan[0] == "th":
                        argument = _th.ThArgument(state, plan, value, i + 1, name)
                        state.arguments.append(argument)
                        converted.append(argument.struct)
                    else:
                        array, pointer = _to_pointer(ffi, plan, value, i, name)
                        keep.append(array)
                        converted.append(pointer)
                elif plan is not None and plan[0] == "th" and value is not None:
                    raise TypeError("%s(): argument %d must be a cextend Tensor (a %s *), got %s"
                                    % (name, i + 1, plan[2], type(value).__name__))
                else:
                    converted.append(value)
        except BaseException:
            state.release()     # the structs made for earlier arguments
            raise
        result = None
        try:
            result = function(*converted)
        finally:
            error = _th.take_error(ffi, lib) if lib is not None else ""
            try:
                for argument in state.arguments:
                    argument.sync_back()
                if returns_th and result is not None and result != ffi.NULL:
                    result = _th.returned_tensor(state, returned_type, result, name)
            finally:
                state.release()
        if error:
            raise FatalError("%s(): %s" % (name, error))
        return result

    call.__name__ = name
    call.__doc__ = "%s, with Tensor/ndarray arguments for pointer parameters." % ctype.cname
    return call


def _to_pointer(ffi, plan, value, i, name):
    _, dtype, cname, const = plan
    array = value._data if isinstance(value, Tensor) else value
    if array.dtype != dtype:
        raise TypeError("%s(): argument %d must be %s data (a %s * parameter), got %s"
                        % (name, i + 1, dtype.name, cname, array.dtype))
    if not (array.flags.c_contiguous and array.flags.aligned):
        if not const:
            raise ValueError("%s(): argument %d is written through and must be C-contiguous "
                             "and aligned; call .contiguous() first" % (name, i + 1))
        array = np.array(array, order="C", copy=True)
    if not const and not array.flags.writeable:
        raise ValueError("%s(): argument %d is written through but is read-only" % (name, i + 1))
    if not const and isinstance(value, Tensor):
        value._bump_version()
    return array, ffi.from_buffer(cname + " *", array)
