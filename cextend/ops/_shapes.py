"""Shape arithmetic and argument checks of the CNN kernels, as torch does them.

One place for torch's rules (output sizes, ceil_mode, padding='same',
output_padding, the checks and their messages), shared by cextend.ops
(numpy arrays) and cextend.nn.functional (Tensors).  Every error names the
argument and says what was expected; values torch rejects are rejected.
"""
import numbers

from cextend import _sizes
from cextend.ops._checks import ArgumentError

_INT_TYPES = (numbers.Integral,)


def _plain(value):
    """Whether value is an int, a bool, a str, None or a tuple of ints: an argument that its
    value and type name (1, True and 1.0 are equal, yet only 1 is a valid size)."""
    kind = type(value)
    if kind is int or kind is bool or kind is str or value is None:
        return True
    return kind is tuple and all(type(v) is int for v in value)


def _remembered(compute):
    """compute(*args), kept for arguments seen before: a training step asks the same shapes'
    checks and sizes at every call (a few microseconds each).  Only answers are kept (a
    call that raises raises again), only for plain positional arguments, and at most 1024."""
    answers = {}

    def remembered(*args, **kwargs):
        if kwargs or not all(_plain(a) for a in args):
            return compute(*args, **kwargs)
        key = args + tuple(type(a) for a in args)
        answer = answers.get(key)
        if answer is None:
            answer = compute(*args)
            if len(answers) < 1024:
                answers[key] = answer
        return answer
    remembered.__doc__ = compute.__doc__
    remembered.__name__ = compute.__name__
    return remembered


def _int(value, name):
    if type(value) is int and _sizes.INT64_MIN <= value <= _sizes.INT64_MAX:
        return value        # the common case, without numbers.Integral's abc check (each conv call has ~16)
    if isinstance(value, bool) or not isinstance(value, _INT_TYPES):
        raise TypeError("%s must be an int or a tuple of ints, got %s" % (name, type(value).__name__))
    return _sizes.int64(int(value), name)       # torch: ValueError outside int64


def pair(value, name, allow_single=True):
    """(a, b) from an int or a sequence of 1 (repeated) or 2 ints."""
    if isinstance(value, (tuple, list)):
        if len(value) == 2:
            return _int(value[0], name), _int(value[1], name)
        if len(value) == 1 and allow_single:
            v = _int(value[0], name)
            return v, v
        raise ArgumentError("%s must be an int or a tuple of 2 ints, got %r" % (name, tuple(value)))
    v = _int(value, name)
    return v, v


def single(value, name):
    """An int from an int or a 1-sequence (the 1-D forms)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ArgumentError("%s must be an int or a tuple of 1 int, got %r" % (name, tuple(value)))
        return _int(value[0], name)
    return _int(value, name)


def _output(shape, op):
    """An output shape checked before it is allocated: more elements than
    memory can address is an ArgumentError naming the op and the shape."""
    _sizes.check_count(shape, "output size", op)
    return shape


def _fmt(shape):
    return "[%s]" % ", ".join(str(d) for d in shape)


# -- convolution -----------------------------------------------------------------

class ConvGeometry:
    """The sizes of one 2-D convolution: stride, padding (before), dilation
    and groups, and its input and output spatial sizes."""

    __slots__ = ("stride", "padding", "dilation", "groups", "in_size", "out_size")

    def __init__(self, stride, padding, dilation, groups, in_size, out_size):
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.in_size, self.out_size = in_size, out_size

    def kernel_args(self):
        return self.stride, self.padding, self.dilation, self.groups


def _conv_params(stride, padding, dilation, groups):
    stride = pair(stride, "stride")
    dilation = pair(dilation, "dilation")
    if isinstance(groups, bool) or not isinstance(groups, _INT_TYPES):
        raise TypeError("groups must be an int, got %s" % type(groups).__name__)
    groups = _sizes.int64(int(groups), "groups")
    if groups <= 0:
        raise ArgumentError("non-positive groups is not supported, got groups=%d" % groups)
    if min(stride) <= 0:
        raise ArgumentError("non-positive stride is not supported, got stride=%s" % (stride,))
    if min(dilation) <= 0:
        raise ArgumentError("dilation should be greater than zero, got dilation=%s" % (dilation,))
    return stride, dilation, groups


def _four_d(x_shape, w_shape, weight_layout):
    if len(x_shape) != 4:
        raise ArgumentError("x must be 4-D (N, C_in, H, W), got shape %s" % (tuple(x_shape),))
    if len(w_shape) != 4:
        raise ArgumentError("weight must be 4-D %s, got shape %s" % (weight_layout, tuple(w_shape)))


def check_conv_bias(w_shape, b_shape):
    """A conv2d bias (or None) must hold one value per output channel."""
    if b_shape is not None and tuple(b_shape) != (w_shape[0],):
        raise ArgumentError("Given weight of size %s, expected bias to be 1-dimensional with %d elements, but "
                            "got bias of size %s instead" % (_fmt(w_shape), w_shape[0], _fmt(b_shape)))


@_remembered
def conv2d_geometry(x_shape, w_shape, b_shape, stride=1, padding=0, dilation=1, groups=1):
    """Check a conv2d's operand shapes and parameters; returns (geometry,
    output shape).  padding is an int, a pair, 'valid' or 'same'."""
    stride, dilation, groups = _conv_params(stride, padding, dilation, groups)
    _four_d(x_shape, w_shape, "(C_out, C_in/groups, kH, kW)")
    n, c_in, h, w = x_shape
    c_out, cig, kh, kw = w_shape
    if c_out < groups or c_out % groups:
        raise ArgumentError("Given groups=%d, expected weight to be at least %d and divisible by %d at "
                         "dimension 0, but got weight of size %s instead" % (groups, groups, groups, _fmt(w_shape)))
    if cig * groups != c_in:
        raise ArgumentError("Given groups=%d, weight of size %s, expected input%s to have %d channels, but got "
                         "%d channels instead" % (groups, _fmt(w_shape), _fmt(x_shape), cig * groups, c_in))
    if kh <= 0 or kw <= 0:
        raise ArgumentError("kernel size should be greater than zero, but got kernel_height: %d kernel_width: %d"
                         % (kh, kw))
    check_conv_bias(w_shape, b_shape)
    span = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
    if isinstance(padding, str):
        if padding == "valid":
            pad, out = (0, 0), None
        elif padding == "same":
            if stride != (1, 1):
                raise ArgumentError("padding='same' is not supported for strided convolutions")
            # torch pads total = span - 1, the extra one (even spans) after.
            pad, out = ((span[0] - 1) // 2, (span[1] - 1) // 2), (h, w)
        else:
            raise ArgumentError("Invalid padding string %r, should be one of {'valid', 'same'}" % padding)
    else:
        pad, out = pair(padding, "padding"), None
        if min(pad) < 0:
            raise ArgumentError("negative padding is not supported, got padding=%s" % (pad,))
    if out is None:
        padded = (h + 2 * pad[0], w + 2 * pad[1])
        if padded[0] < span[0] or padded[1] < span[1]:
            raise ArgumentError("Calculated padded input size per channel: (%d x %d). Kernel size: (%d x %d). "
                             "Kernel size can't be greater than actual input size"
                             % (padded[0], padded[1], span[0], span[1]))
        out = ((padded[0] - span[0]) // stride[0] + 1, (padded[1] - span[1]) // stride[1] + 1)
    geometry = ConvGeometry(stride, pad, dilation, groups, (h, w), out)
    return geometry, _output((n, c_out) + tuple(out), "conv2d")


def conv_transpose2d_geometry(x_shape, w_shape, b_shape, stride=1, padding=0, output_padding=0, groups=1,
                              dilation=1):
    """conv_transpose2d's checks; returns (geometry of the conv2d whose input
    gradient it is, output shape).  weight is (C_in, C_out/groups, kH, kW)."""
    stride, dilation, groups = _conv_params(stride, padding, dilation, groups)
    padding = pair(padding, "padding")
    output_padding = pair(output_padding, "output_padding")
    if min(padding) < 0:
        raise ArgumentError("negative padding is not supported, got padding=%s" % (padding,))
    if min(output_padding) < 0:
        raise ArgumentError("negative output_padding is not supported, got output_padding=%s" % (output_padding,))
    _four_d(x_shape, w_shape, "(C_in, C_out/groups, kH, kW)")
    n, c_in, h, w = x_shape
    w_in, cog, kh, kw = w_shape
    if w_in != c_in:
        raise ArgumentError("Given transposed=1, weight of size %s, expected input%s to have %d channels, but "
                         "got %d channels instead" % (_fmt(w_shape), _fmt(x_shape), w_in, c_in))
    if c_in % groups:
        raise ArgumentError("Given groups=%d, expected weight to be divisible by %d at dimension 0, but got "
                         "weight of size %s instead" % (groups, groups, _fmt(w_shape)))
    if kh <= 0 or kw <= 0:
        raise ArgumentError("kernel size should be greater than zero, but got kernel_height: %d kernel_width: %d"
                         % (kh, kw))
    for i in range(2):
        if output_padding[i] >= stride[i] and output_padding[i] >= dilation[i]:
            raise ArgumentError("output padding must be smaller than either stride or dilation, but got "
                             "output_padding_height: %d output_padding_width: %d stride_height: %d "
                             "stride_width: %d dilation_height: %d dilation_width: %d"
                             % (output_padding + stride + dilation))
    c_out = cog * groups
    if b_shape is not None and tuple(b_shape) != (c_out,):
        raise ArgumentError("Given transposed=1, weight of size %s, expected bias to be 1-dimensional with %d "
                         "elements, but got bias of size %s instead" % (_fmt(w_shape), c_out, _fmt(b_shape)))
    out = tuple((size - 1) * s - 2 * p + d * (k - 1) + op + 1
                for size, s, p, d, k, op in zip((h, w), stride, padding, dilation, (kh, kw), output_padding))
    if min(out) <= 0:
        raise ArgumentError("Given input size per channel: (%d x %d). Calculated output size per channel: "
                         "(%d x %d). Output size is too small" % ((h, w) + out))
    # The conv2d whose input gradient this is maps out -> (h, w).
    geometry = ConvGeometry(stride, padding, dilation, groups, out, (h, w))
    return geometry, _output((n, c_out) + out, "conv_transpose2d")


# -- pooling -------------------------------------------------------------------------

def pool_output_size(size, kernel, stride, pad, dilation, ceil_mode):
    """torch's pooling_output_shape: floor or ceil, and with ceil_mode the
    last window must start inside the image or its left padding."""
    numerator = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = numerator // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _pool_input(x_shape, op):
    if len(x_shape) != 4 or any(d == 0 for d in x_shape[1:]):
        raise ArgumentError("%s: expected a 4-D (N, C, H, W) input with non-zero C, H and W (N may be 0), "
                         "got shape %s" % (op, tuple(x_shape)))


@_remembered
def pool2d_window(x_shape, kernel_size, stride, padding, dilation, ceil_mode, op):
    """torch's pool2d_shape_check; returns (kernel, stride, padding, dilation) pairs and the output shape."""
    kernel = pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) \
        else pair(stride, "stride")
    padding = pair(padding, "padding")
    dilation = pair(dilation, "dilation")
    if min(kernel) <= 0:
        raise ArgumentError("kernel size should be greater than zero, but got kH: %d kW: %d" % kernel)
    if min(stride) <= 0:
        raise ArgumentError("stride should be greater than zero, but got dH: %d dW: %d" % stride)
    if min(dilation) <= 0:
        raise ArgumentError("dilation should be greater than zero, but got dilationH: %d dilationW: %d" % dilation)
    if min(padding) < 0:
        raise ArgumentError("pad must be non-negative, but got pad: %s" % (padding,))
    for p, k, d in zip(padding, kernel, dilation):
        if p > k // 2:
            raise ArgumentError("pad should be at most half of effective kernel size, but got pad=%d, "
                             "kernel_size=%d and dilation=%d" % (p, k, d))
    _pool_input(x_shape, op)
    n, c, h, w = x_shape
    out = tuple(pool_output_size(size, k, s, p, d, ceil_mode)
                for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))
    if min(out) < 1:
        raise ArgumentError("Given input size: (%dx%dx%d). Calculated output size: (%dx%dx%d). Output size is "
                         "too small" % (c, h, w, c, out[0], out[1]))
    return (kernel, stride, padding, dilation), _output((n, c) + out, op)


def divisor(divisor_override):
    """0 for None, else the non-zero int torch requires."""
    if divisor_override is None:
        return 0
    if isinstance(divisor_override, bool) or not isinstance(divisor_override, _INT_TYPES):
        raise TypeError("divisor_override must be an int or None, got %s" % type(divisor_override).__name__)
    if divisor_override == 0:
        raise ArgumentError("divisor must be not zero")
    if divisor_override < 0:
        raise ArgumentError("divisor_override must be positive, got %d" % divisor_override)
    return _sizes.int64(int(divisor_override), "divisor_override")


def adaptive_output_shape(x_shape, output_size):
    """(N, C, oh, ow) for adaptive pooling; None in output_size keeps that input size."""
    if len(x_shape) != 4 or any(d == 0 for d in x_shape[1:]):
        raise ArgumentError("adaptive_avg_pool2d(): Expected 4-D (N, C, H, W) input with non-zero size for "
                         "non-batch dimensions, but input has sizes %s" % (_fmt(x_shape),))
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 2:
            raise ArgumentError("output_size must be an int or a pair, got %r" % (tuple(output_size),))
        sizes = tuple(x_shape[2 + i] if s is None else _int(s, "output_size") for i, s in enumerate(output_size))
    elif output_size is None:
        sizes = tuple(x_shape[2:])
    else:
        size = _int(output_size, "output_size")
        sizes = (size, size)
    if min(sizes) < 0:
        raise ArgumentError("adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                         "received %s" % (sizes,))
    return _output(tuple(x_shape[:2]) + sizes, "adaptive_avg_pool2d")
