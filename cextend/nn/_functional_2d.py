"""torch.nn.functional's convolution, 2-D pooling and batch norm: torch's
argument checks, then the built-in ops of cextend/_ops/{convolution,pooling,normalization}.py;
cextend.nn.functional gives them their public names.
"""
import math

from cextend.ops._checks import ArgumentError     # a ValueError, and the RuntimeError torch raises
from cextend._memory_format import like_input_format
from cextend.tensor import Tensor
import numpy as np

from cextend.ops._shapes import check_conv_bias as _check_conv_bias
from cextend.ops._shapes import conv2d_geometry as _conv2d_geometry
from cextend.ops._shapes import conv_transpose2d_geometry as _conv_transpose2d_geometry
from cextend.ops._shapes import divisor as _divisor
from cextend.ops._shapes import pool2d_window as _pool2d_window
from cextend.ops._shapes import single as _single
from cextend._ops import nn_integer as _nn_integer
from cextend._ops._nn_checks import torch_name as _torch_name
from cextend.autograd import views
from cextend.tensor import _wrap
from cextend._ops.convolution import ConvParams, convolution
from cextend._ops.normalization import batch_norm as _batch_norm
from cextend._ops import pooling as _pooling
from cextend import _dtype
from cextend._memory_format import channels_last, empty_as, suggests_channels_last
from cextend.ops._shapes import pair
from cextend._promotion import result_type


def _tensor(value, name, op):
    if not isinstance(value, Tensor):
        raise TypeError("%s(): argument '%s' must be a Tensor, not %s" % (op, name, type(value).__name__))
    return value


def _batched(input, op, batched_dim, what):
    """(input with a batch dimension, whether one was added), as torch
    accepts unbatched inputs of one dimension less."""
    _tensor(input, "input", op)
    if input.dim() == batched_dim:
        return input, False
    if input.dim() == batched_dim - 1:
        return input.unsqueeze(0), True
    raise ArgumentError("%s: expected %dD (unbatched) or %dD (batched) input %s, but got input of size: %s"
                        % (op, batched_dim - 1, batched_dim, what, list(input.shape)))


# torch's names for dtypes in its conv messages: the C++ type, and the legacy tensor type.
_C_TYPES = {"float16": "c10::Half", "float32": "float", "float64": "double", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}
_LEGACY_TYPES = {"float16": "torch.HalfTensor", "float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
                 "int64": "torch.LongTensor", "int32": "torch.IntTensor", "int16": "torch.ShortTensor",
                 "int8": "torch.CharTensor", "uint8": "torch.ByteTensor", "bool": "CPUBoolType"}


def _dtype_name(t):
    return t._data.dtype.name


def _floating(t):
    return t._data.dtype.kind == "f"


def _check_weight_dtype(x, weight):
    if weight._data.dtype != x._data.dtype:
        raise RuntimeError("expected scalar type %s but found %s"
                           % (_torch_name(x._data.dtype), _torch_name(weight._data.dtype)))


def _check_conv_dtypes(x, weight, bias, geometry_check):
    """torch's order: the channel checks, the bias's dtype, then the weight's."""
    geometry_check()
    if x._data.dtype == np.bool_:       # no kernel at all: refused before the operands are compared
        raise NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Bool'")
    if bias is not None:
        _tensor(bias, "bias", "conv2d")
        if bias._data.dtype != x._data.dtype:
            raise RuntimeError("Input type (%s) and bias type (%s) should be the same"
                               % (_C_TYPES.get(_dtype_name(x)), _C_TYPES.get(_dtype_name(bias))))
    _check_weight_dtype(x, weight)


def _integer_conv2d(x, weight, bias, stride, padding, dilation, groups):
    geometry, _ = _conv2d_geometry(_planar(x.shape), _planar(weight.shape), None if bias is None else bias.shape,
                                   stride, padding, dilation, groups)
    return _wrap(_nn_integer.conv2d(x._data.reshape(_planar(x.shape)), weight._data.reshape(_planar(weight.shape)),
                                    None if bias is None else bias._data, geometry))


def _planar(shape):
    """A 1-D convolution's shape as its 2-D kernels see it: (N, C, 1, L)."""
    shape = tuple(shape)
    return shape if len(shape) == 4 else shape[:2] + (1,) + shape[2:]


def _conv_any(x, weight, bias, stride, padding, dilation, groups):
    """conv1d/conv2d of batched operands (3-D or 4-D, with 2-D stride,
    padding and dilation): the C kernels for floats, numpy for integers (no autograd)."""
    x_shape, w_shape = _planar(x.shape), _planar(weight.shape)
    found = []          # the geometry, from the checks torch makes first (the bias's size is checked last)
    _check_conv_dtypes(x, weight, bias, lambda: found.append(_conv2d_geometry(x_shape, w_shape, None, stride,
                                                                              padding, dilation, groups)))
    if not _floating(x):
        y = _integer_conv2d(x, weight, bias, stride, padding, dilation, groups)
        return y if x.dim() == 4 else views.forget_base(y.squeeze(2))
    _check_conv_bias(w_shape, None if bias is None else tuple(bias.shape))
    geometry = found[0][0]
    return _channels_last_if_torch(convolution(x, weight, bias, ConvParams(geometry, False, x.shape, weight.shape)),
                                   x, weight)


def _channels_last_if_torch(y, x, weight):
    """torch's CPU convolutions write a channels-last output when the input
    or the weight is laid out channels last (mkldnn_conv_use_channels_last,
    thnn_conv_use_channels_last): y re-laid out so, as a later view() sees.
    A 1-D convolution decides on its 4-D view, after making its input
    contiguous (so only its weight can decide)."""
    if type(y._data) is not np.ndarray:
        return y
    if y.dim() == 4:
        decides = suggests_channels_last(x._data) or suggests_channels_last(weight._data)
    else:
        decides = suggests_channels_last(weight._data.reshape(_planar(weight.shape)))
    if decides:
        planar = y._data.reshape(_planar(y.shape))
        laid_out = empty_as(planar, planar.dtype, channels_last)
        laid_out[...] = planar
        y._data = laid_out if y.dim() == 4 else laid_out.reshape(y.shape)
    return y


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch's conv2d: input (N, C_in, H, W) or (C_in, H, W); padding an int,
    a pair, 'valid' or 'same'.  Integer inputs compute in their dtype, as torch's."""
    x, unbatched = _batched(input, "conv2d", 4, "(N, C_in, H, W)")
    y = _conv_any(x, _tensor(weight, "weight", "conv2d"), bias, stride, padding, dilation, groups)
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch's conv1d: one node, on the 2-D kernels over a height of 1."""
    x, unbatched = _batched(input, "conv1d", 3, "(N, C_in, L)")
    _tensor(weight, "weight", "conv1d")
    if weight.dim() != 3:
        raise ArgumentError("conv1d: weight must be 3-D (C_out, C_in/groups, k), got shape %s" % (list(weight.shape),))
    pad = padding if isinstance(padding, str) else (0, _single(padding, "padding"))
    y = _conv_any(x, weight, bias, (1, _single(stride, "stride")), pad, (1, _single(dilation, "dilation")), groups)
    return y.squeeze(0) if unbatched else y


def _mkldnn_transposed(x, weight, stride, output_padding, groups):
    """Whether torch 2.13 runs this float32 conv_transpose2d on oneDNN (its
    ConvParams::use_mkldnn, assuming more than one intra-op thread)."""
    if any(op >= s for op, s in zip(pair(output_padding, "output_padding"), pair(stride, "stride"))):
        return False
    n, c, h, w = _planar(x.shape)
    kh, kw = _planar(weight.shape)[-2:]
    return groups > 1 or (kh > 3 and kw > 3) or n > 1 or n * c * h * w > 20480


def _add_bias_as_torch(y, bias, x, weight, stride, output_padding, groups):
    """torch's slow conv_transpose2d adds a bias of another dtype in place
    (output.add_(bias)): computed in the promoted dtype, stored in the output's;
    its oneDNN path (float32) refuses one."""
    _tensor(bias, "bias", "conv_transpose2d")
    if x._data.dtype == np.float32 and _mkldnn_transposed(x, weight, stride, output_padding, groups):
        raise RuntimeError("Input type (torch.FloatTensor) and bias type (%s) should be the same or input should "
                           "be a MKLDNN tensor and bias is a dense tensor" % _LEGACY_TYPES.get(_dtype_name(bias)))
    common = result_type(y, bias)
    if common.kind == "f" and y._data.dtype.kind != "f":
        raise RuntimeError("result type %s can't be cast to the desired output type %s"
                           % (_torch_name(common), _torch_name(y._data.dtype)))
    per_channel = (-1,) + (1,) * (y.dim() - 2)
    return (y.to(_dtype_of(common)) + bias.to(_dtype_of(common)).view(per_channel)).to(y.dtype)


def _dtype_of(numpy_dtype):
    return _dtype.as_dtype(np.dtype(numpy_dtype))


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch's conv_transpose2d: weight (C_in, C_out/groups, kH, kW).  A bias of
    another dtype is added as torch's slow path adds it; int64 operands compute in int64."""
    x, unbatched = _batched(input, "conv_transpose2d", 4, "(N, C_in, H, W)")
    y = conv_transpose_any(x, weight, bias, stride, padding, output_padding, groups, dilation)
    return y.squeeze(0) if unbatched else y


def conv_transpose_any(x, weight, bias, stride, padding, output_padding, groups, dilation):
    """conv_transpose1d/2d of batched operands (3-D or 4-D, with 2-D arguments)."""
    _tensor(weight, "weight", "conv_transpose2d")
    if x._data.dtype == np.bool_:
        raise NotImplementedError("\"slow_conv_transpose2d_out_cpu\" not implemented for 'Bool'")
    _check_weight_dtype(x, weight)
    same_bias = bias is None or (_tensor(bias, "bias", "conv_transpose2d")._data.dtype == x._data.dtype)
    y = _transposed_convolution(x, weight, bias if same_bias else None, stride, padding, output_padding, groups,
                               dilation)
    if not same_bias:
        y = _add_bias_as_torch(y, bias, x, weight, stride, output_padding, groups)
    return y


def _transposed_convolution(x, weight, bias, stride, padding, output_padding, groups, dilation):
    """conv_transpose1d/2d of batched operands (3-D or 4-D, with 2-D
    arguments) and a bias of their dtype: the C kernels for floats, numpy
    for integers (no autograd)."""
    x_shape, w_shape = _planar(x.shape), _planar(weight.shape)
    geometry, shape = _conv_transpose2d_geometry(x_shape, w_shape, None if bias is None else tuple(bias.shape),
                                                 stride, padding, output_padding, groups, dilation)
    own_shape = shape if x.dim() == 4 else shape[:2] + shape[3:]
    if _floating(x):
        y = convolution(x, weight, bias, ConvParams(geometry, True, x.shape, weight.shape, own_shape))
        return _channels_last_if_torch(y, x, weight)
    y = _wrap(_nn_integer.conv_transpose2d(x._data.reshape(x_shape), weight._data.reshape(w_shape), geometry,
                                           shape).reshape(own_shape))
    return y if bias is None else y + bias.view((-1,) + (1,) * (x.dim() - 2))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch's max_pool2d; with return_indices, (values, int64 indices)."""
    x, unbatched = _batched(input, "max_pool2d", 4, "(N, C, H, W)")
    if _floating(x):
        values, indices = _pooling.max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)
    else:
        window, shape = _pool2d_window(tuple(x.shape), kernel_size, stride, padding, dilation, ceil_mode,
                                       "max_pool2d")
        values, indices = (_wrap(a) for a in _nn_integer.max_pool2d(x._data, window, shape))
    if unbatched:       # torch's kernels take a 3-D input as it is: no view
        values, indices = views.forget_base(values.squeeze(0)), views.forget_base(indices.squeeze(0))
    else:
        values, indices = like_input_format(values, x), like_input_format(indices, x)
    return (values, indices) if return_indices else values


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    x, unbatched = _batched(input, "avg_pool2d", 4, "(N, C, H, W)")
    if _floating(x):
        y = _pooling.avg_pool2d(x, _pooling.AvgParams(kernel_size, stride, padding, ceil_mode, count_include_pad,
                                                      divisor_override))
    else:
        override = _divisor(divisor_override)
        window, shape = _pool2d_window(tuple(x.shape), kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
        y = _wrap(_nn_integer.avg_pool2d(x._data, window, shape, count_include_pad, override))
    return views.forget_base(y.squeeze(0)) if unbatched else like_input_format(y, x)


def adaptive_avg_pool2d(input, output_size):
    x, unbatched = _batched(input, "adaptive_avg_pool2d", 4, "(N, C, H, W)")
    if not _floating(x):
        raise NotImplementedError("\"adaptive_avg_pool2d\" not implemented for '%s'" % _torch_name(x._data.dtype))
    y = _pooling.adaptive_avg_pool2d(x, output_size)
    return views.forget_base(y.squeeze(0)) if unbatched else like_input_format(y, x)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-05):
    """torch's batch_norm over input (N, C, *): batch statistics when
    training (updating the running stats given), else the running stats."""
    _tensor(input, "input", "batch_norm")
    if input.dim() < 2:
        raise ValueError("batch_norm: input must be (N, C, *), got shape %s" % (list(input.shape),))
    if training and input.shape[0] * math.prod(input.shape[2:]) == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size %s"
                         % (input.shape,))
    if training and eps <= 0.0:
        raise ValueError("batch_norm eps must be positive during training, but got %s" % (eps,))
    if eps < 0.0:
        raise ValueError("batch_norm eps must be non-negative, but got %s" % (eps,))
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    return _batch_norm(input, weight, bias, running_mean, running_var, bool(training), momentum, eps)
