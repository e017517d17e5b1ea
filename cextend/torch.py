"""cextend's C kernels inside PyTorch (the `cextend[torch]` extra).

    import torch
    import cextend.torch as ct

    y = ct.linear(x, w, b)                  # torch tensors in, torch tensors out
    layer = ct.Linear(128, 64)              # a torch.nn.Module on cextend's GEMM
    values, indices = ct.global_max_pool(images)
    t = ct.to_torch(cextend_tensor)         # zero-copy both ways (DLPack)
    c = ct.from_torch(torch_tensor)

The Functions run on CPU tensors, zero-copy for contiguous float32 and
float64 (anything else is made contiguous first).  Their backward uses the
fused C backward kernel, or, when torch records a double backward
(create_graph=True), the same Functions again, so torch.autograd.gradcheck
and gradgradcheck pass on them.
"""
import math

try:
    import torch
except ImportError as error:             # pragma: no cover - exercised without torch
    raise ImportError("cextend.torch needs PyTorch; install it with pip install 'cextend[torch]'") from error

import numpy as np

from cextend import ops
from cextend.tensor import Tensor, _wrap

__all__ = ["linear", "global_max_pool", "Linear", "from_torch", "to_torch"]

_DTYPES = (torch.float32, torch.float64)


def _array(t, name):
    """A numpy view of a CPU float32/float64 torch tensor (made contiguous if needed)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if t.device.type != "cpu":
        raise RuntimeError("%s is on %s: cextend's kernels run on CPU tensors" % (name, t.device))
    if t.dtype not in _DTYPES:
        raise TypeError("%s must be torch.float32 or torch.float64, got %s" % (name, t.dtype))
    t = t.detach()
    return (t if t.is_contiguous() else t.contiguous()).numpy()


def _tensor(array):
    return None if array is None else torch.from_numpy(array)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias):
        ctx.save_for_backward(input, weight, bias)
        b = None if bias is None else _array(bias, "bias")
        return _tensor(ops.linear_forward(_array(input, "input"), _array(weight, "weight"), b))

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        need_b = need_b and bias is not None
        if torch.is_grad_enabled():      # a double backward is being recorded
            rows = math.prod(input.shape[:-1])
            g2 = grad_output.reshape(rows, weight.shape[0])
            return (_Linear.apply(grad_output, weight.t(), None) if need_x else None,
                    _Linear.apply(g2.t(), input.reshape(rows, weight.shape[1]).t(), None) if need_w else None,
                    g2.sum(0) if need_b else None)
        dx, dw, db = ops.linear_backward(_array(grad_output, "grad_output"), _array(input, "input"),
                                         _array(weight, "weight"), input=need_x, weight=need_w, bias=need_b)
        return _tensor(dx), _tensor(dw), _tensor(db)


def linear(input, weight, bias=None):
    """input (*, in) @ weight.T + bias on cextend's kernels (torch tensors)."""
    return _Linear.apply(input, weight, bias)


class _GlobalMaxPool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        values, indices = ops.global_max_pool_forward(_array(input, "input"))
        ctx.indices, ctx.input_shape = indices, tuple(input.shape)
        indices = torch.from_numpy(indices)
        ctx.mark_non_differentiable(indices)
        return torch.from_numpy(values), indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        return _ScatterToArgmax.apply(grad_values, ctx.indices, ctx.input_shape)


class _ScatterToArgmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_values, indices, input_shape):
        ctx.indices = indices
        return _tensor(ops.global_max_pool_backward(_array(grad_values, "grad_values"), indices, input_shape))

    @staticmethod
    def backward(ctx, g):
        return _GatherAtArgmax.apply(g, ctx.indices), None, None


class _GatherAtArgmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_input, indices):
        ctx.indices, ctx.input_shape = indices, tuple(grad_input.shape)
        shape = ctx.input_shape
        planes = _array(grad_input, "grad_input").reshape(indices.shape + (shape[-2] * shape[-1],))
        return torch.from_numpy(np.take_along_axis(planes, indices[..., None], axis=-1)[..., 0].copy())

    @staticmethod
    def backward(ctx, g):
        return _ScatterToArgmax.apply(g, ctx.indices, ctx.input_shape), None


def global_max_pool(input):
    """(values, indices) of each (H, W) plane of input (*, H, W); indices are
    int64 flat H*W positions (lowest on ties, NaN wins) and not differentiable."""
    return _GlobalMaxPool.apply(input)


class Linear(torch.nn.Module):
    """torch.nn.Linear's interface and initialisation, on cextend's kernels."""

    def __init__(self, in_features, out_features, bias=True, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.empty(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            torch.nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return linear(input, self.weight, self.bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (self.in_features, self.out_features,
                                                            self.bias is not None)


def from_torch(t):
    """A cextend Tensor sharing t's memory (DLPack; CPU tensors; no autograd link)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("from_torch expects a torch.Tensor, got %s" % type(t).__name__)
    if t.device.type != "cpu":
        raise RuntimeError("from_torch: %s tensors are not supported (cextend computes on the CPU)"
                           % t.device)
    return _wrap(np.from_dlpack(t.detach()))


def to_torch(x):
    """A torch tensor sharing the cextend Tensor's memory (DLPack when the
    array allows it, else torch.from_numpy; a copy only for read-only data)."""
    if not isinstance(x, Tensor):
        raise TypeError("to_torch expects a cextend Tensor, got %s" % type(x).__name__)
    array = x._data
    if not array.flags.writeable:
        return torch.from_numpy(array.copy())
    try:
        return torch.from_dlpack(array)
    except (BufferError, TypeError, RuntimeError):
        return torch.from_numpy(array)
