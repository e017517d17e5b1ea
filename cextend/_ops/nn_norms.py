"""More normalisation ops of torch.nn.functional: group_norm, instance_norm,
local_response_norm.

group_norm is a builtin op, as torch's native_group_norm: a numpy forward
that follows torch's CPU kernel (per (sample, group) mean and 1/std, then
x * scale + bias per channel, in the input's opmath dtype) and one
NativeGroupNormBackward0 node, whose backward is the kernel's formula and,
under create_graph, torch's one NativeGroupNormBackwardBackward0 (a
FormulaNode: the same formulas in Tensor ops, the statistics recomputed
from the input, so higher derivatives exist).

instance_norm is composed as torch composes it: the input viewed as
(1, N * C, *) through batch norm (cextend/_ops/normalization.py, on the C
kernels), weight, bias and running stats repeated N times, the running
stats then averaged back over the batch.  local_response_norm is torch's
Python composite: the squares averaged over a window of `size` channels
(zero padded, as its avg_pool), then input / (k + alpha * avg) ** beta.
"""
import numbers

import numpy as np

from cextend._dtype import in_opmath
from cextend._fpe import quietly
from cextend._memory_format import channels_last, channels_last_3d, empty_as, suggests_channels_last
from cextend._ops._nn_checks import functional_call, host_tensor, torch_name
from cextend._ops.joining import cat
from cextend._ops.normalization import batch_norm as _batch_norm
from cextend._ops.registry import Const, Sample, register
from cextend.autograd import grad_mode
from cextend.autograd import record as rec
from cextend.tensor import _wrap


# -- group_norm ----------------------------------------------------------------------------------

class GroupNormStats:
    """What group_norm's nodes keep besides tensors: the groups, eps, and the
    (N, G) mean and 1/std the forward normalised with (opmath dtype)."""

    __slots__ = ("groups", "eps", "mean", "rstd")

    def __init__(self, groups, eps, mean, rstd):
        self.groups, self.eps, self.mean, self.rstd = groups, eps, mean, rstd


def _grouped(data, groups):
    """data (N, C, *) as (N, G, C/G, HxW)."""
    n, c = data.shape[:2]
    return data.reshape(n, groups, c // groups, int(np.prod(data.shape[2:], dtype=np.int64)))


def _group_norm_arrays(data, groups, eps, weight, bias):
    """(y, mean, rstd) as torch's CPU kernel: moments per (n, g), rstd = 1/sqrt(max(var, 0) + eps),
    y = x * scale + (-scale * mean + beta), scale = rstd * gamma (beta 0 without a bias), or
    (x - mean) * rstd without weight and bias."""
    x = _grouped(in_opmath(data), groups)
    count = x.shape[2] * x.shape[3]
    mean = x.sum(axis=(2, 3)) / max(count, 1)
    centred = x - mean[:, :, None, None]
    var = (centred * centred).sum(axis=(2, 3)) / max(count, 1)
    rstd = 1 / np.sqrt(np.maximum(var, 0) + x.dtype.type(eps))
    if weight is None and bias is None:
        y = (x - mean[:, :, None, None]) * rstd[:, :, None, None]          # torch's kernel without affine terms
    else:
        d = x.shape[2]
        gamma = np.ones(groups * d, x.dtype) if weight is None else in_opmath(weight._data).astype(x.dtype)
        scale = rstd[:, :, None] * gamma.reshape(groups, d)[None]            # (N, G, D)
        beta = x.dtype.type(0) if bias is None else in_opmath(bias._data).astype(x.dtype).reshape(groups, d)[None]
        shift = -scale * mean[:, :, None] + beta                             # (+ 0 without a bias, as torch)
        y = x * scale[..., None] + shift[..., None]
    return y.reshape(data.shape).astype(data.dtype, copy=False), mean, rstd


def _group_norm_backward(node, g, x, weight, bias):
    return native_group_norm_backward(g, x, weight, node.stats, (node.needs(0), node.needs(1), node.needs(2)))


_GroupNormNode = rec.node_class("NativeGroupNormBackward", _group_norm_backward)


def native_group_norm_backward(g, x, weight, stats, mask):
    """(dx, dw, db) of group_norm, None where mask says not wanted (torch's CPU kernel's
    formulas, in opmath); recorded under create_graph as torch's one
    NativeGroupNormBackwardBackward0 of (grad, input, mean, rstd, weight)."""
    groups = stats.groups
    dt = x._data.dtype
    dy = _grouped(in_opmath(g._data), groups)
    xs = _grouped(in_opmath(x._data), groups)
    acc = xs.dtype
    mean, rstd = stats.mean[:, :, None], stats.rstd[:, :, None]                # (N, G, 1)
    d = xs.shape[2]
    gamma = np.ones((groups, d), acc) if weight is None else in_opmath(weight._data).astype(acc).reshape(groups, d)
    with np.errstate(all="ignore"):
        ds = (dy * xs).sum(axis=3)                                              # (N, G, D)
        db = dy.sum(axis=3)
        grad_x = grad_w = grad_b = None
        if mask[0]:
            count = d * xs.shape[3]
            s = acc.type(1.0 / count) if count else acc.type(0)
            ds_val = (ds * gamma[None]).sum(axis=2, keepdims=True)
            db_val = (db * gamma[None]).sum(axis=2, keepdims=True)
            c2 = (db_val * mean - ds_val) * rstd * rstd * rstd * s
            c3 = -c2 * mean - db_val * rstd * s
            c1 = rstd * gamma[None]                                             # (N, G, D)
            dx = c1[..., None] * dy + c2[..., None] * xs + c3[..., None]
            grad_x = _wrap(_in_format_of(np.asarray(dx.reshape(x._data.shape), dt), x._data))
        if weight is not None and mask[1]:
            grad_w = _wrap(np.asarray(((ds - db * mean) * rstd).sum(axis=0).reshape(-1), dt))
        if mask[2]:
            grad_b = _wrap(np.asarray(db.sum(axis=0).reshape(-1), dt))
    grads = (grad_x, grad_w, grad_b)
    if rec.needs_grad(g, x, weight):
        node = rec.record(NativeGroupNormBackwardBackward0, (g, x, None, None, weight), grads)
        node.stats = stats
        node._saved = (rec.save(g), rec.save(x), None, None, rec.save(weight))
    return grads


class NativeGroupNormBackwardBackward0(rec.FormulaNode):
    differentiable = (0, 1, 4)      # grad, input, weight

    def formulas(self, mask, g, x, mean, rstd, weight):
        """The kernel's formulas in Tensor ops, the statistics recomputed from x."""
        groups, eps = self.stats.groups, self.stats.eps
        shape = x.shape
        n, c = shape[0], shape[1]
        xs = x.reshape(n, groups, c // groups, -1)
        dy = g.reshape(n, groups, c // groups, -1)
        centred = xs - xs.mean((2, 3), keepdim=True)
        rstd = ((centred * centred).mean((2, 3), keepdim=True) + eps).rsqrt()
        xhat = centred * rstd
        grad_x = grad_w = grad_b = None
        if mask[0]:
            gw = dy if weight is None else dy * weight.reshape(1, groups, c // groups, 1)
            grad_x = (rstd * (gw - gw.mean((2, 3), keepdim=True)
                              - xhat * (gw * xhat).mean((2, 3), keepdim=True))).reshape(shape)
        if weight is not None and mask[1]:
            grad_w = (dy * xhat).sum((0, 3)).reshape(-1)
        if mask[2]:
            grad_b = dy.sum((0, 3)).reshape(-1)
        return grad_x, grad_w, grad_b


def _in_format_of(y, x):
    """y laid out as torch's CPU kernel writes it: in x's suggested memory format."""
    if not suggests_channels_last(x):
        return y
    laid_out = empty_as(y, y.dtype, channels_last if x.ndim == 4 else channels_last_3d)
    laid_out[...] = y
    return laid_out


def _check_group_parameter(p, name, x, channels, weight):
    if p is None:
        return None
    host_tensor(p, "group_norm", name)
    if p._data.ndim != 1 or p._data.size != channels:
        # (torch's bias message shows the weight's shape: [0] when there is none)
        shown = p if name == "weight" else weight
        raise RuntimeError("Expected %s to be a vector of size equal to the number of channels in input, but got "
                           "%s of shape %s and input of shape %s"
                           % (name, name, [0] if shown is None else list(shown._data.shape), list(x._data.shape)))
    return p


def _check_parameter_dtypes(x, kernel, *parameters):
    """torch's mixed-dtype rule: the parameters share one dtype, that of the input, or float32
    with a float16 input."""
    dt = x._data.dtype
    types = {p._data.dtype for p in parameters if p is not None}
    if types and types != {dt}:
        if len(types) > 1 or types != {np.dtype(np.float32)}:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if dt != np.float16:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    if dt.kind != "f":
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (kernel, torch_name(dt)))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each sample's channels in num_groups groups (biased variance), then the
    per-channel affine map; input (N, C, *)."""
    x = host_tensor(input, "group_norm")
    if isinstance(num_groups, bool) or not isinstance(num_groups, numbers.Integral):
        raise TypeError("group_norm(): argument 'num_groups' (position 2) must be int, not %s"
                        % type(num_groups).__name__)
    shape = x._data.shape
    if len(shape) < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received %d" % len(shape))
    n, c = shape[0], shape[1]
    size = [n * c // num_groups, num_groups] + list(shape[2:])      # num_groups == 0: ZeroDivisionError, as torch
    if size[0] * int(np.prod(size[2:], dtype=np.int64)) == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size %s" % size)
    if num_groups <= 0:
        raise RuntimeError("Expected num groups to be greater than 0, got %d" % num_groups)
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           "shape %s and num_groups=%d" % (list(shape), num_groups))
    weight = _check_group_parameter(weight, "weight", x, c, weight)
    bias = _check_group_parameter(bias, "bias", x, c, weight)
    _check_parameter_dtypes(x, "GroupNormKernelImpl", weight, bias)
    y, mean, rstd = quietly(_group_norm_arrays, x._data, num_groups, eps, weight, bias)
    result = _wrap(_in_format_of(np.asarray(y, order="C"), x._data))
    if rec.needs_grad(x, weight, bias):
        node = rec.record(_GroupNormNode, (x, weight, bias), result)
        node.stats = GroupNormStats(num_groups, eps, mean, rstd)
        node._saved = (rec.save(x), rec.save(weight), rec.save(bias))
    return result


# -- instance_norm -------------------------------------------------------------------------------

def _check_batch_norm_dtypes(x, weight, bias, running_mean, running_var):
    """torch's batch norm kernel's dtype rules (probed on 2.13): the affine parameters as
    group_norm's; running stats of another dtype are converted, except a running_mean of
    the parameters' dtype with a running_var of another, which the kernel reads as the
    parameters' dtype and refuses."""
    dt = x._data.dtype
    param = next((p._data.dtype for p in (weight, bias) if p is not None), dt)
    mixed = param != dt
    if mixed and ({p._data.dtype for p in (weight, bias) if p is not None} != {np.dtype(np.float32)}):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if running_mean is not None and running_var is not None and running_mean._data.dtype == param \
            and running_var._data.dtype != param:
        if mixed:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("expected scalar type %s but found %s"
                           % (torch_name(param), torch_name(running_var._data.dtype)))
    if mixed and dt != np.float16:
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _verify_spatial_size(x):
    if int(np.prod(x.shape[2:], dtype=np.int64)) == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size %s" % (x.size(),))


def _repeated(t, name, batch, features, x):
    """t repeated batch times, checked as batch norm checks its (N * C)-channel operands."""
    if t is None:
        return None
    host_tensor(t, "instance_norm", name)
    if t._data.size * batch != features:
        raise RuntimeError("%s should contain %d elements not %d" % (name, features, t._data.size * batch))
    return t.repeat(batch)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its spatial dims; with use_input_stats=False
    the running stats are used instead, and with it they are updated (averaged over the batch)."""
    x = host_tensor(input, "instance_norm")
    if use_input_stats:
        _verify_spatial_size(x)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    if (running_mean is None) != (running_var is None):
        param = next((p._data.dtype for p in (weight, bias) if getattr(p, "_data", None) is not None), x._data.dtype)
        if running_mean is not None and running_mean._data.dtype != param:      # (torch converts it first)
            raise RuntimeError("Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument "
                               "#0 'self'")
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    b, c = shape[0], shape[1]
    features = b * c
    if x._data.dtype.kind != "f":
        raise NotImplementedError("\"batch_norm\" not implemented for '%s'" % torch_name(x._data.dtype))
    if x._data.size == 0:
        return x.contiguous().view((1, features) + shape[2:]).clone().view(shape)
    stats = [_repeated(t, name, b, features, x) for t, name in ((running_mean, "running_mean"),
                                                                (running_var, "running_var"))]
    weight_, bias_ = (_repeated(t, name, b, features, x) for t, name in ((weight, "weight"), (bias, "bias")))
    _check_batch_norm_dtypes(x, weight_, bias_, *stats)
    dt = x.dtype
    mean_, var_ = (None if s is None else s.detach().to(dt) for s in stats)     # torch keeps float running stats
    out = _batch_norm(x.contiguous().view((1, features) + shape[2:]), weight_, bias_, mean_, var_,
                      bool(use_input_stats), momentum, eps)
    with grad_mode.no_grad():
        for target, repeated in ((running_mean, mean_), (running_var, var_)):
            if target is not None:
                target.copy_(repeated.view(b, c).mean(0))
    return out.view(shape)


# -- local_response_norm -------------------------------------------------------------------------

def _window_sum(t, dim, size):
    """Sums over windows of `size` along dim, zero padded by size // 2 before and (size - 1) // 2
    after (torch's pad, then avg_pool's sum, in the window's order)."""
    shape = list(t.shape)
    before, after = size // 2, (size - 1) // 2
    pieces = []
    if before:
        pieces.append(t.new_zeros(shape[:dim] + [before] + shape[dim + 1:]))
    pieces.append(t)
    if after:
        pieces.append(t.new_zeros(shape[:dim] + [after] + shape[dim + 1:]))
    padded = cat(pieces, dim) if len(pieces) > 1 else t
    length = shape[dim]
    total = padded.narrow(dim, 0, length)
    for k in range(1, size):
        total = total + padded.narrow(dim, k, length)
    return total


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input**2 over `size` neighbouring channels) ** beta."""
    x = host_tensor(input, "local_response_norm")
    dim = x.dim()
    if dim < 3:
        raise ValueError("Expected 3D or higher dimensionality                          input (got %d dimensions)"
                         % dim)
    if x._data.size == 0:
        return x
    if isinstance(size, bool) or not isinstance(size, numbers.Integral):
        raise TypeError("local_response_norm(): argument 'size' must be int, not %s" % type(size).__name__)
    if size <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kH: %d kW: 1" % size)
    dt = x._data.dtype
    pool = "avg_pool2d" if dim == 3 else "avg_pool3d_out_frame"
    if dt.kind != "f" and dt != np.int64:
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (pool, torch_name(dt)))
    div = x.mul(x)
    if dim == 3:
        div = div.unsqueeze(1)
    else:
        sizes = x.shape
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
    total = _window_sum(div, 2, size)
    div = total.div(size, rounding_mode="trunc") if dt.kind != "f" else total / size   # avg_pool: sum / size
    div = div.squeeze(1)
    if dim > 3:
        div = div.view(x.shape)
    div = div.mul(alpha).add(k).pow(beta)
    return x / div


# -- samples and the table -----------------------------------------------------------------------

def _group_norm_samples(rng):
    yield Sample(rng.standard_normal((2, 4, 3)), 2)
    yield Sample(rng.standard_normal((3, 6)), 3, rng.uniform(0.5, 1.5, 6), rng.standard_normal(6), note="affine")
    yield Sample(rng.standard_normal((2, 4, 2, 3)), 1, rng.uniform(0.5, 1.5, 4), note="one group, weight only")
    yield Sample(rng.standard_normal((1, 5, 7)), 5, None, rng.standard_normal(5), eps=1e-3, note="bias only")
    yield Sample(rng.standard_normal((0, 4, 3)), 2, note="empty batch")


def _instance_norm_samples(rng):
    yield Sample(rng.standard_normal((2, 3, 4)))
    yield Sample(rng.standard_normal((2, 3, 5)), weight=rng.uniform(0.5, 1.5, 3), bias=rng.standard_normal(3))
    yield Sample(rng.standard_normal((1, 2, 3, 3)), Const(rng.standard_normal(2)), Const(rng.uniform(0.5, 2, 2)),
                 note="running stats, updated")
    yield Sample(rng.standard_normal((3, 2, 4)), Const(rng.standard_normal(2)), Const(rng.uniform(0.5, 2, 2)),
                 rng.uniform(0.5, 1.5, 2), use_input_stats=False, note="normalised by the running stats")


def _local_response_norm_samples(rng):
    yield Sample(rng.standard_normal((2, 5, 3)), 2)
    yield Sample(rng.standard_normal((1, 4, 3, 2)), 3, alpha=0.5, beta=0.6, k=2.0)
    yield Sample(rng.standard_normal((2, 3, 2, 2, 1)), 4, 0.2)     # (5-d: a transposed layout views as torch does)
    yield Sample(rng.standard_normal((2, 1, 4)), 1, 1.0)


def _nn_only(name, function, samples, **info):
    register(name, function, method=False, module=False, family="nn", samples=samples,
             call=functional_call(name), **info)


_nn_only("group_norm", group_norm, _group_norm_samples)
_nn_only("instance_norm", instance_norm, _instance_norm_samples)
_nn_only("local_response_norm", local_response_norm, _local_response_norm_samples)
