"""Tensor: a numpy array that records the operations applied to it.

A Tensor owns (or views) a numpy array, `_data`.  Differentiable methods
are Functions (cextend.autograd._functions), so results carry a grad_fn
and `backward()` runs the engine.  Views share their base's storage and
version counter; in-place changes bump the counter, so a backward that
needs a modified tensor raises instead of using stale values.
"""
import math
import numbers

import numpy as np

from cextend import _dtype, _random
from cextend._device import DeviceArray
from cextend.autograd import grad_mode


class Size(tuple):
    """A tensor's shape: a tuple that prints as cextend.Size([...])."""

    def __repr__(self):
        return "cextend.Size(%s)" % list(self)

    def numel(self):
        return math.prod(self)


class _Version:
    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


def _wrap(array, requires_grad=False):
    """A Tensor around `array` (no copy, no checks): the internal constructor."""
    t = Tensor.__new__(Tensor)
    kind = type(array)
    t._init(array if kind is np.ndarray or kind is DeviceArray else np.asarray(array), requires_grad)
    return t


def _sizes(args, what="size"):
    """Sizes given as ints, or as one tuple/list/Size."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for s in args:
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError("%s must be integers, got %r" % (what, args))
    return tuple(int(s) for s in args)


def _dim(dim, ndim):
    """A dimension index in [0, ndim), from a possibly negative one."""
    if not isinstance(dim, numbers.Integral):
        raise TypeError("dim must be an int, got %s" % type(dim).__name__)
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-size, size - 1, dim))
    return int(dim) % size


def _operand(value):
    """A Tensor, a Python scalar, or NotImplemented for other types.

    numpy scalars become Python scalars (weak in type promotion, as in
    torch); numpy arrays become constant Tensors.
    """
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, np.ndarray):
        return _wrap(value)
    return NotImplemented


def _index_key(key):
    """Tensors inside an index become numpy arrays."""
    if isinstance(key, tuple):
        return tuple(_index_key(k) for k in key)
    if isinstance(key, Tensor):
        return key._data
    if isinstance(key, list):
        return np.asarray(key)
    return key


def _arithmetic(function_name, reflected=False):
    """A binary operator method: self op other (or other op self), as the
    named Function; NotImplemented for operands Tensor does not take."""
    def method(self, other):
        other = _operand(other)
        if other is NotImplemented:
            return NotImplemented
        function = getattr(_F, function_name)
        return function.apply(other, self) if reflected else function.apply(self, other)
    method.__name__ = "__%s%s__" % ("r" if reflected else "", function_name.lower())
    return method


class Tensor:
    """A numpy-backed tensor with autograd.

    Tensor(*sizes) is uninitialised float32; Tensor(data) copies data as
    float32 (as torch.Tensor does).  Use cextend.tensor() to keep a dtype.
    """

    __slots__ = ("_data", "_requires_grad", "_grad", "_grad_fn", "_output_nr",
                 "_version_counter", "_base", "_accumulator", "__weakref__")
    __array_priority__ = 1000
    __array_ufunc__ = None      # numpy defers to Tensor's reflected operators
    __hash__ = object.__hash__

    def __init__(self, *args):
        if len(args) == 1 and not isinstance(args[0], numbers.Integral):
            source = args[0]._data if isinstance(args[0], Tensor) else args[0]
            data = np.array(source, dtype=np.float32)
        else:
            data = np.empty(_sizes(args), np.float32)
        self._init(data, False)

    def _init(self, data, requires_grad):
        self._data = data
        self._requires_grad = requires_grad
        self._grad = None
        self._grad_fn = None
        self._output_nr = 0
        self._version_counter = _Version()
        self._base = None
        self._accumulator = None

    # -- autograd attributes ---------------------------------------------
    @property
    def data(self):
        """The same storage as a Tensor outside the graph (changes to it are not tracked)."""
        return _wrap(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError("data must be a Tensor, got %s" % type(value).__name__)
        self._data = value._data

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        flag = bool(flag)
        if self._grad_fn is not None and not flag:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want "
                               "to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if flag and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients, got %s"
                               % self.dtype.name)
        self._requires_grad = flag

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad must be a Tensor or None, got %s" % type(value).__name__)
            if value.shape != self.shape:
                raise RuntimeError("assigned grad has data of a different size: %s vs the tensor's %s"
                                   % (list(value.shape), list(self.shape)))
        self._grad = value

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def is_leaf(self):
        return self._grad_fn is None

    @property
    def _version(self):
        return self._version_counter.value

    def _bump_version(self):
        self._version_counter.value += 1

    def retain_grad(self):
        """Keep .grad for this non-leaf tensor after backward."""
        if self._grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        self._grad_fn._retain(self._output_nr, self)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the leaves' .grad."""
        from cextend.autograd import engine
        engine.backward((self,), None if gradient is None else (gradient,),
                        retain_graph, create_graph, inputs)

    def detach(self):
        """The same storage and version counter, outside the graph."""
        out = _wrap(self._data)
        out._version_counter = self._version_counter
        out._base = self._base
        return out

    def detach_(self):
        self._grad_fn = None
        self._requires_grad = False
        return self

    def _alias(self):
        """A new Tensor over the same storage (what returning an input means)."""
        out = _wrap(self._data)
        out._version_counter = self._version_counter
        out._base = self._base if self._base is not None else self
        return out

    # -- metadata ---------------------------------------------------------
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_dim(dim, self._data.ndim)]

    def dim(self):
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    @property
    def dtype(self):
        return _dtype.from_numpy(self._data.dtype)

    def is_floating_point(self):
        return self._data.dtype.kind == "f"

    def element_size(self):
        return self._data.itemsize

    def stride(self, dim=None):
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[_dim(dim, self._data.ndim)]

    def is_contiguous(self):
        return self._data.flags.c_contiguous

    @property
    def device(self):
        from cextend.device import CPU, CUDA
        return CUDA if type(self._data) is DeviceArray else CPU

    @property
    def is_cuda(self):
        return type(self._data) is DeviceArray

    def cuda(self, device=None):
        """A copy on the GPU (self if already there); differentiable."""
        return self.to("cuda" if device is None else device)

    # -- conversion -------------------------------------------------------
    def numpy(self):
        """The numpy array behind this tensor (shared memory)."""
        if type(self._data) is DeviceArray:
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy "
                            "the tensor to host memory first.")
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if dtype is not None and array.dtype != dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    def item(self):
        if self._data.size != 1:
            raise RuntimeError("a Tensor with %d elements cannot be converted to Scalar" % self._data.size)
        return self._data.item()

    def tolist(self):
        return self._data.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def to(self, *args, **kwargs):
        """to(dtype), to(device), to(other_tensor): a converted tensor (self if nothing changes)."""
        target = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        if kwargs:
            raise TypeError("to() got unexpected keyword(s) %s" % ", ".join(sorted(kwargs)))
        for arg in args:
            if isinstance(arg, Tensor):
                target = arg.dtype
            elif isinstance(arg, str) or type(arg).__name__ == "device":
                device = arg
            else:
                target = arg
        moved = self
        if device is not None:
            from cextend.device import as_device
            device = as_device(device)
            if device.type != self.device.type:
                device.require_available("to")
                moved = _F.ToDevice.apply(self, device.type)
        if target is None:
            return moved.clone() if copy and moved is self else moved
        self = moved
        numpy_dtype = _dtype.as_dtype(target).numpy
        if numpy_dtype == self._data.dtype and not copy:
            return self
        return _F.ToCopy.apply(self, numpy_dtype)

    def float(self):
        return self.to(_dtype.float32)

    def double(self):
        return self.to(_dtype.float64)

    def half(self):
        return self.to(_dtype.float16)

    def long(self):
        return self.to(_dtype.int64)

    def int(self):
        return self.to(_dtype.int32)

    def bool(self):
        return self.to(_dtype.bool)

    def type_as(self, other):
        return self.to(other.dtype)

    def cpu(self):
        """A copy in host memory (self if already there); differentiable."""
        return self.to("cpu")

    def clone(self):
        return _F.Clone.apply(self)

    def contiguous(self):
        return self if self._data.flags.c_contiguous else _F.Clone.apply(self)

    def new(self, *args):
        """Legacy spelling: x.new() is an empty tensor of x's dtype, x.new(2, 3)
        an uninitialised one of that size, x.new(data) a copy of data."""
        if not args:
            return _wrap(np.empty((0,), self._data.dtype))
        if len(args) == 1 and not isinstance(args[0], (numbers.Integral, Size)):
            source = args[0]._data if isinstance(args[0], Tensor) else args[0]
            return _wrap(np.array(source, dtype=self._data.dtype))
        return _wrap(np.empty(_sizes(args), self._data.dtype))

    def new_zeros(self, *size, dtype=None, requires_grad=False):
        return self._new(np.zeros, size, dtype, requires_grad)

    def new_ones(self, *size, dtype=None, requires_grad=False):
        return self._new(np.ones, size, dtype, requires_grad)

    def new_empty(self, *size, dtype=None, requires_grad=False):
        return self._new(np.empty, size, dtype, requires_grad)

    def new_full(self, size, fill_value, dtype=None, requires_grad=False):
        numpy_dtype = _dtype.as_dtype(dtype).numpy if dtype is not None else self._data.dtype
        return _wrap(np.full(_sizes((size,)), fill_value, numpy_dtype)).requires_grad_(requires_grad)

    def new_tensor(self, data, dtype=None, requires_grad=False):
        from cextend._factories import tensor
        return tensor(data, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)

    def _new(self, make, size, dtype, requires_grad):
        numpy_dtype = _dtype.as_dtype(dtype).numpy if dtype is not None else self._data.dtype
        return _wrap(make(_sizes(size), numpy_dtype)).requires_grad_(requires_grad)

    # -- printing ---------------------------------------------------------
    def __repr__(self):
        on_device = type(self._data) is DeviceArray
        data = self._data.to_host() if on_device else self._data
        if data.dtype.kind == "f":
            finite = data[np.isfinite(data)]
            integral = finite.size == 0 or np.all(finite == np.round(finite))
            body = np.array2string(data, separator=", ", prefix="tensor(", threshold=1000,
                                   precision=4, floatmode="maxprec" if integral else "fixed",
                                   suppress_small=True)
        else:
            body = np.array2string(data, separator=", ", prefix="tensor(", threshold=1000)
        extras = []
        if data.size == 0 and data.ndim > 1:
            extras.append("size=%s" % (tuple(data.shape),))
        if on_device:
            extras.append("device='cuda:0'")
        if self.dtype not in (_dtype.float32, _dtype.int64, _dtype.bool):
            extras.append("dtype=%r" % self.dtype)
        if self._grad_fn is not None:
            extras.append("grad_fn=%r" % self._grad_fn)
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(%s%s)" % (body, "".join(", " + e for e in extras))

    __str__ = __repr__

    # -- arithmetic ---------------------------------------------------------
    __add__ = _arithmetic("Add")
    __radd__ = _arithmetic("Add", reflected=True)
    __sub__ = _arithmetic("Sub")
    __rsub__ = _arithmetic("Sub", reflected=True)
    __mul__ = _arithmetic("Mul")
    __rmul__ = _arithmetic("Mul", reflected=True)
    __truediv__ = _arithmetic("Div")
    __rtruediv__ = _arithmetic("Div", reflected=True)
    __pow__ = _arithmetic("Pow")
    __rpow__ = _arithmetic("Pow", reflected=True)

    def __neg__(self):
        return _F.Neg.apply(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()

    def __matmul__(self, other):
        return self.matmul(other)

    def __rmatmul__(self, other):
        other = _operand(other)
        return NotImplemented if not isinstance(other, Tensor) else other.matmul(self)

    add = __add__
    sub = __sub__
    mul = __mul__
    div = __truediv__
    pow = __pow__
    neg = __neg__

    def _compare(self, other, ufunc):
        other = _operand(other)
        if other is NotImplemented:
            return NotImplemented
        return _wrap(ufunc(self._data, other._data if isinstance(other, Tensor) else other))

    def __lt__(self, other):
        return self._compare(other, np.less)

    def __le__(self, other):
        return self._compare(other, np.less_equal)

    def __gt__(self, other):
        return self._compare(other, np.greater)

    def __ge__(self, other):
        return self._compare(other, np.greater_equal)

    def __eq__(self, other):
        return self._compare(other, np.equal)

    def __ne__(self, other):
        return self._compare(other, np.not_equal)

    def mm(self, other):
        return _F.Mm.apply(self, other)

    def matmul(self, other):
        """numpy/torch matmul semantics: 1-D operands are promoted and the
        added dimension removed; batch dimensions broadcast."""
        if not isinstance(other, Tensor):
            raise TypeError("matmul: other must be a Tensor, got %s" % type(other).__name__)
        if self.dim() == 0 or other.dim() == 0:
            raise RuntimeError("matmul: both arguments need at least 1 dimension")
        a = self.unsqueeze(0) if self.dim() == 1 else self
        b = other.unsqueeze(-1) if other.dim() == 1 else other
        out = _F.Mm.apply(a, b) if a.dim() == 2 and b.dim() == 2 else _F.MatMul.apply(a, b)
        if other.dim() == 1:
            out = out.squeeze(-1)
        if self.dim() == 1:
            out = out.squeeze(-2 if other.dim() > 1 else -1)
        return out

    # -- in-place -----------------------------------------------------------
    def _check_writable(self):
        if not self._data.flags.writeable:
            raise RuntimeError("unsupported operation: this tensor is an expanded (broadcast) view or "
                               "read-only memory, where several elements may share one location; "
                               "clone() it before writing in place")

    def _records_history(self, other=None):
        return grad_mode.is_grad_enabled() and (
            self._requires_grad or (isinstance(other, Tensor) and other._requires_grad))

    def _inplace(self, function, ufunc, other):
        other = _operand(other)
        if other is NotImplemented:
            raise TypeError("unsupported operand for an in-place op: %s" % type(other).__name__)
        self._check_writable()
        if self._records_history(other):
            from cextend.autograd.function import _check_inplace
            _check_inplace(self, True)
            if getattr(function, "needs_original", False) and isinstance(other, Tensor) \
                    and other._requires_grad:
                return function.apply(self, other, self.clone())
            return function.apply(self, other)
        ufunc(self._data, other._data if isinstance(other, Tensor) else other,
              out=self._data, casting="same_kind")
        self._bump_version()
        return self

    def add_(self, other, alpha=1):
        return self._inplace(_F.AddInplace, np.add, other if alpha == 1 else other * alpha)

    def sub_(self, other, alpha=1):
        return self._inplace(_F.SubInplace, np.subtract, other if alpha == 1 else other * alpha)

    def mul_(self, other):
        return self._inplace(_F.MulInplace, np.multiply, other)

    def div_(self, other):
        return self._inplace(_F.DivInplace, np.true_divide, other)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def _overwrite(self, values):
        """Set every element to `values` (an array, scalar or Tensor), in place."""
        self._check_writable()
        if self._records_history(values):
            from cextend.autograd.function import _check_inplace
            _check_inplace(self, True)
            return _F.Overwrite.apply(self, values)
        self._data[...] = values._data if isinstance(values, Tensor) else values
        self._bump_version()
        return self

    def zero_(self):
        return self._overwrite(0)

    def fill_(self, value):
        return self._overwrite(value)

    def copy_(self, src):
        if not isinstance(src, Tensor):
            raise TypeError("copy_: src must be a Tensor, got %s" % type(src).__name__)
        try:
            np.broadcast_shapes(src.shape, self.shape)
        except ValueError:
            raise RuntimeError("copy_: src of shape %s cannot be broadcast to %s"
                               % (list(src.shape), list(self.shape))) from None
        return self._overwrite(src)

    def uniform_(self, a=0.0, b=1.0):
        """Fill with samples from U(a, b) from the global generator (see manual_seed)."""
        draw = _random.generator().uniform(a, b, self._data.shape)
        return self._overwrite(draw.astype(self._data.dtype))

    def normal_(self, mean=0.0, std=1.0):
        draw = _random.generator().normal(mean, std, self._data.shape)
        return self._overwrite(draw.astype(self._data.dtype))

    def __setitem__(self, key, value):
        key = _index_key(key)
        value = _operand(value)
        if value is NotImplemented:
            raise TypeError("cannot assign a %s to a Tensor slice" % type(value).__name__)
        self._check_writable()
        if self._records_history(value):
            from cextend.autograd.function import _check_inplace
            _check_inplace(self, True)
            _F.IndexPut.apply(self, key, value)
            return
        self._data[key] = value._data if isinstance(value, Tensor) else value
        self._bump_version()

    # -- shape --------------------------------------------------------------
    def view(self, *shape):
        return _F.View.apply(self, _shape_arg(shape))

    def view_as(self, other):
        return self.view(other.shape)

    def reshape(self, *shape):
        return _F.Reshape.apply(self, _shape_arg(shape))

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def flatten(self, start_dim=0, end_dim=-1):
        if self.dim() == 0:
            return self.reshape(1)
        start, end = _dim(start_dim, self.dim()), _dim(end_dim, self.dim())
        shape = self.shape
        return self.reshape(shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])

    def t(self):
        if self.dim() > 2:
            raise RuntimeError("t() expects a tensor with <= 2 dimensions, but self is %dD" % self.dim())
        return self.transpose(0, 1) if self.dim() == 2 else self._view_alias()

    @property
    def T(self):
        return self.permute(*reversed(range(self.dim())))

    def transpose(self, dim0, dim1):
        n = self.dim()
        return _F.Transpose.apply(self, _dim(dim0, n), _dim(dim1, n))

    def permute(self, *dims):
        dims = _shape_arg(dims)
        n = self.dim()
        normalized = tuple(_dim(d, n) for d in dims)
        if sorted(normalized) != list(range(n)):
            raise RuntimeError("permute: dims %s are not a permutation of %d dimensions" % (list(dims), n))
        return _F.Permute.apply(self, normalized)

    def unsqueeze(self, dim):
        return _F.Unsqueeze.apply(self, _dim(dim, self.dim() + 1))

    def squeeze(self, dim=None):
        if dim is None:
            dims = tuple(i for i, s in enumerate(self.shape) if s == 1)
        else:
            d = _dim(dim, self.dim())
            dims = (d,) if self.dim() and self.shape[d] == 1 else ()
        return _F.Squeeze.apply(self, dims) if dims else self._view_alias()

    def _view_alias(self):
        """A view of all of self (what a no-op view op returns)."""
        return _F.Reshape.apply(self, self.shape)

    def expand(self, *sizes):
        sizes = _shape_arg(sizes)
        lead = len(sizes) - self.dim()
        if lead < 0:
            raise RuntimeError("expand: the number of sizes provided (%d) must be greater or equal to "
                               "the number of dimensions in the tensor (%d)" % (len(sizes), self.dim()))
        shape = tuple(self.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
        return _F.Expand.apply(self, shape)

    def expand_as(self, other):
        return self.expand(other.shape)

    def __getitem__(self, key):
        return _F.Index.apply(self, _index_key(key))

    def _sum_to(self, shape):
        """Sum broadcast dimensions away so the result has `shape` (differentiable)."""
        shape = tuple(shape)
        lead = self.dim() - len(shape)
        dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                          if s == 1 and self.shape[lead + i] != 1)
        out = self.sum(dims, keepdim=True) if dims else self
        return out.reshape(shape) if out.shape != shape else out

    # -- reductions ---------------------------------------------------------
    def _reduce_dims(self, dim):
        if dim is None:
            return None
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        return tuple(sorted({_dim(d, self.dim()) for d in dims}))

    def sum(self, dim=None, keepdim=False, dtype=None):
        source = self if dtype is None else self.to(dtype)
        return _F.Sum.apply(source, source._reduce_dims(dim), keepdim)

    def mean(self, dim=None, keepdim=False):
        if not self.is_floating_point():
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be floating "
                               "point, got %s" % self.dtype.name)
        return _F.Mean.apply(self, self._reduce_dims(dim), keepdim)

    def max(self, dim=None, keepdim=False):
        if dim is None:
            return _F.Max.apply(self)
        return _F.MaxDim.apply(self, _dim(dim, self.dim()), keepdim)

    def argmax(self, dim=None, keepdim=False):
        if dim is None:
            return _wrap(np.asarray(np.argmax(self._data), np.int64))
        d = _dim(dim, self.dim())
        return _wrap(np.argmax(self._data, axis=d, keepdims=keepdim).astype(np.int64))

    # -- pointwise ----------------------------------------------------------
    def exp(self):
        return _F.Exp.apply(self)

    def log(self):
        return _F.Log.apply(self)

    def sqrt(self):
        return _F.Sqrt.apply(self)

    def tanh(self):
        return _F.Tanh.apply(self)

    def sigmoid(self):
        return _F.Sigmoid.apply(self)

    def relu(self):
        return _F.Relu.apply(self)

    def abs(self):
        return _F.Abs.apply(self)

    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
        return _F.Clamp.apply(self, min, max)

    clip = clamp


def _shape_arg(shape):
    """A shape from view(2, 3), view((2, 3)) or view(Size)."""
    return _sizes(shape, "shape")


from cextend.autograd import _functions as _F  # noqa: E402  (Functions need Tensor defined)
