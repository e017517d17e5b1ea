"""cextend: hand-written C kernels as differentiable, gradchecked ops.

PyTorch's legacy extension-ffi pattern rebuilt on cffi and numpy:
C kernels (src/) -> one cffi door (cextend._backend) -> numpy-level ops
(cextend.ops) -> autograd Functions (cextend.functions) -> nn Modules.

    import cextend as torch        # the seed note's listings run unchanged
"""
from cextend._dtype import (bool, double, dtype, float, float16, float32, float64, half, int, int32,
                            int64, long, uint8)
from cextend._factories import (arange, as_tensor, cat, empty, empty_like, eye, from_numpy, full,
                                full_like, linspace, ones, ones_like, rand, rand_like, randint, randn,
                                randn_like, range, stack, tensor, zeros, zeros_like)
from cextend._backend import available_isas, get_isa, get_num_threads, set_isa, set_num_threads
from cextend._random import initial_seed, manual_seed
from cextend.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from cextend.device import device
from cextend.tensor import Size, Tensor

from cextend import autograd, cuda, functions, nn, ops, optim, utils  # noqa: E402  (after Tensor exists)
import cextend.utils.ffi  # noqa: E402,F401  (cextend.utils.ffi, as torch.utils.ffi was)
from cextend import library  # noqa: E402  (custom_op / opcheck, as torch.library)

__version__ = "0.1.0"


def is_tensor(obj):
    return isinstance(obj, Tensor)


def _method(name):
    def call(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = "cextend.%s(input, ...) is input.%s(...)." % (name, name)
    return call


for _name in ("exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "clamp", "sum", "mean", "max",
              "argmax", "mm", "matmul", "t", "transpose", "reshape", "flatten", "squeeze", "unsqueeze",
              "permute", "clone", "detach", "numel"):
    globals()[_name] = _method(_name)
del _name
