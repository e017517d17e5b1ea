"""Torch parity of convolutions: integer dtypes, operands and biases of
other dtypes, channels-last results, what a convolution saves and frees,
and the error for an input of the wrong rank.
"""
import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`
import cextend.nn.functional as cF

from parity_helpers import tF, _assert_same_outcome

F = torch.nn.functional


# -- convolution of integer tensors ----------------------------------------------------------------

_CONV_CASES = [dict(), dict(padding=1), dict(stride=2, padding=(1, 0)), dict(dilation=2, padding="same"),
               dict(groups=2), dict(stride=(1, 2), dilation=(2, 1), padding=2, groups=2), dict(padding="valid")]


def _int_operands(rng, x_shape, w_shape, dtype, low=-9, high=10):
    x = rng.integers(low, high, x_shape)
    w = rng.integers(low, high, w_shape)
    return x, w, rng.integers(low, high, w_shape[0])


@pytest.mark.disagreement("D70")
@pytest.mark.parametrize("case", _CONV_CASES)
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv2d_of_integers_computes_in_the_input_dtype(case, dtype, with_bias):
    if dtype != "int64" and case.get("dilation", 1) != 1:
        with pytest.raises(NotImplementedError, match="slow_conv_dilated"):
            cF.conv2d(cx.ones(1, 4, 7, 6, dtype=getattr(cx, dtype)), cx.ones(4, 4 // case.get("groups", 1), 3, 2,
                                                                              dtype=getattr(cx, dtype)), **case)
        return
    rng = np.random.default_rng(7)
    x, w, b = _int_operands(rng, (3, 4, 7, 6), (4, 4 // case.get("groups", 1), 3, 2), dtype,
                            low=0 if dtype == "uint8" else -9)
    b = b if with_bias else None

    def program(lib):
        F = cF if lib is cx else tF
        dt = getattr(lib, dtype)
        return F.conv2d(lib.tensor(x, dtype=dt), lib.tensor(w, dtype=dt),
                        None if b is None else lib.tensor(b, dtype=dt), **case)
    got = program(cx)
    assert got.dtype == getattr(cx, dtype)
    # independent reference: the float64 kernel on the same values (exact for these small integers), wrapped
    exact = cF.conv2d(cx.tensor(x, dtype=cx.float64), cx.tensor(w, dtype=cx.float64),
                      None if b is None else cx.tensor(b, dtype=cx.float64), **case).numpy()
    np.testing.assert_array_equal(got.numpy(), exact.astype(np.int64).astype(dtype))
    _assert_same_outcome(program)


@pytest.mark.disagreement("D70")
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_conv1d_of_integers_computes_in_the_input_dtype_and_bool_is_not_implemented(dtype):
    def program(lib):
        F = cF if lib is cx else tF
        dt = getattr(lib, dtype)
        return F.conv1d(lib.tensor([[[0, -3, 2, 7, -5]]]).to(dt), lib.tensor([[[2, 6]]]).to(dt),
                        lib.tensor([3]).to(dt), padding=1, stride=2)
    if dtype == "bool":
        with pytest.raises(NotImplementedError, match="\"slow_conv2d_cpu\" not implemented for 'Bool'"):
            program(cx)
    elif dtype == "int64":
        np.testing.assert_array_equal(program(cx).numpy(), [[[3, 9, -13]]])    # 3 + 6*0, 3 + 2*(-3) + 6*2, ...
    _assert_same_outcome(program)


@pytest.mark.disagreement("D70")
@pytest.mark.parametrize("case", [dict(), dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=2),
                                  dict(stride=(2, 1), padding=(0, 1), output_padding=(1, 0))])
def test_conv_transpose2d_of_int64_is_the_adjoint_of_conv2d(case):
    rng = np.random.default_rng(3)
    x = rng.integers(-9, 10, (2, 4, 4, 5))
    w = rng.integers(-9, 10, (4, 3, 3, 2))
    b = rng.integers(-9, 10, 3 * case.get("groups", 1))

    def program(lib):
        F = cF if lib is cx else tF
        return F.conv_transpose2d(lib.tensor(x), lib.tensor(w), lib.tensor(b), **case)
    got = program(cx)
    assert got.dtype == cx.int64
    exact = cF.conv_transpose2d(cx.tensor(x, dtype=cx.float64), cx.tensor(w, dtype=cx.float64),
                                cx.tensor(b, dtype=cx.float64), **case).numpy()
    np.testing.assert_array_equal(got.numpy(), exact.astype(np.int64))
    _assert_same_outcome(program)


@pytest.mark.disagreement("D70")
@pytest.mark.parametrize("dtype, kernel", [("int32", "slow_conv_transpose2d_out_cpu"),
                                           ("uint8", "slow_conv_transpose2d_out_cpu")])
def test_conv_transpose2d_of_int32_and_uint8_is_not_implemented(dtype, kernel):
    def program(lib):
        F = cF if lib is cx else tF
        dt = getattr(lib, dtype)
        return F.conv_transpose2d(lib.ones(1, 1, 2, 2, dtype=dt), lib.ones(1, 1, 2, 2, dtype=dt))
    with pytest.raises(NotImplementedError, match=kernel):
        program(cx)
    _assert_same_outcome(program)


@pytest.mark.disagreement("D70")
@pytest.mark.parametrize("x_dtype, w_dtype, b_dtype", [("int64", "float32", None), ("float64", "float32", "float32"),
                                                       ("float64", "float64", "float32"), ("int64", "int64", "float32"),
                                                       ("float32", "float32", "int64")])
def test_conv2d_dtype_mismatches_raise_torchs_errors(x_dtype, w_dtype, b_dtype):
    def program(lib):
        F = cF if lib is cx else tF
        return F.conv2d(lib.ones(1, 1, 3, 3, dtype=getattr(lib, x_dtype)), lib.ones(1, 1, 2, 2, dtype=getattr(lib, w_dtype)),
                        None if b_dtype is None else lib.ones(1, dtype=getattr(lib, b_dtype)))
    with pytest.raises(RuntimeError, match="should be the same|expected scalar type"):
        program(cx)
    _assert_same_outcome(program)


@pytest.mark.disagreement("D66")
@pytest.mark.parametrize("x_dtype, b_dtype", [("float64", "float32"), ("float32", "float64"), ("float32", "int64"),
                                              ("float32", "bool"), ("int64", "float32")])
@pytest.mark.parametrize("batch", [None, 1, 2])
def test_conv_transpose2d_adds_a_bias_of_another_dtype_as_torchs_slow_path(x_dtype, b_dtype, batch):
    rng = np.random.default_rng(2)
    shape = (3, 4, 4) if batch is None else (batch, 3, 4, 4)
    x = rng.integers(-3, 4, shape).astype(np.float64) / 4
    w = rng.integers(-3, 4, (3, 2, 3, 3)).astype(np.float64) / 4
    b = np.array([1 / 3, -2.0])

    def program(lib):
        F = cF if lib is cx else tF
        xd = getattr(lib, x_dtype)
        return F.conv_transpose2d(lib.tensor(x).to(xd), lib.tensor(w).to(xd), lib.tensor(b).to(getattr(lib, b_dtype)),
                                  stride=2, padding=1, output_padding=1)
    oneDNN = x_dtype == "float32" and batch == 2
    if oneDNN or x_dtype == "int64":
        with pytest.raises(RuntimeError, match="should be the same or input should be a MKLDNN|can't be cast"):
            program(cx)
    else:
        got = program(cx)
        assert got.dtype == getattr(cx, x_dtype)
        bias = np.asarray(cx.tensor(b).to(getattr(cx, b_dtype)).numpy(), np.float64)
        plain = cF.conv_transpose2d(cx.tensor(x), cx.tensor(w), None, stride=2, padding=1, output_padding=1).numpy()
        expected = (plain + bias.reshape(-1, 1, 1)).astype(x_dtype)       # one rounding, in the output's dtype
        np.testing.assert_array_equal(got.numpy(), expected)
    _assert_same_outcome(program)


@pytest.mark.disagreement("D66")
def test_conv_transpose2d_gradient_of_a_bias_of_another_dtype_keeps_its_dtype():
    x = cx.ones(1, 1, 2, 2, dtype=cx.float64, requires_grad=True)
    w = cx.ones(1, 2, 2, 2, dtype=cx.float64, requires_grad=True)
    b = cx.tensor([0.5, -1.0], requires_grad=True)
    y = cF.conv_transpose2d(x, w, b)
    assert y.dtype == cx.float64
    y.sum().backward()
    assert b.grad.dtype == cx.float32
    np.testing.assert_array_equal(b.grad.numpy(), [9.0, 9.0])      # 3x3 output positions per channel
    np.testing.assert_array_equal(x.grad.numpy(), np.full((1, 1, 2, 2), 8.0))


def test_convolutions_write_channels_last_where_torch_does():
    rng = np.random.default_rng(9)
    for dt in (torch.float32, torch.float64):
        x = torch.tensor(rng.standard_normal((2, 3, 5, 6)), dtype=dt)
        w = torch.tensor(rng.standard_normal((4, 3, 3, 3)), dtype=dt)
        plain = torch.nn.functional.conv2d(x, w)
        assert plain.stride() == (48, 12, 4, 1)
        for a, b in ((x.contiguous(memory_format=torch.channels_last), w),
                     (x, w.contiguous(memory_format=torch.channels_last))):
            y = torch.nn.functional.conv2d(a, b)
            assert y.stride() == (48, 1, 16, 4)
            np.testing.assert_allclose(y.numpy(), plain.numpy(), rtol=1e-5, atol=1e-5)
        t = torch.nn.functional.conv_transpose2d(x.contiguous(memory_format=torch.channels_last),
                                                 torch.tensor(rng.standard_normal((3, 4, 3, 3)), dtype=dt))
        assert t.stride() == (224, 1, 32, 4)
        # conv1d: a transposed weight decides, a permuted input does not (torch
        # makes the 3-D input contiguous first)
        w1 = torch.tensor(rng.standard_normal((4, 2, 3)), dtype=dt).transpose(1, 2)
        assert torch.nn.functional.conv1d(torch.tensor(rng.standard_normal((2, 3, 7)), dtype=dt), w1).stride() \
            == (24, 1, 4)
        permuted = torch.tensor(rng.standard_normal((2, 7, 3)), dtype=dt).transpose(1, 2)
        assert torch.nn.functional.conv1d(permuted, torch.tensor(rng.standard_normal((4, 3, 2)), dtype=dt)).stride() \
            == (24, 6, 1)


@pytest.mark.parametrize("fn", ["conv1d", "conv_transpose1d"])
@pytest.mark.parametrize("layout", ["expanded", "transposed"])
def test_one_dim_convolution_saves_its_input_and_checks_its_version(fn, layout):
    base = torch.tensor([[[1.125], [-0.25]], [[0.0], [-0.1875]]], dtype=torch.float64)
    if layout == "expanded":
        x, written = base.expand(2, 2, 5), base
    else:
        x = torch.arange(20.0, dtype=torch.float64).reshape(2, 5, 2).transpose(1, 2)
        written = x
    w = torch.ones(2, 2, 3, dtype=torch.float64)
    b = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    y = getattr(F, fn)(x, w, b, padding=1)
    with torch.no_grad():
        written.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_double_backward_through_one_convolution_gradient_frees_the_others():
    # torch's convolution_backward is one node for the input's and the
    # weight's gradient: a backward through either frees both
    x = torch.randn(1, 2, 5, 5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 2, 2, 3, dtype=torch.float64, requires_grad=True)
    gw, gx = torch.autograd.grad(torch.nn.functional.conv2d(x, w).mean(), [w, x], create_graph=True)
    gw.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        (gx.clone() * 2).sum().backward()


def test_a_conv_of_an_input_of_the_wrong_rank_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="3D \\(unbatched\\) or 4D \\(batched\\) input"):
        torch.nn.Conv2d(1, 1, 3)(torch.ones(5, 5))
    with pytest.raises(ValueError):
        torch.nn.Conv2d(1, 1, 3)(torch.ones(5, 5))
