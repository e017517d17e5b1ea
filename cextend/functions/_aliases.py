"""Names earlier releases exported as autograd Functions, kept importable.

Convolution, pooling and batch norm are built-in ops now (cextend._ops:
convolution, pooling, normalization), recorded as torch's nodes like every
other op.  These aliases keep `Conv2dFunction.apply(...)` and its kin
working with their old argument lists; new code calls
cextend.nn.functional instead.
"""
from cextend.nn import functional as F


class _Alias:
    """A former Function: only .apply remains, which calls the functional op."""

    def __init__(self):
        raise TypeError("%s is an alias of cextend.nn.functional.%s now; call %s.apply(...) or the functional"
                        % (type(self).__name__, self.functional, type(self).__name__))


class Conv2dFunction(_Alias):
    functional = "conv2d"

    @staticmethod
    def apply(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


class ConvTranspose2dFunction(_Alias):
    functional = "conv_transpose2d"

    @staticmethod
    def apply(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


class MaxPool2dFunction(_Alias):
    """apply(...) -> (values, int64 indices), as the Function returned."""
    functional = "max_pool2d"

    @staticmethod
    def apply(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        return F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


class AvgPool2dFunction(_Alias):
    functional = "avg_pool2d"

    @staticmethod
    def apply(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
        return F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


class AdaptiveAvgPool2dFunction(_Alias):
    functional = "adaptive_avg_pool2d"

    @staticmethod
    def apply(input, output_size):
        return F.adaptive_avg_pool2d(input, output_size)


class BatchNormFunction(_Alias):
    """apply(input, weight, bias, running_mean, running_var, training, momentum, eps)."""
    functional = "batch_norm"

    @staticmethod
    def apply(input, weight, bias, running_mean, running_var, training, momentum, eps):
        return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
