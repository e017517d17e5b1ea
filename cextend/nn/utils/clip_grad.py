"""Gradient clipping, as torch.nn.utils.clip_grad.

The total norm is the p-norm of the per-tensor p-norms (as if every
gradient were one vector), in the gradients' promoted dtype, returned as a
0-d Tensor; gradients are scaled in place by min(max_norm / (total + 1e-6), 1).
`foreach` is accepted and changes nothing (one implementation).
"""
import types
import warnings

import numpy as np

from cextend._overlap import check_not_self_overlapping

from cextend.tensor import Tensor, _wrap


def _vector_norm(array, norm_type):
    """torch.linalg.vector_norm(array, norm_type) on a numpy array (same dtype out)."""
    a = np.abs(array.reshape(-1))
    if a.dtype == np.float16:         # accumulate half in float (torch's opmath), return half
        return _vector_norm(a.astype(np.float32), norm_type).astype(np.float16)
    if norm_type == np.inf or norm_type == -np.inf:
        if a.size == 0:
            raise RuntimeError("linalg.vector_norm cannot compute the %s norm on an empty tensor because the "
                               "operation does not have an identity" % ("inf" if norm_type > 0 else "-inf"))
        return a.max() if norm_type > 0 else a.min()
    if norm_type == 0:
        return np.asarray(np.count_nonzero(a), dtype=a.dtype)[()]
    if norm_type == 1:
        return a.sum()
    if norm_type == 2:
        return np.sqrt(np.sum(a * a))
    return np.sum(a ** norm_type) ** (1.0 / norm_type)


def _tensors(items):
    return [items] if isinstance(items, Tensor) else list(items)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the tensors' norms: the norm of all their elements as one vector."""
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _wrap(np.array(0.0, dtype=np.float32))
    norms = [_vector_norm(t._data, norm_type) for t in tensors]
    dtype = np.result_type(*[t._data.dtype for t in tensors])
    total = np.asarray(_vector_norm(np.array(norms, dtype=dtype), norm_type), dtype=dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError("The total norm of order {} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`".format(norm_type))
    return _wrap(total)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by min(max_norm / (total_norm + 1e-6), 1), in place."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    total = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm)
    clip_coef = max_norm / (total + 1e-6)
    clip_coef_clamped = np.minimum(clip_coef, 1.0)
    with np.errstate(invalid="ignore"):          # a NaN or inf norm scales to NaN, as in torch
        for g in grads:
            check_not_self_overlapping(g._data)
            g._data *= clip_coef_clamped.astype(g._data.dtype)
            g._bump_version()


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradients' total norm to max_norm in place; returns the total norm before clipping
    (a 0-d Tensor).  norm_type may be float('inf')."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to [-clip_value, clip_value], in place (NaN stays NaN)."""
    clip_value = float(clip_value)
    for p in _tensors(parameters):
        if p.grad is not None:
            g = p.grad._data
            check_not_self_overlapping(g)
            np.clip(g, -clip_value, clip_value, out=g)
            p.grad._bump_version()
