"""Classification losses: nll_loss (a builtin op) and cross_entropy
(composed from log_softmax and nll_loss, as torch composes it).

nll_loss is linear in its input, so its backward, a scatter of -w[t]
(divided by the total weight for 'mean') into zeros, is itself linear in
the incoming gradient, and the derivative of that backward is nll_loss
again, applied to the grad-grad.  Both directions are builtin ops, so
any order of derivative is available.
"""
import numpy as np

from cextend import _backend
from cextend._fpe import quietly
from cextend.autograd import record as rec
from cextend._ops import nn_samples as S
from cextend._ops._nn_checks import (check_no_grad, functional_call, host_tensor, reduction_arg,
                                     require_float, torch_name)
from cextend._ops.registry import register
from cextend.tensor import _wrap as _new_tensor
from cextend._ops.nn_activation import log_softmax, log_softmax_rows


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


class _Picks:
    """Where nll_loss reads its input: one class per target position.

    The class dim is moved last, so positions have the target's shape.
    Ignored positions are skipped, as torch's kernel skips them: they add
    nothing to the loss (+0.0 under 'none') and get a +0.0 gradient, even
    where the input or the incoming gradient is inf or NaN.
    """

    def __init__(self, input_shape, class_dim, target, weight, ignore_index, reduction):
        self.input_shape = input_shape
        self.class_dim = class_dim
        self.reduction = reduction
        n_classes = input_shape[class_dim]
        self.valid = valid = target != ignore_index
        bad = valid & ((target < 0) | (target >= n_classes))
        if bad.any():
            raise IndexError("Target %d is out of bounds." % target[bad].flat[0])
        self.classes = np.where(valid, target, 0).astype(np.intp)
        self.weighted = weight is not None
        self.weights = np.where(valid, weight[self.classes], 0) if weight is not None else valid.astype(np.float64)
        self.total_weight = self.weights.sum()

    def moved(self, array):
        return np.moveaxis(array, self.class_dim, -1)

    def _rows(self):
        """For an (N, C) input, the index pair of the picks (plain indexing: the common case
        costs one numpy call instead of take_along_axis's machinery)."""
        if len(self.input_shape) == 2:
            return np.arange(self.input_shape[0]), self.classes
        return None

    def gather(self, data):
        """The nll values of `data` (input-shaped): -w[t] * data[..., t, ...], reduced."""
        rows = self._rows()
        if rows is not None:
            picked = data[rows]
        else:
            picked = np.take_along_axis(self.moved(data), self.classes[..., None], -1)[..., 0]
        if self.weighted:
            picked = self.weights.astype(data.dtype) * picked
        loss = np.where(self.valid, -picked, data.dtype.type(0))
        if self.reduction == "none":
            return loss
        # torch accumulates from +0.0: a sum of -0.0 terms is +0.0.
        total = loss.sum(dtype=data.dtype) + data.dtype.type(0)
        if self.reduction == "sum":
            return np.asarray(total, data.dtype)
        return np.asarray(quietly(np.divide, total, data.dtype.type(self.total_weight)), data.dtype)

    def scatter(self, g):
        """The transpose of gather: zeros(input) with -w[t] * g at the picks, in torch's
        order (-(g / total_weight) for 'mean', then times w[t]); nothing at ignored ones."""
        dt = g.dtype
        grad = -(quietly(np.divide, g, dt.type(self.total_weight)) if self.reduction == "mean" else g)
        values = np.broadcast_to(np.asarray(grad, dt), self.classes.shape)    # g is 0-d for mean/sum
        if self.weighted:
            values = quietly(np.multiply, self.weights.astype(dt), values)
        values = np.where(self.valid, values, dt.type(0))     # an ignored row's pick stays +0.0
        out = np.zeros(self.input_shape, dt)
        rows = self._rows()
        if rows is not None:
            out[rows] = values
        else:
            np.put_along_axis(self.moved(out), self.classes[..., None], values[..., None], -1)
        return out


class _RowPicks:
    """_Picks for an (N, C) float32 or float64 input with int64 targets, on the C kernels:
    one call each way instead of a dozen numpy passes.  Same values as _Picks: picks read
    input[r, t], ignored rows add +0.0 and get a +0.0 gradient.  Anything the kernels do not
    take (another dtype of gradient) goes to a _Picks of the same arguments."""

    __slots__ = ("input_shape", "class_dim", "reduction", "target", "weight", "ignore_index",
                 "total_weight", "_fallback")

    def __init__(self, input_shape, target, weight, ignore_index, reduction):
        self.input_shape = input_shape
        self.class_dim = 1
        self.reduction = reduction
        self.target = target
        self.weight = weight
        self.ignore_index = ignore_index
        self.total_weight = None
        self._fallback = None

    def _numpy(self):
        if self._fallback is None:
            self._fallback = _Picks(self.input_shape, 1, self.target, self.weight, self.ignore_index,
                                    self.reduction)
        return self._fallback

    def gather(self, data):
        if not _backend.nll_rows_supported(data, self.target, self.weight, self.ignore_index):
            return self._numpy().gather(data)
        return self.gather_rows(data)

    def gather_rows(self, data):
        """gather on operands the kernel takes (nll_rows_supported, checked by the caller)."""
        loss, total, bad = _backend.nll_forward(data, self.target, self.weight, self.ignore_index,
                                                self.reduction)
        if bad >= 0:
            raise IndexError("Target %d is out of bounds." % self.target[bad])
        self.total_weight = total
        return loss

    def scatter(self, g):
        out = None
        if self.total_weight is not None:
            out = _backend.nll_backward(g, self.input_shape, self.target, self.weight, self.ignore_index,
                                        self.reduction, self.total_weight)
        return out if out is not None else self._numpy().scatter(g)


def _nll_backward(node, g, x, target=None, weight=None):
    return nll_scatter(g, node.picks, x, target, weight)


def _scatter_backward(node, gg, target=None, weight=None):
    # torch: grad_output's derivative is nll_loss(grad, target, weight) again (a
    # node saving them in turn); self's is zeros_like(grad).
    zeros = _wrap(np.zeros_like(gg._data)) if node.needs(1) else None
    return (nll_gather(gg, node.picks, target, weight) if node.needs(0) else None), zeros


_NllLossNode = rec.node_class("NllLossBackward", _nll_backward)
_NllLossBackwardNode = rec.node_class("NllLossBackwardBackward", _scatter_backward)


def _saved_or_none(t):
    return rec.save(t) if t is not None else None


def nll_gather(x, picks, target=None, weight=None):
    return _recorded_nll(x, quietly(picks.gather, x._data), picks, target, weight)


def _recorded_nll(x, loss, picks, target, weight):
    """loss (nll_loss's values, from picks) as a Tensor, recorded as x's nll_loss."""
    result = _wrap(loss)
    if rec.needs_grad(x):
        node = rec.record(_NllLossNode, (x,), result)
        node.picks = picks
        # torch saves the target and the weight too: changing either in
        # place before backward raises there
        node._saved = (rec.save(x), _saved_or_none(target), _saved_or_none(weight))
    return result


def nll_scatter(g, picks, x, target=None, weight=None):
    """The backward of nll_gather; x (the forward input) is an input too, with a zero
    derivative, so that the result is part of x's graph as in torch."""
    result = _wrap(quietly(picks.scatter, g._data))
    if rec.needs_grad(g, x):
        node = rec.record(_NllLossBackwardNode, (g, x), result)
        node.picks = picks
        if target is not None:
            # torch's NllLossBackwardBackward saves the target and the
            # weight: freed after a backward
            node._saved = (rec.save(target), _saved_or_none(weight))
    return result


def _check_target(x, t):
    """torch's nll_loss_nd shape checks; returns the class dim."""
    xs, ts = x._data.shape, t._data.shape
    if len(xs) < 1:
        raise ValueError("Expected 1 or more dimensions (got %d)" % len(xs))
    if len(xs) != 1 and (len(ts) == 0 or xs[0] != ts[0]):
        raise ValueError("Expected input batch_size (%d) to match target batch_size (%d)."
                         % (xs[0], ts[0] if ts else 0))
    if len(xs) <= 2:
        if len(ts) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if len(xs) == 1 and len(ts) == 1 and ts[0] != 1:
            raise ValueError("For 1D input, 1D target must have size 1, but got target size: %d" % ts[0])
        return 0 if len(xs) == 1 else 1
    if len(xs) == 4 and len(ts) != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got targets of "
                           "dimension: %d" % len(ts))
    expected = (xs[0],) + xs[2:]
    if ts != expected:
        if len(xs) == 4:
            raise RuntimeError("size mismatch (got input: %s , target: %s" % (list(xs), list(ts)))
        raise RuntimeError("Expected target size %s, got %s" % (list(expected), list(ts)))
    return 1


def _check_weight(weight, x, n_classes, op):
    weight = host_tensor(weight, op, "weight")
    check_no_grad(weight, "nll_loss_forward", "weight")
    if weight._data.ndim != 1 or weight._data.size != n_classes:
        raise RuntimeError("weight tensor should be defined either for all %d classes or no classes but "
                           "got weight tensor of shape: %s" % (n_classes, list(weight._data.shape)))
    if weight._data.dtype != x._data.dtype:
        raise RuntimeError("expected scalar type %s but found %s"
                           % (torch_name(x._data.dtype), torch_name(weight._data.dtype)))
    return weight


def _nll_picks(x, t, weight, ignore_index, reduction, op):
    class_dim = _check_target(x, t)
    if t._data.dtype not in (np.int64, np.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got %s" % torch_name(t._data.dtype))
    require_float(x, "nll_loss_out_frame")
    target = t._data
    if x._data.ndim == 1 and target.ndim == 1:
        target = target.reshape(())      # (C,) input with a one-element target
    n_classes = x._data.shape[class_dim]
    weight = None if weight is None else _check_weight(weight, x, n_classes, op)
    w = None if weight is None else weight._data
    if target.dtype == np.int64 and _backend.nll_rows_supported(x._data, target, w, ignore_index):
        return _RowPicks(x._data.shape, target, w, ignore_index, reduction), weight
    return _Picks(x._data.shape, class_dim, target.astype(np.int64), w, ignore_index, reduction), weight


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-w[t] * input[t] over class indices t; 'mean' divides by the summed weights of
    the targets that are not ignore_index.  Input (C), (N, C) or (N, C, d1, ...)."""
    x = host_tensor(input, "nll_loss")
    t = host_tensor(target, "nll_loss", "target")
    reduction = reduction_arg(size_average, reduce, reduction)
    picks, weight = _nll_picks(x, t, weight, ignore_index, reduction, "nll_loss")
    return nll_gather(x, picks, t, weight)


# -- cross_entropy ---------------------------------------------------------------------------------

def _class_view(weight, ndim, class_dim):
    shape = [1] * ndim
    shape[class_dim] = weight._data.shape[0]
    return weight.view(shape)


def _probability_target(logp, t, weight, reduction, label_smoothing, class_dim):
    n_classes = logp._data.shape[class_dim]
    if label_smoothing > 0:
        t = t * (1 - label_smoothing) + label_smoothing / n_classes
    product = logp * t
    if weight is not None:
        product = product * _class_view(host_tensor(weight, "cross_entropy", "weight"), logp.dim(), class_dim)
    if reduction == "none":
        return -product.sum(class_dim)
    if reduction == "sum":
        return -product.sum()
    total = -product.sum()
    rows = logp._data.size // n_classes if n_classes else 0
    return total / rows if rows else total * float("nan")


def _smoothed_classes(logp, t, weight, ignore_index, reduction, label_smoothing, class_dim):
    n_classes = logp._data.shape[class_dim]
    nll = nll_loss(logp, t, weight, ignore_index=ignore_index, reduction=reduction)
    ignored = t._data == ignore_index
    if weight is not None:
        smooth = -(logp * _class_view(weight, logp.dim(), class_dim)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(_wrap(np.asarray(ignored)), 0.0)
    if reduction == "mean":
        kept = t._data[~ignored]
        denominator = float(weight._data[kept].sum()) if weight is not None else float(kept.size)
        smooth = smooth.sum() / denominator if denominator else smooth.sum() * float("nan")
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _rows_of_classes(x, target, ignore_index):
    """Whether cross_entropy's operands are an (N, C) batch of logits (N, C > 0) the C
    kernels take and N class indices: what the general path would check and find."""
    shape = x.shape
    return len(shape) == 2 and shape[0] and shape[1] and target.ndim == 1 and \
        _backend.nll_rows_supported(x, target, None, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim, then nll_loss; a float target of input's
    shape holds class probabilities.  label_smoothing mixes in the uniform distribution."""
    x = host_tensor(input, "cross_entropy")
    t = host_tensor(target, "cross_entropy", "target")
    reduction = reduction_arg(size_average, reduce, reduction)
    if weight is None and not label_smoothing and _rows_of_classes(x._data, t._data, ignore_index):
        # A classifier's batch: the general path's two ops without their dispatch and checks.
        # log_softmax's result is a new C-contiguous array of x's dtype and shape: the nll
        # kernel takes it as it takes x, and it sets no numpy error state.
        picks = _RowPicks(x._data.shape, t._data, None, ignore_index, reduction)
        log_probabilities = log_softmax_rows(x)
        return _recorded_nll(log_probabilities, picks.gather_rows(log_probabilities._data), picks, t, None)
    class_dim = 0 if x._data.ndim == 1 else 1
    if x._data.shape == t._data.shape:
        if t._data.dtype.kind != "f":
            raise RuntimeError("Expected floating point type for target with class probabilities, got %s"
                               % torch_name(t._data.dtype))
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError("label_smoothing must be between 0.0 and 1.0. Got: %s" % label_smoothing)
        return _probability_target(log_softmax(x, class_dim), t, weight, reduction, label_smoothing,
                                   class_dim)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError("label_smoothing must be between 0.0 and 1.0. Got: %s" % label_smoothing)
        return _smoothed_classes(log_softmax(x, class_dim), t, weight, ignore_index, reduction,
                                 label_smoothing, class_dim)
    return nll_loss(log_softmax(x, class_dim), t, weight, ignore_index=ignore_index, reduction=reduction)


register("nll_loss", nll_loss, method=False, module=False, family="nn", samples=S.nll_samples(),
         call=functional_call("nll_loss"))
register("cross_entropy", cross_entropy, method=False, module=False, family="nn",
         samples=S.cross_entropy_samples(), call=functional_call("cross_entropy"))
