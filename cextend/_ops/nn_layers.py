"""The functional forms of nn layers: layer_norm, dropout, embedding,
one_hot and normalize.

layer_norm and embedding are builtin ops (numpy forward, one node);
dropout and normalize are composed from other ops exactly as torch
composes them (x * mask / (1 - p); x / max(||x||_p, eps)), so their
grad_fn and gradients are torch's.
"""
import functools
import numbers
import warnings

import numpy as np

from cextend import _capture, _random
from cextend._dtype import in_opmath
from cextend._fpe import quietly
from cextend.autograd import record as rec
from cextend._ops import nn_samples as S
from cextend._ops._nn_checks import cast_error, functional_call, host_tensor, require_float, torch_name
from cextend._ops.registry import register
from cextend.autograd import grad_mode
from cextend.tensor import _wrap as _new_tensor
from cextend.tensor import _allocating, _dim, _sizes as _int_sizes
from cextend import _sizes
from cextend._errors import ArgumentError
from cextend._ops.arithmetic import div


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


# -- layer_norm ----------------------------------------------------------------------------------

def _layer_norm_backward(node, g, x, weight, bias):
    return native_layer_norm_backward(g, x, weight, bias, node.stats, (node.needs(0), node.needs(1), node.needs(2)))


class LayerNormStats:
    """What layer_norm's nodes keep besides tensors: the normalized dims, eps,
    and the mean and 1/std the forward normalised with."""

    __slots__ = ("dims", "eps", "mean", "rstd")

    def __init__(self, dims, eps, mean, rstd):
        self.dims, self.eps, self.mean, self.rstd = dims, eps, mean, rstd


def native_layer_norm_backward(g, x, weight, bias, stats, mask):
    """(dx, dw, db) of layer_norm for the incoming gradient g, None where
    mask says not wanted; recorded under create_graph as torch's one
    NativeLayerNormBackwardBackward0 of (grad, input, mean, rstd, weight, bias)."""
    dims = stats.dims
    batch = tuple(range(x.dim() - len(dims)))
    recording = rec.needs_grad(g, x, weight, bias)
    grad_x = grad_w = grad_b = None
    with grad_mode.no_grad():
        if mask[0]:
            operands = (in_opmath(g._data), in_opmath(x._data), None if weight is None else in_opmath(weight._data),
                        stats.mean, stats.rstd)
            values = functools.partial(_layer_norm_input_grad, dims=dims, dtype=x._data.dtype)
            grad_x = quietly(values, *operands)
            if _capture._active is not None:
                _capture.computed(values, operands, grad_x)
            grad_x = _wrap(grad_x)
        if weight is not None and mask[1]:
            dtype = x._data.dtype
            xhat = (x - _wrap(stats.mean.astype(dtype, copy=False))) * _wrap(stats.rstd.astype(dtype, copy=False))
            grad_w = (g * xhat).sum(batch) if batch else g * xhat
        if bias is not None and mask[2]:
            grad_b = g.sum(batch) if batch else (g.clone() if recording else g)
    grads = (grad_x, grad_w, grad_b)
    if recording:
        node = rec.record(NativeLayerNormBackwardBackward0, (g, x, None, None, weight, bias), grads)
        node.stats = stats
        node._saved = (rec.save(g), rec.save(x), None, None, rec.save(weight), rec.save(bias))
    return grads


class NativeLayerNormBackwardBackward0(rec.FormulaNode):
    differentiable = (0, 1, 4, 5)       # grad, input, weight, bias

    def formulas(self, mask, g, x, mean, rstd, weight, bias):
        """The kernels' formulas in Tensor ops, the statistics recomputed from x."""
        dims, eps = self.stats.dims, self.stats.eps
        batch = tuple(range(x.dim() - len(dims)))
        centered = x - x.mean(dims, keepdim=True)
        rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
        grad_x = grad_w = grad_b = None
        if mask[0]:
            gw = g * weight if weight is not None else g
            count = int(np.prod([x.shape[d] for d in dims]))
            scale = 1.0 / count if count else 0.0
            ds = (gw * centered).sum(dims, keepdim=True)
            grad_x = rstd * gw - (ds * rstd * rstd * centered + gw.sum(dims, keepdim=True)) * rstd * scale
        if weight is not None and mask[1]:
            xhat = centered * rstd
            grad_w = (g * xhat).sum(batch) if batch else g * xhat
        if bias is not None and mask[2]:
            grad_b = g.sum(batch) if batch else g.clone()
        return grad_x, grad_w, grad_b


_LayerNormNode = rec.node_class("NativeLayerNormBackward", _layer_norm_backward)


def _layer_norm_input_grad(g, x, w, mean, rstd, dims, dtype):
    """torch's CPU kernel, row by row: with ds = sum(g w x), db = sum(g w),
    dx = rstd g w + b x + c, b = (db mean - ds) rstd^3 / N, c = -b mean - db rstd / N.
    (Mathematically the usual formula; an infinity in w or g makes its whole
    row NaN here, as in torch.)"""
    count = int(np.prod([x.shape[d] for d in dims]))
    gw = g * w if w is not None else g
    ds = (gw * x).sum(axis=dims, keepdims=True)
    db = gw.sum(axis=dims, keepdims=True)
    scale = x.dtype.type(1.0 / count) if count else x.dtype.type(0)
    b = (db * mean - ds) * rstd * rstd * rstd * scale
    c = -b * mean - db * rstd * scale
    return np.asarray(np.asarray(rstd * gw + b * x + c, x.dtype), dtype)


def _normalized_shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape, bool):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, "
                        "not int")
    return _int_sizes((normalized_shape,), "normalized_shape")


def _check_parameter(p, name, x, shape):
    if p is None:
        return None
    host_tensor(p, "layer_norm", name)
    if p._data.shape != shape:
        raise RuntimeError("Expected %s to be of same shape as normalized_shape, but got %s of shape %s "
                           "and normalized_shape = %s" % (name, name, list(p._data.shape), list(shape)))
    if p._data.dtype != x._data.dtype:
        if x._data.dtype == np.float32:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    return p


def _layer_norm_arrays(data, weight, bias, dims, eps):
    """(mean, rstd, out) from the arrays (weight and bias may be None): the statistics in data's
    opmath dtype (float32 for float16, as torch's kernel: [300, -300, 300, -300] would
    overflow), out in data's dtype, C-contiguous as torch's kernel writes it."""
    dtype = data.dtype
    data = in_opmath(data)
    mean = data.mean(axis=dims, keepdims=True)
    centered = data - mean
    var = (centered * centered).mean(axis=dims, keepdims=True)
    rstd = 1.0 / np.sqrt(var + data.dtype.type(eps))
    # torch's kernel: (x * rstd - rstd * mean) * gamma + beta, with beta = 0
    # when there is no bias (so a -0.0 result comes out as +0.0, as there)
    out = data * rstd + (-rstd * mean)
    if weight is not None:
        out = out * weight
    out = out + (bias if bias is not None else data.dtype.type(0))
    return mean, rstd, np.asarray(out, dtype, order="C")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing normalized_shape dims
    (biased variance, as torch)."""
    x = host_tensor(input, "layer_norm")
    shape = _normalized_shape(normalized_shape)
    n = len(shape)
    if n == 0 or x._data.shape[x._data.ndim - n:] != shape or x._data.ndim < n:
        raise RuntimeError("Given normalized_shape=%s, expected input with shape [*, %s], but got input of "
                           "size%s" % (list(shape), ", ".join(str(s) for s in shape), list(x._data.shape)))
    weight = _check_parameter(weight, "weight", x, shape)
    bias = _check_parameter(bias, "bias", x, shape)
    require_float(x, "LayerNormKernelImpl")
    data = x._data
    dims = tuple(range(data.ndim - n, data.ndim))
    arrays = (data, None if weight is None else weight._data, None if bias is None else bias._data)
    values = functools.partial(_layer_norm_arrays, dims=dims, eps=eps)
    mean, rstd, out = quietly(values, *arrays)
    if _capture._active is not None:
        _capture.computed(values, arrays, (mean, rstd, out))
    result = _wrap(out)
    if rec.needs_grad(x, weight, bias):
        node = rec.record(_LayerNormNode, (x, weight, bias), result)
        node.stats = LayerNormStats(dims, eps, mean, rstd)      # in the opmath dtype
        node._saved = (rec.save(x), rec.save(weight), rec.save(bias))
    return result


# -- dropout -------------------------------------------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:          # torch.nn.functional's own check: a ValueError
        raise ValueError("dropout probability has to be between 0 and 1, but got %s" % (p,))
    if p != p:                      # NaN passes that; torch's kernel refuses it with a RuntimeError
        raise ArgumentError("dropout probability has to be between 0 and 1, but got %s" % (p,))


def _dropout(x, p, training, inplace, noise_shape):
    """x * noise, noise = bernoulli(1 - p) / (1 - p) of noise_shape (broadcast over x),
    as torch's _dropout_impl; identity when not training or p == 0."""
    if not training or p == 0:
        return x
    dt = x._data.dtype
    if p == 1:
        # torch multiplies by a 0-d zero of the input's dtype: integers and bools work too.
        noise = _wrap(np.zeros((), dt))
    else:
        if dt.kind != "f":
            raise cast_error(np.dtype(np.float32), dt)
        # As separate steps a captured training step can replay: draw, compare, scale.
        draws = _random.uniform_draws(noise_shape)
        keep = np.greater_equal(draws, p)
        scale = dt.type(1 - p)
        divided = np.true_divide(keep, scale)
        noise = divided.astype(dt, copy=False)
        if _capture._active is not None:
            _capture.computed(np.greater_equal, (draws, p), keep, direct=True)
            _capture.computed(np.true_divide, (keep, scale), noise, direct=noise is divided)
        noise = _wrap(noise)
    return x.mul_(noise) if inplace else x * noise


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1 - p); identity
    when not training.  Masks come from cextend's global generator (manual_seed)."""
    _check_p(p)
    x = host_tensor(input, "dropout")
    return _dropout(x, p, training, inplace, x._data.shape)


def dropout_(input, p=0.5, training=True):
    return dropout(input, p, training, inplace=True)


def _feature_dropout(x, p, training, inplace):
    """Whole channels (dim 1) zeroed together: one noise value per (sample, channel)."""
    shape = x._data.shape
    if len(shape) < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _dropout(x, p, training, inplace, shape[:2] + (1,) * (len(shape) - 2))


def _unbatched(x, inplace):
    return x.unsqueeze_(0) if inplace else x.unsqueeze(0)


def _rebatched(result, inplace):
    return result.squeeze_(0) if inplace else result.squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, L) or (C, L) input."""
    _check_p(p)
    x = host_tensor(input, "dropout1d")
    ndim = x._data.ndim
    if ndim not in (2, 3):
        raise RuntimeError("dropout1d: Expected 2D or 3D input, but received a %dD input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                           "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
                           "inputs)." % ndim)
    if ndim == 3:
        return _feature_dropout(x, p, training, inplace)
    return _rebatched(_feature_dropout(_unbatched(x, inplace), p, training, inplace), inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, H, W) input (a 3-D input is read as (N, C, L), as torch)."""
    _check_p(p)
    x = host_tensor(input, "dropout2d")
    ndim = x._data.ndim
    if ndim not in (3, 4):
        warnings.warn("dropout2d: Received a %d-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout2d exists to provide channel-wise "
                      "dropout on inputs with 2 spatial dimensions, a channel dimension, and an optional "
                      "batch dimension (i.e. 3D or 4D inputs)." % ndim, UserWarning, stacklevel=2)
    if ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
                      "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
                      "the channel dim. This behavior will change in a future release to interpret the "
                      "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
                      "channel-wise dropout behavior, please switch to using dropout1d instead.",
                      UserWarning, stacklevel=2)
    return _feature_dropout(x, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) input."""
    _check_p(p)
    x = host_tensor(input, "dropout3d")
    ndim = x._data.ndim
    if ndim not in (4, 5):
        warnings.warn("dropout3d: Received a %d-D input to dropout3d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout3d exists to provide channel-wise "
                      "dropout on inputs with 3 spatial dimensions, a channel dimension, and an optional "
                      "batch dimension (i.e. 4D or 5D inputs)." % ndim, UserWarning, stacklevel=2)
    if ndim == 5:
        return _feature_dropout(x, p, training, inplace)
    return _rebatched(_feature_dropout(_unbatched(x, inplace), p, training, inplace), inplace)


# -- embedding ------------------------------------------------------------------------------------

class _Lookup:
    """Rows of an (num, dim) weight read by an index tensor; padding rows get no gradient."""

    def __init__(self, indices, num_weights, padding_idx, scale_grad_by_freq):
        self.indices = indices
        self.flat = indices.reshape(-1)
        self.num_weights = num_weights
        padded = padding_idx is not None and padding_idx >= 0
        self.keep = (self.flat != padding_idx) if padded else np.ones(self.flat.shape, bool)
        scale = self.keep.astype(np.float64)
        if scale_grad_by_freq and self.flat.size:
            scale = scale / np.bincount(self.flat, minlength=num_weights)[self.flat]
        self.scale = scale

    def accumulate(self, g):
        """grad_weight: each row of g (times its scale) added into its index's row."""
        dim = g.shape[-1] if g.ndim else 0
        out = np.zeros((self.num_weights, dim), g.dtype)
        rows = g.reshape(-1, dim) * self.scale[:, None].astype(g.dtype)
        np.add.at(out, self.flat, rows)
        return out

    def select(self, gg):
        """Rows of gg read at the indices, padding rows zeroed.  Not divided by the
        frequencies: torch's embedding double backward leaves them out, so with
        scale_grad_by_freq this is not quite accumulate's transpose (torch's answer)."""
        rows = gg[self.flat] * self.keep[:, None].astype(gg.dtype)
        return rows.reshape(self.indices.shape + (gg.shape[1],))


def _embedding_backward(node, g, indices):
    # indices: saved as torch saves them (a version-checked variable, freed
    # after backward); their values are already in node.lookup
    return _embedding_accumulate(g, node.lookup)


def _accumulate_backward(node, gg):
    result = _wrap(node.lookup.select(gg._data))
    if rec.needs_grad(gg):
        inner = rec.record(_EmbeddingDenseBackwardNode, (gg,), result)
        inner.lookup = node.lookup
    return result


_EmbeddingNode = rec.node_class("EmbeddingBackward", _embedding_backward)
_EmbeddingDenseBackwardNode = rec.node_class("EmbeddingDenseBackwardBackward",
                                             lambda node, g: _embedding_accumulate(g, node.lookup))
_EmbeddingAccumulateNode = rec.node_class("EmbeddingBackwardBackward", _accumulate_backward)


def _embedding_accumulate(g, lookup):
    result = _wrap(lookup.accumulate(g._data))
    if rec.needs_grad(g):
        node = rec.record(_EmbeddingAccumulateNode, (g,), result)
        node.lookup = lookup
    return result


def _renorm_rows(weight, indices, max_norm, norm_type):
    """torch's embedding_renorm_: rows used by indices scaled down to max_norm, in place, untracked."""
    rows = np.unique(indices)
    data = weight._data
    norms = quietly(lambda: np.linalg.norm(data[rows].astype(np.float64), ord=norm_type, axis=1))
    over = norms > max_norm
    if over.any():
        scale = max_norm / (norms[over] + 1e-7)
        data[rows[over]] = (data[rows[over]] * scale[:, None]).astype(data.dtype)
        weight._bump_version()


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """weight[input]: rows of a (num_embeddings, dim) table; padding_idx's row gets no gradient."""
    idx = host_tensor(input, "embedding")
    w = host_tensor(weight, "embedding", "weight")
    if w._data.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = w._data.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    if idx._data.dtype not in (np.int64, np.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar "
                           "types: Long, Int; but got cextend.%sTensor instead (while checking arguments "
                           "for embedding)" % torch_name(idx._data.dtype))
    if sparse:
        raise NotImplementedError("embedding(sparse=True): cextend has no sparse tensors; use sparse=False "
                                  "(dense gradient)")
    indices = idx._data.astype(np.intp)
    if indices.size and (indices.min() < 0 or indices.max() >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_rows(w, indices, max_norm, norm_type)
    result = _wrap(w._data[indices])
    if rec.needs_grad(w):
        node = rec.record(_EmbeddingNode, (w,), result)
        node.lookup = _Lookup(indices, num, padding_idx, scale_grad_by_freq)
        node._saved = (rec.save(idx),)
    return result


# -- one_hot and normalize ------------------------------------------------------------------------

def one_hot(tensor, num_classes=-1):
    """int64 (*, num_classes) with a 1 at each value; num_classes=-1 means max + 1."""
    t = host_tensor(tensor, "one_hot", "tensor")
    if t._data.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral):
        raise TypeError("one_hot(): argument 'num_classes' must be int, not %s" % type(num_classes).__name__)
    num_classes = _sizes.int64(int(num_classes), "num_classes", "one_hot")
    data = t._data
    if num_classes == -1:
        if data.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(data.max()) + 1
    if data.size:
        if data.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if data.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes < 0:
        raise RuntimeError("Class values must be smaller than num_classes.")
    shape = _sizes.new_shape(data.shape + (num_classes,), "size", "one_hot")
    out = _allocating("one_hot", shape, np.zeros, shape, np.int64)
    if data.size:
        np.put_along_axis(out, data[..., None], 1, -1)
    return _wrap(out)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    x = host_tensor(input, "normalize")
    if x._data.dtype.kind != "f":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           "Got %s" % torch_name(x._data.dtype))
    _dim(dim, x._data.ndim)
    denom = x.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(x)
    if out is not None:
        return div(x, denom, out=out)
    return x / denom


# -- the table entries (torch.nn.functional only) -------------------------------------------------

def _nn_only(name, function, samples, **info):
    register(name, function, method=False, module=False, family="nn", samples=samples,
             call=functional_call(name), **info)


_nn_only("layer_norm", layer_norm, S.layer_norm_samples())
_nn_only("dropout", dropout, S.dropout_samples())
_nn_only("dropout1d", dropout1d, S.dropout_samples((2, 3, 4)))
_nn_only("dropout2d", dropout2d, S.dropout_samples((2, 3, 2, 2)))
_nn_only("dropout3d", dropout3d, S.dropout_samples((2, 3, 2, 1, 2)))
_nn_only("embedding", embedding, S.embedding_samples())
_nn_only("one_hot", one_hot, S.one_hot_samples(), gradcheck=False, integer_inputs=True)
_nn_only("normalize", normalize, S.normalize_samples())
