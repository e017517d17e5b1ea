"""GroupNorm, InstanceNorm1d/2d/3d and LocalResponseNorm, as torch's modules.

GroupNorm's weight starts at ones and its bias at zeros (affine=True);
the instance norms share batch norm's parameters and buffers (affine and
track_running_stats default to False), normalise with each sample's own
statistics unless evaluating with tracked running stats, and accept
unbatched input (one dim less).
"""
import warnings

from cextend import _factories
from cextend.autograd.grad_mode import no_grad
from cextend.nn import functional as F
from cextend.nn.batchnorm import _BatchNorm
from cextend.nn.module import Module
from cextend.nn.parameter import Parameter


class GroupNorm(Module):
    """Normalise (N, C, *) input over groups of C // num_groups channels, then a per-channel affine map."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels (%s) must be divisible by num_groups (%s)" % (num_channels, num_groups))
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(_factories.empty(num_channels, dtype=dtype))
            if bias:
                self.bias = Parameter(_factories.empty(num_channels, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device=device)

    def reset_parameters(self):
        if self.affine:
            with no_grad():
                self.weight.fill_(1.0)
                if self.bias is not None:
                    self.bias.fill_(0.0)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "%s, %s, eps=%s, affine=%s, bias=%s" % (self.num_groups, self.num_channels, self.eps, self.affine,
                                                       self.bias is not None)


class _InstanceNorm(_BatchNorm):
    _no_batch_dim = None        # the input's dims without the batch dim

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # torch's: a checkpoint from before 0.4 (no version) may carry running stats this module does not keep
        if local_metadata.get("version") is None and not self.track_running_stats:
            keys = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if keys:
                klass = type(self).__name__
                error_msgs.append(
                    "Unexpected running stats buffer(s) {names} for {klass} with track_running_stats=False. If "
                    "state_dict is a checkpoint saved before 0.4.0, this may be expected because {klass} does not "
                    "track running stats by default since 0.4.0. Please remove these keys from state_dict. If the "
                    "running stats are actually needed, instead set track_running_stats=True in {klass} to enable "
                    "them. See the documentation of {klass} for details.".format(
                        names=" and ".join('"%s"' % k for k in keys), klass=klass))
                for key in keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError("expected input's size at dim=%d to match num_features (%d), but got: %d."
                                 % (feature_dim, self.num_features, input.size(feature_dim)))
            warnings.warn("input's size at dim=%d does not match num_features. You can silence this warning by "
                          "not passing in num_features, which is not used because affine=False" % feature_dim,
                          stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)

    def _check_input_dim(self, input):
        if input.dim() not in (self._no_batch_dim, self._no_batch_dim + 1):
            raise ValueError("expected %dD or %dD input (got %dD input)"
                             % (self._no_batch_dim, self._no_batch_dim + 1, input.dim()))


class InstanceNorm1d(_InstanceNorm):
    """Over (N, C, L) or unbatched (C, L) input."""
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Over (N, C, H, W) or unbatched (C, H, W) input."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Over (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    _no_batch_dim = 4


class LocalResponseNorm(Module):
    """input / (k + alpha * mean of squares over `size` neighbouring channels) ** beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "%s, alpha=%s, beta=%s, k=%s" % (self.size, self.alpha, self.beta, self.k)
