"""Distances and the triplet losses of torch.nn.functional: cosine_similarity,
pairwise_distance, triplet_margin_loss, triplet_margin_with_distance_loss.

All are composed from other ops exactly as torch composes them, so grad_fn
and gradients are torch's:
- cosine_similarity: each operand divided by its 2-norm over dim, the norm
  clamped to eps (without recording the clamp: the gradient flows through the
  unclamped norm, as torch's NoGradGuard makes it), then the product summed;
- pairwise_distance: norm(x1 - x2 + eps, p) over the last dim of the
  broadcast (torch's at::norm: NormBackward1);
- triplet_margin_loss: clamp_min(margin + d(a, p) - d(a, n), 0), with
  d(a, n) = min(d(a, n), d(p, n)) when swap, then reduced.
"""
from cextend._ops._nn_checks import functional_call, host_tensor, reduction_arg, torch_name
from cextend._ops.arithmetic import minimum
from cextend._ops.registry import Sample, register
from cextend._ops.shape import broadcast_tensors
from cextend._promotion import result_type
from cextend.autograd import grad_mode
from cextend.autograd import record as rec


def _renamed_norm(t, name="NormBackward1"):
    """t (a norm's result) with its node under torch's name for the op that made it."""
    node = t._grad_fn
    if node is not None:
        node.__class__ = rec.renamed(type(node), name)
    return t


def _tensor_arg(value, op, name, position):
    if getattr(value, "_data", None) is None:
        raise TypeError("%s(): argument '%s' (position %d) must be Tensor, not %s"
                        % (op, name, position, type(value).__name__))
    return host_tensor(value, op, name)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) over dim, the operands broadcast."""
    a = _tensor_arg(x1, "cosine_similarity", "x1", 1)
    b = _tensor_arg(x2, "cosine_similarity", "x2", 2)
    common = result_type(a, b)
    if common.kind != "f":
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is %s" % torch_name(common))
    if a._data.dtype.kind != "f":
        a = a.to(common)
    if b._data.dtype.kind != "f":
        b = b.to(common)
    if a._data.shape != b._data.shape:
        a, b = broadcast_tensors(a, b)
    norm_a = a.norm(2, dim, keepdim=True).clone()
    norm_b = b.norm(2, dim, keepdim=True).clone()
    with grad_mode.no_grad():
        norm_a.clamp_min_(eps)
        norm_b.clamp_min_(eps)
    return ((a / norm_a) * (b / norm_b)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim of their broadcast."""
    a = _tensor_arg(x1, "pairwise_distance", "x1", 1)
    b = _tensor_arg(x2, "pairwise_distance", "x2", 2)
    innermost = max(a.dim(), b.dim()) - 1
    if (p < 0 or p == float("inf")) and innermost >= 0 and 0 in (a.shape[innermost:] + b.shape[innermost:]):
        # an empty last dim: these norms have no identity (torch's linalg.vector_norm refuses them)
        raise RuntimeError("linalg.vector_norm cannot compute the %g norm on the dimension %dbecause this dimension "
                           "is empty and the operation does not have an identity" % (p, innermost))    # (torch's words)
    return _renamed_norm((a - b + float(eps)).norm(p, innermost, keepdim))     # eps: a double in torch


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the pairwise p-distance;
    swap uses min(d(anchor, negative), d(positive, negative))."""
    enum = reduction_arg(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError("margin must be greater than 0, got %s" % (margin,))
    a = _tensor_arg(anchor, "triplet_margin_loss", "anchor", 1)
    pos = _tensor_arg(positive, "triplet_margin_loss", "positive", 2)
    neg = _tensor_arg(negative, "triplet_margin_loss", "negative", 3)
    _check_dims(a, pos, neg)
    dist_pos = pairwise_distance(a, pos, p, eps)
    dist_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, pairwise_distance(pos, neg, p, eps))
    output = (margin + dist_pos - dist_neg).clamp_min(0)
    if enum == "mean":
        return output.mean()
    if enum == "sum":
        return output.sum()
    return output


def _check_dims(a, p, n):
    if not a.dim() == p.dim() == n.dim():
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same number of "
                           "dimensions, but got: anchor %dD, positive %dD, and negative %dD inputs"
                           % (a.dim(), p.dim(), n.dim()))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """The triplet loss with any distance (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError("%s is not a valid value for reduction" % (reduction,))
    if margin <= 0:
        raise ValueError("margin must be greater than 0, got %s" % (margin,))
    _check_dims(anchor, positive, negative)
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance_function(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    return loss


# -- samples and the table -----------------------------------------------------------------------

def _cosine_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)))
    yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((4,)), note="broadcast")
    yield Sample(rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 1, 5)), dim=-1)
    yield Sample(rng.standard_normal((5,)), rng.standard_normal((5,)), dim=0, eps=1e-6)
    yield Sample(rng.standard_normal((0, 3)), rng.standard_normal((0, 3)), note="empty")


def _pairwise_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)))
    yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((4,)), 1.0, note="p=1, broadcast")
    yield Sample(rng.standard_normal((2, 5)), rng.standard_normal((2, 5)), 3.0, 1e-3, True)
    yield Sample(rng.standard_normal((4,)), rng.standard_normal((1, 4)), 1.5)
    yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), float("inf"))
    yield Sample(rng.standard_normal((0, 3)), rng.standard_normal((0, 3)), note="empty")


def _triplet_samples(rng):
    def three(*shapes):
        return [rng.standard_normal(s) for s in shapes]
    yield Sample(*three((4, 3), (4, 3), (4, 3)))
    yield Sample(*three((4, 3), (4, 3), (4, 3)), margin=2.0, swap=True, reduction="none")
    yield Sample(*three((5, 2), (1, 2), (5, 2)), p=1, reduction="sum")
    yield Sample(*three((3,), (3,), (3,)), margin=0.5, p=3, eps=1e-3)


def _nn_only(name, function, samples, module=False, **info):
    register(name, function, method=False, module=module, family="nn", samples=samples,
             call=functional_call(name), **info)


# (torch also has these two as torch.cosine_similarity and torch.pairwise_distance)
_nn_only("cosine_similarity", cosine_similarity, _cosine_samples, module=True)
_nn_only("pairwise_distance", pairwise_distance, _pairwise_samples, module=True)
_nn_only("triplet_margin_loss", triplet_margin_loss, _triplet_samples)
