"""Regression and binary losses: mse_loss, l1_loss, smooth_l1_loss,
huber_loss, binary_cross_entropy (+ _with_logits), kl_div.

Where torch has a native kernel (mse, smooth_l1, huber, the two BCEs) the
loss is one builtin op that reduces inside and records one node (named
as torch's: MseLossBackward, ...), whose backward is torch's formula in
Tensor ops.  Where torch composes the loss from other ops (l1_loss,
kl_div, the weighted forms) so do we, so grad_fn and gradients match.
Classification losses (nll_loss, cross_entropy) are in nn_classification.
"""
import functools

import numpy as np

from cextend import _capture
from cextend.autograd import record as rec
from cextend._ops import nn_samples as S
from cextend._ops._layout import torch_layout
from cextend._ops._nn_checks import (cast_error, check_no_grad, check_reduction, functional_call,
                                     host_tensor, reduce_array, reduce_tensor, reduction_arg,
                                     reduction_scale, torch_name, warn_size_mismatch)
from cextend._device import DeviceArray
from cextend._fpe import quietly
from cextend.autograd import grad_mode
from cextend._ops._operands import as_array, require_tensor
from cextend._ops.registry import register
from cextend._promotion import result_type
from cextend.tensor import _wrap as _new_tensor
from cextend._ops.arithmetic import where
from cextend._ops.nn_activation import logsigmoid
from cextend._ops.shape import broadcast_tensors


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


def _broadcast_pair(x, t):
    """torch.broadcast_tensors(input, target): expand (differentiably) when shapes differ."""
    a, b = x._data.shape, t._data.shape
    if a == b:
        return x, t
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    for dim, (p, q) in enumerate(zip(a, b)):
        if p != q and p != 1 and q != 1:
            raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at "
                               "non-singleton dimension %d" % (p, q, dim))
    return broadcast_tensors(x, t)


class PointwiseLoss:
    """A loss with a native torch kernel: elementwise, reduced inside the op.

    compute(x, t, **params) -> the unreduced loss (numpy, dtype `dt`);
    backward(node, gs, x, t) -> (grad_x, grad_t), gs being the incoming
    gradient already scaled by 1/numel for 'mean'.
    """

    def __init__(self, name, node_name, compute, backward, divide_last=False):
        self.name = name
        self.compute = compute

        def scaled_backward(node, g, x, t, *extra):
            if not divide_last:
                return backward(node, g * node.scale, x, t, *extra)
            # torch's formula multiplies by grad, then div_(numel), in the
            # gradient's own dtype (a float64 input keeps float64's 1/3)
            grads = backward(node, g, x, t, *extra)
            if node.count is None:
                return grads
            return tuple(None if r is None else r / node.count for r in grads)
        self.node = rec.node_class(node_name, scaled_backward)

    def _values(self, reduction, dt, out_dtype, params, a, b, *arrays):
        """(the loss, reduced; the number of elementwise terms) from the operands' arrays."""
        loss = np.asarray(self.compute(a, b, *arrays, **params), dt)
        if out_dtype is not None:
            loss = loss.astype(out_dtype, copy=False)      # torch reduces in the dtype it computed in
        out = reduce_array(loss, reduction)
        if out_dtype is not None and out.dtype != out_dtype:
            out = out.astype(out_dtype)
        return out, loss.size

    def __call__(self, x, t, reduction, dt, out_dtype=None, extra=(), **params):
        """extra: optional Tensors (or None) the loss also reads, e.g. weights."""
        arrays = [None if e is None else as_array(e, dt) for e in extra]
        a, b = as_array(x, dt), as_array(t, dt)
        out, size = quietly(self._values, reduction, dt, out_dtype, params, a, b, *arrays)
        if reduction == "none":
            # laid out as TensorIterator lays out its elementwise kernel's output
            out = torch_layout(out, [x._data, t._data] + [e._data for e in extra if e is not None])
        if _capture._active is not None:
            _capture.computed(functools.partial(_loss_only, self._values, reduction, dt, out_dtype, params),
                              (a, b, *arrays), out)
        result = _wrap(out)
        if rec.needs_grad(x, t):
            node = rec.record(self.node, (x, t), result)
            node.scale = reduction_scale(reduction, size)
            node.count = size if reduction == "mean" else None
            node.params = params
            node._saved = (rec.save(x), rec.save(t)) + tuple(rec.save(e) for e in extra)
        return result


def _loss_only(values, *args):
    return values(*args)[0]


def _pair(input, target, op):
    return host_tensor(input, op), host_tensor(target, op, "target")


def _kernel_difference(x, t):
    """x - t inside a backward formula.  torch's loss kernels read a bool
    operand as 0/1, where the `-` operator would refuse it."""
    if x._data.dtype.kind == "b":
        x = x.to(t.dtype)
    if t._data.dtype.kind == "b":
        t = t.to(x.dtype)
    return x - t


def _float_type(x, t, kernel):
    dt = result_type(x, t)
    if dt.kind != "f":
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (kernel, torch_name(dt)))
    return dt


def _weighted(loss, weight, input, reduction, mean_by_weight):
    """torch's Python-side weighted mse/l1/huber: elementwise weight, then reduce."""
    weight = host_tensor(weight, "loss", "weight")
    if weight._data.shape != input._data.shape:
        raise ValueError("Weights and input must have the same size.")
    weighted = loss * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.sum() / weight.sum() if mean_by_weight else weighted.mean()
    raise ValueError("Invalid reduction mode: %s. Expected one of 'none', 'mean', 'sum'." % (reduction,))


# -- mse_loss ------------------------------------------------------------------------------------

def _mse_backward(node, gs, x, t):
    # torch differentiates the target with the same kernel, operands
    # swapped: 2 (t - x), whose zero is +0.0 where -(2 (x - t)) gives -0.0
    return (gs * 2 * _kernel_difference(x, t) if node.needs(0) else None,
            gs * 2 * _kernel_difference(t, x) if node.needs(1) else None)


_MSE = PointwiseLoss("mse_loss", "MseLossBackward", lambda a, b: (a - b) * (a - b), _mse_backward)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error; target broadcasts (with torch's warning)."""
    x, t = require_tensor(input, "mse_loss"), require_tensor(target, "mse_loss", "target")
    warn_size_mismatch(x, t)
    if size_average is not None or reduce is not None:
        reduction = reduction_arg(size_average, reduce, reduction)
    if type(x._data) is DeviceArray or type(t._data) is DeviceArray:
        # On the device: the same value from the ops the CUDA runtime has.
        difference = x - t
        return reduce_tensor(difference * difference, check_reduction(reduction))
    x, t = _pair(x, t, "mse_loss")
    x, t = _broadcast_pair(x, t)
    if weight is not None:
        return _weighted((x - t).pow(2), weight, x, reduction, mean_by_weight=True)
    return _MSE(x, t, check_reduction(reduction), _float_type(x, t, "mse_cpu"))


# -- l1_loss (composite in torch too) ------------------------------------------------------------

def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error: |input - target| reduced (AbsBackward/MeanBackward, as torch)."""
    x, t = _pair(input, target, "l1_loss")
    warn_size_mismatch(x, t)
    if size_average is not None or reduce is not None:
        reduction = reduction_arg(size_average, reduce, reduction)
    x, t = _broadcast_pair(x, t)
    if weight is not None:
        return _weighted((x - t).abs(), weight, x, reduction, mean_by_weight=True)
    return reduce_tensor((x - t).abs(), check_reduction(reduction))


# -- smooth_l1_loss and huber_loss --------------------------------------------------------------

def _smooth_l1_compute(a, b, beta):
    d = np.abs(a - b)
    return np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


def _smooth_l1_backward(node, gs, x, t):
    # d/dx: (x - t) / beta inside the quadratic zone, sign(x - t) outside.
    # (the target's gradient is the same kernel with the operands swapped, as
    # torch's: its zero is -0.0 or +0.0 as the incoming gradient's sign)
    beta = node.params["beta"]
    return (gs * _limited(_kernel_difference(x, t) / beta, 1.0) if node.needs(0) else None,
            gs * _limited(_kernel_difference(t, x) / beta, 1.0) if node.needs(1) else None)


_SMOOTH_L1 = PointwiseLoss("smooth_l1_loss", "SmoothL1LossBackward", _smooth_l1_compute,
                           _smooth_l1_backward)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Quadratic for |d| < beta, linear beyond; beta = 0 is l1_loss."""
    x, t = _pair(input, target, "smooth_l1_loss")
    warn_size_mismatch(x, t)
    if size_average is not None or reduce is not None:
        reduction = reduction_arg(size_average, reduce, reduction)
    x, t = _broadcast_pair(x, t)
    if beta == 0.0:
        return reduce_tensor((x - t).abs(), check_reduction(reduction))
    reduction = check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _SMOOTH_L1(x, t, reduction, _float_type(x, t, "smooth_l1_cpu"), beta=beta)


def _huber_compute(a, b, delta):
    d = np.abs(a - b)
    return np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def _huber_backward(node, gs, x, t):
    delta = node.params["delta"]
    return (gs * _limited(_kernel_difference(x, t), delta) if node.needs(0) else None,
            gs * _limited(_kernel_difference(t, x), delta) if node.needs(1) else None)


def _limited(diff, bound):
    """diff clamped to [-bound, bound], as the kernels' values; its own
    derivative is 1 strictly inside only, as torch's double backward
    (grad * (|d| < bound)): at |d| == bound exactly it is 0, where a
    clamp's would pass the gradient."""
    return where(diff.abs() < bound, diff, diff.clamp(-bound, bound).detach())


_HUBER = PointwiseLoss("huber_loss", "HuberLossBackward", _huber_compute, _huber_backward)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 for |d| < delta, delta (|d| - delta / 2) beyond; in input's dtype, as torch."""
    x, t = _pair(input, target, "huber_loss")
    warn_size_mismatch(x, t)
    x, t = _broadcast_pair(x, t)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    dt = result_type(x, t)
    out_dtype = x._data.dtype
    if dt.kind == "f" and out_dtype.kind != "f":
        raise cast_error(dt, out_dtype)
    if dt.kind != "f":
        raise NotImplementedError("\"huber_cpu\" not implemented for '%s'" % torch_name(dt))
    if weight is not None:
        return _weighted(_HUBER(x, t, "none", dt, out_dtype, delta=delta), weight, x, reduction,
                         mean_by_weight=False)
    return _HUBER(x, t, check_reduction(reduction), dt, out_dtype, delta=delta)


# -- binary_cross_entropy ----------------------------------------------------------------------

# torch's BCE backward clamps x (1 - x) at a float constant 1e-12 (float32's nearest).
_BCE_EPSILON = float(np.float32(1e-12))


def _bce_compute(p, y, w=None):
    # torch clamps each log at -100 so that p = 0 or 1 gives a finite loss.
    log_p = np.maximum(np.log(p), -100)
    log_q = np.maximum(np.log1p(-p), -100)
    loss = (y - 1) * log_q - y * log_p         # torch's kernel's form: the sign of a zero loss is its
    return loss if w is None else loss * w


def _bce_backward(node, gs, x, t, w=None):
    grad_x = grad_t = None
    if node.needs(0):
        grad_x = gs * _kernel_difference(x, t) / ((1 - x) * x).clamp_min(_BCE_EPSILON)
        grad_x = grad_x if w is None else grad_x * w
    if node.needs(1):
        # -logit(x), unclamped, as torch's binary_cross_entropy_target_backward
        grad_t = x.logit().neg() * gs       # -logit(x): -0.0 at x = 0.5, and logit's derivative, as torch's
        grad_t = grad_t if w is None else grad_t * w
    return grad_x, grad_t


_BCE = PointwiseLoss("binary_cross_entropy", "BinaryCrossEntropyBackward", _bce_compute, _bce_backward)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-w (y log p + (1 - y) log(1 - p)) on probabilities p in [0, 1]."""
    x, t = _pair(input, target, "binary_cross_entropy")
    reduction = reduction_arg(size_average, reduce, reduction)
    if x._data.shape != t._data.shape:
        raise ValueError("Using a target size (%s) that is different to the input size (%s) is deprecated. "
                         "Please ensure they have the same size." % (t.shape, x.shape))
    extra = (None,)
    if weight is not None:
        weight = host_tensor(weight, "binary_cross_entropy", "weight")
        check_no_grad(weight, "binary_cross_entropy", "weight")
        extra = (weight.expand(_broadcast_shape(t, weight)).detach(),)
    dt = x._data.dtype
    if t._data.dtype != dt:
        raise RuntimeError("Found dtype %s but expected %s" % (torch_name(t._data.dtype), torch_name(dt)))
    if dt.kind != "f":
        raise NotImplementedError("\"binary_cross_entropy\" not implemented for '%s'" % torch_name(dt))
    _check_probabilities(x._data, t._data)
    return _BCE(x, t, reduction, dt, extra=extra)


def _check_probabilities(p, y):
    """torch's kernel checks input then target at each element in turn (NaN
    fails both): the first bad element decides which message is raised."""
    bad_p = np.flatnonzero(~((p >= 0) & (p <= 1)))
    bad_y = np.flatnonzero(~((y >= 0) & (y <= 1)))
    if bad_p.size and (not bad_y.size or bad_p[0] <= bad_y[0]):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if bad_y.size:
        raise RuntimeError("all elements of target should be between 0 and 1")


def _broadcast_shape(target, weight):
    try:
        return np.broadcast_shapes(target._data.shape, weight._data.shape)
    except ValueError:
        raise RuntimeError("Attempting to broadcast a dimension of weight %s to the target's shape %s"
                           % (list(weight._data.shape), list(target._data.shape))) from None


# -- binary_cross_entropy_with_logits -----------------------------------------------------------

def _log_sigmoid_array(a):
    return np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))


def _bce_logits_compute(x, y, w=None, pw=None, input_dtype=None, loss_dtype=None):
    # torch: log_sigmoid in the input's own dtype (times the pos_weight
    # factor, in place), then (1 - target).mul_(input).sub_(log_sigmoid)
    # .mul_(weight): each step in place, so rounded to the target's dtype
    log_sig = _log_sigmoid_array(x.astype(input_dtype, copy=False))
    if pw is not None:
        log_sig = (log_sig.astype(x.dtype) * ((pw - 1) * y + 1)).astype(input_dtype)
    loss = (1 - y).astype(loss_dtype)
    loss = (loss.astype(x.dtype) * x).astype(loss_dtype)
    loss = (loss.astype(x.dtype) - log_sig.astype(x.dtype)).astype(loss_dtype)
    if w is not None:
        loss = (loss.astype(x.dtype) * w).astype(loss_dtype)
    return loss


def _bce_logits_backward(node, gs, x, t, w=None, pw=None):
    grad_x = grad_t = None
    if node.needs(0):
        if pw is not None:
            pt = pw * t
            grad_x = (pt + 1 - t) * x.sigmoid() - pt
            if not grad_mode.is_grad_enabled():
                grad_x = grad_x.to(pt.dtype)    # torch's in-place steps keep pos_weight * target's dtype
        else:
            grad_x = x.sigmoid() - t
        grad_x = (grad_x if w is None else grad_x * w) * gs     # torch: mul_(weight), then mul_(grad)
    if node.needs(1):
        grad_t = logsigmoid(-x) - logsigmoid(x) * pw if pw is not None else -x
        grad_t = grad_t * gs if w is None else grad_t * gs * w
    return grad_x, grad_t


_BCE_LOGITS = PointwiseLoss("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward",
                            _bce_logits_compute, _bce_logits_backward, divide_last=True)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """BCE on logits, in the stable form (1 - y) x - (1 + (pw - 1) y) log sigmoid(x)."""
    op = "binary_cross_entropy_with_logits"
    x, t = _pair(input, target, op)
    reduction = reduction_arg(size_average, reduce, reduction)
    if x._data.shape != t._data.shape:
        raise ValueError("Target size (%s) must be the same as input size (%s)" % (t.shape, x.shape))
    for name, value in (("weight", weight), ("pos_weight", pos_weight)):
        if value is not None:
            host_tensor(value, op, name)
            check_no_grad(value, op, name)
    if x._data.dtype.kind != "f":
        raise NotImplementedError("\"log_sigmoid_cpu\" not implemented for '%s'" % torch_name(x._data.dtype))
    # torch computes (1 - target) * input in place in the target's dtype.
    out_dtype = t._data.dtype
    dt = result_type(x, t, *(v for v in (weight, pos_weight) if v is not None))
    if out_dtype.kind != "f":
        raise cast_error(dt, out_dtype)
    shape = x._data.shape
    for value in (weight, pos_weight):
        if value is not None and np.broadcast_shapes(shape, value._data.shape) != shape:
            raise RuntimeError("The size of tensor a (%s) must match the size of tensor b (%s) at "
                               "non-singleton dimension" % (list(shape), list(value._data.shape)))
    extra = tuple(None if v is None else v.detach() for v in (weight, pos_weight))
    return _BCE_LOGITS(x, t, reduction, dt, out_dtype, extra, input_dtype=x._data.dtype, loss_dtype=out_dtype)


# -- kl_div (composite in torch) --------------------------------------------------------------

def _xlogy_backward(node, g, x, y):
    # torch's derivatives.yaml: xlogy(grad, other) masked to 0 where self == 0 and
    # other <= 0, so a zero incoming gradient gives 0 even where log(other) is NaN.
    grad_x = grad_y = None
    if node.needs(0):
        grad_x = where((x == 0).logical_and(y <= 0), 0.0, _xlogy(g, y))
    if node.needs(1):
        grad_y = g * x / y
    return grad_x, grad_y


_XlogyNode = rec.node_class("XlogyBackward", _xlogy_backward)


def _xlogy(x, y):
    """x * log(y), 0 where x == 0, NaN where y is NaN (torch.xlogy on same-shaped tensors)."""
    dt = result_type(x, y)
    a, b = as_array(x, dt), as_array(y, dt)
    out = quietly(lambda: np.where(np.isnan(b), np.nan,
                                   np.where(a == 0, 0, a * np.log(np.where(a == 0, 1, b)))))
    result = _wrap(np.asarray(out, dt))
    if rec.needs_grad(x, y):
        node = rec.record(_XlogyNode, (x, y), result)
        node._saved = (rec.save(x), rec.save(y))
    return result


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence target * (log target - input); 'batchmean' divides by the batch."""
    import warnings
    x, t = _pair(input, target, "kl_div")
    if size_average is not None or reduce is not None:
        enum = reduction_arg(size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support "
                          "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                          "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                          "major release.", UserWarning, stacklevel=2)
        enum = "sum" if reduction == "batchmean" else check_reduction(reduction)
    if x._data.dtype.kind != "f" or t._data.dtype.kind != "f":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        pointwise = t.exp() * (t - x)
    else:
        pointwise = _xlogy(t, t) - t * x
    reduced = reduce_tensor(pointwise, enum)
    if reduction == "batchmean" and x._data.ndim != 0:
        reduced = reduced / x._data.shape[0]
    return reduced


# -- the table entries (torch has these in torch.nn.functional only) ---------------------------

def _nn_only(name, function, samples, **info):
    register(name, function, method=False, module=False, family="nn", samples=samples,
             call=functional_call(name), **info)


_nn_only("mse_loss", mse_loss, S.regression_loss(extra=(dict(reduction="mean"),)))
_nn_only("l1_loss", l1_loss, S.regression_loss())
_nn_only("smooth_l1_loss", smooth_l1_loss,
         S.regression_loss(kink=1.0, extra=(dict(beta=0.5), dict(beta=2.0, reduction="sum"))))
_nn_only("huber_loss", huber_loss, S.regression_loss(kink=1.0, extra=(dict(delta=0.5),)))
_nn_only("binary_cross_entropy", binary_cross_entropy, S.bce_samples())
_nn_only("binary_cross_entropy_with_logits", binary_cross_entropy_with_logits, S.bce_logits_samples())
_nn_only("kl_div", kl_div, S.kl_div_samples())
