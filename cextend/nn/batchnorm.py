"""BatchNorm1d and BatchNorm2d on the C kernels, with torch's buffers.

running_mean, running_var and num_batches_tracked (an int64 0-d buffer)
are torch's; momentum=None means a cumulative average (factor
1/num_batches_tracked); track_running_stats=False keeps none and always
normalises with the batch's statistics; affine=False (or bias=False) drops
the parameters.  The train/eval switch picks batch or running statistics.
"""
import numpy as np

from cextend import _capture, _factories
from cextend._dtype import int64
from cextend.autograd.grad_mode import no_grad
from cextend.nn import functional as F
from cextend.nn.module import Module
from cextend.nn.parameter import Parameter


class _BatchNorm(Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        if device is not None and str(device) != "cpu":
            raise ValueError("batch norm layers have CPU kernels only, got device=%r" % (device,))
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(_factories.empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(_factories.empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _factories.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", _factories.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", _factories.tensor(0, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    _version = 2        # torch's: version 2 checkpoints carry num_batches_tracked

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # a checkpoint from before num_batches_tracked (or a plain dict, which
        # carries no version) keeps the module's own counter, as torch's
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                               else _factories.tensor(0, dtype=int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            with no_grad():
                self.weight.fill_(1)
                if self.bias is not None:
                    self.bias.zero_()

    def _check_input_dim(self, input):
        raise NotImplementedError

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            _capture.eager(_count_batch, self.num_batches_tracked)     # replayed as a call
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        tracked = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if tracked else None, self.running_var if tracked else None,
                            self.weight, self.bias, use_batch_stats, factor, self.eps)

    def extra_repr(self):
        return ("%s, eps=%s, momentum=%s, affine=%s, bias=%s, track_running_stats=%s"
                % (self.num_features, self.eps, self.momentum, self.affine, self.bias is not None,
                   self.track_running_stats))


def _count_batch(counter):
    data = getattr(counter, "_data", None)
    if (type(data) is np.ndarray and data.shape == () and data.dtype == np.int64 and data.flags.writeable
            and counter._base is None and not counter._requires_grad):
        # the buffer as made: add_(1)'s effect (data and version) without the general in-place
        # machinery, a third of a small BatchNorm call; anything else (a swapped-in view, a
        # tensor requiring grad, another dtype) goes through add_ below
        data += 1
        counter._bump_version()
        return
    with no_grad():
        counter.add_(1)


class BatchNorm1d(_BatchNorm):
    """Over (N, C) or (N, C, L) inputs."""

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError("expected 2D or 3D input (got %dD input)" % input.dim())


class BatchNorm2d(_BatchNorm):
    """Over (N, C, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError("expected 4D input (got %dD input)" % input.dim())


class BatchNorm3d(_BatchNorm):
    """Over (N, C, D, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError("expected 5D input (got %dD input)" % input.dim())
