"""Linear maps on arrays recorded as torch's pair of nodes: the machinery of
the spatial ops (padding, upsampling, im2col/col2im, pixel and channel
shuffles).

Each of these ops is linear in its input (constant padding is affine: its
derivative is linear), and its derivative is another such op: the
transposed map.  A Map computes the op on a numpy array and names its
transpose (`adjoint()`), and `apply` records it as torch records it: one
node named as torch's (UpsampleBilinear2DBackward0), whose backward applies
the transpose, recorded in turn as torch's node for it
(UpsampleBilinear2DBackwardBackward0, or Col2ImBackward0 for im2col's,
ConstantPadNdBackward0 for constant_pad_nd's own), so create_graph gives
derivatives of any order.
"""
import numpy as np

from cextend._memory_format import channels_last, channels_last_3d, empty_as, suggests_channels_last
from cextend.autograd import record as rec
from cextend.tensor import _wrap


class Map:
    """A linear op on arrays.  Subclasses set `node` (torch's node name for the
    op) and define `compute(array)` and `adjoint()`.

    takes_self: the node also has an edge to the forward op's input, which
    gets zeros (torch's ReflectionPad2DBackwardBackward0(grad_output, self));
    `apply` is then given that input.
    saves_input: the node saves its input (torch's ReflectionPad2DBackward0
    saves self), so changing it in place before backward raises.
    keeps_format: a channels-last (4-D or 5-D) argument gives a channels-last
    result (torch allocates it in the argument's suggest_memory_format()).
    """

    node = None
    takes_self = False
    saves_input = False
    keeps_format = False

    def compute(self, array):
        raise NotImplementedError

    def adjoint(self):
        raise NotImplementedError


_NODES = {}


class _MapNode(rec.BuiltinNode):
    """The node of a Map: its backward applies the transposed map."""

    def backward(self, grad, *saved):
        transposed = self.map.adjoint()
        return apply(transposed, grad, saved[0] if transposed.takes_self else None)


class _MapNodeWithSelf(rec.BuiltinNode):
    """The node of a Map that takes_self: (grad, self) -> (the transpose of gg, zeros)."""

    def backward(self, gg):
        first = apply(self.map.adjoint(), gg) if self.needs(0) else None
        if not self.needs(1):
            return first, None
        shape, dtype = self._input_meta[1]
        return first, _wrap(np.zeros(shape, dtype))


def node_class(name, takes_self=False):
    """One real class per torch node name (ReflectionPad2DBackward0 and its kin)."""
    found = _NODES.get(name)
    if found is None:
        found = _NODES[name] = type(name, (_MapNodeWithSelf if takes_self else _MapNode,),
                                    {"__module__": __name__})
    return found


def in_format_of(result, argument):
    """result re-laid out channels last where argument is (4-D or 5-D)."""
    if type(result) is not np.ndarray or result.ndim != argument.ndim or not suggests_channels_last(argument):
        return result
    laid_out = empty_as(result, result.dtype, channels_last if result.ndim == 4 else channels_last_3d)
    laid_out[...] = result
    return laid_out


def apply(op, x, self_input=None):
    """op on the Tensor x, recorded as torch's node for it."""
    data = op.compute(x._data)
    if op.keeps_format:
        data = in_format_of(data, x._data)
    out = _wrap(data)
    inputs = (x, self_input) if op.takes_self else (x,)
    if rec.needs_grad(*inputs):
        node = rec.record(node_class(op.node, op.takes_self), inputs, out)
        node.map = op
        if op.saves_input:
            node._saved = (rec.save(x),)
    return out


# -- gathers along one axis and their transposes ----------------------------------------------

def take(array, index, axis, weights=None):
    """Along `axis`: out[..., i, ...] = sum_k weights[i, k] * array[..., index[i, k], ...]
    (index (n, K); weights None: K must be 1, a plain gather with no arithmetic).
    The terms are added in k order, each product formed in the array's dtype."""
    moved = np.moveaxis(array, axis, -1)
    if weights is None:
        out = moved[..., index[:, 0]]
    else:
        out = moved[..., index[:, 0]] * weights[:, 0]
        for k in range(1, index.shape[1]):
            out = out + moved[..., index[:, k]] * weights[:, k]
    return np.moveaxis(out, -1, axis)


def take_transpose(grad, index, axis, size, weights=None):
    """The transpose of take: each grad element added, times its weight, to
    the input position it was gathered from (an input of `size` along axis)."""
    moved = np.moveaxis(grad, axis, -1)
    lead = moved.shape[:-1]
    flat = moved.reshape(int(np.prod(lead)), moved.shape[-1])
    out = np.zeros((flat.shape[0], size), grad.dtype)
    for k in range(index.shape[1]):
        values = flat if weights is None else flat * weights[:, k]
        np.add.at(out, (slice(None), index[:, k]), values)
    return np.moveaxis(out.reshape(lead + (size,)), -1, axis)
