"""out= rules, isclose/allclose/equal and printing, as torch 2.13 defines them.

Each test states torch's answer (dtype rules and messages read from ATen,
numbers worked out by hand) and, when torch is installed, also runs the
same call in torch.  Found by the differential tester (DISAGREEMENTS.md
D39, D40, D46, D47, D52, D60) and by probing every op's out= with
mismatched dtypes.
"""
import warnings

import numpy as np
import pytest

import cextend as cx

try:
    import torch
except ImportError:
    torch = None

LIBS = [cx] + ([torch] if torch is not None else [])


def _outcome(fn):
    try:
        fn()
        return None
    except Exception as error:      # noqa: BLE001 - the type is what is compared
        return type(error)


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
@pytest.mark.parametrize("op", ["abs", "neg", "round", "trunc", "floor", "ceil", "sign", "sgn", "frac"])
def test_dtype_keeping_unary_ops_refuse_an_out_of_another_dtype(lib, op):
    x = lib.tensor([1.5, -2.5, 0.25], dtype=lib.float64)
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        getattr(lib, op)(x, out=lib.zeros(3))
    out = lib.zeros(3, dtype=lib.float64)
    getattr(lib, op)(x, out=out)
    expected = {"abs": np.abs, "neg": np.negative, "round": np.round, "trunc": np.trunc, "floor": np.floor,
                "ceil": np.ceil, "sign": np.sign, "sgn": np.sign, "frac": lambda a: a - np.trunc(a)}[op]
    np.testing.assert_array_equal(out.numpy(), expected(np.array([1.5, -2.5, 0.25])))


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_float_unary_ops_cast_into_out(lib):
    x = lib.tensor([0.5, 1.0], dtype=lib.float64)
    out = lib.zeros(2)
    lib.exp(x, out=out)
    assert out.dtype == lib.float32
    np.testing.assert_allclose(out.numpy(), np.exp([0.5, 1.0]).astype(np.float32))


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
@pytest.mark.parametrize("call", [
    lambda lib, o: lib.mm(lib.ones(2, 3, dtype=lib.float64), lib.ones(3, 2, dtype=lib.float64), out=o),
    lambda lib, o: lib.matmul(lib.ones(2, 3, dtype=lib.float64), lib.ones(3, 2, dtype=lib.float64), out=o),
    lambda lib, o: lib.tril(lib.ones(2, 2, dtype=lib.float64), out=o),
    lambda lib, o: lib.gather(lib.ones(2, 2, dtype=lib.float64), 0, lib.tensor([[0, 1], [1, 0]]), out=o),
], ids=["mm", "matmul", "tril", "gather"])
def test_structured_kernels_require_outs_dtype(lib, call):
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got float instead"):
        call(lib, lib.zeros(2, 2))
    out = lib.zeros(2, 2, dtype=lib.float64)
    call(lib, out)
    assert out.dtype == lib.float64 and float(out.sum()) > 0


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_cumsum_scans_in_outs_dtype(lib):
    x = lib.tensor([1.5, 2.5, -1.25])
    out = lib.zeros(3, dtype=lib.int64)
    lib.cumsum(x, 0, out=out)
    assert out.tolist() == [1, 3, 2]        # 1 + 2 + (-1): each element truncated first
    lib.cumprod(x, 0, out=out)
    assert out.tolist() == [1, 2, -2]
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got long int"):
        lib.cumsum(x, 0, dtype=lib.float64, out=out)
    with pytest.raises(NotImplementedError, match="cumsum_out_cpu"):
        lib.cumsum(x, 0, out=lib.zeros(3, dtype=lib.bool))


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_ops_without_an_out_overload_refuse_out(lib):
    x = lib.tensor([1.0, -3.0])
    for call in (lambda: lib.relu(x, out=lib.zeros(2)), lambda: lib.sum(x, out=lib.tensor(0.0)),
                 lambda: lib.prod(x, out=lib.tensor(0.0)),
                 lambda: lib.where(lib.tensor([True, False]), x, 0.5, out=lib.zeros(2))):
        with pytest.raises(TypeError):
            call()
    # over a dim they have one, and reduce in out's dtype: each element is
    # truncated to int64 first (1 * 2, 1 + 2), not the float result after
    out = lib.zeros((), dtype=lib.int64)
    lib.prod(lib.tensor([1.5, 2.5], dtype=lib.float64), 0, out=out)
    assert out.item() == 2
    lib.sum(lib.tensor([1.5, 2.5], dtype=lib.float64), 0, out=out)
    assert out.item() == 3
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got float instead"):
        lib.sum(x, 0, dtype=lib.float64, out=lib.zeros(()))


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_argmax_nonzero_isposinf_take_their_fixed_out_dtypes(lib):
    x = lib.tensor([[1.0, float("inf")], [-2.0, 0.0]])
    out = lib.zeros((), dtype=lib.int64)
    lib.argmax(x, out=out)
    assert out.item() == 1
    with pytest.raises(RuntimeError, match="long int"):
        lib.argmax(x, out=lib.zeros(()))
    with pytest.raises(RuntimeError, match="non-boolean outputs"):
        lib.isposinf(x, out=lib.zeros(2, 2))
    flags = lib.zeros(2, 2, dtype=lib.bool)
    lib.isposinf(x, out=flags)
    assert flags.tolist() == [[False, True], [False, False]]
    with pytest.raises(RuntimeError, match="nonzero: Expected out tensor to have scalar type Long"):
        lib.nonzero(x, out=lib.zeros(0))
    with pytest.raises(RuntimeError, match="take\\(\\): self and out expected to have the same dtype"):
        lib.take(x, lib.tensor([0]), out=lib.zeros(1, dtype=lib.float64))
    got = lib.zeros(2)
    lib.take(x, lib.tensor([2, 1]), out=got)
    assert got.tolist() == [-2.0, float("inf")]


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_max_without_dim_casts_into_out_when_it_can(lib):
    x = lib.tensor([1.5, 2.5], dtype=lib.float64)
    out = lib.zeros(())
    lib.max(x, out=out)
    assert out.dtype == lib.float32 and out.item() == 2.5
    with pytest.raises(RuntimeError):
        lib.max(x, out=lib.zeros((), dtype=lib.int64))


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_resizing_a_view_out_restrides_it_inside_its_base(lib):
    base = lib.zeros(4, 3)
    view = base[::2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.no_grad():
            lib.matmul(lib.ones(2, 3), lib.ones(3, 2), out=view)
    assert tuple(view.shape) == (2, 2) and view.stride() == (2, 1)
    # the view now covers the base's first four elements, contiguously
    np.testing.assert_array_equal(base.numpy().reshape(-1), [3, 3, 3, 3] + [0] * 8)
    view.fill_(7)
    assert base.numpy().reshape(-1)[:5].tolist() == [7, 7, 7, 7, 0]


def test_resizing_a_view_out_beyond_its_storage_says_why():
    view = cx.zeros(2, 2)[:1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="storage is too small"):
            cx.matmul(cx.ones(3, 3), cx.ones(3, 3), out=view)


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_clamp_mixes_a_number_with_a_plain_0d_tensor_only(lib):
    x = lib.tensor([-1.0, 0.5, 2.0])
    assert x.clone().clamp_(lib.tensor(0.0), 1.0).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(TypeError):
        x.clone().clamp_(lib.tensor([0.0, 0.0, 0.0]), 1)
    with pytest.raises(TypeError):
        lib.clamp(x, lib.tensor(0.0, requires_grad=True), 1)


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_add_scales_other_in_the_result_dtype(lib):
    minus_zero = lib.tensor([-0.0])
    for result in (minus_zero.add(0, alpha=-1), minus_zero.add(lib.tensor(0), alpha=-1)):
        assert np.signbit(result.numpy()).all()      # -0.0 + (-1 * 0.0) = -0.0


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_atan2_gradient_at_the_origin_is_zero(lib):
    y = lib.tensor([0.0, 1.0, 0.0], requires_grad=True)
    x = lib.tensor([0.0, 0.0, -0.0], requires_grad=True)
    lib.atan2(y, x).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, -1.0, 0.0])
    with pytest.raises(TypeError, match="must be Tensor"):
        lib.tensor([1.0]).atan2_(0)


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_expand_without_sizes_is_a_type_error(lib):
    with pytest.raises(TypeError):
        lib.tensor(1.0).expand()


# -- isclose / allclose / equal ---------------------------------------------------

def _reference_isclose(a, b, rtol, atol, equal_nan):
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    close = (a == b) | (np.isfinite(a - b) & (np.abs(a - b) <= atol + rtol * np.abs(b)))
    if equal_nan:
        close |= np.isnan(a) & np.isnan(b)
    return close


@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (13, 1)])
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_matches_the_definition_on_random_float64(shape, equal_nan):
    rng = np.random.default_rng(sum(shape) + equal_nan)
    a = rng.standard_normal(shape)
    b = a + rng.choice([0.0, 1e-9, 1e-6, 1e-3, np.nan, np.inf], size=shape) * rng.choice([-1, 1], size=shape)
    a[..., :1] = np.where(rng.random(a[..., :1].shape) < 0.3, np.nan, a[..., :1])
    got = cx.isclose(cx.tensor(a), cx.tensor(b), rtol=1e-5, atol=1e-8, equal_nan=equal_nan).numpy()
    np.testing.assert_array_equal(got, _reference_isclose(a, b, 1e-5, 1e-8, equal_nan))
    assert cx.allclose(cx.tensor(a), cx.tensor(b), equal_nan=equal_nan) is bool(got.all())
    if torch is not None:
        theirs = torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=equal_nan).numpy()
        np.testing.assert_array_equal(got, theirs)


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_isclose_rules(lib):
    t = lib.tensor
    assert lib.isclose(t([1, 2]), t([1, 3]), atol=2).tolist() == [True, True]
    assert lib.isclose(t([True]), t([False]), atol=2).tolist() == [True]
    assert lib.isclose(t([float("inf")]), t([float("inf")])).tolist() == [True]
    assert t([1.5]).isclose(t([1.0]), rtol=0.5).tolist() == [True]     # tolerance measured against other
    assert t([1.0]).isclose(t([1.5]), rtol=0.5).tolist() == [True]
    assert t([1.0]).isclose(t([2.0]), rtol=0.4).tolist() == [False]
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        lib.isclose(t([1]), t([1.0]))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        lib.isclose(t([1.0]), t([1.0]), rtol=-1)
    with pytest.raises(RuntimeError, match="must match the size"):
        lib.allclose(t([1.0, 2.0]), t([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_equal(lib):
    t = lib.tensor
    assert lib.equal(t([1, 2]), t([1.0, 2.0])) is True
    assert lib.equal(t([1, 2]), t([1])) is False
    assert lib.equal(t([float("nan")]), t([float("nan")])) is False
    assert t([[1.0, 2.0]]).t().equal(t([[1.0], [2.0]])) is True


# -- printing ------------------------------------------------------------------------

@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_repr_pads_bools_and_names_dtypes_as_torch(lib):
    name = lib.__name__
    assert repr(lib.tensor([True, True])) == "tensor([True, True])"
    assert repr(lib.tensor([True, False])) == "tensor([ True, False])"
    assert repr(lib.zeros(0, dtype=lib.bool)) == "tensor([], dtype=%s.bool)" % name
    assert repr(lib.zeros(0, dtype=lib.int64)) == "tensor([], dtype=%s.int64)" % name
    lib.set_default_dtype(lib.float64)
    try:
        assert repr(lib.zeros(2, dtype=lib.float64)) == "tensor([0., 0.])"
        assert repr(lib.zeros(2, dtype=lib.float32)) == "tensor([0., 0.], dtype=%s.float32)" % name
    finally:
        lib.set_default_dtype(lib.float32)
