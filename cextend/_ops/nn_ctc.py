"""ctc_loss: the Connectionist Temporal Classification loss, as torch's CPU kernel.

The forward is the alpha recursion of Graves et al. (2006) in log space
over the extended target l' (a blank before, between and after the
labels): alpha_0 starts at the blank and the first label, then
alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2)
where l'(s-2) != l'(s)) + log_probs[t, l'(s)], and the loss is
-logsumexp(alpha_{T-1}(2L), alpha_{T-1}(2L-1)).  One CtcLossBackward0 node
records it; its backward is torch's formula: the beta recursion, then
grad = (exp(log_probs) - exp(logsumexp_{s: l'(s) = c} alpha + beta + nll -
log_probs)) * grad_out for t < input_length, 0 after.  That is the gradient
through a log_softmax over the classes, as torch's is: the exp(log_probs)
term cancels in log_softmax's backward, so the loss is meant for
log-softmaxed inputs (its derivative is not implemented further).

Around it, as torch's ctc_loss: unbatched (T, C) input, targets made
int64, zero_infinity's where(), and the reductions ('mean' divides each
loss by its target length, clamped to 1, then averages).
"""
import numbers

import numpy as np

from cextend._dtype import int64
from cextend._fpe import quietly
from cextend._ops._nn_checks import check_reduction, host_tensor, torch_name
from cextend._ops.arithmetic import where
from cextend._ops.registry import Const, Sample, register
from cextend.autograd import record as rec
from cextend.tensor import _wrap

_C = "(while checking arguments for ctc_loss_allocate_outputs)"


def _lengths(value, name):
    """Lengths as a list of ints: an integer tensor (any shape) or a sequence of ints."""
    data = getattr(value, "_data", None)
    if data is not None:
        if type(data) is not np.ndarray:
            data = value.cpu()._data
        if data.dtype.kind not in "iu":
            raise RuntimeError("%s must be integral" % name)
        return [int(v) for v in data.reshape(-1)]
    if isinstance(value, (list, tuple)) and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                                 for v in value):
        return [int(v) for v in value]
    raise TypeError("ctc_loss(): argument '%s' must be a Tensor or a tuple of ints, not %s"
                    % (name, type(value).__name__))


def _extended(targets, offset, stride, length, blank):
    """l': blank, l_1, blank, l_2, ..., l_L, blank (2L + 1 entries)."""
    ext = np.full(2 * length + 1, blank, np.int64)
    if length:
        ext[1::2] = targets[offset + stride * np.arange(length)]
    return ext


class _Layout:
    """Where each sample's target sits in the flat targets array, as torch's kernel reads it."""

    def __init__(self, targets, target_lengths, batch_size):
        data = targets._data
        flat = np.ascontiguousarray(data).reshape(-1)
        if data.ndim == 1:          # concatenated
            self.offsets = np.concatenate([[0], np.cumsum(target_lengths)[:-1]]).astype(np.int64) \
                if batch_size else np.zeros(0, np.int64)
            self.stride = 1
        else:                       # (batch, max target length), padded
            self.offsets = np.arange(batch_size, dtype=np.int64) * data.shape[1]
            self.stride = 1
        self.flat = flat


def _check(log_probs, targets, input_lengths, target_lengths, blank):
    """torch's ctc_loss_allocate_outputs checks, in its order."""
    lp, tg = log_probs._data, targets._data
    if lp.ndim != 3:
        raise RuntimeError("Expected 3-dimensional tensor, but got %d-dimensional tensor for argument #1 "
                           "'log_probs' %s" % (lp.ndim, _C))
    if not 1 <= tg.ndim <= 2:
        raise RuntimeError("Expected 1 to 2 dimensions, but got %d-dimensional tensor for argument #2 'targets' %s"
                           % (tg.ndim, _C))
    batch_size, num_labels = lp.shape[1], lp.shape[2]
    if not 0 <= blank < num_labels:
        raise RuntimeError("blank must be in label range")
    if len(input_lengths) != batch_size:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != batch_size:
        raise RuntimeError("target_lengths must be of size batch_size")
    for length in target_lengths:
        if length < 0:
            raise RuntimeError("Expected target_lengths to have value at least 0, but got value %d %s" % (length, _C))
    if tg.ndim == 1:
        total = sum(target_lengths)
        if tg.shape[0] != total:
            raise RuntimeError("Expected tensor to have size %d at dimension 0, but got size %d for argument #2 "
                               "'targets' %s" % (total, tg.shape[0], _C))
    else:
        if tg.shape[0] != batch_size:
            raise RuntimeError("Expected tensor to have size %d at dimension 0, but got size %d for argument #2 "
                               "'targets' %s" % (batch_size, tg.shape[0], _C))
        longest = max(target_lengths, default=0)
        if tg.shape[1] < longest:
            raise RuntimeError("Expected tensor to have size at least %d at dimension 1, but got size %d for argument "
                               "#2 'targets' %s" % (longest, tg.shape[1], _C))
    steps = lp.shape[0]
    for length in input_lengths:
        if length < 0:
            raise RuntimeError("Expected input_lengths to have value at least 0, but got value %d %s" % (length, _C))
        if length > steps:
            raise RuntimeError("Expected input_lengths to have value at most %d, but got value %d %s"
                               % (steps, length, _C))
    if lp.size == 0:
        raise RuntimeError("log_probs tensor must not be empty")


def _log_add3(a, b, c):
    """torch's log(exp(a - m) + exp(b - m) + exp(c - m)) + m, m the largest (0 if all are -inf)."""
    m = np.maximum(np.maximum(a, b), c)
    m = np.where(m == -np.inf, 0, m)
    return np.log(np.exp(a - m) + np.exp(b - m) + np.exp(c - m)) + m


def _shifted(row, by):
    out = np.full_like(row, -np.inf)
    if by < row.shape[0]:
        out[by:] = row[:row.shape[0] - by]
    return out


def _alpha(lp, ext, steps):
    """log alpha (steps, 2L + 1) for one sample's log_probs lp (T, C)."""
    size = ext.shape[0]
    alpha = np.full((max(steps, 1), size), -np.inf, lp.dtype)
    alpha[0, 0] = lp[0, ext[0]]
    if size > 1:
        alpha[0, 1] = lp[0, ext[1]]
    skip = np.zeros(size, bool)
    skip[2:] = ext[:-2] != ext[2:]
    for t in range(1, steps):
        prev = alpha[t - 1]
        la3 = np.where(skip, _shifted(prev, 2), -np.inf)
        alpha[t] = _log_add3(prev, _shifted(prev, 1), la3) + lp[t, ext]
    return alpha


def _beta(lp, ext, steps):
    size = ext.shape[0]
    beta = np.full((steps, size), -np.inf, lp.dtype)
    beta[steps - 1, size - 1] = lp[steps - 1, ext[size - 1]]
    if size > 1:
        beta[steps - 1, size - 2] = lp[steps - 1, ext[size - 2]]
    skip = np.zeros(size, bool)
    skip[:-2] = ext[2:] != ext[:-2]
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1]
        lb2 = np.full_like(nxt, -np.inf)
        lb2[:-1] = nxt[1:]
        lb3 = np.full_like(nxt, -np.inf)
        lb3[:-2] = nxt[2:]
        lb3 = np.where(skip, lb3, -np.inf)
        beta[t] = _log_add3(nxt, lb2, lb3) + lp[t, ext]
    return beta


class CtcState:
    """What the node keeps besides log_probs: the targets' layout, the lengths, blank,
    zero_infinity, and the forward's nll and alphas."""

    __slots__ = ("layout", "input_lengths", "target_lengths", "blank", "zero_infinity", "nll", "alphas", "exts")


def _forward(lp_data, layout, input_lengths, target_lengths, blank):
    batch = lp_data.shape[1]
    nll = np.zeros(batch, lp_data.dtype)
    alphas, exts = [], []
    for b in range(batch):
        steps, length = input_lengths[b], target_lengths[b]
        ext = _extended(layout.flat, layout.offsets[b], layout.stride, length, blank)
        exts.append(ext)
        if steps == 0:
            alphas.append(None)
            nll[b] = -(0.0 if length == 0 else -np.inf)
            continue
        lp = lp_data[:, b, :]
        alpha = _alpha(lp, ext, steps)
        alphas.append(alpha)
        if length == 0:
            nll[b] = -alpha[steps - 1, 0]
        else:
            l1, l2 = alpha[steps - 1, 2 * length], alpha[steps - 1, 2 * length - 1]
            m = l2 if l1 < l2 else l1
            m = 0 if m == -np.inf else m
            nll[b] = -(np.log(np.exp(l1 - m) + np.exp(l2 - m)) + m)
    return nll, alphas, exts


def _backward_array(grad_out, lp_data, state):
    """torch's ctc_loss_backward_cpu_template, per sample."""
    grad = np.zeros(lp_data.shape, lp_data.dtype)
    num_labels = lp_data.shape[2]
    for b in range(lp_data.shape[1]):
        nll = state.nll[b]
        if state.zero_infinity and nll == np.inf:
            continue
        steps = state.input_lengths[b]
        if steps == 0:
            continue
        ext, alpha = state.exts[b], state.alphas[b]
        lp = lp_data[:steps, b, :]
        beta = _beta(lp, ext, steps)
        size = ext.shape[0]
        collected = np.full((steps, num_labels), -np.inf, lp.dtype)
        both = alpha[:steps] + beta
        # the last step: its two states assigned, blank first (so a label equal to blank overwrites it, as there)
        collected[steps - 1, ext[size - 1]] = both[steps - 1, size - 1]
        if size > 1:
            collected[steps - 1, ext[size - 2]] = both[steps - 1, size - 2]
        # the other steps: every state log-added into its label's column
        rows = np.repeat(np.arange(steps - 1), size)
        cols = np.tile(ext, steps - 1)
        np.logaddexp.at(collected, (rows, cols), both[:steps - 1].reshape(-1))
        grad[:steps, b, :] = (np.exp(lp) - np.exp(collected + nll - lp)) * grad_out[b]
    return grad


def _ctc_backward(node, g, log_probs):
    state = node.state
    result = _wrap(np.asarray(quietly(_backward_array, g._data, log_probs._data, state), log_probs._data.dtype))
    if rec.needs_grad(g, log_probs):
        rec.record(_CtcBackwardNode, (g, log_probs), result)
    return result


_CtcNode = rec.node_class("CtcLossBackward", _ctc_backward)
_CtcBackwardNode = rec.not_implemented("NotImplemented", "derivative for aten::_ctc_loss_backward is not implemented",
                                       whole_node=True)


def _ctc_core(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    """torch's _ctc_loss: (N,) negative log likelihoods of (T, N, C) log_probs."""
    _check(log_probs, targets, input_lengths, target_lengths, blank)
    layout = _Layout(targets, target_lengths, log_probs._data.shape[1])
    num_labels = log_probs._data.shape[2]
    for b in range(log_probs._data.shape[1]):
        length = target_lengths[b]
        if length:
            labels = layout.flat[layout.offsets[b] + layout.stride * np.arange(length)]
            if labels.min() < 0 or labels.max() >= num_labels:
                raise IndexError("ctc_loss: target %d of sample %d is out of range for %d classes"
                                 % (int(labels[(labels < 0) | (labels >= num_labels)][0]), b, num_labels))
    lp_data = log_probs._data
    nll, alphas, exts = quietly(_forward, lp_data, layout, input_lengths, target_lengths, blank)
    result = _wrap(nll)
    if rec.needs_grad(log_probs):
        node = rec.record(_CtcNode, (log_probs,), result)
        state = CtcState()
        state.layout, state.input_lengths, state.target_lengths = layout, input_lengths, target_lengths
        state.blank, state.zero_infinity, state.nll, state.alphas, state.exts = (blank, zero_infinity, nll, alphas,
                                                                                  exts)
        node.state = state
        node._saved = (rec.save(log_probs),)
    return result


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The CTC loss of log_probs (T, N, C) or unbatched (T, C) (log-softmaxed over C) for targets
    padded (N, S) or concatenated (sum(target_lengths),); 'mean' divides each loss by its
    target length, then averages; zero_infinity zeroes impossible alignments' losses and gradients."""
    enum = check_reduction(reduction)
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    lp = host_tensor(log_probs, "ctc_loss", "log_probs")
    tg = host_tensor(targets, "ctc_loss", "targets")
    batched = lp.dim() == 3
    x = lp if batched else lp.unsqueeze(1)
    if x._data.dtype not in (np.float32, np.float64):
        raise NotImplementedError("\"ctc_loss_cpu\" not implemented for '%s'" % torch_name(x._data.dtype))
    res = _ctc_core(x, tg.detach().to(int64), il, tl, int(blank),
                    bool(zero_infinity))
    if zero_infinity:
        res = where(res == float("inf"), _wrap(np.zeros((), res._data.dtype)), res)
    if enum == "mean":
        lengths = _wrap(np.maximum(np.asarray(tl, res._data.dtype), 1).astype(res._data.dtype))
        return (res / lengths).mean()
    if enum == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)


# -- the table -----------------------------------------------------------------------------------

def _call(lib, log_probs, *args, **kwargs):
    """The table's call: through log_softmax over the classes, where torch's gradient holds."""
    return lib.nn.functional.ctc_loss(log_probs.log_softmax(-1), *args, **kwargs)


def _ctc_samples(rng):
    yield Sample(rng.standard_normal((6, 2, 4)), Const(np.array([[1, 2, 2], [3, 1, 0]])), Const(np.array([6, 4])),
                 Const(np.array([3, 2])))
    yield Sample(rng.standard_normal((5, 3, 3)), Const(np.array([1, 2, 1, 1, 2])), Const(np.array([5, 3, 4])),
                 Const(np.array([2, 0, 3])), reduction="sum", note="concatenated targets, an empty one")
    yield Sample(rng.standard_normal((4, 2, 5)), Const(np.array([[0, 4], [2, 2]])), Const(np.array([4, 3])),
                 Const(np.array([2, 2])), blank=3, reduction="none", note="blank 3, a repeated label")
    yield Sample(rng.standard_normal((5, 4)), Const(np.array([1, 3])), Const(np.array(5)), Const(np.array(2)),
                 note="unbatched")
    yield Sample(rng.standard_normal((3, 2, 3)), Const(np.array([[1, 1, 1], [2, 0, 0]])), Const(np.array([3, 3])),
                 Const(np.array([3, 1])), zero_infinity=True, reduction="none", note="an impossible alignment")


register("ctc_loss", ctc_loss, method=False, module=False, family="nn", samples=_ctc_samples, call=_call,
         gradgradcheck=False)
