"""Elementwise functions.  Where the derivative is a function of the
output (exp, tanh, sigmoid, sqrt), the output is saved; masks and signs
are constants, so double backward through them is exact."""
import numpy as np

from cextend._device import DeviceArray, runtime
from cextend.autograd.function import Function
from cextend.autograd._functions._util import constant, wrap


class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        out = wrap(np.exp(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return wrap(np.log(a._data))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g / a


class Sqrt(Function):
    @staticmethod
    def forward(ctx, a):
        with np.errstate(invalid="ignore"):
            out = wrap(np.sqrt(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g / (out * 2)


class Tanh(Function):
    @staticmethod
    def forward(ctx, a):
        out = wrap(np.tanh(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * (1 - out * out)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, a):
        x = a._data
        # exp of a non-positive number only: no overflow for large |x|.
        e = np.exp(-np.abs(x))
        out = wrap(np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out * (1 - out)


class Relu(Function):
    @staticmethod
    def forward(ctx, a):
        if type(a._data) is DeviceArray:
            x = a._data
            out, mask = DeviceArray(x.shape, x.dtype), DeviceArray(x.shape, x.dtype)
            runtime().relu(x, out)
            ones = DeviceArray(x.shape, x.dtype)
            ones[...] = 1
            runtime().relu_backward(x, ones, mask)      # 1 where x > 0: a constant mask
            ctx.mask = constant(mask)
            return wrap(out)
        positive = a._data > 0
        ctx.mask = constant(positive.astype(a._data.dtype))
        return wrap(np.where(positive, a._data, np.zeros((), a._data.dtype)))

    @staticmethod
    def backward(ctx, g):
        return g * ctx.mask


class Abs(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.sign = constant(np.sign(a._data))
        return wrap(np.abs(a._data))

    @staticmethod
    def backward(ctx, g):
        return g * ctx.sign


class Clamp(Function):
    @staticmethod
    def forward(ctx, a, low, high):
        x = a._data
        inside = np.ones(x.shape, bool)
        if low is not None:
            inside &= x >= low
        if high is not None:
            inside &= x <= high
        ctx.mask = constant(inside.astype(x.dtype))
        return wrap(np.clip(x, low, high).astype(x.dtype, copy=False))

    @staticmethod
    def backward(ctx, g):
        return g * ctx.mask, None, None


class Clone(Function):
    @staticmethod
    def forward(ctx, a):
        return wrap(a._data.copy())

    @staticmethod
    def backward(ctx, g):
        return g


class ToCopy(Function):
    """A copy in another dtype; the gradient is cast back."""

    @staticmethod
    def forward(ctx, a, numpy_dtype):
        ctx.in_dtype = a._data.dtype
        return wrap(a._data.astype(numpy_dtype))

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.in_dtype), None


class ToDevice(Function):
    """A copy to "cuda" or "cpu"; the gradient goes back to the source device."""

    @staticmethod
    def forward(ctx, a, target):
        ctx.source = "cuda" if type(a._data) is DeviceArray else "cpu"
        if target == "cuda":
            return wrap(a._data.copy() if ctx.source == "cuda" else DeviceArray.from_host(a._data))
        return wrap(a._data.to_host() if ctx.source == "cuda" else a._data.copy())

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.source), None
