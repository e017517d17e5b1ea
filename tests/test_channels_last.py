"""Channels-last layouts through to() and batch norm (issue 24, item 3).

torch's x.to(memory_format=channels_last) makes one copy in that layout
(ToCopyBackward0), or returns x when it already is; its CPU batch norm
allocates the output and the input gradient in the input's suggested
memory format.  Values are checked against numpy in float64, strides and
node names against torch 2.13 where installed.
"""
import numpy as np
import pytest

from parity_helpers import each_lib


def _sample(lib, shape, seed=0):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape))


@each_lib
def test_to_memory_format_copies_once_or_returns_self(lib):
    x = _sample(lib, (2, 3, 4, 5)).requires_grad_()
    y = x.to(memory_format=lib.channels_last)
    assert y.stride() == (60, 1, 15, 3) and type(y.grad_fn).__name__ == "ToCopyBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())
    assert y.to(memory_format=lib.channels_last) is y
    z = x.to(lib.float32, memory_format=lib.channels_last)
    assert z.dtype == lib.float32 and z.stride() == (60, 1, 15, 3)
    z.sum().backward()
    assert x.grad.dtype == lib.float64 and x.grad.tolist() == np.ones((2, 3, 4, 5)).tolist()
    v = _sample(lib, (2, 3, 2, 4, 5)).to(memory_format=lib.channels_last_3d)
    assert v.stride() == (120, 1, 60, 15, 3)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        x[0].to(memory_format=lib.channels_last)


@each_lib
@pytest.mark.parametrize("shape, fmt", [((2, 3, 4, 5), "channels_last"), ((2, 3, 2, 3, 4), "channels_last_3d")])
def test_batch_norm_keeps_a_channels_last_input_channels_last(lib, shape, fmt):
    x = _sample(lib, shape).to(memory_format=getattr(lib, fmt)).requires_grad_()
    norm = (lib.nn.BatchNorm2d if len(shape) == 4 else lib.nn.BatchNorm3d)(3).double()
    y = norm(x)
    grad = _sample(lib, shape, seed=1)
    y.backward(grad)
    expected_strides = x.stride()
    assert y.stride() == expected_strides and x.grad.stride() == expected_strides
    data = x.detach().numpy()
    axes = (0,) + tuple(range(2, len(shape)))
    mean, var = data.mean(axis=axes, keepdims=True), data.var(axis=axes, keepdims=True)
    np.testing.assert_allclose(y.detach().numpy(), (data - mean) / np.sqrt(var + 1e-5), rtol=1e-12, atol=1e-12)
    norm.eval()
    assert norm(x).stride() == expected_strides
