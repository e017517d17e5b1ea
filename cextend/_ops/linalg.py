"""Matrix products: mm and matmul (batched, broadcasting, 1-D promotion).

Floating-point 2-D products run on cextend's own C GEMM (the Linear
kernels: C = A . B^T with BLAS-style layouts, so transposed and sliced
operands need no copy); other dtypes and batched products use numpy.
"""
import numpy as np

from cextend._ops import _record as rec
from cextend._ops._operands import require_tensor
from cextend._ops.registry import Sample, method, register

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def gemm(a, b):
    """a @ b for 2-D numpy arrays, on the C kernels when both are float32/64 of one dtype."""
    if a.dtype == b.dtype and a.dtype in _FLOATS and type(a) is np.ndarray and type(b) is np.ndarray:
        from cextend import ops
        return ops.linear_forward(a, b.T)
    return a @ b


def _mm_backward(node, g, a, b):
    return (g.mm(b.t()) if node.needs(0) else None,
            a.t().mm(g) if node.needs(1) else None)


_MmNode = rec.node_class("MmBackward", _mm_backward)


def _check_same_dtype(a, b, op):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("%s: expected m1 and m2 to have the same dtype, but got: %s != %s"
                           % (op, a.dtype.name, b.dtype.name))


def mm(input, mat2, *, out=None):
    a, b = require_tensor(input, "mm"), require_tensor(mat2, "mm", "mat2")
    if a._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a._data.shape[1] != b._data.shape[0]:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                           % (a._data.shape + b._data.shape))
    _check_same_dtype(a, b, "mm")
    data = gemm(a._data, b._data)
    if out is not None:
        rec.check_out(out, "mm", a, b)
        return rec.write_out(out, data, "mm")
    from cextend.tensor import _wrap
    result = _wrap(data)
    if rec.needs_grad(a, b):
        node = rec.record(_MmNode, (a, b), result)
        node._saved = (rec.save(a), rec.save(b))
    return result


def _matmul_backward(node, g, a, b):
    return (g.matmul(b.transpose(-1, -2)) if node.needs(0) else None,
            a.transpose(-1, -2).matmul(g) if node.needs(1) else None)


_BmmNode = rec.node_class("BmmBackward", _matmul_backward)


def _batched(a, b):
    """Batched product of operands with >= 2 dims (batch dims broadcast)."""
    if a._data.shape[-1] != b._data.shape[-2]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: [%s, %d] but "
                           "got: [%s, %d]." % (list(b._data.shape[:-2]), a._data.shape[-1],
                                               list(b._data.shape[:-2]), b._data.shape[-2]))
    _check_same_dtype(a, b, "matmul")
    from cextend.tensor import _wrap
    result = _wrap(np.asarray(np.matmul(a._data, b._data)))
    if rec.needs_grad(a, b):
        node = rec.record(_BmmNode, (a, b), result)
        node._saved = (rec.save(a), rec.save(b))
    return result


def matmul(input, other, *, out=None):
    """torch.matmul: 1-D operands are promoted and the added dim removed;
    batch dims broadcast."""
    a, b = require_tensor(input, "matmul"), require_tensor(other, "matmul", "other")
    da, db = a._data.ndim, b._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are %dD and %dD"
                           % (da, db))
    if da == 1 and db == 1:
        if a._data.shape[0] != b._data.shape[0]:
            raise RuntimeError("inconsistent tensor size, expected tensor [%d] and src [%d] to have the "
                               "same number of elements, but got %d and %d elements respectively"
                               % (a._data.shape[0], b._data.shape[0], a._data.shape[0], b._data.shape[0]))
        _check_same_dtype(a, b, "dot")
        result = (a * b).sum()
    else:
        left = a.unsqueeze(0) if da == 1 else a
        right = b.unsqueeze(-1) if db == 1 else b
        if left._data.ndim == 2 and right._data.ndim == 2:
            if left._data.shape[1] != right._data.shape[0]:
                raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                                   % (left._data.shape + right._data.shape))
            result = mm(left, right)
        else:
            result = _batched(left, right)
        if db == 1:
            result = result.squeeze(-1)
        if da == 1:
            result = result.squeeze(-2 if db > 1 else -1)
    if out is not None:
        rec.check_out(out, "matmul", a, b)
        return rec.write_out(out, result._data, "matmul")
    return result


def _mm_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((4, 5)))
    yield Sample(rng.standard_normal((1, 4)), rng.standard_normal((4, 1)))
    yield Sample(rng.standard_normal((0, 4)), rng.standard_normal((4, 2)))


def _matmul_samples(rng):
    yield Sample(rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5)))
    yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((4,)))
    yield Sample(rng.standard_normal((4,)), rng.standard_normal((4, 2)))
    yield Sample(rng.standard_normal((4,)), rng.standard_normal((4,)))
    yield Sample(rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((3, 4, 2)))


register("mm", mm, samples=_mm_samples, family="linalg")
register("matmul", matmul, samples=_matmul_samples, family="linalg")


def _rmatmul(self, other):
    from cextend._ops._operands import is_tensor
    return matmul(other, self) if is_tensor(other) else NotImplemented


method("__matmul__", lambda self, other: matmul(self, other) if hasattr(other, "_data") else NotImplemented)
method("__rmatmul__", _rmatmul)
