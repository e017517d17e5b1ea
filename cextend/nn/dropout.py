"""Dropout: zeroes elements (or whole channels) with probability p while
training, identity in eval."""
from cextend.nn import functional as F
from cextend.nn.module import Module


class _DropoutNd(Module):
    """Masks come from cextend's global generator, so manual_seed repeats them."""

    _function = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError("dropout probability has to be between 0 and 1, but got %s" % (p,))
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return self._function(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return "p=%s, inplace=%s" % (self.p, self.inplace)


class Dropout(_DropoutNd):
    _function = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    _function = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    _function = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    _function = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """For SELU networks: keeps mean and variance.  As torch's, forward ignores inplace."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels (dim 1).  As torch's, forward ignores inplace."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
