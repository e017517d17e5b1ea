"""One sample-input generator for every differentiable op.

OPS maps a name to (function, input shapes).  `inputs(shapes, layout)`
builds float64 leaf tensors with the given shapes in a layout:
contiguous, transposed (a permuted view of a contiguous array) or sliced
(every other element of a wider array), so every op is checked on the
strided inputs users actually pass.
"""
import numpy as np

import cextend as cx
import cextend.nn.functional as F
from cextend.functions import Add, GlobalMaxPool, LinearFunction, MulConstant

LAYOUTS = ("contiguous", "transposed", "sliced")


def _array(rng, shape, layout):
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        return np.ascontiguousarray(rng.standard_normal(shape[::-1])).transpose()
    if layout == "sliced" and len(shape) >= 1:
        wide = rng.standard_normal(shape[:-1] + (2 * shape[-1],))
        return wide[..., ::2]
    return rng.standard_normal(shape)


def inputs(shapes, layout="contiguous", seed=0):
    rng = np.random.default_rng(seed)
    return tuple(cx.from_numpy(_array(rng, s, layout)).requires_grad_() for s in shapes)


def _positive(t):
    return t * t + 1


TARGET = cx.tensor([1, 0, 2])
_ROWS = cx.tensor(np.array([0, 2, 2]))

# name: (function of the input tensors, input shapes)
OPS = {
    "add": (lambda a, b: a + b, [(3, 4), (3, 4)]),
    "add_broadcast": (lambda a, b: a + b, [(3, 4), (4,)]),
    "add_broadcast_both": (lambda a, b: a + b, [(2, 1, 4), (3, 1)]),
    "add_scalar": (lambda a: 2.5 + a + 1, [(3, 4)]),
    "sub": (lambda a, b: a - b, [(3, 4), (1, 4)]),
    "rsub_scalar": (lambda a: 1.0 - a, [(5,)]),
    "mul": (lambda a, b: a * b, [(3, 4), (3, 1)]),
    "mul_self": (lambda a: a * a, [(4, 3)]),
    "div": (lambda a, b: a / _positive(b), [(3, 4), (4,)]),
    "rdiv_scalar": (lambda a: 2.0 / _positive(a), [(3, 2)]),
    "neg": (lambda a: -a, [(2, 3)]),
    "pow_scalar": (lambda a: a ** 3, [(3, 4)]),
    "pow_fraction": (lambda a: _positive(a) ** 2.5, [(3, 4)]),
    "pow_tensor": (lambda a, b: _positive(a) ** b, [(3, 4), (3, 4)]),
    "rpow": (lambda a: 2.0 ** a, [(3, 4)]),
    "exp": (lambda a: a.exp(), [(3, 4)]),
    "log": (lambda a: _positive(a).log(), [(3, 4)]),
    "sqrt": (lambda a: _positive(a).sqrt(), [(3, 4)]),
    "tanh": (lambda a: a.tanh(), [(3, 4)]),
    "sigmoid": (lambda a: a.sigmoid(), [(3, 4)]),
    "relu": (lambda a: a.relu(), [(3, 4)]),
    "abs": (lambda a: a.abs(), [(3, 4)]),
    "clamp": (lambda a: a.clamp(-0.5, 0.7), [(3, 4)]),
    "mm": (lambda a, b: a.mm(b), [(3, 4), (4, 5)]),
    "matmul_batched": (lambda a, b: a @ b, [(2, 3, 4), (4, 5)]),
    "matmul_vector": (lambda a, b: a.matmul(b), [(3, 4), (4,)]),
    "matmul_vector_left": (lambda a, b: a.matmul(b), [(4,), (4, 2)]),
    "matmul_dot": (lambda a, b: a @ b, [(4,), (4,)]),
    "t": (lambda a: a.t() * 1, [(3, 4)]),
    "transpose": (lambda a: a.transpose(0, 2) * 1, [(2, 3, 4)]),
    "permute": (lambda a: a.permute(2, 0, 1) * 1, [(2, 3, 4)]),
    "T": (lambda a: a.T * 1, [(2, 3, 4)]),
    "view": (lambda a: a.contiguous().view(4, 3), [(3, 4)]),
    "reshape": (lambda a: a.reshape(2, -1), [(3, 4)]),
    "flatten": (lambda a: a.flatten(1), [(2, 3, 2)]),
    "unsqueeze": (lambda a: a.unsqueeze(1) * 1, [(3, 4)]),
    "squeeze": (lambda a: a.squeeze(1) * 1, [(3, 1, 4)]),
    "expand": (lambda a: a.expand(2, 3, 4) * 1, [(3, 1)]),
    "expand_as": (lambda a, b: a.expand_as(b) * b, [(1, 4), (3, 4)]),
    "sum": (lambda a: a.sum(), [(3, 4)]),
    "sum_dim": (lambda a: a.sum(1), [(3, 4)]),
    "sum_dims_keepdim": (lambda a: a.sum((0, 2), keepdim=True), [(2, 3, 4)]),
    "mean": (lambda a: a.mean(), [(3, 4)]),
    "mean_dim": (lambda a: a.mean(-1, keepdim=True), [(3, 4)]),
    "max": (lambda a: a.max(), [(3, 4)]),
    "max_dim": (lambda a: a.max(1)[0], [(3, 4)]),
    "index_int": (lambda a: a[1], [(3, 4)]),
    "index_slice": (lambda a: a[:, 1:3], [(3, 4)]),
    "index_rows_repeated": (lambda a: a[_ROWS], [(3, 4)]),
    "index_ellipsis_none": (lambda a: a[..., None, 1], [(3, 4)]),
    "cat": (lambda a, b: cx.cat([a, b], 1), [(3, 2), (3, 4)]),
    "stack": (lambda a, b: cx.stack([a, b], 0), [(3, 2), (3, 2)]),
    "clone": (lambda a: a.clone(), [(3, 4)]),
    "contiguous": (lambda a: a.contiguous() * 1, [(3, 4)]),
    "iadd": (lambda a, b: (a * 1).add_(b), [(3, 4), (4,)]),
    "isub": (lambda a, b: (a * 1).sub_(b), [(3, 4), (3, 4)]),
    "imul": (lambda a, b: (a * 1).mul_(b), [(3, 4), (3, 4)]),
    "idiv": (lambda a, b: (a * 1).div_(_positive(b)), [(3, 4), (3, 4)]),
    "setitem": (lambda a, b: _setitem(a, b), [(3, 4), (4,)]),
    "log_softmax": (lambda a: F.log_softmax(a, 1), [(3, 4)]),
    "softmax": (lambda a: F.softmax(a, 0), [(3, 4)]),
    "mse_loss": (lambda a, b: F.mse_loss(a, b), [(3, 4), (3, 4)]),
    "cross_entropy": (lambda a: F.cross_entropy(a, TARGET), [(3, 4)]),
    "c_linear": (lambda x, w, b: LinearFunction.apply(x, w, b), [(5, 4), (3, 4), (3,)]),
    "c_linear_no_bias": (lambda x, w: LinearFunction.apply(x, w), [(5, 4), (3, 4)]),
    "c_linear_batched": (lambda x, w, b: LinearFunction.apply(x, w, b), [(2, 3, 4), (3, 4), (3,)]),
    "c_mul_constant": (lambda a: MulConstant.apply(a, 2.5), [(3, 4)]),
    "c_add": (lambda a, b: Add.apply(a, b), [(3, 4), (3, 4)]),
    "c_global_max_pool": (lambda a: GlobalMaxPool.apply(a)[0], [(2, 3, 3, 4)]),
}


def _setitem(a, b):
    out = a * 1
    out[1] = b
    return out
