"""Matrix products: mm and matmul (batched, broadcasting, 1-D promotion).

Floating-point 2-D products run on cextend's own C GEMM (the Linear
kernels: C = A . B^T with BLAS-style layouts, so transposed and sliced
operands need no copy); other dtypes and batched products use numpy.
"""
import numpy as np

from cextend import ops
from cextend.autograd import record as rec
from cextend._ops import _out, bfloat16
from cextend.autograd.grad_mode import _state as _grad_state, no_grad
from cextend.autograd import views
from cextend.autograd.graph import SavedTensor
from cextend.tensor import _wrap
from cextend._ops._operands import is_tensor, require_tensor
from cextend._ops.registry import Sample, method, register
from cextend._promotion import _torch_name
from cextend._ops._kernels import Kernels
from cextend.ops import cuda as _cuda_ops

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def gemm(a, b):
    """a @ b for 2-D numpy arrays, on the C kernels when both are float32/64 of one dtype."""
    if a.dtype == b.dtype and a.dtype in _FLOATS and type(a) is np.ndarray and type(b) is np.ndarray:
        return ops.linear_forward(a, b.T)
    return a @ b


def batched_gemm(a, b):
    """a @ b for arrays of >= 2 dims with broadcasting batch dims: one C GEMM
    per matrix of the batch (each reads its operands in place, strided)."""
    if not (a.dtype == b.dtype and a.dtype in _FLOATS and type(a) is np.ndarray and type(b) is np.ndarray):
        return np.matmul(a, b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a_full = np.broadcast_to(a, batch + a.shape[-2:])
    b_full = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (a.shape[-2], b.shape[-1]), a.dtype)
    for index in np.ndindex(*batch):
        out[index] = ops.linear_forward(a_full[index], b_full[index].T)
    return out


def _mm_backward(node, g, a, b):
    return (g.mm(b.t()) if node.needs(0) else None,
            a.t().mm(g) if node.needs(1) else None)


_MmNode = rec.node_class("MmBackward", _mm_backward)


def _product_saves(node, a, b):
    """torch saves each factor only for the other's gradient: a factor no
    wanted gradient reads may change afterwards, and the node runs twice."""
    return (rec.save(a) if node.needs(1) else None, rec.save(b) if node.needs(0) else None)


# torch's CPU kernel names, which its "not implemented for 'Bool'" names
_BOOL_KERNELS = {"mm": "addmm_impl_cpu_", "matmul": "bmm", "dot": "dot", "mv": "addmv_impl_cpu",
                 "addmm": "addmm_impl_cpu_", "linear": "addmm_impl_cpu_"}


def _check_same_dtype(a, b, op):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("%s: expected m1 and m2 to have the same dtype, but got: %s != %s"
                           % (op, a.dtype.name, b.dtype.name))
    if a._data.dtype.kind == "b" and (op == "dot" or (a._data.size and b._data.size)):
        # an empty product runs no kernel in torch (dot checks first)
        raise NotImplementedError("\"%s\" not implemented for 'Bool'" % _BOOL_KERNELS.get(op, op))


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
    # (k == 1 too: torch's BLAS sums from +0.0, so a -0.0 product gives +0.0;
    # an outer product that keeps -0.0 is torch's ger, `outer` below)
    data = gemm(a._data, b._data)
    if out is not None:
        _out.check_out(out, "mm", a, b)
        return _out.write_out(out, data, "mm", strict="c_type", reads=(a, b))
    result = _wrap(data)
    if rec.needs_grad(a, b):
        node = rec.record(_MmNode, (a, b), result)
        node._saved = _product_saves(node, a, b)
    return result


def _matmul_backward(node, g, a, b):
    return (g.matmul(b.transpose(-1, -2)) if node.needs(0) else None,
            a.transpose(-1, -2).matmul(g) if node.needs(1) else None)


_BmmNode = rec.node_class("BmmBackward", _matmul_backward)


def _viewable(array, shape):
    """Whether numpy (and so torch's view rules) reshapes array to shape without a copy."""
    if type(array) is not np.ndarray or not array.size:
        return True
    return np.may_share_memory(array.reshape(shape), array)


def _torch_copies(a, b, da, db, has_out):
    """Which operands torch's matmul saves as copies rather than as views
    (its fold's reshape, or its expand + reshape to 3-D, could not view):
    an in-place change to such an operand afterwards does not reach the
    backward, as it does through a view (shared version counter)."""
    x, y = a._data, b._data
    if type(x) is not np.ndarray or type(y) is not np.ndarray:
        return False, False
    if da == db == 3 and x.shape[0] != y.shape[0]:
        # a 3-D operand with a batch of 1 that requires grad is squeezed to a
        # matrix, so the other one folds (no expanded gradient)
        if x.shape[0] == 1 and a.requires_grad:
            x, da = x[0], 2
        elif y.shape[0] == 1 and b.requires_grad:
            y, db = y[0], 2
    larger_is_b = db > da
    big, small_dim = (np.swapaxes(y, -1, -2), da) if larger_is_b else (x, db)
    small_requires_grad = (a if larger_is_b else b).requires_grad
    if big.ndim >= 3 and small_dim <= 2 and (
            (small_requires_grad and not has_out) or
            (da != 2 and (not big.size or all(big.strides[i] == big.strides[i + 1] * big.shape[i + 1]
                                               for i in range(big.ndim - 2))))):
        # torch folds the larger operand's batch into its rows
        copied = not _viewable(big, (-1, big.shape[-1])) if big.shape[-1] else False
        return (False, copied) if larger_is_b else (copied, False)
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    count = int(np.prod(batch)) if batch else 1
    return tuple(not _viewable(np.broadcast_to(t, batch + t.shape[-2:]), (count,) + t.shape[-2:])
                 for t in (x, y))


def _batched(a, b, copies=(False, False)):
    """Batched product of operands with >= 2 dims (batch dims broadcast).
    copies: save a copy of an operand where torch's matmul does."""
    if a._data.shape[-1] != b._data.shape[-2]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: [%s, %d] but "
                           "got: [%s, %d]." % (list(b._data.shape[:-2]), a._data.shape[-1],
                                               list(b._data.shape[:-2]), b._data.shape[-2]))
    _check_same_dtype(a, b, "matmul")
    result = _wrap(np.asarray(batched_gemm(a._data, b._data)))
    if rec.needs_grad(a, b):
        node = rec.record(_BmmNode, (a, b), result)
        node._saved = _product_saves(node, a.clone() if copies[0] and node.needs(1) else a,
                                     b.clone() if copies[1] and node.needs(0) else b)
    return result


def _dot_backward(node, g, a, b):
    return (g * b if node.needs(0) else None, g * a if node.needs(1) else None)


def _mv_backward(node, g, a, v):
    return (outer(g, v) if node.needs(0) else None,         # torch's grad.ger(vec)
            a.t().mv(g) if node.needs(1) else None)


_DotNode = rec.node_class("DotBackward", _dot_backward)
_MvNode = rec.node_class("MvBackward", _mv_backward)
_SqueezeInplaceNode = rec.node_class("SqueezeBackward4", lambda node, g: g.unsqueeze(node.dim))


def _product_node(node_cls, a, b, result):
    """result as the output of torch's one node for a product (dot, mv),
    saving each factor for the other's gradient."""
    if rec.needs_grad(a, b):
        node = rec.record(node_cls, (a, b), result)
        node._saved = _product_saves(node, a, b)
    return result


def _dot(a, b):
    with no_grad():
        value = (a * b).sum()       # its rounding: one product per element, then sum's order
    return _product_node(_DotNode, a, b, _wrap(value._data))


def _mv(a, v):
    with no_grad():
        product = mm(a, v.unsqueeze(-1))
    return _product_node(_MvNode, a, v, _wrap(product._data.reshape(product._data.shape[0])))


def _squeezed_(result, dim):
    """torch's result.squeeze_(dim) on a fresh intermediate nobody else
    holds: no view, one SqueezeBackward4 node."""
    out = _wrap(np.squeeze(result._data, dim))
    if rec.needs_grad(result):
        rec.record(_SqueezeInplaceNode, (result,), out).dim = dim
    return out


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
        result = _dot(a, b)
    elif da == 2 and db == 1:
        if a._data.shape[1] != b._data.shape[0]:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx1)"
                               % (a._data.shape + b._data.shape))
        result = _mv(a, b)
    else:
        left = a.unsqueeze(0) if da == 1 else a
        right = b.unsqueeze(-1) if db == 1 else b
        if left._data.ndim == 2 and right._data.ndim == 2:
            if left._data.shape[1] != right._data.shape[0]:
                raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                                   % (left._data.shape + right._data.shape))
            result = mm(left, right)
        else:
            result = _batched(left, right, _torch_copies(left, right, da, db, out is not None))
        if da == 1 and db == 2:
            result = _squeezed_(result, 0)      # torch's mm, then squeeze_(0)
        else:
            if db == 1:
                result = result.squeeze(-1)
            if da == 1:
                result = result.squeeze(-2 if db > 1 else -1)
            if result._base is not None:
                # torch squeezes the added dim away in place (squeeze_): no view
                result = views.forget_base(result)
    if out is not None:
        _out.check_out(out, "matmul", a, b)
        if da == 1 and db == 2:
            # torch runs mm_out(out, a.unsqueeze(0), b).squeeze_(0): out is
            # resized to (1, n) first (restrided, with its warning)
            _out.write_out(out, result._data.reshape(1, -1), "matmul", strict="c_type", reads=(a, b))
            return out.squeeze_(0)
        return _out.write_out(out, result._data, "matmul", strict="c_type", reads=(a, b))
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
    return matmul(other, self) if is_tensor(other) else NotImplemented


method("__matmul__", lambda self, other: matmul(self, other) if hasattr(other, "_data") else NotImplemented)
method("__rmatmul__", _rmatmul)


def bmm(input, mat2, *, out=None):
    a, b = require_tensor(input, "bmm"), require_tensor(mat2, "bmm", "mat2")
    if a._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a._data.shape[0] != b._data.shape[0] or a._data.shape[2] != b._data.shape[1]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but "
                           "got: [%d, %d]." % (a._data.shape[0], a._data.shape[2], b._data.shape[0],
                                               b._data.shape[1]))
    result = _batched(a, b)
    return result if out is None else _out.finish_out(out, result, "bmm", a, b, strict="c_type", reads=(a, b))


def _addmm_backward(node, g, mat1, mat2):
    beta, alpha = node.beta, node.alpha
    grad_input = (g if beta == 1 else g * beta) if node.needs(0) else None
    grad1 = grad2 = None
    if node.needs(1):
        grad1 = g.matmul(mat2.transpose(-1, -2))
        grad1 = grad1 if alpha == 1 else grad1 * alpha
    if node.needs(2):
        grad2 = mat1.transpose(-1, -2).matmul(g)
        grad2 = grad2 if alpha == 1 else grad2 * alpha
    return grad_input, grad1, grad2


_AddmmNode = rec.node_class("AddmmBackward", _addmm_backward)
_BaddbmmNode = rec.node_class("BaddbmmBackward", _addmm_backward)


def _add_scaled_product(name, node_cls, input, m1, m2, beta, alpha, product):
    x = require_tensor(input, name)
    if x._data.dtype != product.dtype:
        raise RuntimeError("%s: expected self and mat2 to have the same dtype, but got: %s != %s"
                           % (name, x.dtype.name, m2.dtype.name))
    if product.dtype.kind in "iu":
        beta, alpha = int(beta), int(alpha)     # torch casts the scalars to the integer type (truncates)
    if x._data.shape != product.shape:       # checked before numpy broadcasts (its error names no op)
        try:
            fits = np.broadcast_shapes(x._data.shape, product.shape) == product.shape
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError("%s: the input of shape %s cannot be broadcast to the product's shape %s"
                               % (name, list(x._data.shape), list(product.shape)))
    if beta == 0:
        data = product if alpha == 1 else product * alpha
        data = np.broadcast_to(data, np.broadcast_shapes(x._data.shape, data.shape)).copy()
    else:
        scaled = x._data if beta == 1 else x._data * beta
        data = scaled + (product if alpha == 1 else product * alpha)
    result = _wrap(np.asarray(data, product.dtype))
    if rec.needs_grad(x, m1, m2):
        node = rec.record(node_cls, (x, m1, m2), result)
        node.beta, node.alpha = beta, alpha
        # torch saves each matrix only for the other's gradient: changing
        # one that no gradient reads, or a second backward, is fine there
        node._saved = (rec.save(m1) if node.needs(2) else None, rec.save(m2) if node.needs(1) else None)
    return result


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    a, b = require_tensor(mat1, "addmm", "mat1"), require_tensor(mat2, "addmm", "mat2")
    if a._data.ndim != 2 or b._data.ndim != 2:
        raise RuntimeError("mat1 must be a matrix, got %d-D tensor" % a._data.ndim if a._data.ndim != 2
                           else "mat2 must be a matrix, got %d-D tensor" % b._data.ndim)
    if a._data.shape[1] != b._data.shape[0]:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                           % (a._data.shape + b._data.shape))
    _check_same_dtype(a, b, "addmm")
    result = _add_scaled_product("addmm", _AddmmNode, input, a, b, beta, alpha, gemm(a._data, b._data))
    return result if out is None else _out.finish_out(out, result, "addmm", input, a, b, strict="c_type", reads=(a, b))


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    a, b = require_tensor(batch1, "baddbmm", "batch1"), require_tensor(batch2, "baddbmm", "batch2")
    if a._data.ndim != 3 or b._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a._data.ndim != 3 else "batch2 must be a 3D tensor")
    if a._data.shape[0] != b._data.shape[0] or a._data.shape[2] != b._data.shape[1]:
        raise RuntimeError("baddbmm: batch1 %s and batch2 %s cannot be multiplied"
                           % (list(a._data.shape), list(b._data.shape)))
    _check_same_dtype(a, b, "baddbmm")
    result = _add_scaled_product("baddbmm", _BaddbmmNode, input, a, b, beta, alpha,
                                 batched_gemm(a._data, b._data))
    return result if out is None else _out.finish_out(out, result, "baddbmm", input, a, b, strict="c_type", reads=(a, b))


def mv(input, vec, *, out=None):
    a, v = require_tensor(input, "mv"), require_tensor(vec, "mv", "vec")
    if a._data.ndim != 2 or v._data.ndim != 1:
        raise RuntimeError("vector + matrix @ vector expected, got %d, %d" % (a._data.ndim, v._data.ndim))
    if a._data.shape[1] != v._data.shape[0]:
        raise RuntimeError("size mismatch, got input (%d), mat (%dx%d), vec (%d)"
                           % (a._data.shape[0], a._data.shape[0], a._data.shape[1], v._data.shape[0]))
    if a._data.dtype == v._data.dtype:
        _check_same_dtype(a, v, "mv")
    if out is not None and is_tensor(out) and out._data.dtype != a._data.dtype:
        raise RuntimeError("addmv input tensors must have the same dtype, but got %s, %s, and %s"
                           % tuple(_torch_name(t._data.dtype) for t in (out, a, v)))
    return matmul(a, v, out=out)


def dot(input, tensor, *, out=None):
    a, b = require_tensor(input, "dot"), require_tensor(tensor, "dot", "tensor")
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError("1D tensors expected, but got %dD and %dD tensors" % (a._data.ndim, b._data.ndim))
    if out is not None and is_tensor(out) and out._data.dtype != a._data.dtype:
        raise RuntimeError("result dtype %s does not match input dtype %s"
                           % (_torch_name(out._data.dtype), _torch_name(a._data.dtype)))
    return matmul(a, b, out=out)


def outer(input, vec2, *, out=None):
    a, b = require_tensor(input, "outer"), require_tensor(vec2, "outer", "vec2")
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError("outer: expected 1-D tensors, got %dD and %dD" % (a._data.ndim, b._data.ndim))
    # torch's composite: self.reshape({size, 1}) * vec2, one product per
    # element (a -0.0 product stays -0.0)
    result = a.reshape(-1, 1) * b
    return result if out is None else _out.finish_out(out, result, "mul", a, b)


def _bmm_samples(rng):
    yield Sample(rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5)))
    yield Sample(rng.standard_normal((1, 1, 4)), rng.standard_normal((1, 4, 1)))


register("bmm", bmm, samples=_bmm_samples, family="linalg")
register("addmm", addmm, family="linalg",
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 5)), rng.standard_normal((3, 4)),
                                          rng.standard_normal((4, 5))),
                                   Sample(rng.standard_normal((5,)), rng.standard_normal((3, 4)),
                                          rng.standard_normal((4, 5)), beta=0.5, alpha=2.0)]))
register("baddbmm", baddbmm, family="linalg",
         samples=lambda rng: iter([Sample(rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 4)),
                                          rng.standard_normal((2, 4, 5)), beta=0.5, alpha=-1.5)]))
register("mv", mv, family="linalg",
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), rng.standard_normal((4,)))]))
register("dot", dot, family="linalg",
         samples=lambda rng: iter([Sample(rng.standard_normal((4,)), rng.standard_normal((4,)))]))
register("outer", outer, aliases=("ger",), family="linalg",
         samples=lambda rng: iter([Sample(rng.standard_normal((3,)), rng.standard_normal((4,)))]))


# -- linear: the layer's product, on the C kernels ------------------------------------

LINEAR = Kernels("linear", cpu=ops, cuda=_cuda_ops)


def _linear_backward(node, g, x, w):
    """x is a Tensor when the weight's gradient reads it, else its bare array
    (for the kernel's shapes; torch keeps nothing then), and w likewise."""
    need_x, need_w, need_b = node.needs(0), node.needs(1), node.needs(2)
    m, k = getattr(w, "_data", w).shape
    if _grad_state.enabled or g._data.dtype not in _FLOATS:
        # Recording a double backward (or an unusual dtype): the same products
        # as differentiable ops.
        g2, x2 = g.reshape(-1, m), x.reshape(-1, k)
        return (g.matmul(w) if need_x else None,
                g2.t().mm(x2) if need_w else None,
                g2.sum(0) if need_b else None)
    gd = g._data
    kernels = ops if type(gd) is np.ndarray else LINEAR.on(grad=g)
    dx, dw, db = kernels.linear_backward(gd, getattr(x, "_data", x), getattr(w, "_data", w),
                                         input=need_x, weight=need_w, bias=need_b)
    return (None if dx is None else _wrap(dx)), (None if dw is None else _wrap(dw)), \
        (None if db is None else _wrap(db))


_LinearNode = rec.node_class("LinearBackward", _linear_backward)


def _linear_node(ndim, has_bias):
    """The node as torch names what its linear records last: addmm or mm for
    a 2-D input; for others, the view, squeeze or add after its matmul (a
    fused bias's view is recorded by linear itself)."""
    if ndim == 2:
        name = "AddmmBackward0" if has_bias else "MmBackward0"
    elif ndim == 1 and not has_bias:
        name = "SqueezeBackward4"
    else:
        name = "AddBackward0" if has_bias else "UnsafeViewBackward0"
    return rec.renamed(_LinearNode, name)


# (input dims, up to 3; has a bias) -> the node, as _linear_node names it
_LINEAR_NODES = {(ndim, bias): _linear_node(ndim, bias) for ndim in (1, 2, 3) for bias in (False, True)}


def _check_linear(x, w, b):
    if x._data.ndim == 0 or w._data.ndim == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are %dD and %dD"
                           % (x._data.ndim, w._data.ndim))
    if w._data.ndim > 2:
        raise RuntimeError("linear: weight must be 1-D or 2-D, got %d-D" % w._data.ndim)
    if x._data.dtype != w._data.dtype:
        raise RuntimeError("mat1 and mat2 must have the same dtype, but got %s and %s"
                           % (_scalar_name(x), _scalar_name(w)))
    k = x._data.shape[-1]
    if w._data.shape[-1] != k:
        rows = int(np.prod(x._data.shape[:-1]))
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                           % (rows, k, w._data.shape[-1], w._data.shape[0] if w._data.ndim == 2 else 1))
    if b is not None:
        m = w._data.shape[0] if w._data.ndim == 2 else 1
        if b._data.dtype != x._data.dtype:
            raise RuntimeError("linear: bias must have the input's dtype %s, got %s" % (x.dtype.name, b.dtype.name))
        if b._data.ndim > 1 or b._data.shape not in ((m,), (1,), ()):
            raise RuntimeError("linear: bias of shape %s cannot be broadcast to an output of %d features"
                               % (list(b._data.shape), m))


def _scalar_name(t):
    return _torch_name(t._data.dtype)


def linear(input, weight, bias=None):
    """input (*, K) . weight^T (M, K) + bias (M,) -> (*, M), on cextend's C kernels."""
    x, w, b = input, weight, bias
    xd, wd = getattr(x, "_data", None), getattr(w, "_data", None)
    bd = None if b is None else getattr(b, "_data", None)
    if xd is None or wd is None or (bd is None and b is not None):
        require_tensor(x, "linear")
        require_tensor(w, "linear", "weight")
        require_tensor(b, "linear", "bias")
    dt = xd.dtype
    # A layer's operands pass this at once; _check_linear finds what is wrong with the others
    # (torch's messages) or accepts them (a 1-D weight, a bias of shape (1,) or ()).
    if not (wd.ndim == 2 and xd.ndim and wd.dtype == dt and xd.shape[-1] == wd.shape[1]
            and (bd is None or (bd.dtype == dt and bd.shape == (wd.shape[0],)))):
        _check_linear(x, w, b)
    if dt.kind == "V":       # bfloat16: computed in float32, rounded once (no wrapper: hot path)
        return bfloat16.in_float32(linear, "linear", (x, w, b), {})
    if dt.kind == "b" and wd.ndim == 2:
        _check_same_dtype(x, w, "linear")      # torch's addmm has no bool kernel
    if type(xd) is np.ndarray and type(wd) is np.ndarray and (bd is None or type(bd) is np.ndarray):
        kernels = ops        # all on the host: LINEAR.on's answer, without its keyword dict
    else:
        kernels = LINEAR.on(input=x, weight=w, bias=b)
    if wd.ndim == 1:
        out = matmul(x, w)
        return out + b if b is not None else out
    if bd is not None and bd.shape != (wd.shape[0],):
        bd = np.ascontiguousarray(np.broadcast_to(bd, (wd.shape[0],)))
    if dt in _FLOATS:
        data = kernels.linear_forward(xd, wd, bd)
    else:
        data = np.matmul(xd, wd.T)
        if bd is not None:
            data = data + bd
    result = _wrap(data)
    if _grad_state.enabled and (x._requires_grad or w._requires_grad or (b is not None and b._requires_grad)
                                or x._base is not None or w._base is not None):
        if rec.needs_grad(x, w, b):
            node = rec.record(_LINEAR_NODES[min(xd.ndim, 3), b is not None], (x, w, b), result)
            # as torch's addmm: each factor is saved (version-checked, freed
            # after backward) only for the other one's gradient (a new node's
            # needs(i) is whether input i has an edge)
            edges = node.next_functions
            node._saved = (SavedTensor(x if xd.ndim < 3 else _as_torch_saves_input(x, b, node))
                           if edges[1][0] is not None else xd,
                           SavedTensor(w) if edges[0][0] is not None else wd)
    if bd is not None and xd.ndim != 2 and _fused_flatten(xd, b._data):
        # torch flattens a contiguous input to 2-D for its fused addmm and
        # views the result back: the result is a view (detach_() refuses it)
        result = result.view(result.shape)
    return result


linear._handles_bfloat16 = True


def _fused_flatten(x, bias):
    """Whether torch 2.13's linear takes its fused path for an input that is
    not 2-D (_flatten_nd_linear: reshape, addmm, view back): a contiguous
    input and a contiguous 1-D bias; else it runs matmul, then add_(bias)."""
    return x.ndim != 2 and bias.ndim == 1 and x.flags.c_contiguous and bias.flags.c_contiguous


def _as_torch_saves_input(x, bias, node):
    """What torch's linear keeps of an input of 3 or more dims for the
    weight's gradient: the input flattened to rows, a view where its leading
    dims merge (or the fused path's reshape of a contiguous input with a
    bias), else a copy -- which an in-place change to x then does not reach."""
    data = x._data
    if data.ndim < 3 or (bias is not None and _fused_flatten(data, bias._data)):
        return x
    return x if _viewable(data, (-1, data.shape[-1])) else x.clone()


def _linear_samples(rng):
    yield Sample(rng.standard_normal((5, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3,)))
    yield Sample(rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4)))
    yield Sample(rng.standard_normal((4,)), rng.standard_normal((3, 4)), rng.standard_normal((3,)))
    yield Sample(rng.standard_normal((0, 4)), rng.standard_normal((2, 4)), rng.standard_normal((2,)))


def _linear_call(lib, *args, **kwargs):
    functional = getattr(lib, "nn").functional
    return functional.linear(*args, **kwargs)


register("linear", linear, method=False, module=False, samples=_linear_samples, family="nn",
         call=_linear_call, kernels=LINEAR)
