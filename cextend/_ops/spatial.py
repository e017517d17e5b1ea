"""Spatial ops of torch.nn.functional: pad (constant, reflect, replicate,
circular), pixel_shuffle / pixel_unshuffle, channel_shuffle, unfold / fold
(torch's im2col / col2im).

Each is a linear map of its input (cextend/_ops/_spatial_maps.py) computed
with numpy and recorded as torch's node: ConstantPadNdBackward0,
ReflectionPad2DBackward0 (its backward ReflectionPad2DBackwardBackward0 of
(grad_output, self)), ReplicationPad1DBackward0, ..., PixelShuffleBackward0
(whose backward is pixel_unshuffle, PixelUnshuffleBackward0),
ChannelShuffleBackward0, Im2ColBackward0 and Col2ImBackward0 (each the
other's backward).  Circular padding is torch's composition (_pad_circular:
slice copies into an empty result, CopySlices).  The argument checks are
torch 2.13's, with its exception types and messages.
"""
import numbers

import numpy as np

from cextend._ops import spatial_samples as S
from cextend._ops._nn_checks import functional_call, host_tensor, torch_name
from cextend._ops._spatial_maps import Map, apply, take, take_transpose
from cextend._ops.padding import _pad_circular
from cextend._ops.registry import register


def _is_int(value):
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def int_list(value, op, name, position):
    """torch's int[] argument: a sequence of ints (or one int)."""
    if _is_int(value):
        return [int(value)]
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            if not _is_int(v):
                raise TypeError("%s(): argument '%s' (position %d) must be tuple of ints, but found element of "
                                "type %s at pos %d" % (op, name, position, type(v).__name__, i))
        return [int(v) for v in value]
    raise TypeError("%s(): argument '%s' (position %d) must be tuple of ints, not %s"
                    % (op, name, position, type(value).__name__))


def shape_text(shape):
    return "[%s]" % ", ".join(str(int(d)) for d in shape)


def not_implemented_for(x, kernel):
    return NotImplementedError("\"%s\" not implemented for '%s'" % (kernel, torch_name(x._data.dtype)))


# -- constant padding (constant_pad_nd) -----------------------------------------------------------

def _fill_value(value, dtype):
    """value as torch's fill_ stores it in dtype (truncated toward zero for integers)."""
    if dtype == np.bool_:
        return bool(value)
    if dtype.kind in "iu":
        return int(value)
    return dtype.type(value)


class ConstantPad(Map):
    """constant_pad_nd: pads (left, right) pairs from the last dim backwards;
    a negative pad crops.  Its transpose is the constant pad by the negated
    pads (ConstantPadNdBackward0 both ways)."""

    node = "ConstantPadNdBackward0"
    keeps_format = True

    def __init__(self, pads, value, shape):
        self.pads, self.value, self.shape = tuple(pads), value, tuple(shape)

    def _slices(self, shape):
        """(out shape, the slices of the output written, the slices of the input read)."""
        ndim = len(shape)
        out_shape, out_sl, in_sl = list(shape), [slice(None)] * ndim, [slice(None)] * ndim
        for i in range(len(self.pads) // 2):
            dim = ndim - 1 - i
            left, right = self.pads[2 * i], self.pads[2 * i + 1]
            size = shape[dim]
            out_shape[dim] = size + left + right
            in_sl[dim] = slice(max(-left, 0), size - max(-right, 0))
            out_sl[dim] = slice(max(left, 0), out_shape[dim] - max(right, 0))
        return tuple(out_shape), tuple(out_sl), tuple(in_sl)

    def compute(self, array):
        out_shape, out_sl, in_sl = self._slices(array.shape)
        out = np.full(out_shape, _fill_value(self.value, array.dtype), array.dtype)
        out[out_sl] = array[in_sl]
        return out

    def adjoint(self):
        out_shape = self._slices(self.shape)[0]
        return ConstantPad([-p for p in self.pads], 0, out_shape)


def constant_pad_nd(x, pads, value=0):
    ndim = x.dim()
    if len(pads) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals %d" % len(pads))
    if len(pads) // 2 > ndim:
        raise RuntimeError("Length of pad should be no more than twice the number of dimensions of the input. "
                           "Pad length is %dwhile the input has %ddimensions." % (len(pads), ndim))
    for i in range(len(pads) // 2):     # torch narrows dim by dim first (a crop past the size fails there)
        size = x.shape[ndim - 1 - i]
        for pad in (pads[2 * i], pads[2 * i + 1]):
            if pad < 0:
                size += pad
                if size < 0:
                    raise RuntimeError("narrow(): length must be non-negative.")
    return apply(ConstantPad(pads, value, x.shape), x)


# -- reflect and replicate padding ----------------------------------------------------------------

def _source_index(size, before, after, mode):
    """The input position each padded position along one dim copies (torch's kernels:
    p = j - before, reflected about 0 and size - 1, or clamped into [0, size))."""
    p = np.arange(size + before + after) - before
    if mode == "reflect":
        return np.where(p < 0, -p, np.where(p < size, p, 2 * (size - 1) - p))
    return np.clip(p, 0, size - 1)


class IndexPad(Map):
    """Reflect or replicate padding of the last `dims` dims: a gather per dim."""

    saves_input = True
    keeps_format = True

    def __init__(self, mode, dims, pads, shape):
        self.mode, self.dims, self.pads, self.shape = mode, dims, tuple(pads), tuple(shape)
        self.node = "%sPad%dDBackward0" % ("Reflection" if mode == "reflect" else "Replication", dims)
        ndim = len(shape)
        self.maps = []
        for i in range(dims):
            axis = ndim - 1 - i
            index = _source_index(shape[axis], pads[2 * i], pads[2 * i + 1], mode)
            self.maps.append((axis, index[:, None], shape[axis]))

    def compute(self, array):
        for axis, index, _ in self.maps:
            array = take(array, index, axis)
        return np.ascontiguousarray(array)

    def adjoint(self):
        return IndexPadTranspose(self)


class IndexPadTranspose(Map):
    """reflection_pad2d_backward and kin: each padded position's gradient added
    back to the position it copies; a node of (grad_output, self)."""

    takes_self = True
    keeps_format = True

    def __init__(self, forward):
        self.forward = forward
        self.node = forward.node.replace("Backward0", "BackwardBackward0")

    def compute(self, grad):
        for axis, index, size in reversed(self.forward.maps):
            grad = take_transpose(grad, index, axis, size)
        return grad

    def adjoint(self):
        return self.forward


def _check_valid_input(x, dims):
    """torch's padding::check_valid_input: (dims+1)-D, or (dims+2)-D with
    possibly 0 batch size, the other dims non-empty."""
    shape, ndim = x.shape, x.dim()
    batched = ndim == dims + 2 and all(s != 0 for s in shape[1:])
    unbatched = ndim == dims + 1 and all(s != 0 for s in shape)
    if not (batched or unbatched):
        raise RuntimeError("Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other non-zero "
                           "dimensions for input, but got: %s" % (dims + 1, dims + 2, shape_text(shape)))


_ARGUMENT = {0: 4, 1: 6, 2: 8}          # torch numbers the pads of W, H, D as arguments 4, 6, 8
_SIZE_NAMES = ("W", "H", "D")


def _index_pad(x, pads, mode, dims):
    kernel = ("reflection_pad%dd" if mode == "reflect" else "replication_pad%dd") % dims
    _check_valid_input(x, dims)
    shape, ndim = x.shape, x.dim()
    outputs = []
    for i in range(dims):
        dim = ndim - 1 - i
        before, after = pads[2 * i], pads[2 * i + 1]
        if mode == "reflect" and not (before < shape[dim] and after < shape[dim]):
            raise RuntimeError("Argument #%d: Padding size should be less than the corresponding input dimension, "
                               "but got: padding (%d, %d) at dimension %d of input %s"
                               % (_ARGUMENT[i], before, after, dim, shape_text(shape)))
        outputs.append(shape[dim] + before + after)
    if all(o < 1 for o in outputs):
        names = _SIZE_NAMES[:dims][::-1]
        raise RuntimeError("input (%s) is too small. Calculated output %s"
                           % (", ".join("%s: %d" % (n, shape[ndim - dims + k]) for k, n in enumerate(names)),
                              " ".join("%s: %d" % (n, outputs[dims - 1 - k]) for k, n in enumerate(names))))
    out_shape = tuple(shape[:ndim - dims]) + tuple(outputs[::-1])
    negative = [s for s in out_shape if s < 0]
    if negative:
        raise RuntimeError("Trying to create tensor with negative dimension %d: %s"
                           % (negative[0], shape_text(out_shape)))
    if x._data.dtype == np.bool_:
        raise not_implemented_for(x, kernel)
    return apply(IndexPad(mode, dims, pads, shape), x)


def _circular(x, pads):
    """torch's _pad_circular checks, then its composition of slice copies."""
    shape, ndim = x.shape, x.dim()
    padded = len(pads) // 2
    for i in reversed(range(padded)):      # torch checks the dims in order, the first padded one first
        dim = ndim - 1 - i
        before, after = pads[2 * i], pads[2 * i + 1]
        if before > shape[dim] or after > shape[dim]:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if shape[dim] + before + after < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        kept = shape[dim] + min(before, 0) + min(after, 0)
        if kept < 0:
            raise RuntimeError("The size of tensor a (0) must match the size of tensor b (%d) at non-singleton "
                               "dimension %d" % (shape[dim] + min(before, 0), dim))
    return _pad_circular(x, pads)


_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: pad = (left, right, top, bottom, front, back) from the last dim
    backwards; mode constant (any number of dims, negative pads crop) or reflect, replicate,
    circular (the last 1, 2 or 3 dims of a batched or unbatched input)."""
    x = host_tensor(input, "pad")
    pads = int_list(pad, "pad", "pad", 2)
    if mode not in _MODES:
        raise NotImplementedError("Unrecognised padding mode %s" % (mode,))
    ndim = x.dim()
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) > 2 * ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           "padding length %d and input of dimension %d" % (len(pads), ndim))
    if mode == "constant":
        return constant_pad_nd(x, pads, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError("Padding mode \"%s\" doesn't take in value argument" % mode)
    dims = len(pads) // 2
    if dims not in (1, 2, 3) or ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(
            "Padding size %d is not supported for %dD input tensor.\nSupported combinations for non-constant "
            "padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: padding size "
            "= 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
            % (len(pads), ndim))
    if mode == "circular":
        return _circular(x, pads)
    return _index_pad(x, pads, mode, dims)


# -- pixel_shuffle, pixel_unshuffle, channel_shuffle ---------------------------------------------------

class PixelShuffle(Map):
    """(*, C r^2, H, W) -> (*, C, H r, W r); unshuffle=True is the inverse (and transpose)."""

    keeps_format = True

    def __init__(self, factor, unshuffle=False):
        self.factor, self.unshuffle = factor, unshuffle
        self.node = "PixelUnshuffleBackward0" if unshuffle else "PixelShuffleBackward0"

    def compute(self, a):
        r, lead = self.factor, a.shape[:-3]
        c, h, w = a.shape[-3:]
        k = len(lead)
        if self.unshuffle:          # (*, C, H r, W r) -> (*, C, r, r, H, W)
            view = a.reshape(lead + (c, h // r, r, w // r, r))
            out = view.transpose(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
            return out.copy(order="C").reshape(lead + (c * r * r, h // r, w // r))
        view = a.reshape(lead + (c // (r * r), r, r, h, w))
        out = view.transpose(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
        return out.copy(order="C").reshape(lead + (c // (r * r), h * r, w * r))

    def adjoint(self):
        return PixelShuffle(self.factor, not self.unshuffle)


def pixel_shuffle(input, upscale_factor):
    x = host_tensor(input, "pixel_shuffle")
    r = int_list(upscale_factor, "pixel_shuffle", "upscale_factor", 2)[0]
    if x.dim() < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 dimensions, but got input with %d "
                           "dimension(s)" % x.dim())
    if r <= 0:
        raise RuntimeError("pixel_shuffle expects a positive upscale_factor, but got %d" % r)
    c = x.shape[-3]
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           "upscale_factor, but input.size(-3)=%d is not divisible by %d" % (c, r * r))
    return apply(PixelShuffle(r), x)


def pixel_unshuffle(input, downscale_factor):
    x = host_tensor(input, "pixel_unshuffle")
    r = int_list(downscale_factor, "pixel_unshuffle", "downscale_factor", 2)[0]
    if x.dim() < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least 3 dimensions, but got input with %d "
                           "dimension(s)" % x.dim())
    if r <= 0:
        raise RuntimeError("pixel_unshuffle expects a positive downscale_factor, but got %d" % r)
    for dim, name in ((-2, "height"), (-1, "width")):
        if x.shape[dim] % r:
            raise RuntimeError("pixel_unshuffle expects %s to be divisible by downscale_factor, but input.size(%d)=%d "
                               "is not divisible by %d" % (name, dim, x.shape[dim], r))
    return apply(PixelShuffle(r, unshuffle=True), x)


class ChannelShuffle(Map):
    """(N, g k, *) viewed (N, g, k, *), transposed to (N, k, g, *); its transpose shuffles in k groups."""

    node = "ChannelShuffleBackward0"
    keeps_format = True

    def __init__(self, groups, channels):
        self.groups, self.channels = groups, channels

    def compute(self, a):
        n, c = a.shape[:2]
        g = self.groups
        view = a.reshape((n, g, c // g) + a.shape[2:]).swapaxes(1, 2)
        return view.copy(order="C").reshape(a.shape)         # a new tensor, never a view

    def adjoint(self):
        return ChannelShuffle(self.channels // self.groups, self.channels)


def channel_shuffle(input, groups):
    x = host_tensor(input, "channel_shuffle")
    g = int_list(groups, "channel_shuffle", "groups", 2)[0]
    if x.dim() <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with sizes %s"
                           % shape_text(x.shape))
    if g <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of groups:%d" % g)
    c = x.shape[1]
    if c % g:
        raise RuntimeError("Number of channels must be divisible by groups. Got %d channels and %d groups." % (c, g))
    return apply(ChannelShuffle(g, c), x)


# -- unfold (im2col) and fold (col2im) -----------------------------------------------------------------

def _pair(value, op, name, position):
    values = int_list(value, op, name, position)
    return values * 2 if len(values) == 1 and _is_int(value) else values


def _blocks(size, pad, dilation, kernel, stride):
    """torch's sliding_window_count (floor division)."""
    return (size + 2 * pad - (dilation * (kernel - 1) + 1)) // stride + 1


class Im2Col(Map):
    """(N, C, H, W) -> (N, C kh kw, L): every kernel position's block, the
    channels outermost, then the kernel row, then its column."""

    def __init__(self, image, kernel, dilation, padding, stride, transpose=False):
        self.image = tuple(image)       # (H, W) of the image side
        self.kernel, self.dilation, self.padding, self.stride = kernel, dilation, padding, stride
        self.transpose = transpose
        self.node = "Col2ImBackward0" if transpose else "Im2ColBackward0"
        self.blocks = tuple(_blocks(s, p, d, k, st) for s, p, d, k, st in zip(image, padding, dilation, kernel, stride))

    def _windows(self):
        (kh, kw), (dh, dw), (sh, sw), (oh, ow) = self.kernel, self.dilation, self.stride, self.blocks
        for i in range(kh):
            for j in range(kw):
                yield (slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))

    def compute(self, a):
        unbatched = a.ndim == (2 if self.transpose else 3)
        if unbatched:
            a = a[None]
        out = self._col2im(a) if self.transpose else self._im2col(a)
        return out[0] if unbatched else out

    def _im2col(self, a):
        (ph, pw), (kh, kw), (oh, ow) = self.padding, self.kernel, self.blocks
        n, c, h, w = a.shape
        padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw), a.dtype)
        padded[:, :, ph:ph + h, pw:pw + w] = a
        cols = np.empty((n, c, kh * kw, oh, ow), a.dtype)
        for k, (rows, columns) in enumerate(self._windows()):
            cols[:, :, k] = padded[:, :, rows, columns]
        return cols.reshape(n, c * kh * kw, oh * ow)

    def _col2im(self, a):
        (ph, pw), (kh, kw), (oh, ow) = self.padding, self.kernel, self.blocks
        h, w = self.image
        n = a.shape[0]
        c = a.shape[1] // (kh * kw)
        cols = a.reshape(n, c, kh * kw, oh, ow)
        padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw), a.dtype)
        for k, (rows, columns) in enumerate(self._windows()):
            padded[:, :, rows, columns] += cols[:, :, k]
        return np.ascontiguousarray(padded[:, :, ph:ph + h, pw:pw + w])

    def adjoint(self):
        return Im2Col(self.image, self.kernel, self.dilation, self.padding, self.stride, not self.transpose)


def _window_args(op, kernel_size, dilation, padding, stride):
    names = (("kernel_size", kernel_size), ("dilation", dilation), ("padding", padding), ("stride", stride))
    values = []
    for position, (name, value) in enumerate(names, 2):
        v = _pair(value, op, name, position)
        if len(v) != 2:
            raise RuntimeError("It is expected %s equals to 2, but got size %d" % (name, len(v)))
        values.append(v)
    kh, kw = values[0]
    if kh <= 0 or kw <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kernel_height: %d kernel_width: %d"
                           % (kh, kw))
    return values


def _common_window_checks(values, stride_first):
    (dh, dw), (ph, pw), (sh, sw) = values[1:]
    checks = [(sh > 0 and sw > 0, "stride should be greater than zero, but got stride_height: %d stride_width: %d"
               % (sh, sw)),
              (dh > 0 and dw > 0, "dilation should be greater than zero, but got dilation_height: %d "
               "dilation_width: %d" % (dh, dw)),
              (ph >= 0 and pw >= 0, "padding should be non-negative, but got pad_height: %d pad_width: %d" % (ph, pw))]
    if not stride_first:
        checks = checks[1:] + checks[:1]
    for ok, message in checks:
        if not ok:
            raise RuntimeError(message)


def _size(shape, dim):
    """input.size(dim) as torch checks it (IndexError past the dims)."""
    ndim = len(shape)
    if ndim == 0:
        raise IndexError("Dimension specified as %d but tensor has no dimensions" % dim)
    if not -ndim <= dim < ndim:
        raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-ndim, ndim - 1, dim))
    return shape[dim]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): (N, C, H, W) or (C, H, W) -> (N, C kh kw, L)."""
    x = host_tensor(input, "im2col")
    values = _window_args("im2col", kernel_size, dilation, padding, stride)
    _common_window_checks(values, stride_first=False)
    shape, ndim = x.shape, x.dim()
    valid = _size(shape, 1) != 0 and _size(shape, 2) != 0
    if not ((ndim == 3 and shape[0] and valid) or (ndim == 4 and valid and shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           "dimensions for input, but got: %s" % shape_text(shape))
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = values
    h, w = shape[-2:]
    oh, ow = _blocks(h, ph, dh, kh, sh), _blocks(w, pw, dw, kw, sw)
    if oh < 1 or ow < 1:
        raise RuntimeError("Given input with spatial size (%d, %d), kernel_size=(%d, %d), dilation=(%d, %d), "
                           "padding=(%d, %d), calculated shape of the array of sliding blocks as (%d, %d), but its "
                           "components must be at least one." % (h, w, kh, kw, dh, dw, ph, pw, oh, ow))
    if x._data.dtype.kind != "f" and x._data.dtype != np.bool_:
        raise not_implemented_for(x, "im2col_out_cpu")
    return apply(Im2Col((h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw)), x)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im): (N, C kh kw, L) or (C kh kw, L) -> (N, C, H, W),
    overlapping blocks summed."""
    x = host_tensor(input, "col2im")
    out = _pair(output_size, "col2im", "output_size", 2)
    if len(out) != 2:
        raise RuntimeError("It is expected output_size equals to 2, but got size %d" % len(out))
    values = _window_args("col2im", kernel_size, dilation, padding, stride)
    _common_window_checks(values, stride_first=True)
    shape, ndim = x.shape, x.dim()
    if not ((ndim == 2 and shape[0] != 0 and shape[1] != 0) or (ndim == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           "dimensions for input, but got: %s" % shape_text(shape))
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = values
    planes, length = shape[-2:]
    if planes % (kh * kw):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           "got input.size(1)=%d and kernel_size=(%d, %d)." % (planes, kh, kw))
    oh, ow = _blocks(out[0], ph, dh, kh, sh), _blocks(out[1], pw, dw, kw, sw)
    described = ("Given output_size=(%d, %d), kernel_size=(%d, %d), dilation=(%d, %d), padding=(%d, %d), "
                 "stride=(%d, %d), " % (out[0], out[1], kh, kw, dh, dw, ph, pw, sh, sw))
    if length != oh * ow:
        raise RuntimeError(described + "expected size of input's dimension 2 to match the calculated number of "
                           "sliding blocks %d * %d = %d, but got input.size(2)=%d." % (oh, ow, oh * ow, length))
    if oh < 1 or ow < 1:
        raise RuntimeError(described + "calculated shape of the array of sliding blocks as (%d, %d), which is too "
                           "small (non-positive)" % (oh, ow))
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError("Expected output spatial size to be positive, but got: output_size=(%d, %d)."
                           % tuple(out))
    if x._data.dtype.kind != "f" and x._data.dtype != np.bool_:      # bool blocks add as logical or
        raise not_implemented_for(x, "col2im_out_cpu")
    return apply(Im2Col(tuple(out), (kh, kw), (dh, dw), (ph, pw), (sh, sw), transpose=True), x)


# -- the table entries (torch.nn.functional only) ---------------------------------------------------------

def _nn_only(name, function, samples, **info):
    register(name, function, method=False, module=False, family="nn", samples=samples,
             call=functional_call(name), **info)


_nn_only("pad", pad, S.pad_samples)
_nn_only("pixel_shuffle", pixel_shuffle, S.pixel_shuffle_samples)
_nn_only("pixel_unshuffle", pixel_unshuffle, S.pixel_unshuffle_samples)
_nn_only("channel_shuffle", channel_shuffle, S.channel_shuffle_samples)
_nn_only("unfold", unfold, S.unfold_samples)
_nn_only("fold", fold, S.fold_samples)
