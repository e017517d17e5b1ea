"""The CUDA kernels on DeviceArrays: cextend.ops's layer for the GPU.

The linear op's table entry names these as its CUDA kernels; the
extension-ffi examples (cextend.functions) call them as their
`if input.is_cuda:` branch did.  Operands of other dtypes or shapes raise
a clear error naming them.
"""
import math

import numpy as np

from cextend._device import DeviceArray, runtime
from cextend._errors import ArgumentError

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def is_cuda(op, **tensors):
    """True if the (non-None) tensors are all on the GPU, False if all on
    the CPU; RuntimeError naming each device if they are mixed."""
    given = {name: t for name, t in tensors.items() if t is not None}
    on_gpu = {name: t.is_cuda for name, t in given.items()}
    if len(set(on_gpu.values())) > 1:
        raise RuntimeError("%s: operands on different devices: %s" % (
            op, ", ".join("%s on %s" % (name, t.device) for name, t in given.items())))
    return any(on_gpu.values())


def _float(op, **arrays):
    dtypes = {name: a.dtype for name, a in arrays.items() if a is not None}
    first = next(iter(dtypes.values()))
    if first not in _FLOATS or any(d != first for d in dtypes.values()):
        raise TypeError("%s on cuda needs float32 or float64 operands of one dtype, got %s" % (
            op, ", ".join("%s %s" % kv for kv in dtypes.items())))
    return first


def linear_forward(x, w, b):
    op = "LinearFunction"
    _float(op, input=x, weight=w, bias=b)
    k, m = x.shape[-1], w.shape[0]
    if w.ndim != 2 or w.shape[1] != k or (b is not None and b.shape != (m,)):
        raise ArgumentError("%s: input %s, weight %s and bias %s do not match (*, K), (M, K), (M,)" % (
            op, x.shape, w.shape, None if b is None else b.shape))
    rows = math.prod(x.shape[:-1])
    y = DeviceArray((rows, m), x.dtype)
    runtime().linear_forward(x.reshape(rows, k), w, b, y)
    return y.reshape(x.shape[:-1] + (m,))


def linear_backward(g, x, w, *, input=True, weight=True, bias=True):
    """(dx, dw, db) of linear_forward, None for those not asked (cextend.ops.linear_backward's signature)."""
    need_x, need_w, need_b = input, weight, bias
    k, m = x.shape[-1], w.shape[0]
    rows = math.prod(x.shape[:-1])
    dx = DeviceArray((rows, k), x.dtype) if need_x else None
    dw = DeviceArray((m, k), x.dtype) if need_w else None
    db = DeviceArray((m,), x.dtype) if need_b else None
    if need_x or need_w or need_b:
        runtime().linear_backward(g.reshape(rows, m), x.reshape(rows, k), w, dx, dw, db)
    return (None if dx is None else dx.reshape(x.shape)), dw, db


def add_forward(a, b):
    _float("Add", input1=a, input2=b)
    if a.shape != b.shape:
        raise ArgumentError("Add: input1 and input2 must have the same shape, got %s and %s" % (a.shape, b.shape))
    out = DeviceArray(a.shape, a.dtype)
    runtime().add_forward(a, b, out)
    return out


def add_backward(g, need_a, need_b):
    grad_a = DeviceArray(g.shape, g.dtype) if need_a else None
    grad_b = DeviceArray(g.shape, g.dtype) if need_b else None
    runtime().add_backward(g, grad_a, grad_b)
    return grad_a, grad_b


def mul_constant(x, c):
    _float("MulConstant", tensor=x)
    out = DeviceArray(x.shape, x.dtype)
    runtime().mul_constant_forward(x, c, out)
    return out


def pool_forward(x):
    _float("GlobalMaxPool", input=x)
    if x.ndim < 2:
        raise ArgumentError("GlobalMaxPool: input must have at least 2 dimensions (*, H, W), got %s" % (x.shape,))
    planes, plane_size = math.prod(x.shape[:-2]), x.shape[-2] * x.shape[-1]
    if planes and not plane_size:
        raise ArgumentError("GlobalMaxPool: input has empty (H, W) planes, shape %s" % (x.shape,))
    values = DeviceArray(x.shape[:-2], x.dtype)
    indices = DeviceArray(x.shape[:-2], np.int64)
    runtime().pool_forward(x, planes, plane_size, values, indices)
    return values, indices


def pool_backward(g, indices, input_shape):
    planes, plane_size = math.prod(input_shape[:-2]), input_shape[-2] * input_shape[-1]
    grad_x = DeviceArray(input_shape, g.dtype)
    runtime().pool_backward(g, indices, planes, plane_size, grad_x)
    return grad_x


def relu_forward(x):
    out = DeviceArray(x.shape, x.dtype)
    runtime().relu(x, out)
    return out


def relu_backward(g, result):
    """g where relu's result is positive, else 0."""
    out = DeviceArray(g.shape, g.dtype)
    runtime().relu_backward(result, g, out)
    return out
