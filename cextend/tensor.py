"""Tensor: a numpy array that records the operations applied to it.

This module is the data structure: storage (`_data`, a numpy array or a
DeviceArray), autograd metadata and views, and it imports nothing above it.
The ops themselves are declared once in the op table (cextend._ops) and
attached to Tensor as methods when cextend is imported; so are the methods
whose machinery lives higher up, each by the module that defines it:
backward (autograd.engine), _current_grad_fn (autograd.views), to
(_ops.conversion), new_tensor (_factories) and __repr__ (_printing).

Autograd metadata, as in torch:
- `_grad_fn`/`_output_nr`: the node (and which of its outputs) made this.
- `_version_counter`: shared by a tensor and every view of its storage;
  in-place changes bump it, and saved tensors are checked against it
  (`_engine.VersionCounter`, a C integer like torch's VariableVersion).
- Views (differentiable): `_base` is the root tensor whose storage they
  share and `_view_fn` replays the view ops from it; a view's grad_fn is
  rebuilt from the base's history after an in-place change elsewhere
  (see autograd.views).
"""
import math
import numbers

import numpy as np

from cextend import _sizes as _limits

from cextend import _bfloat16, _dtype
from cextend._device import DeviceArray
from cextend import _backend  # noqa: F401  (before _engine: in a source tree never built, it says how to build)
from cextend import _capture, _engine, _grad_state
from cextend import _torch_function
from cextend._memory_format import is_contiguous_in
from cextend.device import CPU, CUDA
from cextend.utils.hooks import ListHookHandle


class Size(tuple):
    """A tensor's shape: a tuple that prints as cextend.Size([...])."""

    def __repr__(self):
        return "cextend.Size(%s)" % list(self)

    # slicing and concatenating a Size give a Size, as in torch
    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other))) if isinstance(other, tuple) else NotImplemented

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, count):
        return Size(tuple.__mul__(self, count))

    __rmul__ = __mul__

    def numel(self):
        return math.prod(self)


_new = object.__new__
_VersionCounter = _engine.VersionCounter


def _alias(data):
    """Another array object over the same memory: a tensor that shares x's
    storage (x.data, x.detach()) is not x for the overlap checks, which
    treat the very same array as the very same tensor (torch compares
    TensorImpls)."""
    return data.view() if type(data) is np.ndarray else data


def _wrap(array, requires_grad=False):
    """A Tensor around `array` (no copy, no checks): the internal constructor.

    One tensor is made per op, so this sets only the attributes every tensor
    reads; the rarely used ones are class-level defaults (see Tensor).
    """
    t = _new(Tensor)
    kind = type(array)
    t._data = array if kind is np.ndarray or kind is DeviceArray else np.asarray(array)
    t._requires_grad = requires_grad
    t._grad_fn = None
    t._output_nr = 0
    t._version_counter = _VersionCounter()     # shared with views
    t._base = None
    if _capture._active is not None:
        _capture.wrapped(t._data)
    return t


def _sizes(args, what="size"):
    """Sizes given as ints, or as one tuple/list/Size: each an int within
    int64 (torch: TypeError otherwise), at most 64 of them."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    sizes = []
    for s in args:
        if type(s) is int and _INT64_MIN <= s <= _INT64_MAX:
            sizes.append(s)         # the common case, without numbers.Integral's abc check
            continue
        if isinstance(s, Tensor) and s._data.ndim == 0 and s._data.dtype.kind in "iu":
            s = int(s._data)
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError("%s must be a tuple of ints, but got %s" % (what, type(s).__name__))
        s = int(s)
        if not _INT64_MIN <= s <= _INT64_MAX:
            raise TypeError("%s must be a tuple of ints within int64's range, but element %d is %d"
                            % (what, len(sizes), s))
        sizes.append(s)
    if len(sizes) > _MAX_DIMS:
        _limits.check_ndim(sizes, what)
    return tuple(sizes)


_INT64_MIN, _INT64_MAX, _MAX_DIMS = _limits.INT64_MIN, _limits.INT64_MAX, _limits.MAX_DIMS


def _new_sizes(args, what="size"):
    """The sizes of a tensor about to be made: _sizes, each non-negative, and
    not more elements than memory can address (torch raises RuntimeError
    for both; so does this, as an ArgumentError)."""
    return _limits.new_shape(_sizes(args, what), what)


def _allocating(op, sizes, make, *args):
    """make(*args), the allocation of a tensor of `sizes`; a failure is an
    OutOfMemoryError (a MemoryError, and a RuntimeError as torch's) naming op."""
    try:
        return make(*args)
    except MemoryError as error:
        raise _limits.out_of_memory(op, error, sizes) from None


def _dim(dim, ndim):
    """A dimension index in [0, ndim), from a possibly negative one."""
    if type(dim) is not int and (not isinstance(dim, numbers.Integral) or isinstance(dim, bool)):
        raise TypeError("dim must be an int, got %s" % type(dim).__name__)
    size = max(ndim, 1)
    if not -size <= dim < size:
        _limits.int64(dim, "dim")        # torch: ValueError for a dim outside int64
        raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-size, size - 1, dim))
    return int(dim) % size


class Tensor:
    """A numpy-backed tensor with autograd.

    Tensor(*sizes) is uninitialised float32; Tensor(data) copies data as
    float32 (as torch.Tensor does).  Use cextend.tensor() to keep a dtype.
    """

    # Slots for what every op reads; the rest default at class level and go
    # to the instance __dict__ only when set (views, leaves with hooks, .grad).
    __slots__ = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_version_counter", "_base",
                 "__dict__", "__weakref__")
    _grad = None
    _view_fn = None             # views: replays the view ops from _base
    _creation_meta = 0          # views: autograd.views.DEFAULT, NO_GRAD_MODE, ...
    _creation_meta_op = None
    _grad_fn_version = 0        # views: the version at which _grad_fn was last right
    _accumulator = None         # leaves: weakref to the AccumulateGrad node
    _hooks = None               # leaves: Tensor.register_hook hooks
    _post_accumulate_hooks = None   # leaves: register_post_accumulate_grad_hook hooks
    _retains_grad = False       # retain_grad() was called (it follows in-place rebases)
    __array_priority__ = 1000
    _prints_as_tensor = True     # repr: tensor(...); a subclass prints its own name
    __array_ufunc__ = None      # numpy defers to Tensor's reflected operators
    __hash__ = object.__hash__
    _default_dtype = np.dtype(np.float32)

    def __init__(self, *args, device=None):
        if len(args) == 1 and not isinstance(args[0], numbers.Integral) and not isinstance(args[0], Size):
            source = args[0]._data if isinstance(args[0], Tensor) else args[0]
            data = np.array(source, dtype=self._default_dtype)
        else:
            sizes = _new_sizes(args)
            data = _allocating(type(self).__name__, sizes, np.empty, sizes, self._default_dtype)
        self._init(data, False)

    # -- __torch_function__ (cextend._torch_function has the dispatch) -------
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """torch's default: run func with subclass dispatch off and give its
        Tensor results back as cls (an alias of them), unless cls is not a
        subclass of every overriding type, where another one should answer."""
        if kwargs is None:
            kwargs = {}
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with _torch_function.DisableTorchFunctionSubclass():
            ret = func(*args, **kwargs)
            if func in _torch_function.NOWRAP:
                return ret
            return _torch_function.convert(ret, cls)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _torch_function.prepare_subclass(cls)

    @staticmethod
    def _make_subclass(cls, data, require_grad=False):
        return _torch_function.make_subclass(cls, data, require_grad)

    def as_subclass(self, cls):
        """A cls instance over self's memory that stays in self's graph (an alias view)."""
        return _torch_function.as_subclass(self, cls)

    def _init(self, data, requires_grad):
        self._data = data
        self._requires_grad = requires_grad
        self._grad_fn = None
        self._output_nr = 0
        self._version_counter = _VersionCounter()
        self._base = None

    # -- autograd attributes ---------------------------------------------
    @property
    def data(self):
        """The same storage as a Tensor outside the graph (changes to it are not tracked)."""
        return _wrap(_alias(self._data))

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError("data must be a Tensor, got %s" % type(value).__name__)
        self._data = value._data

    @property
    def requires_grad(self):
        if self._base is None:
            return self._requires_grad
        # torch: a view requires grad when it or its base does (its grad_fn
        # may still be stale; it is rebuilt when used).
        return self._requires_grad or self._grad_fn is not None or self._base.requires_grad

    _LEAF_ONLY = "you can only change requires_grad flags of leaf variables."
    _USE_DETACH = (" If you want to use a computed variable in a subgraph that doesn't require "
                   "differentiation use var_no_grad = var.detach().")

    @requires_grad.setter
    def requires_grad(self, flag):
        # torch's attribute setter refuses any change on a non-leaf
        flag = bool(flag)
        if self._current_grad_fn() is not None:
            raise RuntimeError(self._LEAF_ONLY + ("" if flag else self._USE_DETACH))
        if flag and not _dtype.is_floating(self._data.dtype):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = flag

    def requires_grad_(self, requires_grad=True):
        # torch's method: True on a non-leaf is a no-op, but the dtype is checked first
        flag = bool(requires_grad)
        if self._current_grad_fn() is not None:
            if not flag:
                raise RuntimeError(self._LEAF_ONLY + self._USE_DETACH)
            if not _dtype.is_floating(self._data.dtype):
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            return self
        if flag and not _dtype.is_floating(self._data.dtype):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = flag
        return self

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of type %s"
                                % type(value).__name__)
            if value._data.dtype != self._data.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value._data.shape != self._data.shape:
                raise RuntimeError("assigned grad has data of a different size")
        if _capture._active is not None:
            _capture.refuse("the step sets .grad by hand")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def grad_fn(self):
        return self._current_grad_fn() if self._view_fn is not None else self._grad_fn

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def output_nr(self):
        """Which output of its grad_fn this tensor is (0 for a leaf)."""
        if self._view_fn is not None:
            self._current_grad_fn()         # a rebuilt view is output 0 of its new node
        return self._output_nr

    @property
    def _version(self):
        return self._version_counter[0]

    def _bump_version(self):
        self._version_counter.bump()
        if _capture._active is not None:
            _capture.in_place(self)

    def _is_view(self):
        return self._base is not None

    def retain_grad(self):
        """Keep .grad for this non-leaf tensor after backward (and after in-place changes)."""
        grad_fn = self.grad_fn
        if grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        self._retains_grad = True
        grad_fn._retain(self._output_nr, self)

    @property
    def retains_grad(self):
        return self._retains_grad and self.grad_fn is not None

    def register_hook(self, hook):
        """hook(grad) runs when this tensor's gradient is computed; it may
        return a replacement.  Returns a handle with .remove()."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        grad_fn = self.grad_fn
        if grad_fn is not None:
            return grad_fn._add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return ListHookHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) runs after a gradient is accumulated into this leaf's
        .grad (an optimizer step per parameter, as in torch)."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = []
        self._post_accumulate_hooks.append(hook)
        return ListHookHandle(self._post_accumulate_hooks, hook)

    def detach_(self):
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._requires_grad = False
        return self

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
        return _dtype.is_floating(self._data.dtype)

    def is_complex(self):
        return False

    def element_size(self):
        return self._data.itemsize

    def stride(self, dim=None):
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[_dim(dim, self._data.ndim)]

    def is_contiguous(self, memory_format=None):
        if memory_format is None:
            return self._data.flags.c_contiguous
        return is_contiguous_in(self._data, memory_format)

    def data_ptr(self):
        return self._data.ctypes.data if type(self._data) is np.ndarray else id(self._data.buffer)

    @property
    def device(self):
        return CUDA if type(self._data) is DeviceArray else CPU

    @property
    def is_cuda(self):
        return type(self._data) is DeviceArray

    def get_device(self):
        return 0 if type(self._data) is DeviceArray else -1

    def cuda(self, device=None, non_blocking=False):
        """A copy on the GPU (self if already there); differentiable."""
        return self.to("cuda" if device is None else device)

    def cpu(self):
        """A copy in host memory (self if already there); differentiable."""
        return self.to("cpu")

    # -- conversion -------------------------------------------------------
    def numpy(self, force=False):
        """The numpy array behind this tensor (shared memory)."""
        if type(self._data) is DeviceArray:
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy "
                            "the tensor to host memory first.")
        if not force and _grad_state.is_grad_enabled() and self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self._data.dtype.kind == "V":      # numpy has no bfloat16: torch refuses alike
            raise TypeError("Got unsupported ScalarType BFloat16")
        if _capture._active is not None:
            _capture.refuse("the step reads a tensor's array (numpy())")
        return self._data

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if dtype is not None and array.dtype != dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    def item(self):
        if self._data.size != 1:
            raise RuntimeError("a Tensor with %d elements cannot be converted to Scalar" % self._data.size)
        if _capture._active is not None:
            _capture.refuse("the step reads a value back into Python (item(), bool(), float(), ...)")
        if self._data.dtype.kind == "V":
            return _bfloat16.python_values(self._data.reshape(()))
        return self._data.item()

    def tolist(self):
        if _capture._active is not None:
            _capture.refuse("the step reads values back into Python (tolist())")
        if self._data.dtype.kind == "V":
            return _bfloat16.python_values(self._data)
        return self._data.tolist()

    def __float__(self):
        return float(self._python_scalar())

    def __int__(self):
        return int(self._python_scalar())

    def _python_scalar(self):
        # float(t), int(t), complex(t): torch's Python conversions raise a
        # ValueError where item() raises a RuntimeError
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __complex__(self):
        return complex(self._python_scalar())

    def __format__(self, format_spec):
        # torch formats 0-d plain tensors as their number (a Parameter, or
        # any subclass, falls back to object's: str() for an empty spec).
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element):
        if isinstance(element, (Tensor, numbers.Number)):
            return bool((self == element).any().item())
        raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a %s."
                           % type(element).__name__)

    def new(self, *args):
        """Legacy spelling: x.new() is an empty tensor of x's dtype, x.new(2, 3)
        an uninitialised one of that size, x.new(data) a copy of data."""
        if not args:
            return _wrap(np.empty((0,), self._data.dtype))
        if len(args) == 1 and not isinstance(args[0], (numbers.Integral, Size)):
            if self._data.dtype.kind == "V" or isinstance(args[0], Tensor) and args[0]._data.dtype.kind == "V":
                source = args[0] if isinstance(args[0], Tensor) else _wrap(np.array(args[0], np.float64))
                return source.detach().to(self.dtype, copy=True)
            source = args[0]._data if isinstance(args[0], Tensor) else args[0]
            return _wrap(np.array(source, dtype=self._data.dtype))
        sizes = _new_sizes(args)
        return _wrap(_allocating("new", sizes, np.empty, sizes, self._data.dtype))

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new(np.zeros, size, dtype, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new(np.ones, size, dtype, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new(np.empty, size, dtype, requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        numpy_dtype = _dtype.as_dtype(dtype).numpy if dtype is not None else self._data.dtype
        sizes = _new_sizes((size,))
        if numpy_dtype.kind == "V":     # numpy would store fill_value's raw bytes
            return _wrap(_allocating("new_full", sizes, _bfloat16.filled, sizes, fill_value)
                         ).requires_grad_(requires_grad)
        return _wrap(_allocating("new_full", sizes, np.full, sizes, fill_value, numpy_dtype)
                     ).requires_grad_(requires_grad)

    def _new(self, make, size, dtype, requires_grad):
        numpy_dtype = _dtype.as_dtype(dtype).numpy if dtype is not None else self._data.dtype
        sizes = _new_sizes(size)
        if numpy_dtype.kind == "V" and make is np.ones:     # np.ones would store the bits 0x0001
            return _wrap(_allocating("new_ones", sizes, _bfloat16.filled, sizes, 1.0)
                         ).requires_grad_(requires_grad)
        return _wrap(_allocating("new_" + make.__name__, sizes, make, sizes, numpy_dtype)
                     ).requires_grad_(requires_grad)

    # The samplers (uniform_, normal_, random_, bernoulli_, ...) are
    # cextend._sampling's, attached to Tensor there.

    # __repr__ is cextend._printing's (torch's format).  No __str__:
    # object's calls type(self).__repr__, so print(parameter) shows
    # "Parameter containing:" as torch's does.

    @property
    def T(self):
        return self.permute(*reversed(range(self._data.ndim)))

    @property
    def mT(self):
        return self.transpose(-2, -1)


_torch_function.Tensor = Tensor
_torch_function._PLAIN.update((Tensor, Size))
_capture.Tensor, _capture.wrap, _capture.grad_enabled = Tensor, _wrap, _grad_state.is_grad_enabled

# An op's result is wrapped in C: a numpy or device array outside a capture, which
# is nearly every call (0.4 -> 0.1 us).  The definition above stays the reference:
# the C version calls it for everything else.
_python_wrap = _wrap
_engine.configure_wrap(Tensor, (np.ndarray, DeviceArray), _capture, _python_wrap)
_wrap = _engine.wrap
