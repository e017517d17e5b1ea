"""The spatial layers of torch.nn: padding (ConstantPad1d/2d/3d, ZeroPad*,
ReflectionPad*, ReplicationPad*, CircularPad*), upsampling (Upsample,
UpsamplingNearest2d, UpsamplingBilinear2d), Unfold and Fold, PixelShuffle,
PixelUnshuffle and ChannelShuffle: each calls its torch.nn.functional op
(cextend/_ops/spatial.py, cextend/_ops/spatial_resample.py) with the
arguments it was built with, as torch's modules do."""
import collections.abc
import itertools

from cextend._ops import spatial as _spatial
from cextend._ops import spatial_resample as _resample
from cextend.nn.module import Module


def _ntuple(n):
    """torch.nn.modules.utils._ntuple: an iterable as a tuple, anything else repeated n times."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    return parse


_pair, _quadruple, _sextuple = _ntuple(2), _ntuple(4), _ntuple(6)


# -- padding ----------------------------------------------------------------------------------------

class _ConstantPadNd(Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, input):
        return _spatial.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return "padding=%s, value=%s" % (self.padding, self.value)


class ConstantPad1d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _pair(padding)


class ConstantPad2d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _quadruple(padding)


class ConstantPad3d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _sextuple(padding)


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return "%s" % (self.padding,)


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return "%s" % (self.padding,)


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return "%s" % (self.padding,)


class _ModePadNd(Module):
    mode = None

    def forward(self, input):
        return _spatial.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return "%s" % (self.padding,)


class ReflectionPad1d(_ModePadNd):
    mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)


class ReflectionPad2d(_ModePadNd):
    mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)


class ReflectionPad3d(_ModePadNd):
    mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _sextuple(padding)


class ReplicationPad1d(_ModePadNd):
    mode = "replicate"

    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)


class ReplicationPad2d(_ModePadNd):
    mode = "replicate"

    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)


class ReplicationPad3d(_ModePadNd):
    mode = "replicate"

    def __init__(self, padding):
        super().__init__()
        self.padding = _sextuple(padding)


class _CircularPadNd(_ModePadNd):
    mode = "circular"
    dims = None

    def forward(self, input):
        if input.dim() not in (self.dims + 1, self.dims + 2):
            raise ValueError("expected %dD or %dD input (got %dD input)" % (self.dims + 1, self.dims + 2, input.dim()))
        return _spatial.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)


class CircularPad2d(_CircularPadNd):
    dims = 2

    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)


class CircularPad3d(_CircularPadNd):
    dims = 3

    def __init__(self, padding):
        super().__init__()
        self.padding = _sextuple(padding)


# -- upsampling -------------------------------------------------------------------------------------

class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return _resample.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                                     recompute_scale_factor=self.recompute_scale_factor)

    def __setstate__(self, state):
        if "recompute_scale_factor" not in state:
            state["recompute_scale_factor"] = True
        super().__setstate__(state)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


# -- unfold, fold, shuffles ---------------------------------------------------------------------------

class Fold(Module):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return _spatial.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return _spatial.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return "kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride}".format(
            **self.__dict__)


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return _spatial.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return "upscale_factor=%s" % (self.upscale_factor,)


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return _spatial.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return "downscale_factor=%s" % (self.downscale_factor,)


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return _spatial.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return "groups=%s" % (self.groups,)


__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "Upsample", "UpsamplingNearest2d",
           "UpsamplingBilinear2d", "Fold", "Unfold", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]
