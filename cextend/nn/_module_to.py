"""Module.to's arguments, parsed as torch's torch._C._nn._parse_to: one of
three signatures (device and dtype, dtype, tensor), torch's error for
anything else, and no `copy`."""
from cextend import _dtype
from cextend._memory_format import memory_format as _memory_format
from cextend.device import as_device
from cextend.tensor import Tensor


_TO_SIGNATURES = (
    # (positional parameters, required ones); memory_format is keyword-only in each
    (("device", "dtype", "non_blocking", "copy"), ()),
    (("dtype", "non_blocking", "copy"), ("dtype",)),
    (("tensor", "non_blocking", "copy"), ("tensor",)),
)
_TO_SIGNATURE_TEXT = (
    " * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
    " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, torch.memory_format memory_format "
    "= None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, torch.memory_format memory_format = "
    "None)\n")


def _is_device(value, first_signature):
    if value is None:
        return first_signature
    if isinstance(value, bool):
        return False
    return isinstance(value, (str, int)) or type(value).__name__ == "device"


def _is_dtype(value, first_signature):
    if value is None:
        return first_signature
    return isinstance(value, _dtype.dtype) or any(value is t for t in (float, int, bool))


_TO_CHECKS = {
    "device": _is_device,
    "dtype": _is_dtype,
    "tensor": lambda value, first: isinstance(value, Tensor),
    "non_blocking": lambda value, first: isinstance(value, bool),
    "copy": lambda value, first: isinstance(value, bool),
    "memory_format": lambda value, first: value is None or isinstance(value, _memory_format),
}


def _to_type_name(value):
    """A value's type as torch's argument parser names it."""
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, _dtype.dtype):
        return "torch.dtype"
    if isinstance(value, _memory_format):
        return "torch.memory_format"
    if type(value).__name__ == "device" and not isinstance(value, str):
        return "torch.device"
    return type(value).__name__


def _match_to_signature(args, kwargs):
    """The first of Module.to's signatures that args and kwargs fit: parameter name -> value."""
    for number, (params, required) in enumerate(_TO_SIGNATURES):
        if len(args) > len(params):
            continue
        bound = dict(zip(params, args))
        if any(name in bound or (name not in params and name != "memory_format") for name in kwargs):
            continue
        bound.update(kwargs)
        if all(name in bound for name in required) and \
                all(_TO_CHECKS[name](value, number == 0) for name, value in bound.items()):
            return bound
    got = [_to_type_name(a) for a in args]
    named = ["{}={}".format(k, _to_type_name(v)) for k, v in kwargs.items()]
    described = ", ".join(got + named) if got else "".join(n + ", " for n in named)
    raise TypeError("to() received an invalid combination of arguments - got ({}), but expected one of:\n{}"
                    .format(described, _TO_SIGNATURE_TEXT))


def _parse_to(args, kwargs):
    """(device, dtype, non_blocking, memory_format) from Module.to's arguments, as torch's
    torch._C._nn._parse_to: one of three signatures, and no `copy`."""
    bound = _match_to_signature(args, kwargs)
    if "copy" in bound:
        raise RuntimeError(".to() does not accept copy argument")
    device, dtype = bound.get("device"), bound.get("dtype")
    tensor = bound.get("tensor")
    if tensor is not None:
        device, dtype = tensor.device, tensor.dtype
    if isinstance(device, int):
        device = "cuda:%d" % device                   # an index means a CUDA device, as in torch
    if device is not None:
        device = as_device(device)
    if dtype is not None:
        dtype = _dtype.as_dtype(dtype)
    return device, dtype, bound.get("non_blocking", False), bound.get("memory_format")
