"""Convolution layers: Conv1d, Conv2d and ConvTranspose2d on the C kernels.

Torch's constructor arguments, defaults, attributes (tuples for sizes),
checks, repr, padding modes (reflect, replicate and circular pad the input
explicitly, as torch does) and initialisation: weight ~ kaiming_uniform_(a=sqrt(5)),
i.e. uniform in +-1/sqrt(fan_in), and bias uniform in the same bound, with
fan_in = weight.size(1) * kernel elements.  A torch state_dict's numpy
values load as they are and give torch's outputs.
"""
import math

from cextend import _factories
from cextend.ops._shapes import pair, single
from cextend.autograd.grad_mode import no_grad
from cextend._ops.padding import pad as _pad
from cextend.nn import functional as F
from cextend.nn.module import Module
from cextend.nn.parameter import Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _check_device(device):
    if device is not None and str(device) != "cpu":
        raise ValueError("convolution layers have CPU kernels only, got device=%r" % (device,))


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        _check_device(device)
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError("Invalid padding string %r, should be one of {'valid', 'same'}" % padding)
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError("padding_mode must be one of %s, but got padding_mode='%s'"
                             % (list(_PADDING_MODES), padding_mode))
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed, self.output_padding = transposed, output_padding
        self.groups, self.padding_mode = groups, padding_mode
        shape = ((in_channels, out_channels // groups) if transposed else
                 (out_channels, in_channels // groups)) + tuple(kernel_size)
        self.weight = Parameter(_factories.empty(*shape, dtype=dtype))
        if bias:
            self.bias = Parameter(_factories.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _padded(self, input):
        """(input, padding for the convolution): torch pads explicitly for a
        padding_mode other than 'zeros' (reflect, replicate, circular)."""
        if self.padding_mode == "zeros":
            return input, self.padding
        pads = []               # torch's _reversed_padding_repeated_twice, last dim first
        for d in reversed(range(len(self.kernel_size))):
            if self.padding == "valid":
                before = after = 0
            elif self.padding == "same":
                total = self.dilation[d] * (self.kernel_size[d] - 1)
                before, after = total // 2, total - total // 2
            else:
                before = after = self.padding[d]
            pads += [before, after]
        pads += [0] * (4 - len(pads))
        zeros = (0,) * len(self.kernel_size)
        return _pad(input, tuple(pads), self.padding_mode, len(self.kernel_size)), zeros

    def reset_parameters(self):
        """torch's: kaiming_uniform_(weight, a=sqrt(5)) is uniform in
        +-gain*sqrt(3/fan_in) with gain sqrt(2/(1+5)), i.e. +-1/sqrt(fan_in)."""
        fan_in = self.weight.shape[1] * math.prod(self.weight.shape[2:])
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        with no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def extra_repr(self):
        s = "%d, %d, kernel_size=%s, stride=%s" % (self.in_channels, self.out_channels, self.kernel_size,
                                                   self.stride)
        zeros = (0,) * len(self.kernel_size)
        if self.padding != zeros:
            s += ", padding=%s" % (self.padding,)
        if self.dilation != (1,) * len(self.kernel_size):
            s += ", dilation=%s" % (self.dilation,)
        if self.output_padding != zeros:
            s += ", output_padding=%s" % (self.output_padding,)
        if self.groups != 1:
            s += ", groups=%d" % self.groups
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode=%s" % self.padding_mode
        return s


class Conv1d(_ConvNd):
    """torch.nn.Conv1d: input (N, C_in, L) or (C_in, L)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        padding = padding if isinstance(padding, str) else (single(padding, "padding"),)
        super().__init__(in_channels, out_channels, (single(kernel_size, "kernel_size"),),
                         (single(stride, "stride"),), padding, (single(dilation, "dilation"),), False, (0,),
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        input, padding = self._padded(input)
        return F.conv1d(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """torch.nn.Conv2d: input (N, C_in, H, W) or (C_in, H, W)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        padding = padding if isinstance(padding, str) else pair(padding, "padding")
        super().__init__(in_channels, out_channels, pair(kernel_size, "kernel_size"), pair(stride, "stride"),
                         padding, pair(dilation, "dilation"), False, (0, 0), groups, bias, padding_mode,
                         device, dtype)

    def forward(self, input):
        input, padding = self._padded(input)
        return F.conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """torch.nn.ConvTranspose2d: weight (C_in, C_out/groups, kH, kW);
    forward(input, output_size=None) picks output_padding from output_size."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for ConvTranspose2d')
        super().__init__(in_channels, out_channels, pair(kernel_size, "kernel_size"), pair(stride, "stride"),
                         pair(padding, "padding"), pair(dilation, "dilation"), True,
                         pair(output_padding, "output_padding"), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)

    def _output_padding(self, input, output_size):
        """torch's rule: output_size (with or without the (N, C) dims) must
        lie between the smallest output and that plus stride - 1."""
        if output_size is None:
            return self.output_padding
        output_size = [int(s) for s in output_size]
        non_spatial = 2 if input.dim() == 4 else 1
        if len(output_size) == non_spatial + 2:
            output_size = output_size[non_spatial:]
        if len(output_size) != 2:
            raise ValueError("ConvTranspose2D: for %dD input, output_size must have 2 or %d elements (got %d)"
                             % (input.dim(), non_spatial + 2, len(output_size)))
        smallest = [(input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d] +
                    self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(2)]
        largest = [smallest[d] + self.stride[d] - 1 for d in range(2)]
        for d in range(2):
            if not smallest[d] <= output_size[d] <= largest[d]:
                raise ValueError("requested an output size of %s, but valid sizes range from %s to %s (for an "
                                 "input of %s)" % (output_size, smallest, largest, list(input.shape[non_spatial:])))
        return tuple(output_size[d] - smallest[d] for d in range(2))


class ConvTranspose1d(_ConvNd):
    """torch.nn.ConvTranspose1d: weight (C_in, C_out/groups, k); input (N, C_in, L)
    or (C_in, L); forward(input, output_size=None) picks output_padding from output_size."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for ConvTranspose1d')
        super().__init__(in_channels, out_channels, (single(kernel_size, "kernel_size"),),
                         (single(stride, "stride"),), (single(padding, "padding"),),
                         (single(dilation, "dilation"),), True, (single(output_padding, "output_padding"),),
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose1d")
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)

    def _output_padding(self, input, output_size):
        """torch's rule: output_size (with or without the non-spatial dims) must
        lie between the smallest output and that plus stride - 1."""
        if output_size is None:
            return self.output_padding
        output_size = [int(s) for s in output_size]
        non_spatial = 2 if input.dim() == 3 else 1
        if len(output_size) == non_spatial + 1:
            output_size = output_size[non_spatial:]
        if len(output_size) != 1:
            raise ValueError("ConvTranspose1D: for %dD input, output_size must have 1 or %d elements (got %d)"
                             % (input.dim(), non_spatial + 1, len(output_size)))
        smallest = [(input.shape[non_spatial] - 1) * self.stride[0] - 2 * self.padding[0] +
                    self.dilation[0] * (self.kernel_size[0] - 1) + 1]
        largest = [smallest[0] + self.stride[0] - 1]
        if not smallest[0] <= output_size[0] <= largest[0]:
            raise ValueError("requested an output size of %s, but valid sizes range from %s to %s (for an input "
                             "of %s)" % (output_size, smallest, largest, list(input.shape[2:])))
        return (output_size[0] - smallest[0],)
