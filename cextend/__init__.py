"""cextend: hand-written C kernels as differentiable, gradchecked ops.

PyTorch's legacy extension-ffi pattern rebuilt on cffi and numpy:
C kernels (src/) -> one cffi door (cextend._backend) -> numpy-level ops
(cextend.ops) -> autograd Functions (cextend.functions) -> nn Modules.

    import cextend as torch        # the seed note's listings run unchanged
"""
from cextend import _dtype  # noqa: E402
from cextend._dtype import (bfloat16, bool, double, dtype, float, float16, float32, float64, half, int,
                            int32, int64, long, uint8)
from cextend._factories import (arange, as_tensor, empty, empty_like, eye, from_numpy, full,
                                full_like, linspace, logspace, normal, ones, ones_like, rand, rand_like,
                                randint, randint_like, randn, randn_like, randperm, range, tensor, zeros,
                                zeros_like)
from cextend._backend import available_isas, get_isa, get_num_threads, set_isa, set_num_threads
from cextend._random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed,  # noqa: F401
                             seed, set_rng_state)
from cextend._sampling import bernoulli, multinomial, poisson  # noqa: E402,F401
from cextend import random  # noqa: E402,F401  (torch.random: fork_rng and the global generator's state)
from cextend.autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                                       no_grad, set_grad_enabled)
from cextend.autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from cextend.device import device
from cextend.tensor import Size, Tensor
from cextend._memory_format import (channels_last, channels_last_3d, contiguous_format, memory_format,
                                    preserve_format)

from cextend import autograd, cuda, functions, nn, ops, optim, utils  # noqa: E402  (after Tensor exists)
import cextend.utils.ffi  # noqa: E402,F401  (cextend.utils.ffi, as torch.utils.ffi was)
import cextend.utils.checkpoint  # noqa: E402,F401  (torch.utils.checkpoint)
from cextend import library  # noqa: E402  (custom_op / opcheck, as torch.library)

__version__ = "0.1.0"


def is_tensor(obj):
    return isinstance(obj, Tensor)


from cextend import _ops  # noqa: E402
from cextend import _storage  # noqa: E402,F401  (untyped_storage, storage_offset, pickling, deepcopy)

_ops.install(globals())
from cextend import overrides  # noqa: E402,F401  (torch.overrides; also torch._C's switches)
from cextend._ops.reduction import return_types  # noqa: E402,F401
from cextend import _legacy  # noqa: E402
from cextend._legacy import get_default_dtype, set_default_dtype  # noqa: E402,F401

Tensor.type = _legacy.tensor_type
globals().update(_legacy.TYPES)     # FloatTensor, DoubleTensor, LongTensor, IntTensor, ByteTensor, ...
from cextend import _promotion  # noqa: E402


def result_type(tensor1, tensor2):
    """torch.result_type: the dtype an elementwise op on these operands produces."""
    return _dtype.from_numpy(_promotion.result_type(tensor1, tensor2))


def promote_types(type1, type2):
    """torch.promote_types: the smallest dtype both promote to."""
    return _dtype.from_numpy(_promotion.promote_types(_dtype.as_dtype(type1).numpy,
                                                      _dtype.as_dtype(type2).numpy))


def can_cast(from_, to):
    """torch.can_cast: whether an in-place op may store from_ results in a `to` tensor."""
    return _promotion.can_cast(_dtype.as_dtype(from_).numpy, _dtype.as_dtype(to).numpy)


from cextend.serialization import load, save  # noqa: E402,F401
from cextend.utils import data as _data  # noqa: E402,F401  (cextend.utils.data, as torch.utils.data)
from cextend._printing import set_printoptions  # noqa: E402,F401  (torch.set_printoptions)
from cextend import accelerator, backends, onnx  # noqa: E402,F401  (torch's device-selection idioms)
from cextend._compile import compile  # noqa: E402,F401  (torch.compile: the model, unchanged)
from cextend._capture import CaptureWarning, capture  # noqa: E402,F401  (replayed training steps)
from cextend._legacy import FatalError  # noqa: E402,F401

import math as _math  # noqa: E402  (`float` here is cextend.float, the dtype)

inf, nan, e, pi = _math.inf, _math.nan, _math.e, _math.pi


def __getattr__(name):
    """An attribute torch has and cextend does not: say so, and where the list of those is."""
    if name.startswith("__"):
        raise AttributeError("module 'cextend' has no attribute %r" % name)
    raise AttributeError("module 'cextend' has no attribute %r: torch.%s is not supported by cextend "
                         "(docs/torch-parity.md, 'What is missing', lists what is not)" % (name, name))
