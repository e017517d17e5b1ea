"""LayerNorm: normalise over the trailing dims, then an elementwise affine map."""
import numbers

from cextend import _factories
from cextend.autograd.grad_mode import no_grad
from cextend.nn import functional as F
from cextend.nn.module import Module
from cextend.nn.parameter import Parameter


class LayerNorm(Module):
    """torch's LayerNorm: weight starts at ones and bias at zeros (when present)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_factories.empty(self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(_factories.empty(self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device=device)

    def reset_parameters(self):
        if self.elementwise_affine:
            with no_grad():
                self.weight.fill_(1.0)
                if self.bias is not None:
                    self.bias.fill_(0.0)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "%s, eps=%s, elementwise_affine=%s, bias=%s" % (
            self.normalized_shape, self.eps, self.elementwise_affine, self.bias is not None)
