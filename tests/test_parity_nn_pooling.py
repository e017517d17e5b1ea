"""Torch parity of pooling: integer dtypes, which results are views,
channels-last inputs, and the saved indices.
"""
import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`
import cextend.nn.functional as cF

from parity_helpers import real_torch, tF, _assert_same_outcome


# -- pooling of integer tensors --------------------------------------------------------------------

_POOL_CASES = [dict(kernel_size=2), dict(kernel_size=2, stride=1), dict(kernel_size=3, stride=2, padding=1),
               dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), ceil_mode=True), dict(kernel_size=2, ceil_mode=True)]


@pytest.mark.disagreement("D70")
@pytest.mark.parametrize("case", _POOL_CASES + [dict(kernel_size=2, stride=1, dilation=2, padding=1)])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_max_pool2d_of_integers_picks_the_first_maximum(case, dtype):
    rng = np.random.default_rng(5)
    x = rng.integers(0 if dtype == "uint8" else -4, 5, (2, 3, 7, 6))     # many ties

    def program(lib):
        F = cF if lib is cx else tF
        values, indices = F.max_pool2d(lib.tensor(x, dtype=getattr(lib, dtype)), return_indices=True, **case)
        return values, indices
    values, indices = program(cx)
    assert values.dtype == getattr(cx, dtype) and indices.dtype == cx.int64
    ref_values, ref_indices = cF.max_pool2d(cx.tensor(x, dtype=cx.float64), return_indices=True, **case)
    np.testing.assert_array_equal(values.numpy(), ref_values.numpy().astype(dtype))
    np.testing.assert_array_equal(indices.numpy(), ref_indices.numpy())
    if real_torch is not None:
        theirs = program(real_torch)
        np.testing.assert_array_equal(values.numpy(), theirs[0].numpy())
        np.testing.assert_array_equal(indices.numpy(), theirs[1].numpy())


@pytest.mark.disagreement("D70")
@pytest.mark.parametrize("case", _POOL_CASES)
@pytest.mark.parametrize("extra", [dict(), dict(count_include_pad=False), dict(divisor_override=3)])
def test_avg_pool2d_of_int64_truncates_toward_zero(case, extra):
    rng = np.random.default_rng(11)
    x = rng.integers(-50, 50, (2, 3, 7, 6))

    def program(lib):
        return (cF if lib is cx else tF).avg_pool2d(lib.tensor(x), **case, **extra)
    got = program(cx)
    assert got.dtype == cx.int64
    exact = cF.avg_pool2d(cx.tensor(x, dtype=cx.float64), **case, **extra).numpy()
    np.testing.assert_array_equal(got.numpy(), np.trunc(np.round(exact, 9)).astype(np.int64))
    _assert_same_outcome(program)


@pytest.mark.disagreement("D70")
@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
def test_pooling_of_int32_uint8_and_bool_is_not_implemented_as_torch(op, dtype):
    if op == "max_pool2d" and dtype != "bool":
        return      # computes (tested above)

    def program(lib):
        F = cF if lib is cx else tF
        return getattr(F, op)(lib.ones(1, 1, 4, 4, dtype=getattr(lib, dtype)), 2)
    with pytest.raises(NotImplementedError, match="not implemented for"):
        program(cx)
    _assert_same_outcome(program)


def test_max_pool1d_result_is_a_view_when_its_input_needs_grad():
    # torch runs max_pool1d_with_indices then, whose result is a squeeze
    x = torch.tensor(np.random.default_rng(2).standard_normal((2, 3, 7)), requires_grad=True)
    y = torch.nn.functional.max_pool1d(x, 3, stride=2, padding=1, ceil_mode=True)
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        y.detach_()
    plain = torch.nn.functional.max_pool1d(x.detach(), 3, stride=2, padding=1, ceil_mode=True)
    plain.detach_()
    np.testing.assert_array_equal(plain.numpy(), y.detach().numpy())


def test_unbatched_pools_are_not_views():
    x3 = torch.randn(3, 6, 8)
    F = torch.nn.functional
    for y in (F.max_pool2d(x3, 2), F.avg_pool2d(x3, 2), F.adaptive_avg_pool2d(x3, 3), F.adaptive_max_pool2d(x3, 3)):
        assert y._base is None
    with torch.no_grad():
        values, indices = F.adaptive_max_pool2d(x3, 3, return_indices=True)
    values.add_(torch.ones(1, requires_grad=True))      # not a view made under no_grad


def test_pooling_keeps_a_channels_last_input_channels_last():
    rng = np.random.default_rng(13)
    a = rng.standard_normal((2, 3, 6, 8))
    x = torch.tensor(a).contiguous(memory_format=torch.channels_last)
    F = torch.nn.functional
    for y in (F.max_pool2d(x, 2), F.avg_pool2d(x, 2), F.max_pool2d(x, 2, return_indices=True)[1]):
        assert y.stride() == (36, 1, 12, 3)
    np.testing.assert_array_equal(F.max_pool2d(x, 2).numpy(), F.max_pool2d(torch.tensor(a), 2).numpy())
    assert F.adaptive_avg_pool2d(x, 3).stride() == (27, 1, 9, 3)
    assert F.max_pool2d(x[0], 2).stride() == (12, 4, 1)         # unbatched: contiguous
    permuted = torch.tensor(rng.standard_normal((2, 8, 3))).transpose(1, 2)
    assert F.avg_pool1d(permuted, 2).stride() == (12, 1, 3)
    assert F.max_pool1d(permuted, 2).stride() == (12, 4, 1)     # its own kernel


def test_returned_pool_indices_are_the_saved_ones():
    x = torch.randn(3, 5, requires_grad=True)
    values, indices = torch.nn.functional.adaptive_max_pool1d(x, 4, return_indices=True)
    indices.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        values.sum().backward()
