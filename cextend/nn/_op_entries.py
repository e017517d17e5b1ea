"""The CNN functional ops in the op table (cextend._ops.registry), so the
table-driven tests (gradcheck and gradgradcheck on contiguous, transposed
and sliced layouts) and the differential tester against torch cover them.

They are torch.nn.functional's, so the entries attach nothing to Tensor or
the cextend namespace (method=False, module=False): tests call them
through `call(lib, ...)` as lib.nn.functional.NAME, with lib cextend or torch.
"""
import numpy as np

from cextend._ops.convolution import CONVOLUTION
from cextend._ops.normalization import BATCH_NORM
from cextend._ops.pooling import POOLING
from cextend._ops.registry import Const, Sample, register
from cextend.nn import functional as F


def _conv2d_samples(rng):
    yield Sample(rng.standard_normal((2, 2, 4, 5)), rng.standard_normal((3, 2, 2, 3)), rng.standard_normal(3))
    yield Sample(rng.standard_normal((1, 4, 5, 4)), rng.standard_normal((2, 2, 3, 2)), None, stride=(2, 1),
                 padding=(1, 0), dilation=(1, 2), groups=2, note="strided, grouped")


def _conv1d_samples(rng):
    yield Sample(rng.standard_normal((2, 2, 7)), rng.standard_normal((3, 2, 3)), rng.standard_normal(3),
                 stride=2, padding=1)


def _conv_transpose2d_samples(rng):
    yield Sample(rng.standard_normal((2, 2, 3, 2)), rng.standard_normal((2, 3, 2, 3)), rng.standard_normal(3),
                 stride=2, padding=1, output_padding=1)


def _pool_input(rng, shape=(2, 2, 5, 6)):
    # distinct values: a max pool's gradient is not defined at ties
    return rng.permutation(np.prod(shape)).reshape(shape) / np.prod(shape) + rng.uniform(0, 1e-3, shape)


def _max_pool2d_samples(rng):
    yield Sample(_pool_input(rng), 3, stride=2, padding=1, ceil_mode=True)
    yield Sample(_pool_input(rng), (2, 3), stride=1, dilation=(2, 1))


def _avg_pool2d_samples(rng):
    yield Sample(_pool_input(rng), 3, stride=2, padding=1, count_include_pad=False, ceil_mode=True)
    yield Sample(_pool_input(rng), (2, 3), divisor_override=4)


def _adaptive_avg_pool2d_samples(rng):
    yield Sample(rng.standard_normal((2, 2, 5, 7)), (3, 2))


def _batch_norm_samples(rng):
    stats = (Const(rng.standard_normal(3)), Const(rng.uniform(0.5, 2.0, 3)))
    yield Sample(rng.standard_normal((4, 3, 2, 3)), *stats, rng.standard_normal(3), rng.standard_normal(3),
                 training=True, momentum=0.0, note="batch statistics")
    yield Sample(rng.standard_normal((5, 3)), *stats, rng.standard_normal(3), rng.standard_normal(3),
                 training=False, note="running statistics")


def _functional(name):
    """How the tests call the op in either library (cextend or torch)."""
    def call(lib, *args, **kwargs):
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    call.__name__ = name
    return call


for _name, _samples, _kernels in [
        ("conv2d", _conv2d_samples, CONVOLUTION), ("conv1d", _conv1d_samples, CONVOLUTION),
        ("conv_transpose2d", _conv_transpose2d_samples, CONVOLUTION), ("max_pool2d", _max_pool2d_samples, POOLING),
        ("avg_pool2d", _avg_pool2d_samples, POOLING), ("adaptive_avg_pool2d", _adaptive_avg_pool2d_samples, POOLING),
        ("batch_norm", _batch_norm_samples, BATCH_NORM)]:
    register(_name, getattr(F, _name), method=False, module=False, call=_functional(_name), samples=_samples,
             family="nn", kernels=_kernels)


# -- 1-D pooling, adaptive max pooling and conv_transpose1d (cextend/nn/functional_1d.py) --

def _max_pool1d_samples(rng):
    yield Sample(_pool_input(rng, (2, 3, 7)), 3, stride=2, padding=1, ceil_mode=True)
    yield Sample(_pool_input(rng, (3, 11)), 2, stride=1, dilation=3, note="unbatched, dilated")


def _avg_pool1d_samples(rng):
    yield Sample(_pool_input(rng, (2, 3, 7)), 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
    yield Sample(_pool_input(rng, (3, 5)), 2, note="unbatched")


def _adaptive_avg_pool1d_samples(rng):
    yield Sample(rng.standard_normal((2, 3, 7)), 3)
    yield Sample(rng.standard_normal((3, 5)), 7, note="unbatched, output longer than input")


def _adaptive_max_pool1d_samples(rng):
    yield Sample(_pool_input(rng, (2, 3, 7)), 3)
    yield Sample(_pool_input(rng, (3, 5)), 4, return_indices=True, note="unbatched, overlapping windows")


def _adaptive_max_pool2d_samples(rng):
    yield Sample(_pool_input(rng, (2, 2, 5, 7)), (3, 2))
    yield Sample(_pool_input(rng, (2, 5, 6)), (None, 4), return_indices=True, note="unbatched, None keeps H")


def _conv_transpose1d_samples(rng):
    yield Sample(rng.standard_normal((2, 2, 5)), rng.standard_normal((2, 3, 3)), rng.standard_normal(3),
                 stride=2, padding=1, output_padding=1)
    yield Sample(rng.standard_normal((4, 3)), rng.standard_normal((4, 1, 2)), None, dilation=2, groups=2,
                 note="unbatched, grouped, dilated")


for _name, _samples, _kernels in [
        ("max_pool1d", _max_pool1d_samples, POOLING), ("avg_pool1d", _avg_pool1d_samples, POOLING),
        ("adaptive_avg_pool1d", _adaptive_avg_pool1d_samples, POOLING),
        ("adaptive_max_pool1d", _adaptive_max_pool1d_samples, POOLING),
        ("adaptive_max_pool2d", _adaptive_max_pool2d_samples, POOLING),
        ("conv_transpose1d", _conv_transpose1d_samples, CONVOLUTION)]:
    register(_name, getattr(F, _name), method=False, module=False, call=_functional(_name), samples=_samples,
             family="nn", kernels=_kernels)
