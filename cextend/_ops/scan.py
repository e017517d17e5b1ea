"""Cumulative ops along a dim: cumsum, cumprod, cummax, cummin, logcumsumexp."""
import numpy as np

from cextend import _dtype
from cextend._fpe import quietly
from cextend.autograd import record as rec
from cextend._ops import _out
from cextend._ops._operands import require_tensor
from cextend._ops.reduction import return_types
from cextend._ops.registry import Sample, register
from cextend.autograd import grad_mode, views
from cextend.tensor import _wrap
from cextend._ops.arithmetic import where
from cextend._ops.gather_scatter import scatter_add
from cextend._ops.joining import cat
from cextend._promotion import float_result
from cextend.tensor import _dim
from cextend._promotion import _torch_name


def _dim_of(x, dim):
    return _dim(dim, x._data.ndim)


def _scan_dtype(x, dtype):
    if dtype is not None:
        return _dtype.as_dtype(dtype).numpy
    return np.dtype(np.int64) if x._data.dtype.kind in "iub" else x._data.dtype


def _reverse_cumsum(g, dim):
    return g.flip(dim).cumsum(dim).flip(dim)


def _accumulator(dt):
    """torch's CPU scans run in acc_type: float32 accumulates in double (a
    float32 running sum would lose 1 in 1e8 + 1 - 1e8)."""
    return np.dtype(np.float64) if dt == np.float32 else dt


def _scan(function, data, dim, dt):
    """The scan, contiguous as torch's (its result is allocated C-ordered)."""
    return np.asarray(function(data, dim, _accumulator(dt)), dt, order="C")


def _cumsum_backward(node, g):
    if node.ndim == 0:
        return g
    return _reverse_cumsum(g, node.dim)


_CumsumNode = rec.node_class("CumsumBackward", _cumsum_backward)


def _out_scan_dtype(out, dtype, name, kernel_runs=True):
    """With out=, torch scans the input cast to out's dtype (dtype=, when
    given, must name out's)."""
    _out.check_out(out, name, differentiable=False)
    if out._data.dtype == np.bool_ and kernel_runs:        # a 0-d input is copied, kernel-free
        raise NotImplementedError("\"%s_out_cpu\" not implemented for 'Bool'" % name)
    if dtype is not None and _dtype.as_dtype(dtype).numpy != out._data.dtype:
        raise RuntimeError("Expected out tensor to have dtype %s, but got %s instead"
                           % (_out.c_type_name(_dtype.as_dtype(dtype).numpy), _out.c_type_name(out._data.dtype)))
    return out._data.dtype


def cumsum(input, dim, *, dtype=None, out=None):
    x = require_tensor(input, "cumsum")
    d = _dim_of(x, dim)
    dt = _scan_dtype(x, dtype) if out is None else _out_scan_dtype(out, dtype, "cumsum", x._data.ndim > 0)
    data = x._data.astype(dt) if x._data.dtype != dt else x._data
    result = quietly(_scan, np.cumsum, data, d, dt) if data.ndim else data.copy()
    if dt.kind == "f" and data.ndim:
        result = result + dt.type(0)        # torch's sum starts from +0.0: -0.0 becomes +0.0 (a 0-d input is copied)
    if out is not None:
        _out.check_out(out, "cumsum", x)
        return _out.write_out(out, result, "cumsum")
    t = _wrap(np.asarray(result))
    if rec.needs_grad(x):
        node = rec.record(_CumsumNode, (x,), t)
        node.dim, node.ndim = d, x._data.ndim
    return t


def _inplace_checks(self, dim, name):
    """x.cumsum_(dim)'s checks in torch's order: the argument parser's dim
    type, autograd's in-place checks, the dim's range, then the kernel's
    dtype."""
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise TypeError("%s_(): argument 'dim' (position 1) must be int, not %s" % (name, type(dim).__name__))
    views.check_inplace(self, self.requires_grad)
    _dim_of(self, dim)
    if self._data.dtype.kind == "b" and self._data.ndim and self._data.size:   # 0-d or empty: no kernel runs
        raise NotImplementedError("\"%s_out_cpu\" not implemented for 'Bool'" % name)


def _cumsum_inplace(self, dim, *, dtype=None):
    _inplace_checks(self, dim, "cumsum")
    if self._data.dtype.kind != "f":
        # an integer tensor may carry history (x.ne_(y), y requiring grad): torch's
        # in-place op rebases it without the dtype check a new output gets
        with grad_mode.no_grad():
            value = cumsum(self, dim, dtype=dtype)
        return self.copy_(value)
    return self.copy_(cumsum(self, dim, dtype=dtype))


def _cumprod_backward(node, g, x, result):
    """torch's cumprod_backward: without zeros, the reverse cumsum of
    g * result over x; with zeros, outside create_graph its O(n) formula
    (_cumprod_grad_with_zeros), under it the O(n^2) sum of products that
    omit each element, which differentiates again."""
    if node.ndim == 0 or x.numel() <= 1:
        return g
    d = node.dim
    n = x.shape[d]
    if n == 1:
        return g
    if not (x == 0).any().item():
        return _reverse_cumsum(g * result, d) / x
    if not grad_mode.is_grad_enabled():
        return _wrap(_cumprod_grad_with_zeros(x._data, g._data, result._data, d))
    ones_shape = list(x.shape)
    ones_shape[d] = 1
    slices = []
    for k in range(n):
        if k == 0:
            omitted = cat([x.new_ones(ones_shape), x.narrow(d, 1, n - 1).cumprod(d)], d)
        else:
            until = x.narrow(d, 0, k).prod(d, keepdim=True)
            if k == n - 1:
                omitted = until
            else:
                after = x.narrow(d, k + 1, n - k - 1).cumprod(d)
                omitted = cat([until, until.expand_as(after) * after], d)
        slices.append((g.narrow(d, k, n - k) * omitted).sum(d).unsqueeze(d))
    return cat(slices, d)


def _cumprod_grad_with_zeros(x, g, result, d):
    """torch's O(n) cumprod_backward for an input holding zeros (outside
    create_graph), step for step, so infinities and signed zeros come out
    as its do: before the first zero of a row, the reverse cumsum of
    g * result over x; at the first zero, the products that skip it; past
    it, exactly +0.0."""
    zero = np.zeros((), g.dtype)
    with np.errstate(all="ignore"):
        w = result * g
        zeros_so_far = np.cumsum(x == 0, axis=d)
        before = zeros_so_far == 0
        grad = np.zeros(x.shape, g.dtype)
        # torch's cumsum starts from +0.0 and runs in double for float32
        reversed_sum = np.flip(np.cumsum(np.flip(np.where(before, w, zero), d), axis=d,
                                         dtype=_accumulator(w.dtype)), d).astype(w.dtype) + zero
        grad[before] = (reversed_sum / np.where(before, x, np.ones((), x.dtype)))[before]
        after_one = zeros_so_far == 1
        first = np.expand_dims(np.argmax(after_one, axis=d), d)
        first_zero = np.zeros(x.shape, bool)
        np.put_along_axis(first_zero, first, True, axis=d)
        first_zero &= after_one
        between = after_one & ~first_zero
        term = np.sum(np.cumprod(np.where(between, x, np.ones((), x.dtype)), axis=d)
                      * np.where(after_one, g, zero), axis=d, keepdims=True)
        # the product before the first zero, read from the saved result
        lead = np.take_along_axis(result, np.maximum(first - 1, 0), axis=d)
        lead = np.where(first == 0, np.ones((), lead.dtype), lead)
        grad[first_zero] = np.broadcast_to(term * lead, x.shape)[first_zero]
    return grad


_CumprodNode = rec.node_class("CumprodBackward", _cumprod_backward)


def cumprod(input, dim, *, dtype=None, out=None):
    x = require_tensor(input, "cumprod")
    d = _dim_of(x, dim)
    dt = _scan_dtype(x, dtype) if out is None else _out_scan_dtype(out, dtype, "cumprod", x._data.ndim > 0)
    data = x._data.astype(dt) if x._data.dtype != dt else x._data
    result = quietly(_scan, np.cumprod, data, d, dt) if data.ndim else data.copy()
    if out is not None:
        _out.check_out(out, "cumprod", x)
        return _out.write_out(out, result, "cumprod")
    t = _wrap(np.asarray(result))
    if rec.needs_grad(x):
        node = rec.record(_CumprodNode, (x,), t)
        node.dim, node.ndim = d, x._data.ndim
        node._saved = (rec.save(x), rec.save_output(t))
    return t


def _cumprod_inplace(self, dim, *, dtype=None):
    """x.cumprod_(dim): cumprod of a copy of x, copied back; the node saves x
    itself as its result, as torch's, so changing x afterwards makes the
    backward raise there too."""
    _inplace_checks(self, dim, "cumprod")
    recording = rec.needs_grad(self)
    result = cumprod(self.clone() if recording else self, dim, dtype=dtype)
    node = result._grad_fn if recording else None
    self.copy_(result)
    if type(node) is _CumprodNode:
        node._saved = (node._saved[0], rec.save_output(self))
    return self


def _scan_samples(rng):
    yield Sample(rng.uniform(-2, 2, (3, 4)), 1)
    yield Sample(rng.uniform(-2, 2, (2, 3, 4)), 0)
    yield Sample(rng.uniform(-2, 2, (5,)), -1)
    yield Sample(rng.uniform(-2, 2, ()), 0)


def _cumprod_samples(rng):
    yield from _scan_samples(rng)
    with_zero = rng.uniform(-2, 2, (2, 5))
    with_zero[0, 2] = 0.0
    with_zero[1, 1] = with_zero[1, 3] = 0.0
    yield Sample(with_zero, 1, note="zeros")


register("cumsum", cumsum, inplace=_cumsum_inplace, samples=_scan_samples, family="scan",
         integer_inputs=True)
register("cumprod", cumprod, inplace=_cumprod_inplace, samples=_cumprod_samples, family="scan",
         integer_inputs=True)


def _cum_extreme_backward(node, grads, indices, input=None):
    g = grads[0]
    if g is None:
        return None
    if node.ndim == 0:
        return g
    return _scatter_add_along(g, indices._data, node.dim, node.in_shape)


def _scatter_add_along(g, index, dim, shape):
    zeros = _wrap(np.zeros(shape, g._data.dtype))
    return scatter_add(zeros, dim, _wrap(index), g)


_CummaxNode = rec.node_class("CummaxBackward", _cum_extreme_backward, multi_output=True)
_CumminNode = rec.node_class("CumminBackward", _cum_extreme_backward, multi_output=True)


def _cum_extreme(x, dim, is_max, name):
    d = _dim_of(x, dim)
    data = x._data
    if data.ndim == 0:
        values, indices = data.copy(), np.zeros((), np.int64)
    else:
        moved = np.moveaxis(data, d, -1)
        values = np.empty_like(moved)
        indices = np.empty(moved.shape, np.int64)
        if moved.shape[-1]:
            best = moved[..., 0].copy()
            where = np.zeros(moved.shape[:-1], np.int64)
            for k in range(moved.shape[-1]):
                current = moved[..., k]
                # torch: NaN wins and sticks; ties move the index forward.
                if data.dtype.kind == "f":
                    take = np.isnan(current) | (~np.isnan(best) & ((current >= best) if is_max else (current <= best)))
                else:
                    take = (current >= best) if is_max else (current <= best)
                best = np.where(take, current, best)
                where = np.where(take, k, where)
                values[..., k] = best
                indices[..., k] = where
        values, indices = np.moveaxis(values, -1, d), np.moveaxis(indices, -1, d)
    v, i = _wrap(np.array(values, order="C")), _wrap(np.array(indices, order="C"))
    if rec.needs_grad(x):
        node = rec.record(_CummaxNode if is_max else _CumminNode, (x,), (v, None))
        node.dim, node.ndim, node.in_shape = d, data.ndim, data.shape
        # torch's cummaxmin_backward reads self too: an in-place change to
        # it before backward raises
        node._saved = (rec.save(i), rec.save(x))
    return return_types["cummax" if is_max else "cummin"](v, i)


def cummax(input, dim):
    return _cum_extreme(require_tensor(input, "cummax"), dim, True, "cummax")


def cummin(input, dim):
    return _cum_extreme(require_tensor(input, "cummin"), dim, False, "cummin")


register("cummax", cummax, samples=_scan_samples, family="scan", integer_inputs=True)
register("cummin", cummin, samples=_scan_samples, family="scan", integer_inputs=True)


def _logcumsumexp_backward(node, g, x, result):
    if node.ndim == 0 or g.numel() == 0:
        return g
    # d/dx_k = sum_{j>=k} g_j exp(x_k - result_j), as torch computes it: in
    # log space, positive and negative g apart (no overflow, and a NaN or
    # zero g contributes nothing rather than poisoning the sum)
    d = node.dim
    lowest = float(np.finfo(g._data.dtype).min)
    log_abs = g.abs().log()

    def reverse_logcumsumexp(t):
        return t.flip(d).logcumsumexp(d).flip(d)
    positive = (reverse_logcumsumexp(where(g > 0, log_abs, lowest) - result) + x).exp()
    negative = (reverse_logcumsumexp(where(g < 0, log_abs, lowest) - result) + x).exp()
    return positive - negative


_LogcumsumexpNode = rec.node_class("LogcumsumexpBackward", _logcumsumexp_backward)


def logcumsumexp(input, dim, *, out=None):
    x = require_tensor(input, "logcumsumexp")
    if x._data.dtype.kind != "f":
        raise NotImplementedError("\"logcumsumexp_out_cpu\" not implemented for '%s'" % _torch_name(x._data.dtype))
    d = _dim_of(x, dim)
    dt = float_result(x._data.dtype)
    data = x._data.astype(dt)
    result = quietly(np.logaddexp.accumulate, data, d) + dt.type(0) if data.ndim else data.copy()
    t = _wrap(np.asarray(result, dt, order="C"))     # contiguous, as torch's
    if out is not None:
        return _out.finish_out(out, t, "logcumsumexp", x, strict="expected scalar_type %(result)s but found %(out)s")
    if rec.needs_grad(x):
        node = rec.record(_LogcumsumexpNode, (x,), t)
        node.dim, node.ndim = d, x._data.ndim
        node._saved = (rec.save(x), rec.save_output(t))
    return t


register("logcumsumexp", logcumsumexp, samples=_scan_samples, family="scan")
