"""Torch parity of errors: the exception classes torch raises (RuntimeError
where Python's convention says ValueError or TypeError), their messages,
the check torch makes first where several fail, and no numpy warnings
leaking out of ops.
"""
import warnings

import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`
from parity_helpers import real_torch

F = torch.nn.functional


# -- errors torch raises as RuntimeError are caught by `except RuntimeError` here too --------------

@pytest.mark.parametrize("call, python_class", [
    (lambda: F.conv2d(torch.zeros(1, 4, 5, 4), torch.zeros(2, 2, 3, 2)), ValueError),
    (lambda: F.conv2d(torch.zeros(1, 4, 5, 4), torch.zeros(2, 2, 3, 2), groups=3), ValueError),
    (lambda: F.conv_transpose2d(torch.zeros(1, 2, 4, 4), torch.zeros(2, 2, 3, 3), stride=1, padding=1,
                                output_padding=1), ValueError),
    (lambda: F.max_pool2d(torch.zeros(1, 1, 4, 4), 2, stride=0), ValueError),
    (lambda: F.avg_pool2d(torch.zeros(1, 1, 6, 6), 3, stride=2, padding=2), ValueError),
    (lambda: F.batch_norm(torch.zeros(3, 2, dtype=torch.int64), torch.zeros(2), torch.ones(2)), TypeError),
    (lambda: F.batch_norm(torch.zeros(3, 2), torch.zeros(2, dtype=torch.float64), torch.ones(2)), TypeError),
    (lambda: F.batch_norm(torch.zeros(3, 2), None, None, torch.ones(2, dtype=torch.int64), training=True),
     TypeError),
])
def test_kernel_argument_errors_are_runtime_errors_as_in_torch(call, python_class):
    with pytest.raises(RuntimeError) as caught:
        call()
    assert isinstance(caught.value, python_class)     # and what Python's convention names them


def test_kernel_api_argument_errors_stay_value_and_type_errors():
    from cextend import ops
    with pytest.raises(ValueError, match="x must be 4-D"):
        ops.conv2d_forward(np.zeros((2, 3)), np.zeros((1, 1, 1, 1)))
    with pytest.raises(TypeError, match="float32 or float64"):
        ops.conv2d_forward(np.zeros((1, 1, 2, 2), np.int64), np.zeros((1, 1, 1, 1), np.int64))


BROADCAST = r"The size of tensor a \(4\) must match the size of tensor b \(7\) at non-singleton dimension 0"


@pytest.mark.parametrize("call", [
    lambda a, b: a % b, lambda a, b: a // b, lambda a, b: torch.fmod(a, b),
    lambda a, b: torch.lerp(a.float(), b.float(), 0.5), lambda a, b: torch.addcmul(a, a, b),
    lambda a, b: torch.addcdiv(a.float(), a, b.float()), lambda a, b: a.remainder_(b)])
def test_integer_ops_that_do_not_broadcast_say_so_as_torch(call):
    # torch's message names the sizes and the dim (numpy's "shape mismatch" did not)
    a = torch.ones(4, dtype=torch.int64)
    b = torch.ones(7, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=BROADCAST):
        call(a, b)


# -- where several checks fail, the one torch makes first is the one raised ------------------------

@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
def test_scan_in_place_runs_its_checks_in_torchs_order(name):
    leaf = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(TypeError, match=r"%s\(\): argument 'dim' \(position 1\) must be int, not float" % name):
        getattr(leaf, name)(1.5)            # the argument parser first
    with pytest.raises(TypeError, match="must be int, not bool"):
        getattr(leaf.detach(), name)(True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(leaf, name)(2)              # autograd's check, before the dim's range
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(torch.ones(2, dtype=torch.bool), name)(5)      # the dim, before the bool kernel
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        getattr(torch.ones(2, dtype=torch.bool), name)(0)
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    want = np.cumsum if name == "cumsum_" else np.cumprod
    np.testing.assert_array_equal(getattr(x, name)(1).numpy(), want([[1, 2, 3], [4, 5, 6]], axis=1))


def test_from_numpy_refuses_negative_strides_as_torch():
    with pytest.raises(ValueError, match="At least one stride in the given numpy array is negative"):
        torch.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(ValueError, match="negative"):
        torch.as_tensor(np.arange(6.0).reshape(2, 3)[:, ::-1])
    a = np.arange(6.0).reshape(2, 3)[:, ::2]
    t = torch.from_numpy(a)
    a[0, 0] = 7.0
    assert t.stride() == (3, 2) and t[0, 0].item() == 7.0        # positive strides: shared memory


def test_python_number_conversions_of_many_elements_raise_value_error():
    for convert in (float, int, complex):
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            convert(torch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        torch.tensor([1.0, 2.0]).item()
    assert float(torch.tensor([2.5])) == 2.5 and int(torch.tensor(3.7)) == 3


def test_warnings_from_numpy_do_not_leak_out_of_ops():
    x = cx.tensor([0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x / 0).log()
        x.log()


_BAD_SIZES = {
    "zeros(-1)": lambda lib: lib.zeros(-1),
    "randn(-2)": lambda lib: lib.randn(-2),
    "full((-1,), 1.0)": lambda lib: lib.full((-1,), 1.0),
    "new_zeros(-1)": lambda lib: lib.ones(1).new_zeros(-1),
    "empty(2**32, 2**32)": lambda lib: lib.empty(2 ** 32, 2 ** 32),
    "ones(2**62)": lambda lib: lib.ones(2 ** 62),
    "arange(0, nan)": lambda lib: lib.arange(0, float("nan")),
    "arange(0, inf)": lambda lib: lib.arange(0, float("inf")),
    "repeat(-1)": lambda lib: lib.ones(2).repeat(-1),
    "expand(-2)": lambda lib: lib.ones(1).expand(-2),
}


@pytest.mark.parametrize("name", list(_BAD_SIZES))
def test_a_bad_size_is_a_runtime_error_in_cextends_own_words(name):
    """torch raises RuntimeError; cextend's error is also a ValueError (code
    written for either catches it), and no numpy message leaks through."""
    with pytest.raises(RuntimeError) as raised:
        _BAD_SIZES[name](torch)
    assert isinstance(raised.value, ValueError)
    message = str(raised.value)
    for leak in ("negative dimensions are not allowed", "array is too big", "cannot convert float NaN"):
        assert leak not in message
    if real_torch is not None:
        with pytest.raises(RuntimeError):
            _BAD_SIZES[name](real_torch)
