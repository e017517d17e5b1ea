"""Activation modules: each holds its settings and calls cextend.nn.functional.

Constructor arguments, defaults and repr (extra_repr) are torch's.
"""
import warnings

from cextend.nn import functional as F
from cextend.nn.module import Module


def _inplace_repr(inplace, leading_comma=False):
    if not inplace:
        return ""
    return ", inplace=True" if leading_comma else "inplace=True"


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Tanh(Module):
    def forward(self, input):
        return input.tanh()


class Sigmoid(Module):
    def forward(self, input):
        return input.sigmoid()


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return "dim=%s" % (self.dim,)


class LogSoftmax(Softmax):
    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(Softmax):
    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return "approximate=%r" % (self.approximate,)


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return "negative_slope=%s%s" % (self.negative_slope, _inplace_repr(self.inplace, True))


class ELU(Module):
    _function = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return self._function(input, self.alpha, self.inplace)

    def extra_repr(self):
        return "alpha=%s%s" % (self.alpha, _inplace_repr(self.inplace, True))


class CELU(ELU):
    _function = staticmethod(F.celu)


class _InplaceOnly(Module):
    """An activation whose one setting is `inplace`."""

    _function = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return self._function(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class SELU(_InplaceOnly):
    _function = staticmethod(F.selu)


class SiLU(_InplaceOnly):
    _function = staticmethod(F.silu)


class Mish(_InplaceOnly):
    _function = staticmethod(F.mish)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return "beta=%s, threshold=%s" % (self.beta, self.threshold)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError("max_val (%s) must be greater than min_val (%s)"
                                 % (self.max_val, self.min_val))

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return "min_val=%s, max_val=%s%s" % (self.min_val, self.max_val, _inplace_repr(self.inplace, True))


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class LogSigmoid(Module):
    def forward(self, input):
        return F.logsigmoid(input)
