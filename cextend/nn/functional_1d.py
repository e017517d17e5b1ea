"""torch.nn.functional's 1-D pooling, adaptive max pooling, conv_transpose1d
and the alpha dropouts, built on the 2-D ops (no C of their own).

A 1-D op runs its 2-D form on the input unsqueezed at dim -2 ((N, C, L) ->
(N, C, 1, L)), as torch's own 1-D ops do, so values, indices (h*W + w with
h = 0 is the 1-D position) and gradients are the 2-D ops'.  The argument
checks are torch 2.13's, with its messages and exception types, made here
before the 2-D op is reached (whose messages speak of 2-D sizes).
"""
import math
import numbers

import numpy as np

from cextend import _random, _sizes
from cextend._memory_format import like_input_format
from cextend.ops._shapes import pool_output_size
from cextend._ops._nn_checks import cast_error, torch_name
from cextend.autograd import grad_mode, views
from cextend._ops.pooling import adaptive_max_pool2d as _adaptive_max_pool2d
from cextend.nn import _functional_2d as F
from cextend.tensor import Tensor, _wrap


def _fmt(shape):
    return "[%s]" % ", ".join(str(int(d)) for d in shape)


def _tensor(value, op):
    if not isinstance(value, Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s" % (op, type(value).__name__))
    return value


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _int_list(value, op, name, position):
    """torch's int[] argument parsing: an int, or a sequence of ints."""
    if _is_int(value):
        return [_sizes.int64(int(value), name, op)]
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            if not _is_int(v):
                raise TypeError("%s(): argument '%s' (position %d) must be tuple of ints, but found element of "
                                "type %s at pos %d" % (op, name, position, type(v).__name__, i))
        return [_sizes.int64(int(v), name, op) for v in value]
    raise TypeError("%s(): argument '%s' (position %d) must be tuple of ints, not %s"
                    % (op, name, position, type(value).__name__))


def _dim_range(x, op):
    """torch's checkDimRange(op, self, 2, 4): 2-D (unbatched) or 3-D."""
    if x.dim() not in (2, 3):
        raise RuntimeError("Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' "
                           "(while checking arguments for %s)" % (x.dim(), op))


def _one(values, op, name):
    """torch's check1d: the argument holds exactly one int."""
    if len(values) != 1:
        raise RuntimeError("%s() argument '%s' should contain one int (got %d)" % (op, name, len(values)))
    return values[0]


def _squeezed(result):
    if isinstance(result, tuple):
        return tuple(r.squeeze(-2) for r in result)
    return result.squeeze(-2)


def _not_floating(x, name):
    dtype = x._data.dtype
    if dtype.kind != "f":
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (name, torch_name(dtype)))


# -- max_pool1d ------------------------------------------------------------------------------

_MAX_POOL1D_SIZES = (("kernel_size", "an int, list of ints or tuple of ints"),
                     ("stride", "None, an int, list of ints, or tuple of ints"),
                     ("padding", "an int, list of ints, or tuple of ints"),
                     ("dilation", "an int, list of ints or tuple of ints"))


def _max_pool1d_window(x, kernel_size, stride, padding, dilation, ceil_mode):
    """torch's check_max_pool1d: (k, s, p, d) or its RuntimeError."""
    shape = tuple(x.shape)
    if not ((len(shape) == 2 and shape[0] != 0 and shape[1] != 0) or
            (len(shape) == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           "input, but got:%s" % _fmt(shape))
    lists = [_int_list(kernel_size, "max_pool1d", "kernel_size", 2),
             [] if stride is None else _int_list(stride, "max_pool1d", "stride", 3),
             _int_list(padding, "max_pool1d", "padding", 4),
             _int_list(dilation, "max_pool1d", "dilation", 5)]
    for values, (name, what) in zip(lists, _MAX_POOL1D_SIZES):
        if len(values) != 1 and not (name == "stride" and not values):
            raise RuntimeError("max_pool1d() %s must be %s of size 1 but got size %d" % (name, what, len(values)))
    k, p, d = lists[0][0], lists[2][0], lists[3][0]
    s = lists[1][0] if lists[1] else k
    if k <= 0:
        raise RuntimeError("max_pool1d() kernel_size must be greater than zero, but got %d" % k)
    if s <= 0:
        raise RuntimeError("max_pool1d() stride must be greater than zero, but got %d" % s)
    if p < 0:
        raise RuntimeError("max_pool1d() padding must be non-negative, but got %d" % p)
    if p > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got padding=%d and "
                           "kernel_size=%d" % (p, k))
    if d <= 0:
        raise RuntimeError("max_pool1d() dilation must be greater than zero, but got %d" % d)
    out = pool_output_size(shape[-1], k, s, p, d, ceil_mode)
    if out < 1:
        raise RuntimeError("max_pool1d() Invalid computed output size: %d" % out)
    return k, s, p, d


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch's max_pool1d of (N, C, L) or (C, L); with return_indices,
    (values, int64 positions along L).  A NaN wins, else the first maximum.
    As in torch, return_indices runs max_pool1d_with_indices, whose checks
    (and messages) are max_pool2d's, and which takes integer inputs too."""
    x = _tensor(input, "max_pool1d")
    if return_indices:
        k, s, p, d = _pool1d_as_2d(x, "max_pool1d", kernel_size, stride, padding, dilation, ceil_mode)
        if x._data.dtype == np.bool_:
            _not_floating(x, "max_pool2d")
    else:
        k, s, p, d = _max_pool1d_window(x, kernel_size, stride, padding, dilation, ceil_mode)
        _not_floating(x, "max_pool1d_impl")
    result = F.max_pool2d(x.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), bool(ceil_mode), return_indices)
    if not return_indices and not (x.requires_grad and grad_mode.is_grad_enabled()):
        # torch's max_pool1d has its own kernel: no view; where the input
        # needs a gradient it runs the indices form, whose result is one
        result = views.forget_base(_squeezed(result))
        result._data = np.asarray(result._data, order="C")     # its kernel writes a contiguous output
        return result
    return _squeezed(result)


# -- avg_pool1d, and max_pool1d with indices: the 2-D op's checks ----------------------------

def _half_toward_zero(n):
    return -((-n) // 2) if n < 0 else n // 2


def _pool1d_as_2d(x, op, kernel_size, stride, padding, dilation, ceil_mode):
    """(k, s, p, d) after torch's checks of a 1-D pool that runs the 2-D op
    (avg_pool1d, max_pool1d_with_indices): checkDimRange and check1d, then
    the 2-D op's pooling_output_shape and pool2d_shape_check, in their order
    (so the messages speak of (N, C, 1, L))."""
    ks = _int_list(kernel_size, op, "kernel_size", 2)
    ss = [] if stride is None else _int_list(stride, op, "stride", 3)
    ps = _int_list(padding, op, "padding", 4)
    ds = _int_list(dilation, op, "dilation", 5)
    _dim_range(x, op)
    k = _one(ks, op, "kernel_size")
    s = _one(ss, op, "stride") if ss else k
    p = _one(ps, op, "padding")
    d = _one(ds, op, "dilation")
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError("pad must be non-negative, but got pad: %d" % p)
    if p > _half_toward_zero((k - 1) * d + 1):
        raise RuntimeError("pad should be at most half of effective kernel size, but got pad=%d, kernel_size=%d "
                           "and dilation=%d" % (p, k, d))
    if k <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kH: 1 kW: %d" % k)
    if s <= 0:
        raise RuntimeError("stride should be greater than zero, but got dH: 1 dW: %d" % s)
    if d <= 0:
        raise RuntimeError("dilation should be greater than zero, but got dilationH: 1 dilationW: %d" % d)
    shape4 = tuple(x.shape[:-1]) + (1, x.shape[-1])
    if not ((len(shape4) == 3 and all(shape4)) or (len(shape4) == 4 and all(shape4[1:]))):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           "got:%s" % _fmt(shape4))
    if p > k // 2:
        raise RuntimeError("pad should be smaller than or equal to half of kernel size, but got padW = %d, padH = 0, "
                           "kW = %d, kH = 1" % (p, k))
    out = pool_output_size(shape4[-1], k, s, p, d, ceil_mode)
    if out < 1:
        raise RuntimeError("Given input size: (%dx1x%d). Calculated output size: (%dx1x%d). Output size is too "
                           "small" % (shape4[-3], shape4[-1], shape4[-3], out))
    return k, s, p, d


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """torch's avg_pool1d of (N, C, L) or (C, L): avg_pool2d over (N, C, 1, L).
    Integer inputs compute in their dtype, as torch's."""
    x = _tensor(input, "avg_pool1d")
    k, s, p, _ = _pool1d_as_2d(x, "avg_pool1d", kernel_size, stride, padding, 1, ceil_mode)
    if x._data.dtype == np.bool_:
        _not_floating(x, "avg_pool2d")
    return _squeezed(F.avg_pool2d(x.unsqueeze(-2), (1, k), (1, s), (0, p), bool(ceil_mode),
                                  bool(count_include_pad)))


# -- adaptive pooling ------------------------------------------------------------------------

def _non_empty(x, op, first):
    shape = tuple(x.shape)
    for dim in range(first, len(shape)):
        if shape[dim] == 0:
            raise RuntimeError("%s(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               "sizes %s with dimension %d being empty" % (op, _fmt(shape), dim))


def adaptive_avg_pool1d(input, output_size):
    """torch's adaptive_avg_pool1d of (N, C, L) or (C, L)."""
    x = _tensor(input, "adaptive_avg_pool1d")
    sizes = _int_list(output_size, "adaptive_avg_pool1d", "output_size", 2)
    _dim_range(x, "adaptive_avg_pool1d")
    size = _one(sizes, "adaptive_avg_pool1d", "output_size")
    if size < 0:
        raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                           "received {1, %d}" % size)
    x4 = x.unsqueeze(-2)
    _non_empty(x4, "adaptive_avg_pool2d", 1 if x4.dim() == 4 else 0)
    return _squeezed(F.adaptive_avg_pool2d(x4, (1, size)))


def _adaptive_max(x4, sizes, op):
    """adaptive max pooling of batched or unbatched (.., H, W) after torch's checks."""
    if min(sizes) < 0:
        shape = tuple(x4.shape[:-2]) + tuple(sizes)
        raise RuntimeError("Trying to create tensor with negative dimension %d: %s" % (min(sizes), _fmt(shape)))
    _not_floating(x4, "adaptive_max_pool2d")
    _sizes.check_count(tuple(x4.shape[:-2]) + tuple(sizes), "output size", op)
    unbatched = x4.dim() == 3
    try:
        values, indices = _adaptive_max_pool2d(x4.unsqueeze(0) if unbatched else x4, tuple(sizes))
    except (MemoryError, ValueError) as error:
        translated = _sizes.translated(error, op)
        if translated is None:
            raise
        raise translated from None
    if unbatched:       # torch's kernel takes a 3-D input as it is: no view
        return views.forget_base(values.squeeze(0)), views.forget_base(indices.squeeze(0))
    return like_input_format(values, x4), like_input_format(indices, x4)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch's adaptive_max_pool1d of (N, C, L) or (C, L): window i spans
    [floor(i*L/out), ceil((i+1)*L/out)); a NaN wins, else the first maximum."""
    x = _tensor(input, "adaptive_max_pool1d")
    sizes = _int_list(output_size, "adaptive_max_pool1d", "output_size", 2)
    _dim_range(x, "adaptive_max_pool1d")
    size = _one(sizes, "adaptive_max_pool1d", "output_size")
    _non_empty(x, "adaptive_max_pool1d", 1 if x.dim() == 3 else 0)
    values, indices = _squeezed(_adaptive_max(x.unsqueeze(-2), (1, size), "adaptive_max_pool1d"))
    return (values, indices) if return_indices else values


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch's adaptive_max_pool2d of (N, C, H, W) or (C, H, W); output_size
    an int or a pair whose None entries keep the input's size."""
    x = _tensor(input, "adaptive_max_pool2d")
    if not _is_int(output_size):
        # torch.nn.functional's _list_with_default
        if len(x.shape) <= len(output_size):
            raise ValueError("Input dimension should be at least %d" % (len(output_size) + 1))
        output_size = [x.shape[-len(output_size) + i] if v is None else v for i, v in enumerate(output_size)]
    sizes = _int_list(output_size, "adaptive_max_pool2d", "output_size", 2)
    if x.dim() not in (3, 4):
        raise RuntimeError("adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: %s" % _fmt(x.shape))
    _non_empty(x, "adaptive_max_pool2d", x.dim() - 3)
    if _is_int(output_size):
        sizes = sizes * 2
    if len(sizes) != 2:
        raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    values, indices = _adaptive_max(x, sizes, "adaptive_max_pool2d")
    return (values, indices) if return_indices else values


# -- conv_transpose1d ------------------------------------------------------------------------

def _conv_ints(value, name):
    values = _int_list(value, "conv_transpose1d", name, {"stride": 4, "padding": 5, "output_padding": 6,
                                                         "dilation": 8}[name])
    if len(values) == 1:
        return values[0]
    raise RuntimeError("expected %s to be a single integer value or a list of 1 values to match the convolution "
                       "dimensions, but got %s=%s" % (name, name, _fmt(values)))


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch's conv_transpose1d: input (N, C_in, L) or (C_in, L), weight
    (C_in, C_out/groups, k); conv_transpose2d over (N, C_in, 1, L)."""
    x = _tensor(input, "conv_transpose1d")
    if not isinstance(weight, Tensor):
        raise TypeError("conv_transpose1d(): argument 'weight' (position 2) must be Tensor, not %s"
                        % type(weight).__name__)
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError("conv_transpose1d(): argument 'bias' (position 3) must be Tensor, not %s"
                        % type(bias).__name__)
    if not _is_int(groups):
        raise TypeError("conv_transpose1d(): argument 'groups' (position 7) must be int, not %s"
                        % type(groups).__name__)
    s, p, op, d = (_conv_ints(stride, "stride"), _conv_ints(padding, "padding"),
                   _conv_ints(output_padding, "output_padding"), _conv_ints(dilation, "dilation"))
    if x.dim() not in (2, 3):
        raise RuntimeError("Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of "
                           "size: %s" % _fmt(x.shape))
    unbatched = x.dim() == 2
    xb = x.unsqueeze(0) if unbatched else x
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if weight.dim() != 3:
        raise RuntimeError("Expected %d-dimensional input for %d-dimensional weight %s, but got 3-dimensional input "
                           "of size %s instead" % (weight.dim(), weight.dim(), _fmt(weight.shape), _fmt(xb.shape)))
    if s <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if p < 0:
        raise RuntimeError("negative padding is not supported")
    if op < 0:
        raise RuntimeError("negative output_padding is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if d <= 0:
        raise RuntimeError("dilation should be greater than zero, but got dilation=%d" % d)
    w_in, cog, k = weight.shape
    n, c_in, length = xb.shape
    if w_in < groups:
        raise RuntimeError("Given groups=%d, expected weight to be at least %d at dimension 0, but got weight of "
                           "size %s instead" % (groups, groups, _fmt(weight.shape)))
    if w_in % groups:
        # torch prints this weight size in double brackets
        raise RuntimeError("Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight "
                           "of size [%s] instead" % (groups, groups, _fmt(weight.shape)))
    if w_in != c_in:
        raise RuntimeError("Given transposed=1, weight of size %s, expected input%s to have %d channels, but got %d "
                           "channels instead" % (_fmt(weight.shape), _fmt(xb.shape), w_in, c_in))
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != cog * groups):
        raise RuntimeError("Given transposed=1, weight of size %s, expected bias to be 1-dimensional with %d "
                           "elements, but got bias of size %s instead" % (_fmt(weight.shape), cog * groups,
                                                                         _fmt(bias.shape)))
    if length == 0 and n != 0:
        raise RuntimeError("Only zero batch or zero channel inputs are supported, but got input shape: %s"
                           % _fmt((n, c_in, 1, 0)))
    if op >= s and op >= d:
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                           "output_padding_height: 0 output_padding_width: %d stride_height: 1 stride_width: %d "
                           "dilation_height: 1 dilation_width: %d" % (op, s, d))
    if k <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kernel_width: %d" % k)
    out = (length - 1) * s - 2 * p + d * (k - 1) + op + 1
    if out <= 0:
        raise RuntimeError("Given input size per channel: (1 x %d). Calculated output size per channel: (1 x %d). "
                           "Output size is too small" % (length, out))
    y = F.conv_transpose_any(xb, weight, bias, (1, s), (0, p), (0, op), groups, (1, d))
    return y.squeeze(0) if unbatched else y


# -- alpha dropout ---------------------------------------------------------------------------

_SELU_ALPHA = 1.7580993408473766       # -scale * alpha of SELU: the value SELU saturates to


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got %s" % (p,))


def _alpha_dropout(x, p, training, inplace, feature):
    """torch's _dropout_impl<alpha_dropout=true>: kept elements a*x + alpha*a*p,
    dropped ones alpha*a*(p - 1), so a SELU network's mean 0 and variance 1 survive;
    the noise and its offset are computed in the input's dtype, as torch's."""
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s"
                        % ("feature_alpha_dropout" if feature else "alpha_dropout", type(x).__name__))
    if p == 0 or not training or x._data.size == 0:
        return x
    dt = x._data.dtype
    if p == 1:
        zero = _wrap(np.zeros((), dt))
        return x.mul_(zero) if inplace else x * zero
    shape = x._data.shape
    if feature:
        if len(shape) < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = shape[:2] + (1,) * (len(shape) - 2)
    if dt.kind != "f":
        raise cast_error(np.dtype(np.float32), dt)
    keep = (_random.generator().random(shape) >= p).astype(dt)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    c = dt.type
    offset = (keep - c(1)) * c(_SELU_ALPHA * a) + c(_SELU_ALPHA * a * p)
    noise = _wrap((keep * c(a)).astype(dt))
    offset = _wrap(offset.astype(dt))
    return x.mul_(noise).add_(offset) if inplace else x * noise + offset


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """torch's alpha_dropout (for SELU networks); identity when not training."""
    _check_p(p)
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels (dim 1): one draw per (sample, channel)."""
    _check_p(p)
    return _alpha_dropout(input, p, training, inplace, feature=True)
