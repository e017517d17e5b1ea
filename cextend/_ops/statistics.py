"""Statistical reductions: prod, var/std (with correction), var_mean and
std_mean, norm, logsumexp.  Backward formulas are torch's
(derivatives.yaml / FunctionsManual.cpp), written with Tensor ops."""
import math
import numbers
import warnings

import numpy as np

from cextend import _dtype
from cextend._fpe import quietly
from cextend.autograd import grad_mode
from cextend.autograd import record as rec
from cextend._ops import _out
from cextend._ops._operands import require_tensor
from cextend._ops.reduction import _contiguous, reduce_dims, _keepdim_shape
from cextend._ops.registry import Sample, register
from cextend.tensor import _wrap as _new_tensor
from cextend._ops.joining import cat
from cextend._promotion import float_result
from cextend._ops.reduction import out_reduction_dtype


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


def _restore(t, node):
    """A reduced tensor with its reduced dims put back as size 1."""
    if node.keepdim:
        return t
    return t.reshape(_keepdim_shape(node.in_shape, node.dims))


def _record(node_cls, x, out, dims, keepdim, saved=(), **attrs):
    if rec.needs_grad(x):
        node = rec.record(node_cls, (x,), out)
        node.in_shape, node.dims, node.keepdim = x._data.shape, dims, keepdim
        for k, v in attrs.items():
            setattr(node, k, v)
        node._saved = saved
    return out


# -- prod ---------------------------------------------------------------------------

def _prod_safe_zeros(g, x, dim):
    """d prod/d x_k as the product of the others, by exclusive cumprods in
    both directions (no division, so zeros are fine)."""
    n = x.shape[dim]
    if n == 0:
        return g.expand(x.shape)
    ones_shape = list(x.shape)
    ones_shape[dim] = 1
    ones = x.new_ones(ones_shape)
    before = cat([ones, x.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    after = cat([ones, x.narrow(dim, 1, n - 1).flip(dim)], dim).cumprod(dim).flip(dim)
    return g * (before * after)


def _prod_backward(node, g, x, result):
    if x.dim() == 0:
        return g
    gg, r = _restore(g, node), _restore(result, node)
    zeros = int((x == 0).sum().item())
    if not zeros:
        return gg * (r / x)
    if node.whole and zeros > 1 and not grad_mode.is_grad_enabled():
        return x.new_zeros(x.shape)       # torch's shortcut: two zeros make every partial product 0
    if node.whole:
        flat = x.contiguous().view(-1)
        return _prod_safe_zeros(gg.reshape(1), flat, 0).view(x.shape)
    return _prod_safe_zeros(gg, x, node.dims[0])


_ProdNode = rec.node_class("ProdBackward", _prod_backward)
_ProdDimNode = rec.overload(_ProdNode, 1)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    x = require_tensor(input, "prod")
    if dim is not None and not isinstance(dim, numbers.Integral):
        raise TypeError("prod(): argument 'dim' must be int, not %s" % type(dim).__name__)
    dims = reduce_dims(x, dim)
    if out is not None and dim is None:
        _out.no_out(out, "prod")
    if out is not None:
        rt = out_reduction_dtype(out, dtype, "prod")
    else:
        rt = _dtype.as_dtype(dtype).numpy if dtype is not None else \
            (np.dtype(np.int64) if x._data.dtype.kind in "iub" else x._data.dtype)
    data = x._data.astype(rt) if x._data.dtype != rt else x._data
    result = np.asarray(quietly(lambda: data.prod(axis=dims, keepdims=keepdim)), rt)
    if out is not None:
        _out.check_out(out, "prod", x)
        return _out.write_out(out, result, "prod", reads=(x,))
    t = _wrap(_contiguous(result))
    if rt.kind == "f":
        _record(_ProdNode if dim is None else _ProdDimNode, x, t, dims, keepdim if dim is not None else False, (),
                whole=dim is None)
        if t._grad_fn is not None:
            t._grad_fn._saved = (rec.save(x), rec.save_output(t))
    return t


register("prod", prod, family="reduction", integer_inputs=True,
         samples=lambda rng: iter([Sample(rng.uniform(0.5, 1.5, (3, 4))),
                                   Sample(rng.uniform(0.5, 1.5, (3, 4)), 1),
                                   Sample(rng.uniform(0.5, 1.5, (2, 3, 2)), 0, True),
                                   Sample(np.array([[1.5, 0.0, 2.0], [0.5, 3.0, -1.0]]), 1, note="a zero"),
                                   Sample(np.array([[1.5, 0.0, 2.0, 0.0]]), note="two zeros")]))


# -- var / std ------------------------------------------------------------------------

def _correction(args, unbiased, correction, op):
    """torch's overloads: var(dim, unbiased, keepdim), var(unbiased), correction=."""
    if unbiased is not None and correction is not None:
        raise RuntimeError("%s: cannot specify both unbiased and correction" % op)
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return correction


def _var_parse(x, dim, unbiased, keepdim, correction, op):
    if isinstance(dim, bool):           # var(input, unbiased)
        unbiased, dim = dim, None
    correction = _correction(None, unbiased, correction, op)
    dims = reduce_dims(x, dim)
    count = 1
    for d in dims:
        count *= x._data.shape[d]
    if count - correction <= 0:
        warnings.warn("%s(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel)." % op, UserWarning,
                      stacklevel=3)
    return dims, correction, count


def _var_data(x, dims, correction, count, keepdim):
    """(variance, mean), both in the input's opmath dtype (float32 for
    float16, as torch computes them): the caller rounds to the input's dtype
    after its last step (std's square root)."""
    data = x._data
    if data.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    data = _dtype.in_opmath(data)
    mean = quietly(lambda: data.mean(axis=dims, keepdims=True))
    total = quietly(lambda: np.square(data - mean).sum(axis=dims, keepdims=keepdim))
    divisor = max(count - correction, 0)
    return np.asarray(quietly(np.true_divide, total, divisor), data.dtype), mean


def _var_backward(node, g, x):
    scale = 2.0 / (node.count - node.correction) if node.count - node.correction > 0 else math.inf
    return scale * _restore(g, node) * (x - x.mean(node.dims, keepdim=True))


def _std_backward(node, g, x, result):
    grad_var = (_restore(g, node) / (_restore(result, node) * 2)).masked_fill(_restore(result, node) == 0, 0)
    scale = 2.0 / (node.count - node.correction) if node.count - node.correction > 0 else math.inf
    return scale * grad_var * (x - x.mean(node.dims, keepdim=True))


_VarNode = rec.node_class("VarBackward", _var_backward)
_StdNode = rec.node_class("StdBackward", _std_backward)


def _no_out_for_unbiased_only(op, dim, out):
    if out is not None and isinstance(dim, bool):       # torch's var(input, unbiased) has no out=
        raise TypeError("%s() received an invalid combination of arguments - got (Tensor, bool, out=Tensor), "
                        "but expected one of:\n * (Tensor input, tuple of ints dim, bool unbiased = True, "
                        "bool keepdim = False, *, Tensor out = None)\n * (Tensor input, tuple of ints dim = None, "
                        "*, Number correction = None, bool keepdim = False, Tensor out = None)" % op)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    _no_out_for_unbiased_only("var", dim, out)
    x = require_tensor(input, "var")
    dims, corr, count = _var_parse(x, dim, unbiased, keepdim, correction, "var")
    data, _ = _var_data(x, dims, corr, count, keepdim)
    t = _wrap(_contiguous(quietly(np.asarray, data, x._data.dtype)))    # (float16's range may overflow)
    _record(_VarNode, x, t, dims, keepdim, (rec.save(x),), count=count, correction=corr)
    return t if out is None else _out.finish_out(out, t, "var", x)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    _no_out_for_unbiased_only("std", dim, out)
    x = require_tensor(input, "std")
    dims, corr, count = _var_parse(x, dim, unbiased, keepdim, correction, "std")
    variance, _ = _var_data(x, dims, corr, count, keepdim)
    data = quietly(np.asarray, np.sqrt(variance), x._data.dtype)
    t = _wrap(_contiguous(data))
    if rec.needs_grad(x):
        _record(_StdNode, x, t, dims, keepdim, (), count=count, correction=corr)
        t._grad_fn._saved = (rec.save(x), rec.save_output(t))
    return t if out is None else _out.finish_out(out, t, "std", x)


def _welford_mean_data(data, dims, keepdim):
    """The mean var_mean/std_mean report.  torch computes it with Welford
    updates m += (x - m) / n, in order: an infinity gives inf when it comes
    last and NaN when anything follows it (inf - inf), unlike torch.mean.
    Rows without infinities take numpy's mean (equal but for rounding);
    rows with one are replayed update by update."""
    mean = np.asarray(quietly(lambda: data.mean(axis=dims, keepdims=keepdim)), data.dtype)
    if data.size == 0 or not np.isinf(data).any():
        return mean
    rest = [d for d in range(data.ndim) if d not in dims]
    rows = np.transpose(data, rest + list(dims)).reshape(-1, int(np.prod([data.shape[d] for d in dims])))
    hit = np.isinf(rows).any(axis=1)
    m = np.zeros(int(hit.sum()), data.dtype)
    with np.errstate(all="ignore"):
        for n, column in enumerate(rows[hit].T, start=1):
            m = m + (column - m) / data.dtype.type(n)
    flat = mean.reshape(-1).copy()
    flat[hit] = m
    return flat.reshape(mean.shape)


def _var_mean_backward(node, grads, x, *result):
    """torch's VarMeanBackward / StdMeanBackward: one node for both outputs;
    an output nobody used has no gradient (its hooks see None)."""
    g_spread, g_mean = grads
    grad = None
    if g_spread is not None:
        grad = _std_backward(node, g_spread, x, result[0]) if result else _var_backward(node, g_spread, x)
    if g_mean is not None:
        mean_part = _restore(g_mean, node).expand(x.shape) / node.count
        grad = mean_part if grad is None else grad + mean_part
    return grad


_VarMeanNode = rec.node_class("VarMeanBackward", _var_mean_backward, multi_output=True)
_StdMeanNode = rec.node_class("StdMeanBackward", _var_mean_backward, multi_output=True)


def _spread_and_mean(input, dim, unbiased, keepdim, correction, op, take_root):
    x = require_tensor(input, op)
    dims, corr, count = _var_parse(x, dim, unbiased, keepdim, correction, op)
    variance, _ = _var_data(x, dims, corr, count, keepdim)
    spread = _wrap(_contiguous(quietly(np.asarray, np.sqrt(variance) if take_root else variance, x._data.dtype)))
    mean = _wrap(_contiguous(_welford_mean_data(x._data, dims, keepdim)))
    if rec.needs_grad(x):
        node = rec.record(_StdMeanNode if take_root else _VarMeanNode, (x,), (spread, mean))
        node.in_shape, node.dims, node.keepdim = x._data.shape, dims, keepdim
        node.count, node.correction = count, corr
        node._saved = (rec.save(x), rec.save_output(spread)) if take_root else (rec.save(x),)
    return spread, mean


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _spread_and_mean(input, dim, unbiased, keepdim, correction, "var_mean", take_root=False)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _spread_and_mean(input, dim, unbiased, keepdim, correction, "std_mean", take_root=True)


def _var_samples(rng):
    yield Sample(rng.standard_normal((3, 4)))
    yield Sample(rng.standard_normal((3, 4)), 1)
    yield Sample(rng.standard_normal((3, 4)), 0, keepdim=True, correction=0)
    yield Sample(rng.standard_normal((2, 3, 4)), (0, 2), False)
    yield Sample(rng.standard_normal((5,)), False, note="var(input, unbiased)")


register("var", var, samples=_var_samples, family="statistics")
register("std", std, samples=_var_samples, family="statistics")
register("var_mean", var_mean, method=False, samples=_var_samples, family="statistics")
register("std_mean", std_mean, method=False, samples=_var_samples, family="statistics")


# -- norm ------------------------------------------------------------------------------

def _norm_backward(node, g, x, norm):
    p = node.p
    gg, n = _restore(g, node), _restore(norm, node)
    if p == 0:
        return None         # torch's norm_backward returns an undefined gradient: .grad stays None
    if p == 1:
        return x.sgn() * gg
    if p == 2:
        return gg * (x / n).masked_fill(n == 0, 0)
    if math.isinf(p):
        mask = (x.abs() == n).logical_or(x.abs().isnan())     # torch's: a NaN is among the extremes
        return x.sgn() * ((gg / mask.sum(node.dims, keepdim=True)) * mask)
    if p < 1:
        scaled = (x.sgn() * x.abs().pow(p - 1)).masked_fill(x == 0, 0)
        return scaled * gg * n.pow(1 - p)
    if p < 2:
        return (x.sgn() * x.abs().pow(p - 1) * gg * n.pow(1 - p)).masked_fill(n == 0, 0)
    return (x * x.abs().pow(p - 2) * gg / n.pow(p - 1)).masked_fill(n == 0, 0)


_NormNode = rec.node_class("LinalgVectorNormBackward", _norm_backward)     # torch.norm is linalg.vector_norm


def _norm_data(data, p, dims, keepdim):
    a = np.abs(data)
    if p == 0:
        return (a != 0).sum(axis=dims, keepdims=keepdim).astype(data.dtype)
    if p == math.inf:
        return a.max(axis=dims, keepdims=keepdim, initial=0)
    if p == -math.inf:
        return a.min(axis=dims, keepdims=keepdim)
    if p == 1:
        return a.sum(axis=dims, keepdims=keepdim)
    if p == 2:
        return np.sqrt((a * a).sum(axis=dims, keepdims=keepdim))
    return np.power(np.power(a, p).sum(axis=dims, keepdims=keepdim), 1.0 / p)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The vector p-norm over dim (all elements by default); 'fro' is 2."""
    x = require_tensor(input, "norm")
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        raise RuntimeError("norm: p=%r is not supported (only numbers, inf and 'fro')" % p)
    data = x._data
    if dtype is not None:
        data = data.astype(_dtype.as_dtype(dtype).numpy)
    if data.dtype.kind != "f":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           "Got %s" % data.dtype.name.capitalize())
    dims = reduce_dims(x, dim)
    result = np.asarray(quietly(_norm_data, _dtype.in_opmath(data), float(p), dims, keepdim), data.dtype)
    t = _wrap(_contiguous(result))
    if rec.needs_grad(x):
        _record(_NormNode, x, t, dims, keepdim, (), p=float(p))
        t._grad_fn._saved = (rec.save(x), rec.save_output(t))
    return t if out is None else _out.finish_out(out, t, "norm", x, strict="c_type")


def _norm_samples(rng):
    for p in (2, 1, 3, 1.5, 0.5, math.inf):
        yield Sample(rng.uniform(0.3, 2, (3, 4)) * rng.choice([-1, 1], (3, 4)), p)
    yield Sample(rng.standard_normal((3, 4)), 2, 1)
    yield Sample(rng.standard_normal((2, 3, 4)), "fro", (0, 2), True)


register("norm", norm, samples=_norm_samples, family="statistics")


# -- logsumexp ----------------------------------------------------------------------------

def _logsumexp_backward(node, g, x, result):
    return _restore(g, node) * (x - _restore(result, node)).exp()


_LogsumexpNode = rec.node_class("LogsumexpBackward", _logsumexp_backward)


def logsumexp(input, dim, keepdim=False, *, out=None):
    x = require_tensor(input, "logsumexp")
    data = x._data.astype(float_result(x._data.dtype), copy=False)
    dims = reduce_dims(x, dim)

    def compute():
        if data.size == 0:
            return np.log(np.exp(data).sum(axis=dims, keepdims=keepdim))
        shift = data.max(axis=dims, keepdims=True)
        shift = np.where(np.isfinite(shift), shift, 0)
        total = np.exp(data - shift).sum(axis=dims, keepdims=True)
        result = np.log(total) + shift
        return result if keepdim else np.squeeze(result, axis=dims)
    result = np.asarray(quietly(compute), data.dtype)
    t = _wrap(_contiguous(result))
    if rec.needs_grad(x):
        _record(_LogsumexpNode, x, t, dims, keepdim, ())
        t._grad_fn._saved = (rec.save(x), rec.save_output(t))
    return t if out is None else _out.finish_out(out, t, "logsumexp", x)


register("logsumexp", logsumexp, family="statistics",
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), 1),
                                   Sample(rng.standard_normal((2, 3, 4)), (0, 2), True),
                                   Sample(rng.standard_normal((5,)), 0)]))
