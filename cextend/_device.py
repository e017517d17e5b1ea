"""DeviceArray: a tensor's data in device (CUDA) memory.

A Tensor on the GPU holds a DeviceArray where a CPU tensor holds a numpy
array.  DeviceArray speaks exactly the part of numpy's protocol that the
device op set needs (add/subtract/multiply with arrays or scalars, divide
by a scalar, negate, sum/mean over leading, trailing or all dims,
reshape, copies, element access for gradcheck), each through one kernel
of the runtime; anything else raises a TypeError naming the operation and
the device, and mixing devices raises naming both.

The runtime is the CUDA library (cextend.cuda) by default; tests install
another implementation of the same interface to exercise this layer on
machines without a GPU.
"""
import math
import numbers
import threading
import types

import numpy as np
from cextend import cuda

_SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64))
_state = threading.local()
_override = None


def runtime():
    """The device runtime in use: cextend.cuda's unless one was installed."""
    if _override is not None:
        return _override
    return cuda.runtime()


def available():
    """Whether device tensors can be made (a GPU answered, or a runtime was installed)."""
    if _override is not None:
        return True
    return cuda.is_available()


def unavailable_reason():
    return None if available() else cuda.unavailable_reason()


def use_runtime(rt):
    """Install a runtime (None restores CUDA's); returns the previous one."""
    global _override
    previous, _override = _override, rt
    return previous


def _unsupported(what):
    return TypeError("%s is not supported on cuda tensors (cextend's CUDA op set: copy, fill, "
                     "add/sub/mul with tensors or scalars, division by a scalar, sum, mean, relu, "
                     "reshape and the C-backed Functions); move the tensor with .cpu() first" % what)


def _device_name(value):
    return "cuda:0" if isinstance(value, DeviceArray) else "cpu"


class DeviceArray:
    """A C-contiguous array of float32/float64/int64 in device memory."""

    __array_priority__ = 10000

    def __init__(self, shape, dtype, buffer=None):
        self.dtype = np.dtype(dtype)
        if self.dtype not in _SUPPORTED_DTYPES:
            raise TypeError("cuda tensors hold float32, float64 or int64, not %s" % self.dtype)
        self.shape = tuple(int(s) for s in shape)
        self.buffer = buffer if buffer is not None else runtime().alloc(self.nbytes)

    # -- numpy-like metadata -------------------------------------------------
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    flags = types.SimpleNamespace(c_contiguous=True, aligned=True, writeable=True, f_contiguous=False)

    @property
    def strides(self):
        strides, step = [], self.itemsize
        for s in reversed(self.shape):
            strides.append(step)
            step *= max(s, 1)
        return tuple(reversed(strides))

    def __repr__(self):
        return "DeviceArray(%s, shape=%s, dtype=%s)" % (np.asarray(self), self.shape, self.dtype)

    # -- transfers -------------------------------------------------------------
    @classmethod
    def from_host(cls, array):
        shape = np.shape(array)     # ascontiguousarray makes a 0-d array 1-d
        array = np.ascontiguousarray(array)
        out = cls(shape, array.dtype)
        runtime().upload(out.buffer, array)
        return out

    def to_host(self):
        return runtime().download(self.buffer, self.shape, self.dtype)

    def __array__(self, dtype=None, copy=None):
        host = self.to_host()
        return host if dtype is None else host.astype(dtype)

    def item(self):
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.to_host().item()

    def tolist(self):
        return self.to_host().tolist()

    # -- copies and views --------------------------------------------------------
    def copy(self):
        out = DeviceArray(self.shape, self.dtype)
        runtime().copy(out.buffer, self.buffer, self.nbytes)
        return out

    def reshape(self, *shape, copy=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = list(shape)
        if shape.count(-1) == 1:
            known = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = self.size // known if known else 0
        if math.prod(shape) != self.size:
            raise ValueError("cannot reshape array of size %d into shape %s" % (self.size, tuple(shape)))
        return DeviceArray(shape, self.dtype, self.buffer)      # contiguous: always a view

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self.copy() if copy else self
        out = DeviceArray(self.shape, dtype)
        runtime().cast(self.buffer, self.dtype, out.buffer, dtype, self.size)
        return out

    # -- element access (gradcheck perturbs one element at a time) -----------------
    def _offset(self, key):
        if not (isinstance(key, tuple) and len(key) == self.ndim and
                all(isinstance(k, numbers.Integral) for k in key)):
            return None
        return int(np.ravel_multi_index(key, self.shape)) if self.ndim else 0

    def __getitem__(self, key):
        offset = self._offset(key if isinstance(key, tuple) else (key,))
        if offset is None:
            raise _unsupported("indexing with %r" % (key,))
        return runtime().read(self.buffer, offset, self.dtype)

    def __setitem__(self, key, value):
        offset = self._offset(key if isinstance(key, tuple) else (key,))
        if offset is not None:
            runtime().write(self.buffer, offset, self.dtype, value)
            return
        if key is not Ellipsis and key != slice(None):
            raise _unsupported("assignment to %r" % (key,))
        if isinstance(value, numbers.Number) or (isinstance(value, np.ndarray) and value.ndim == 0):
            runtime().fill(self.buffer, self.dtype, self.size, float(value))
        elif isinstance(value, DeviceArray):
            self._broadcast_from(value)
        elif isinstance(value, np.ndarray):
            host = np.ascontiguousarray(np.broadcast_to(value, self.shape), dtype=self.dtype)
            runtime().upload(self.buffer, host)
        else:
            raise _unsupported("assigning a %s" % type(value).__name__)

    def _broadcast_from(self, value):
        """self[...] = value, value broadcast to self.shape (strides 0)."""
        if value.dtype != self.dtype:
            value = value.astype(self.dtype)
        lead = self.ndim - value.ndim
        if lead < 0 or any(v not in (1, s) for v, s in zip(value.shape, self.shape[lead:])):
            raise ValueError("could not broadcast %s into %s" % (value.shape, self.shape))
        element_strides = [s // self.itemsize for s in value.strides]
        strides = [0] * lead + [0 if v == 1 else st for v, st in zip(value.shape, element_strides)]
        runtime().strided_copy(self.shape, strides, self.itemsize, value.buffer, self.buffer)

    # -- arithmetic ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            raise _unsupported("numpy.%s.%s" % (ufunc.__name__, method))
        out = kwargs.pop("out", None)
        kwargs.pop("casting", None)
        if kwargs:
            raise _unsupported("numpy.%s with %s" % (ufunc.__name__, ", ".join(kwargs)))
        out = out[0] if isinstance(out, tuple) else out
        if ufunc is np.negative:
            return _binary(2, inputs[0], -1.0, out)
        if ufunc in (np.add, np.subtract, np.multiply):
            return _binary({np.add: 0, np.subtract: 1, np.multiply: 2}[ufunc], inputs[0], inputs[1], out)
        if ufunc is np.true_divide and isinstance(inputs[1], numbers.Real) and isinstance(inputs[0], DeviceArray):
            return _binary(2, inputs[0], 1.0 / float(inputs[1]), out)
        raise _unsupported("numpy.%s" % ufunc.__name__)

    def __array_function__(self, func, types_, args, kwargs):
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise _unsupported("numpy.%s" % func.__name__)
        return handler(*args, **kwargs)

    def __add__(self, other):
        return np.add(self, other)

    def __radd__(self, other):
        return np.add(other, self)

    def __sub__(self, other):
        return np.subtract(self, other)

    def __rsub__(self, other):
        return np.subtract(other, self)

    def __mul__(self, other):
        return np.multiply(self, other)

    def __rmul__(self, other):
        return np.multiply(other, self)

    def __truediv__(self, other):
        return np.true_divide(self, other)

    def __neg__(self):
        return np.negative(self)

    def _refuse(name):
        def method(self, *args):
            raise _unsupported(name)
        return method

    __matmul__ = __rmatmul__ = _refuse("matmul")
    __pow__ = __rpow__ = _refuse("power")
    __rtruediv__ = _refuse("division by a tensor")
    __lt__ = __le__ = __gt__ = __ge__ = _refuse("comparison")
    __eq__ = __ne__ = _refuse("comparison")
    __hash__ = object.__hash__
    del _refuse

    def __iadd__(self, other):
        return np.add(self, other, out=self)

    def __isub__(self, other):
        return np.subtract(self, other, out=self)

    def __imul__(self, other):
        return np.multiply(self, other, out=self)

    # -- reductions -----------------------------------------------------------------
    def sum(self, axis=None, keepdims=False, dtype=None):
        axes = tuple(range(self.ndim)) if axis is None else \
            tuple(sorted(a % max(self.ndim, 1) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))))
        if axes and axes != tuple(range(axes[0], axes[-1] + 1)):
            raise _unsupported("sum over the non-adjacent dims %s" % (axes,))
        out_shape = tuple(1 if i in axes else s for i, s in enumerate(self.shape)) if keepdims else \
            tuple(s for i, s in enumerate(self.shape) if i not in axes)
        out = DeviceArray(out_shape, self.dtype)
        if axes:
            outer = math.prod(self.shape[:axes[0]])
            reduce = math.prod(self.shape[axes[0]:axes[-1] + 1])
            inner = math.prod(self.shape[axes[-1] + 1:])
            runtime().sum(self.buffer, self.dtype, outer, reduce, inner, out.buffer)
        else:
            runtime().copy(out.buffer, self.buffer, self.nbytes)
        return out

    def mean(self, axis=None, keepdims=False):
        total = self.sum(axis, keepdims)
        count = self.size // max(total.size, 1) if total.size else 0
        return total / count if count else total


def _binary(op, a, b, out):
    """a op b elementwise (op 0 add, 1 subtract, 2 multiply), one of them
    possibly a scalar; shapes must match exactly."""
    for operand in (a, b):
        if isinstance(operand, np.ndarray):
            raise TypeError("operands on different devices: cuda:0 and cpu (%s)" % (
                ("add", "subtract", "multiply")[op]))
        if not isinstance(operand, (DeviceArray, numbers.Number)):
            raise _unsupported("arithmetic with %s" % type(operand).__name__)
    if isinstance(a, DeviceArray) and isinstance(b, DeviceArray):
        if a.shape != b.shape:
            raise _unsupported("broadcasting %s with %s" % (a.shape, b.shape))
        if a.dtype != b.dtype:
            raise _unsupported("mixing %s and %s" % (a.dtype, b.dtype))
        first, second, scalar, reversed_ = a, b, 0.0, False
    elif isinstance(a, DeviceArray):
        first, second, scalar, reversed_ = a, None, float(b), False
    else:
        first, second, scalar, reversed_ = b, None, float(a), True
    if first.dtype == np.int64:
        raise _unsupported("arithmetic on int64 tensors")
    result = out if out is not None else DeviceArray(first.shape, first.dtype)
    if result.shape != first.shape:
        raise ValueError("output shape %s does not match %s" % (result.shape, first.shape))
    runtime().binary(op, first.dtype, first.size, first.buffer, None if second is None else second.buffer,
                     scalar, reversed_, result.buffer)
    return result


def _reshape(a, shape, order="C", copy=None):
    return a.reshape(shape)


def _expand_dims(a, axis):
    shape = list(a.shape)
    shape.insert(axis % (a.ndim + 1), 1)
    return a.reshape(shape)


def _squeeze(a, axis=None):
    axes = axis if isinstance(axis, tuple) else ((axis,) if axis is not None else
                                                 tuple(i for i, s in enumerate(a.shape) if s == 1))
    return a.reshape([s for i, s in enumerate(a.shape) if i not in {x % a.ndim for x in axes}])


def _may_share_memory(a, b, max_work=None):
    return isinstance(a, DeviceArray) and isinstance(b, DeviceArray) and a.buffer is b.buffer


def _copyto(dst, src, casting="same_kind", where=True):
    """np.copyto across devices: onto the device, or down to a host array."""
    if where is not True:
        raise _unsupported("numpy.copyto with where=")
    if isinstance(dst, DeviceArray):
        dst[...] = src
    else:
        np.copyto(dst, src.to_host(), casting=casting)


def _zeros_like(a, dtype=None):
    out = DeviceArray(a.shape, dtype or a.dtype)
    out[...] = 0
    return out


_FUNCTIONS = {np.reshape: _reshape, np.expand_dims: _expand_dims, np.squeeze: _squeeze,
              np.may_share_memory: _may_share_memory, np.shares_memory: _may_share_memory,
              np.zeros_like: _zeros_like, np.copyto: _copyto, np.sum: lambda a, axis=None, keepdims=False: a.sum(axis, keepdims)}


def empty_like(shape, dtype, like):
    """An uninitialised array on the device `like` lives on."""
    if isinstance(like, DeviceArray):
        return DeviceArray(shape, dtype)
    return np.empty(shape, dtype)


def filled_like(shape, dtype, value, like):
    out = empty_like(shape, dtype, like)
    out[...] = value
    return out
