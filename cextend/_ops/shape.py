"""Shape ops.  Those that never copy return views: they share the input's
storage and version counter and remember how to replay themselves
(autograd.views), so in-place changes through a view or its base keep
every gradient right.  Backward reshapes, transposes or sums back."""
import math

import numpy as np

from cextend import _capture, _torch_function
from cextend._device import DeviceArray
from cextend.autograd import record as rec
from cextend._ops._layout import compute_stride, restrided, unsqueeze_stride
from cextend._ops._operands import require_tensor
from cextend._ops.registry import Sample, method, register
from cextend.autograd import views
from cextend.tensor import _alias as _same_memory, _wrap
from cextend import _dtype
from cextend._errors import ArgumentError
from cextend import _sizes as _limits
from cextend._device import _unsupported
from cextend._ops._operands import broadcast_shapes
from cextend._ops.joining import cat, stack
from cextend.autograd.grad_mode import no_grad
from cextend.tensor import _dim as normalize, _sizes as sizes


def _dim(dim, ndim, op="dim"):
    """A dimension index in [0, ndim), from a possibly negative one."""
    return normalize(dim, ndim)


def _sizes(args, what="shape"):
    return sizes(args, what)


def _view(x, array, view_fn, node_cls, multi_output=None, **attrs):
    """The view `array` of x, with node_cls(attrs) as grad_fn when recording."""
    out = views.make_view(x, array, view_fn, multi_output)
    if rec.needs_grad(x):
        node = rec.record(node_cls, (x,), out)
        for key, value in attrs.items():
            setattr(node, key, value)
    return out


def _reshape_back(node, g):
    return g.reshape(node.in_shape)


_ViewNode = rec.node_class("ViewBackward", _reshape_back)
_ReshapeNode = _ViewNode                                    # torch's reshape is a view where it can be,
_ReshapeCopyNode = rec.node_class("UnsafeViewBackward", _reshape_back)     # else a copy it views unsafely
_UnsqueezeNode = rec.node_class("UnsqueezeBackward", lambda node, g: g.squeeze(node.dim))     # torch's formula
# torch's overloads: squeeze(), squeeze(dim), squeeze(dims)
def _unsqueeze_to(node, g):
    """torch's unsqueeze_to: the squeezed dims put back one by one, in order."""
    for d in node.dims:
        g = g.unsqueeze(d)
    return g


_SqueezeNodes = {kind: rec.overload(rec.node_class("SqueezeBackward", _unsqueeze_to), kind) for kind in range(3)}
_AliasNode = rec.node_class("AliasBackward", lambda node, g: g)


def _infer(shape, numel):
    shape = list(shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError("invalid shape dimension %d" % min(shape))
    if unknown:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or numel % known:
            raise RuntimeError("shape '%s' is invalid for input of size %d" % (list(shape), numel))
        shape[unknown[0]] = numel // known
    if math.prod(shape) != numel:
        raise RuntimeError("shape '%s' is invalid for input of size %d" % (list(shape), numel))
    if numel == 0 and 0 in shape:
        _limits.check_count(shape, "shape")       # (2**40, 2**40, 0): numpy cannot lay it out
    return tuple(shape)


def _no_copy_reshape(data, shape):
    """A view of data with the new shape and torch's strides (computeStride),
    else None."""
    if type(data) is DeviceArray:
        return data.reshape(shape)
    view = _numpy_view_reshape(data, shape)
    # (an exactly C-strided source gives C strides, as torch's computeStride)
    if view is not None and 1 in view.shape and not (data.flags.c_contiguous and 1 not in data.shape):
        strides = compute_stride(data.shape, data.strides, view.shape, data.itemsize)
        if strides is not None:     # (numpy made the view: torch can too)
            view = restrided(view, strides)
    return view


def _numpy_view_reshape(data, shape):
    try:
        return data.reshape(shape, copy=False)
    except ValueError:
        return None
    except TypeError:
        # numpy < 2.1 has no reshape(copy=); assigning .shape on a view is the
        # older spelling of "reshape without copying", and refuses the same way.
        view = data.view()
        try:
            view.shape = shape
        except AttributeError:
            return None
        return view


def view(self, *shape):
    """A view with a new shape (no copy); fails where the strides cannot express it."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)) and not hasattr(shape[0], "__index__"):
        return _view_dtype(self, shape[0])
    shape = _infer(_sizes(shape), self._data.size)
    data = _no_copy_reshape(self._data, shape)
    if data is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least "
                           "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                           "instead.")
    return _view(self, data, lambda t: t.view(shape), _ViewNode, in_shape=self._data.shape)


def _view_dtype(self, dtype):
    target = _dtype.as_dtype(dtype).numpy
    if target == self._data.dtype:
        return _alias(self)
    if target.itemsize != self._data.dtype.itemsize:
        raise RuntimeError("view(dtype): changing the element size (%s -> %s) is not supported"
                           % (self._data.dtype, target))
    if rec.needs_grad(self):
        raise RuntimeError("view(dtype) is not differentiable; detach() the tensor first")
    return views.make_view(self, self._data.view(target), lambda t: t.view(target))


def reshape(input, *shape):
    """A view when the strides allow it, else a copy (as torch.reshape)."""
    x = require_tensor(input, "reshape")
    shape = _infer(_sizes(shape), x._data.size)
    data = _no_copy_reshape(x._data, shape)
    if data is not None:
        if data.shape == x._data.shape and data.strides == x._data.strides and type(data) is not DeviceArray:
            return _alias(x, _ViewNode)
        return _view(x, data, lambda t: t.reshape(shape), _ReshapeNode, in_shape=x._data.shape)
    out = _wrap(x._data.reshape(shape))
    if rec.needs_grad(x):
        node = rec.record(_ReshapeCopyNode, (x,), out)
        node.in_shape = x._data.shape
    return out


def _alias(x, node_cls=_AliasNode):
    """A view of all of x (what a no-op view op returns), its node named as
    torch's for the op (squeeze() of nothing is still SqueezeBackward0)."""
    if node_cls is not _AliasNode:
        node_cls = rec.renamed(_AliasNode, node_cls.__name__)
    return _view(x, x._data if type(x._data) is DeviceArray else x._data.view(), lambda t: t.view_as(t),
                 node_cls)


def _reshape_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), (2, 6))
    yield Sample(rng.standard_normal((3, 4)), (-1,))
    yield Sample(rng.standard_normal((2, 3, 2)), (4, -1))
    yield Sample(rng.standard_normal(()), (1, 1))
    yield Sample(rng.standard_normal((0, 3)), (3, 0))


register("reshape", reshape, samples=_reshape_samples, family="shape")
register("view", view, module=False, samples=_reshape_samples, family="shape",
         layouts=("contiguous",))      # other layouts cannot be viewed, as in torch
method("view_as", lambda self, other: self.view(other.shape))
method("reshape_as", lambda self, other: reshape(self, other.shape))


def flatten(input, start_dim=0, end_dim=-1):
    x = require_tensor(input, "flatten")
    if x._data.ndim == 0:
        return reshape(x, 1)
    n = x._data.ndim
    start, end = _dim(start_dim, n), _dim(end_dim, n)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = x._data.shape
    if start == end:
        return x
    return reshape(x, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


def unflatten(input, dim, sizes):
    x = require_tensor(input, "unflatten")
    d = _dim(dim, x._data.ndim)
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    inner = _infer(sizes, x._data.shape[d]) if -1 in sizes else sizes
    if math.prod(inner) != x._data.shape[d]:
        raise RuntimeError("unflatten: Provided sizes %s don't multiply up to the size of dim %d (%d) in "
                           "the input tensor" % (list(sizes), dim, x._data.shape[d]))
    return x.view(x._data.shape[:d] + inner + x._data.shape[d + 1:])


register("flatten", flatten, samples=lambda rng: iter([Sample(rng.standard_normal((2, 3, 2)), 1),
                                                       Sample(rng.standard_normal(()))]),
         family="shape")
register("unflatten", unflatten, samples=lambda rng: iter([Sample(rng.standard_normal((2, 6)), 1, (2, 3)),
                                                           Sample(rng.standard_normal((4, 3)), 0, (2, -1))]),
         family="shape")


def _transpose_back(node, g):
    return g.transpose(node.dims[0], node.dims[1])


_TransposeNode = rec.node_class("TransposeBackward", _transpose_back)
_TNode = rec.renamed(_TransposeNode, "TBackward0")


def transpose(input, dim0, dim1):
    x = require_tensor(input, "transpose")
    n = x._data.ndim
    d0, d1 = _dim(dim0, n), _dim(dim1, n)
    if n == 0:
        return _alias(x, _TransposeNode)
    # (a device array has no strided views: numpy's protocol refuses swapaxes there)
    return _view(x, np.swapaxes(x._data, d0, d1), lambda t: t.transpose(d0, d1), _TransposeNode, dims=(d0, d1))


def _device_only(what):
    """A device array has no strided views, and numpy's as_strided, which
    these ops build theirs with, would silently copy one to the host."""
    raise _unsupported(what)


register("transpose", transpose, aliases=("swapaxes", "swapdims"),
         samples=lambda rng: iter([Sample(rng.standard_normal((2, 3, 4)), 0, 2),
                                   Sample(rng.standard_normal((3, 4)), -1, 0)]),
         family="shape")


def t(input):
    x = require_tensor(input, "t")
    if x._data.ndim > 2:
        raise RuntimeError("t() expects a tensor with <= 2 dimensions, but self is %dD" % x._data.ndim)
    if x._data.ndim < 2:
        return _alias(x, _TNode)
    return _view(x, np.swapaxes(x._data, 0, 1), lambda v: v.t(), _TNode, dims=(0, 1))


register("t", t, samples=lambda rng: iter([Sample(rng.standard_normal((3, 4))),
                                           Sample(rng.standard_normal((3,)))]), family="shape")


def _permute_back(node, g):
    return g.permute(*node.inverse)


_PermuteNode = rec.node_class("PermuteBackward", _permute_back)


def permute(input, *dims):
    x = require_tensor(input, "permute")
    dims = _sizes(dims, "dims")
    n = x._data.ndim
    if len(dims) != n:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not "
                           "match the length of the desired ordering of dimensions i.e. input.dim() = "
                           "%d is not equal to len(dims) = %d" % (n, len(dims)))
    normalized = tuple(_dim(d, n) for d in dims)
    if sorted(normalized) != list(range(n)):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inverse = tuple(int(i) for i in np.argsort(normalized))
    return _view(x, np.transpose(x._data, normalized), lambda t: t.permute(*normalized), _PermuteNode,
                 inverse=inverse)


register("permute", permute, samples=lambda rng: iter([Sample(rng.standard_normal((2, 3, 4)), (2, 0, 1))]),
         family="shape")


def movedim(input, source, destination):
    x = require_tensor(input, "movedim")
    n = x._data.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError("movedim: Invalid source or destination dims: source (%s dims) should "
                           "contain the same number of dims as destination (%s dims)" % (list(src), list(dst)))
    src = [_dim(d, n) for d in src]
    dst = [_dim(d, n) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim: repeated dim in source or destination")
    order = [d for d in range(n) if d not in src]
    result = [None] * n
    for s, d in zip(src, dst):
        result[d] = s
    rest = iter(order)
    perm = [r if r is not None else next(rest) for r in result]
    return permute(x, *perm)


register("movedim", movedim, aliases=("moveaxis",),
         samples=lambda rng: iter([Sample(rng.standard_normal((2, 3, 4)), 0, -1),
                                   Sample(rng.standard_normal((2, 3, 4)), (0, 1), (2, 0))]),
         family="shape")


def unsqueeze(input, dim):
    x = require_tensor(input, "unsqueeze")
    d = _dim(dim, x._data.ndim + 1)
    data = np.expand_dims(x._data, d)
    if not (x._data.flags.c_contiguous and 1 not in x._data.shape):
        # torch keeps every stride and gives the new dim unsqueeze's (numpy may
        # pick others for size-1 dims; for exact C strides it picks the same)
        strides = list(x._data.strides)
        strides.insert(d, unsqueeze_stride(x._data, d))
        data = restrided(data, strides)
    return _view(x, data, lambda t: t.unsqueeze(d), _UnsqueezeNode, dim=d)


register("unsqueeze", unsqueeze, samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), 1),
                                                           Sample(rng.standard_normal(()), 0)]),
         family="shape")


def squeeze(input, dim=None):
    """Size-1 dims removed (all, one, or a tuple); others are left alone."""
    x = require_tensor(input, "squeeze")
    shape = x._data.shape
    node_cls = _SqueezeNodes[0 if dim is None else 2 if isinstance(dim, (tuple, list)) else 1]
    if dim is None:
        dims = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        wanted = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = tuple(sorted({_dim(d, x._data.ndim) for d in wanted}))
        dims = tuple(d for d in dims if x._data.ndim and shape[d] == 1)
    if not dims:
        return _alias(x, node_cls)
    return _view(x, np.squeeze(x._data, axis=dims), lambda t: t.squeeze(dims), node_cls, dims=dims)


register("squeeze", squeeze, samples=lambda rng: iter([Sample(rng.standard_normal((3, 1, 4)), 1),
                                                       Sample(rng.standard_normal((1, 3, 1))),
                                                       Sample(rng.standard_normal((3, 4)), 0)]),
         family="shape")


def _expand_back(node, g):
    return g.sum_to_size(node.in_shape)


_ExpandNode = rec.node_class("ExpandBackward", _expand_back)


def _expand_shape(x, sizes):
    lead = len(sizes) - x._data.ndim
    if lead < 0:
        raise RuntimeError("expand(%s{%s}, size=%s): the number of sizes provided (%d) must be greater "
                           "or equal to the number of dimensions in the tensor (%d)" % (
                               x.type(), list(x._data.shape), list(sizes), len(sizes), x._data.ndim))
    shape = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            shape.append(s)
            continue
        current = x._data.shape[i - lead]
        if s == -1:
            s = current
        if s < 0:
            raise ArgumentError("expand(): size %d at dim %d of %s is negative (only -1, keep the size, is)"
                                % (s, i, list(sizes)))
        if current != s and current != 1:
            raise RuntimeError("The expanded size of the tensor (%d) must match the existing size (%d) "
                               "at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s"
                               % (s, current, i, list(sizes), list(x._data.shape)))
        shape.append(s)
    _limits.check_count(shape, "size", "expand", x._data.dtype.itemsize)     # numpy's limit on a view
    return tuple(shape)


def _broadcast_view(data, shape):
    """data seen with `shape` (stride 0 along broadcast dims), writable as
    torch's expand is (writes through it are refused by the overlap check)."""
    if type(data) is DeviceArray:
        if data.shape != tuple(shape):
            _device_only("expand")
        return data
    return np.lib.stride_tricks.as_strided(data, shape, expand_strides(data, shape),
                                           writeable=data.flags.writeable)


def expand_strides(data, shape):
    """torch's inferExpandGeometry: a broadcast dim gets stride 0, and a new
    leading dim of size 1 the stride that lays it out just above the next
    (x.expand(1, 1, 3) is (3, 3, 1), which its overlap checks compare)."""
    lead = len(shape) - data.ndim
    strides = [0] * len(shape)
    above = 0           # size * stride of the dim after i (none after a 0-d tensor's last)
    for i in range(len(shape) - 1, -1, -1):
        d = i - lead
        if d >= 0:
            stride = 0 if data.shape[d] == 1 and shape[i] != 1 else data.strides[d]
        else:
            stride = 0 if shape[i] != 1 else above
        strides[i] = stride
        above = shape[i] * stride
    return tuple(strides)


def expand(self, *sizes):
    if not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = _sizes(sizes, "size")
    shape = _expand_shape(self, sizes)
    return _view(self, _broadcast_view(self._data, shape), lambda t: t.expand(shape), _ExpandNode,
                 in_shape=self._data.shape)


register("expand", expand, module=False,
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 1)), (2, 3, 4)),
                                   Sample(rng.standard_normal((4,)), (3, -1))]),
         family="shape")
method("expand_as", lambda self, other: expand(self, other.shape))


def broadcast_to(input, size):
    return expand(require_tensor(input, "broadcast_to"), tuple(size))


register("broadcast_to", broadcast_to, samples=lambda rng: iter([Sample(rng.standard_normal((3, 1)), (2, 3, 4))]),
         family="shape")


def broadcast_tensors(*tensors):
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


register("broadcast_tensors", broadcast_tensors, method=False, gradcheck=False, difftest=False,
         family="shape")


def sum_to_size(self, *size):
    """Sum broadcast dims away so the result has `size` (differentiable)."""
    shape = tuple(_sizes(size, "size"))
    data_shape = self._data.shape
    lead = len(data_shape) - len(shape)
    if lead < 0 or any(s != 1 and s != d for s, d in zip(shape, data_shape[lead:])):
        raise RuntimeError("size {%s} is not expandable to size {%s}." % (
            ", ".join(map(str, shape)), ", ".join(map(str, data_shape))))
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and data_shape[lead + i] != 1)
    out = self.sum(dims, keepdim=True) if dims else self
    return out.view(shape) if out._data.shape != shape else out


method("sum_to_size", sum_to_size)


# -- slicing views ------------------------------------------------------------------

def _embed_backward(node, g):
    """The gradient of a slicing view: g placed into zeros of the input's shape."""
    return embed(g, node.in_shape, node.place)


_SliceNode = rec.node_class("SliceBackward", _embed_backward)
_SelectNode = rec.node_class("SelectBackward", _embed_backward)
_DiagonalNode = rec.node_class("DiagonalBackward", _embed_backward)


def _embed_grad(node, gg):
    return node.place(gg)


_EmbedNode = rec.node_class("SliceScatterBackward", _embed_grad)


def embed(g, shape, place):
    """zeros(shape) with g written where `place` (a view op replayed on a
    Tensor of that shape) points: the backward of every slicing view.
    Its own backward is place() itself, so derivatives of any order exist."""
    out = _wrap(np.zeros(shape, g._data.dtype))
    with _no_grad():
        place(out)._data[...] = g._data
    if rec.needs_grad(g):
        node = rec.record(_EmbedNode, (g,), out)
        node.place = place
    return out


def _no_grad():
    return no_grad()


def _slice_view(x, data, place, node_cls):
    return _view(x, data, place, node_cls, in_shape=x._data.shape, place=place)


def narrow(input, dim, start, length):
    x = require_tensor(input, "narrow")
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    start = _narrow_index(start, "start")
    length = _narrow_index(length, "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start < 0:
        start += size
    if not 0 <= start <= size or start + length > size:
        raise RuntimeError("start (%d) + length (%d) exceeds dimension size (%d)." % (start, length, size))
    key = (slice(None),) * d + (slice(start, start + length),)
    return _slice_view(x, x._data[key], lambda t: t[key], _SliceNode)


def _narrow_index(value, name):
    """narrow's start or length: an int, or as torch also takes, a 0-dim
    integral (not bool) Tensor; never a float, a bool or a longer tensor."""
    if hasattr(value, "_data"):
        data = value._data
        if data.ndim != 0 or data.dtype.kind not in "iu":
            raise RuntimeError("%s must be an 0-dim integral Tensor." % name)
        return int(data)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError("narrow(): argument '%s' must be int or a 0-dim integral Tensor, not %s"
                        % (name, type(value).__name__))
    return _limits.int64(int(value), name, "narrow")


register("narrow", narrow, samples=lambda rng: iter([Sample(rng.standard_normal((4, 5)), 1, 1, 3),
                                                     Sample(rng.standard_normal((4, 5)), 0, -2, 2)]),
         family="shape")


def select(input, dim, index):
    x = require_tensor(input, "select")
    n = x._data.ndim
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, n)
    size = x._data.shape[d]
    if not -size <= index < size:
        _limits.int64(index, "index", "select")        # torch: ValueError outside int64
        raise IndexError("select(): index %d out of range for tensor of size %s at dimension %d"
                         % (index, list(x._data.shape), d))
    index = index % size
    key = (slice(None),) * d + (index, Ellipsis)
    return _slice_view(x, x._data[key], lambda t: t[key], _SelectNode)


register("select", select, samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), 1, 2),
                                                     Sample(rng.standard_normal((3,)), 0, -1)]),
         family="shape")


def diagonal(input, offset=0, dim1=0, dim2=1):
    x = require_tensor(input, "diagonal")
    _limits.int64(offset, "offset", "diagonal")
    n = x._data.ndim
    d1, d2 = _dim(dim1, n), _dim(dim2, n)
    if d1 == d2:
        raise RuntimeError("diagonal dimensions cannot be identical %d, %d" % (dim1, dim2))
    if type(x._data) is DeviceArray:
        _device_only("diagonal")
    # np.diagonal's view is read-only; build the same (writable) view by strides.
    base = x._data
    n1, n2 = base.shape[d1], base.shape[d2]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    start = [0] * base.ndim
    if length:
        start[d1], start[d2] = (0, offset) if offset >= 0 else (-offset, 0)
    origin = base[tuple(slice(s, None) if i in (d1, d2) else slice(None) for i, s in enumerate(start))] \
        if length else base
    keep = [i for i in range(base.ndim) if i not in (d1, d2)]
    shape = tuple(base.shape[i] for i in keep) + (length,)
    strides = tuple(base.strides[i] for i in keep) + (base.strides[d1] + base.strides[d2],)
    data = np.lib.stride_tricks.as_strided(origin, shape, strides, writeable=base.flags.writeable)
    return _slice_view(x, data, lambda t: t.diagonal(offset, d1, d2), _DiagonalNode)


register("diagonal", diagonal, samples=lambda rng: iter([Sample(rng.standard_normal((3, 4))),
                                                         Sample(rng.standard_normal((3, 4)), 1),
                                                         Sample(rng.standard_normal((2, 3, 3)), -1, 1, 2)]),
         family="shape")


# -- several views at once ------------------------------------------------------------

def _multi_back(node, grads):
    """grads of the pieces (None: zeros) concatenated back along dim."""
    pieces = []
    for g, shape in zip(grads, node.shapes):
        if g is None:
            g = _wrap(np.zeros(shape, node.dtype))
        pieces.append(g)
    if node.stacked:
        return stack(pieces, node.dim)
    return cat(pieces, node.dim)


_SplitNode = rec.node_class("SplitBackward", _multi_back, multi_output=True)
_UnbindNode = rec.node_class("UnbindBackward", _multi_back, multi_output=True)


def _pieces(x, dim, bounds, op, stacked=False):
    d = _dim(dim, x._data.ndim)
    outs = []
    for i, (start, stop) in enumerate(bounds):
        key = (slice(None),) * d + ((start if stacked else slice(start, stop)), Ellipsis)
        outs.append(views.make_view(x, x._data[key], (lambda k: lambda t: t[k])(key),
                                    multi_output="Output %d of %s" % (i, op)))
    outs = tuple(outs)
    if rec.needs_grad(x):
        node = rec.record(_UnbindNode if stacked else _SplitNode, (x,), outs)
        node.shapes = [o._data.shape for o in outs]
        node.dtype = x._data.dtype
        node.dim = d
        node.stacked = stacked
    return outs


def split(tensor, split_size_or_sections, dim=0):
    x = require_tensor(tensor, "split")
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    if isinstance(split_size_or_sections, int):
        step = _limits.int64(split_size_or_sections, "split_size", "split")
        if step <= 0 and size:
            raise RuntimeError("split_size can only be 0 if dimension size is 0, but got dimension size "
                               "of %d" % size)
        # torch: at least one piece, even of an empty dim
        starts = range(0, size, step) if step and size else [0]
        bounds = [(s, min(s + step, size)) for s in starts]
    else:
        sections = [int(s) for s in split_size_or_sections]
        if sum(sections) != size:
            raise RuntimeError("split_with_sizes expects split_sizes to sum exactly to %d (input tensor's "
                               "size at dimension %d), but got split_sizes=%s" % (size, d, sections))
        bounds, start = [], 0
        for s in sections:
            bounds.append((start, start + s))
            start += s
    return _pieces(x, d, bounds, "Split" if isinstance(split_size_or_sections, int) else "SplitWithSizes")


def chunk(input, chunks, dim=0):
    x = require_tensor(input, "chunk")
    _limits.int64(chunks, "chunks", "chunk")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: %d" % chunks)
    size = x._data.shape[_dim(dim, x._data.ndim)]
    step = -(-size // chunks) if size else 1
    if size == 0:       # torch: `chunks` empty pieces
        return _pieces(x, dim, [(0, 0)] * chunks, "Split")
    return split(x, step, dim)


def unbind(input, dim=0):
    x = require_tensor(input, "unbind")
    d = _dim(dim, x._data.ndim)
    return _pieces(x, d, [(i, i + 1) for i in range(x._data.shape[d])], "Unbind", stacked=True)


def _split_call(op, *args):
    return op(*args)


register("split", split, samples=lambda rng: iter([Sample(rng.standard_normal((5, 3)), 2),
                                                   Sample(rng.standard_normal((5, 3)), [1, 4], 0),
                                                   Sample(rng.standard_normal((2, 7)), 3, 1)]),
         family="shape")
register("chunk", chunk, samples=lambda rng: iter([Sample(rng.standard_normal((5, 3)), 2),
                                                   Sample(rng.standard_normal((2, 7)), 3, 1)]),
         family="shape")
register("unbind", unbind, samples=lambda rng: iter([Sample(rng.standard_normal((3, 4))),
                                                     Sample(rng.standard_normal((3, 4)), 1)]),
         family="shape")


# -- detach ----------------------------------------------------------------------------

def detach(input):
    """The same storage and version counter, outside the graph."""
    out = _wrap(_same_memory(input._data))
    out._version_counter = input._version_counter
    return out


register("detach", detach, gradcheck=False, difftest=False, family="shape")


# -- in-place view ops: x.squeeze_(0) and the like ------------------------------------------

def _in_place_view(name, op):
    """x.op_(...): x itself becomes op(x), a view op recorded in place (as
    torch: the version counter moves, and a leaf that requires grad refuses)."""
    def inplace(self, *args, **kwargs):
        require_tensor(self, name)
        recording = rec.needs_grad(self)
        views.check_inplace(self, recording)
        new = op(self, *args, **kwargs)
        self._data = new._data
        self._version_counter.bump()
        if _capture._active is not None:
            _capture.in_place(self)
        if self._view_fn is not None:
            self._view_fn = new._view_fn
            self._grad_fn, self._output_nr = new._grad_fn, new._output_nr
            self._grad_fn_version = self._version_counter[0]
        elif recording:
            self._grad_fn, self._output_nr = new._grad_fn, new._output_nr
        return self
    inplace.__name__ = name
    return inplace


for _name, _op in (("squeeze_", squeeze), ("unsqueeze_", unsqueeze), ("t_", t), ("transpose_", transpose)):
    method(_name, _in_place_view(_name, _op))

# Tensor.as_subclass and Tensor._make_subclass (cextend._torch_function) are views made here.
_torch_function.alias, _torch_function.detach = _alias, detach
