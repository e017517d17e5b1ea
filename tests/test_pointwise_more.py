"""hypot, logaddexp, logaddexp2, xlogy, copysign, the bit shifts, and
tensor_split / hsplit / vsplit / dsplit (cextend/_ops/pointwise_more.py,
cextend/_ops/splitting.py).

Each test states its answer with numpy in float64 (or Python's integers for
the shifts) and runs the same program on cextend and, where torch 2.13 is
installed, on torch (`each_lib`); `with_torch` tests compare the two directly
(float32 values, special values, gradients, error messages).
"""
import math

import numpy as np
import pytest

import cextend as cx
from cextend.autograd import gradcheck, gradgradcheck

from parity_helpers import each_lib, inf, nan, real_torch, with_torch

RNG = np.random.default_rng(20240524)


def _np(t):
    return np.array(t.detach().numpy())


def _t(lib, a, dtype=None, requires_grad=False):
    t = lib.from_numpy(np.array(a))
    if dtype is not None:
        t = t.to(getattr(lib, dtype))
    return t.requires_grad_(requires_grad) if requires_grad else t


# -- numpy float64 references ------------------------------------------------------------------

def _ref_xlogy(x, y):
    with np.errstate(all="ignore"):
        return np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log(y)))


REFERENCES = {
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2,
    "xlogy": _ref_xlogy,
    "copysign": np.copysign,
}


def _ref_grads(name, x, y):
    """d/dx and d/dy of the op in closed form (float64), where it is differentiable."""
    with np.errstate(all="ignore"):
        if name == "hypot":
            r = np.hypot(x, y)
            return x / r, y / r
        if name == "logaddexp":
            return 1 / (1 + np.exp(y - x)), 1 / (1 + np.exp(x - y))
        if name == "logaddexp2":
            return 1 / (1 + 2.0 ** (y - x)), 1 / (1 + 2.0 ** (x - y))
        if name == "xlogy":
            return np.log(y) + 0 * x, x / y
        if name == "copysign":
            return np.copysign(1.0, x) * np.copysign(1.0, y), 0 * y


SHAPES = [((3, 4), (3, 4)), ((5, 1, 7), (3, 1)), ((2, 3), ()), ((0, 3), (3,)), ((1,), (11,)), ((13,), (13,))]


@each_lib
@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_values_and_gradients_match_the_numpy_reference(lib, name, shapes):
    sa, sb = shapes
    a = RNG.uniform(-3, 3, sa)
    b = RNG.uniform(0.25, 3, sb) if name == "xlogy" else RNG.uniform(-3, 3, sb)
    if name == "copysign":
        a = np.where(np.abs(a) < 0.1, 0.5, a)
    x, y = _t(lib, a, requires_grad=True), _t(lib, b, requires_grad=True)
    out = getattr(lib, name)(x, y)
    want = REFERENCES[name](a, b)
    assert out.dtype == lib.float64 and tuple(out.shape) == want.shape
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-14)
    if out.numel():
        gx, gy = lib.autograd.grad(out.sum(), [x, y])
        wx, wy = _ref_grads(name, a, b)
        shape = np.broadcast_shapes(sa, sb)
        np.testing.assert_allclose(_np(gx), _sum_to(np.broadcast_to(wx, shape), sa), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(_np(gy), _sum_to(np.broadcast_to(wy, shape), sb), rtol=1e-12, atol=1e-14)


def _sum_to(a, shape):
    """a summed over the dims broadcasting added to shape (numpy's reduction, float64)."""
    lead = a.ndim - len(shape)
    a = a.sum(axis=tuple(range(lead))) if lead else a
    keep = tuple(i for i, n in enumerate(shape) if n == 1 and a.shape[i] != 1)
    return a.sum(axis=keep, keepdims=True) if keep else a


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_gradcheck_and_gradgradcheck_on_strided_inputs(name):
    a = RNG.uniform(-2, 2, (4, 3))
    b = RNG.uniform(0.5, 2, (3, 4)) if name == "xlogy" else RNG.uniform(-2, 2, (3, 4))
    if name == "copysign":
        a = np.where(np.abs(a) < 0.2, 0.7, a)
    x = cx.from_numpy(a).requires_grad_()          # used transposed: a non-contiguous operand
    y = cx.from_numpy(np.repeat(b, 2, axis=1))[:, ::2].requires_grad_(False).detach().requires_grad_()

    def fn(p, q):
        return getattr(cx, name)(p.t(), q)
    assert gradcheck(fn, (x, y))
    assert gradgradcheck(fn, (x, y))


SPECIAL = np.array([0.0, -0.0, 1.0, -2.5, inf, -inf, nan, 1e308, -1e-310, 3.0])


@each_lib
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_special_values_follow_torch_kernels(lib, name):
    a = np.repeat(SPECIAL, SPECIAL.size)
    b = np.tile(SPECIAL, SPECIAL.size)
    out = _np(getattr(lib, name)(_t(lib, a), _t(lib, b)))
    with np.errstate(all="ignore"):
        want = REFERENCES[name](a, b)
    if name in ("logaddexp", "logaddexp2"):
        # torch's kernel: equal infinities give themselves; numpy agrees there
        same_inf = np.isinf(a) & (a == b)
        assert np.array_equal(out[same_inf], a[same_inf])
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=0, equal_nan=True)
    zeros = want == 0
    assert np.array_equal(np.signbit(out[zeros]), np.signbit(want[zeros]))


@each_lib
def test_xlogy_nan_and_zero_rules_and_number_operands(lib):
    x = _t(lib, [0.0, 0.0, 0.0, 2.0, nan, 1.0])
    y = _t(lib, [0.0, -1.0, nan, 0.0, 1.0, inf])
    np.testing.assert_array_equal(_np(lib.xlogy(x, y)), [0.0, 0.0, nan, -inf, nan, inf])
    np.testing.assert_allclose(_np(lib.xlogy(2.0, _t(lib, [1.0, 4.0]))), [0.0, 2 * math.log(4)], rtol=1e-15)
    np.testing.assert_allclose(_np(lib.xlogy(_t(lib, [3.0, 0.0]), 2)), [3 * math.log(2), 0.0], rtol=1e-15)
    np.testing.assert_allclose(_np(_t(lib, [1.5]).xlogy(3.0)), [1.5 * math.log(3)], rtol=1e-15)


@each_lib
@pytest.mark.parametrize("expr,dtype", [
    ("xlogy(i, i)", "float32"), ("xlogy(b, b)", "float32"), ("xlogy(u, u)", "float32"), ("xlogy(i, d)", "float64"),
    ("xlogy(f, d0)", "float32"), ("xlogy(3, i)", "float32"), ("copysign(i, i)", "float32"),
    ("copysign(u, -1)", "float32"), ("copysign(f, d)", "float64"), ("hypot(i, f)", "float32"),
    ("hypot(f, d0)", "float32"), ("logaddexp(d, f)", "float64"), ("logaddexp2(i, f)", "float32"),
])
def test_result_dtypes_follow_promotion(lib, expr, dtype):
    env = dict(i=lib.tensor([1, 2, 3]), u=lib.tensor([1, 2, 200], dtype=lib.uint8), b=lib.tensor([True, False, True]),
               f=lib.tensor([1.0, -2.0, 3.0]), d=lib.tensor([0.5, 2.0, -1.0], dtype=lib.float64),
               d0=lib.tensor(2.0, dtype=lib.float64))
    name, args = expr.split("(", 1)
    out = eval("lib.%s(%s" % (name, args), dict(env, lib=lib))
    assert out.dtype == getattr(lib, dtype)


@each_lib
@pytest.mark.parametrize("expr,error,words", [
    ("hypot(i, i)", NotImplementedError, "\"hypot_cpu\" not implemented for 'Long'"),
    ("logaddexp(b, b)", NotImplementedError, "\"logaddexp_cpu\" not implemented for 'Bool'"),
    ("logaddexp2(u, u)", NotImplementedError, "\"logaddexp2_cpu\" not implemented for 'Byte'"),
    ("hypot(f, 2.0)", TypeError, "must be Tensor"),
    ("logaddexp(2.0, f)", TypeError, "must be Tensor"),
    ("hypot(f, torch.ones(2))", RuntimeError, "must match the size"),
    ("xlogy(f, torch.ones(2))", RuntimeError, "must match the size"),
    ("i.clone().copysign_(f)", RuntimeError, "result type Float can't be cast to the desired output type Long"),
    ("i.clone().xlogy_(2)", RuntimeError, "result type Float can't be cast to the desired output type Long"),
    ("bitwise_left_shift(f, i)", NotImplementedError, "\"lshift_cpu\" not implemented for 'Float'"),
    ("bitwise_right_shift(i, 1.5)", NotImplementedError, "\"rshift_cpu\" not implemented for 'Float'"),
    ("bitwise_left_shift(b, b)", NotImplementedError, "\"lshift_cpu\" not implemented for 'Bool'"),
    ("i.clone().bitwise_left_shift_(torch.ones(2, 3, dtype=torch.int64))", RuntimeError, "doesn't match the broadcast shape"),
])
def test_errors_name_the_problem(lib, expr, error, words):
    env = dict(i=lib.tensor([1, 2, 3]), u=lib.tensor([1, 2, 3], dtype=lib.uint8), b=lib.tensor([True, False, True]),
               f=lib.tensor([1.0, -2.0, 3.0]), torch=lib)
    code = expr if expr.startswith("i.") else "torch." + expr
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        eval(code, env)


@each_lib
def test_inplace_and_out_forms(lib):
    a, b = RNG.uniform(-2, 2, (3, 4)), RNG.uniform(0.5, 2, (4,))
    for name in ("hypot", "xlogy", "copysign"):
        x = _t(lib, a)
        version = x._version
        assert getattr(x, name + "_")(_t(lib, b)) is x and x._version > version
        np.testing.assert_allclose(_np(x), REFERENCES[name](a, b), rtol=1e-12)
    for name in ("hypot", "logaddexp", "logaddexp2", "xlogy", "copysign"):
        out = lib.empty(3, 4, dtype=lib.float64)
        assert getattr(lib, name)(_t(lib, a), _t(lib, b), out=out) is out
        np.testing.assert_allclose(_np(out), REFERENCES[name](a, b), rtol=1e-12)


@each_lib
def test_grad_fn_names_follow_the_overloads(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.tensor([0.5, 3.0], requires_grad=True)
    names = [type(t.grad_fn).__name__ for t in (lib.xlogy(x, y), lib.xlogy(2.0, y), lib.xlogy(x, 2.0),
                                                 lib.copysign(x, y), lib.copysign(x, -1.0), lib.hypot(x, y),
                                                 lib.logaddexp(x, y), lib.logaddexp2(x, y))]
    assert names == ["XlogyBackward0", "XlogyBackward1", "XlogyBackward2", "CopysignBackward0", "CopysignBackward1",
                     "HypotBackward0", "LogaddexpBackward0", "Logaddexp2Backward0"]


@each_lib
def test_gradients_at_special_points(lib):
    # hypot at the origin: 0/0; xlogy's x-gradient masked where x == 0 and y <= 0;
    # copysign: 0 where x == 0, the other operand gets exact zeros
    x = lib.tensor([0.0, 0.0, 1.0, 0.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([0.0, -1.0, 2.0, 0.0], dtype=lib.float64, requires_grad=True)
    g = lib.tensor([1.0, 2.0, inf, 1.0], dtype=lib.float64)
    gx, gy = lib.autograd.grad(lib.hypot(x, y), [x, y], g)
    assert np.isnan(_np(gx)[0]) and np.isnan(_np(gy)[0])
    gx, gy = lib.autograd.grad(lib.xlogy(x, y), [x, y], g)
    np.testing.assert_array_equal(_np(gx), [0.0, 0.0, inf * math.log(2), 0.0])
    gx, gy = lib.autograd.grad(lib.copysign(x, y), [x, y], g)
    np.testing.assert_array_equal(_np(gx), [0.0, 0.0, inf, 0.0])
    np.testing.assert_array_equal(_np(gy), [0.0, 0.0, 0.0, 0.0])


@with_torch
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_float32_values_and_gradients_match_torch(name):
    a = RNG.uniform(-30, 30, (7, 5)).astype(np.float32)
    b = (RNG.uniform(0.01, 30, (5,)) if name == "xlogy" else RNG.uniform(-30, 30, (5,))).astype(np.float32)
    results = []
    for lib in (cx, real_torch):
        x = lib.from_numpy(a.copy()).requires_grad_()
        y = lib.from_numpy(b.copy()).requires_grad_()
        out = getattr(lib, name)(x.t().contiguous().t(), y)
        out.backward(lib.ones_like(out))
        results.append([_np(out), _np(x.grad), _np(y.grad)])
    for ours, theirs in zip(*results):
        assert ours.dtype == theirs.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-6)


# -- bit shifts ----------------------------------------------------------------------------------

def _ref_shift(a, b, dtype, left):
    """C's shift on the value's bits, with torch's answers for counts outside [0, width)."""
    bits = np.dtype(dtype).itemsize * 8
    signed = np.dtype(dtype).kind == "i"
    out = []
    for x, n in zip(np.asarray(a, dtype).reshape(-1).tolist(), np.asarray(b, dtype).reshape(-1).tolist()):
        count = n - (1 << bits) if not signed and n >= 1 << (bits - 1) else n      # torch reads it as signed
        if left:
            value = 0 if count < 0 or count >= bits else (x << count) % (1 << bits)
        else:
            limit = bits - 1 if signed else bits
            value = x >> (limit if count < 0 or count >= limit else count)
        if signed and value >= 1 << (bits - 1):
            value -= 1 << bits
        out.append(value)
    return np.array(out, dtype).reshape(np.shape(a))


@each_lib
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("left", [True, False], ids=["left", "right"])
def test_shifts_follow_c_with_torchs_out_of_range_counts(lib, dtype, left):
    lo = 0 if dtype == "uint8" else -(2 ** 20)
    a = RNG.integers(lo, 2 ** 20 if dtype != "uint8" else 256, 61).astype(dtype)
    a[:3] = [0, np.iinfo(dtype).max, np.iinfo(dtype).min]
    counts = np.arange(-5, 70)[RNG.integers(0, 75, 61)].astype(np.int64)
    counts[:6] = [0, 1, -1, 63, 64, 200]
    b = counts.astype(dtype)
    x, y = _t(lib, a), _t(lib, b)
    out = x << y if left else x >> y
    assert out.dtype == getattr(lib, dtype)
    np.testing.assert_array_equal(_np(out), _ref_shift(a, b, dtype, left))
    fn = lib.bitwise_left_shift if left else lib.bitwise_right_shift
    np.testing.assert_array_equal(_np(fn(x, y)), _np(out))


@each_lib
def test_shift_operators_numbers_promotion_and_inplace(lib):
    i = lib.tensor([[1, -2, 3], [40, -50, 7]])
    u = lib.tensor([1, 2, 200], dtype=lib.uint8)
    np.testing.assert_array_equal(_np(i << 2), [[4, -8, 12], [160, -200, 28]])
    np.testing.assert_array_equal(_np(i >> 1), [[0, -1, 1], [20, -25, 3]])
    np.testing.assert_array_equal(_np(3 << lib.tensor([0, 1, 62])), [3, 6, (3 << 62) - (1 << 64)])
    np.testing.assert_array_equal(_np(200 >> lib.tensor([1, 3, 70])), [100, 25, 0])
    np.testing.assert_array_equal(_np(True << lib.tensor([1, 2])), [2, 4])
    out = i << u                                   # int64 << uint8: int64
    assert out.dtype == lib.int64
    np.testing.assert_array_equal(_np(out), [[2, -8, 0], [80, -200, 0]])
    assert (u << 1).dtype == lib.uint8
    np.testing.assert_array_equal(_np(u << 1), [2, 4, 144])
    np.testing.assert_array_equal(_np(u << 300), [0, 0, 0])          # 300 wraps to 44 in uint8: >= 8
    np.testing.assert_array_equal(_np(u >> -1), [0, 0, 0])
    j = i.clone()
    version = j._version
    j <<= 1
    j >>= lib.tensor([1, 0, 2])
    assert j._version == version + 2
    np.testing.assert_array_equal(_np(j), [[1, -4, 1], [40, -100, 3]])
    k = i.clone()
    assert k.bitwise_left_shift_(1) is k and k.bitwise_right_shift_(1) is k
    np.testing.assert_array_equal(_np(k), _np(i))
    o = lib.empty(2, 3, dtype=lib.int64)
    assert lib.bitwise_left_shift(i, 1, out=o) is o
    np.testing.assert_array_equal(_np(o), _np(i) * 2)
    e = lib.zeros(0, 3, dtype=lib.int64) << lib.tensor([1, 2, 3])
    assert tuple(e.shape) == (0, 3)


def test_shift_reflected_operators_return_notimplemented_for_other_types():
    i = cx.tensor([1, 2])
    assert i.__lshift__("x") is NotImplemented and i.__rrshift__(object()) is NotImplemented
    with pytest.raises(TypeError):
        i << "x"


# -- tensor_split, hsplit, vsplit, dsplit ----------------------------------------------------------

def _ref_bounds(size, spec):
    """(start, stop) of each piece: sections as numpy's array_split, indices with torch's slice rules."""
    if isinstance(spec, int):
        step, extra = divmod(size, spec)
        bounds, start = [], 0
        for i in range(spec):
            stop = start + step + (i < extra)
            bounds.append((start, stop))
            start = stop
        return bounds

    def clamp(lo, hi):
        lo = lo + size if lo < 0 else lo
        hi = hi + size if hi < 0 else hi
        lo = min(max(lo, 0), size)
        return lo, min(max(hi, lo), size)
    starts = [0] + list(spec)
    return [clamp(lo, hi) for lo, hi in zip(starts, list(spec) + [size])]


def _ref_tensor_split(a, spec, dim):
    return [np.take(a, range(lo, hi), axis=dim) for lo, hi in _ref_bounds(a.shape[dim], spec)]


SPLITS = [((7, 3), 3, 0), ((7, 3), 2, 1), ((5, 11), 4, -1), ((3,), 5, 0), ((0, 4), 3, 0), ((2, 13, 2), 13, 1),
          ((7, 3), [1, 4], 0), ((7, 3), (5, 2, -1), 0), ((5, 11), [-3, 20], 1), ((4, 5), [], 0), ((4, 5), [0, 0], 1)]


@each_lib
@pytest.mark.parametrize("shape,spec,dim", SPLITS, ids=str)
def test_tensor_split_matches_the_slicing_reference(lib, shape, spec, dim):
    a = RNG.standard_normal(shape)
    x = _t(lib, a, requires_grad=True)
    pieces = lib.tensor_split(x, spec, dim)
    want = _ref_tensor_split(a, spec, dim)
    assert len(pieces) == len(want)
    for p, w in zip(pieces, want):
        assert tuple(p.shape) == w.shape
        np.testing.assert_array_equal(_np(p), w)
        assert p._base is x and type(p.grad_fn).__name__ == "SliceBackward0"
    weights = [RNG.standard_normal(w.shape) for w in want]
    total = sum((p * _t(lib, w)).sum() for p, w in zip(pieces, weights))
    total.backward()
    expect = np.zeros(shape)
    for w, (lo, hi) in zip(weights, _ref_bounds(shape[dim], spec)):
        idx = [slice(None)] * len(shape)
        idx[dim] = slice(lo, hi)
        expect[tuple(idx)] += w
    np.testing.assert_array_equal(_np(x.grad), expect)


@each_lib
def test_tensor_split_pieces_are_views_and_other_spellings(lib):
    x = lib.arange(24.0).reshape(4, 6)
    a, b = x.tensor_split(2, dim=1)
    a.mul_(-1)
    assert x[0, 1].item() == -1.0 and x[0, 3].item() == 3.0 and x._version == a._version == b._version
    np.testing.assert_array_equal(_np(b), np.arange(24.0).reshape(4, 6)[:, 3:])
    assert [tuple(p.shape) for p in lib.tensor_split(x, lib.tensor(3))] == [(2, 6), (1, 6), (1, 6)]
    assert [tuple(p.shape) for p in lib.tensor_split(x, lib.tensor([1, 5]), dim=1)] == [(4, 1), (4, 4), (4, 1)]
    assert [tuple(p.shape) for p in x.tensor_split(indices=[1])] == [(1, 6), (3, 6)]
    assert [tuple(p.shape) for p in x.tensor_split(sections=3, dim=1)] == [(4, 2)] * 3
    t = lib.arange(24.0).reshape(6, 4).t()                 # non-contiguous input
    np.testing.assert_array_equal(_np(lib.tensor_split(t, 3, 1)[1]), np.arange(24.0).reshape(6, 4).T[:, 2:4])


@each_lib
@pytest.mark.parametrize("name,shape,spec,dim", [
    ("hsplit", (3, 6), 3, 1), ("hsplit", (6,), [2, 5], 0), ("hsplit", (2, 4, 3), (1, 3), 1),
    ("vsplit", (6, 2), 2, 0), ("vsplit", (5, 2, 1), [3], 0), ("dsplit", (2, 1, 4), 2, 2), ("dsplit", (1, 2, 5, 2), [1, 3], 2),
])
def test_hsplit_vsplit_dsplit(lib, name, shape, spec, dim):
    a = RNG.standard_normal(shape)
    pieces = getattr(lib, name)(_t(lib, a), spec)
    want = _ref_tensor_split(a, spec, dim)
    assert [tuple(p.shape) for p in pieces] == [w.shape for w in want]
    for p, w in zip(pieces, want):
        np.testing.assert_array_equal(_np(p), w)
    assert [tuple(p.shape) for p in getattr(_t(lib, a), name)(spec)] == [w.shape for w in want]


@each_lib
@pytest.mark.parametrize("expr,error,words", [
    ("torch.tensor_split(x, 0)", RuntimeError, "number of sections must be larger than 0, got 0"),
    ("torch.tensor_split(s, 2)", RuntimeError, "expected at least a 1-dimensional tensor, but got a tensor with 0 dims"),
    ("torch.tensor_split(x, torch.tensor([1.0]))", RuntimeError, "to have dtype of long, but got Float"),
    ("torch.tensor_split(x, torch.tensor([[1]]))", RuntimeError, "zero-dimensional or one-dimensional tensor, but got a tensor with 2 dims"),
    ("torch.tensor_split(x, 2, 2)", IndexError, "Dimension out of range"),
    ("torch.tensor_split(x, 2.5)", TypeError, "tensor_split"),
    ("torch.hsplit(x, 4)", RuntimeError, "torch.hsplit attempted to split along dimension 1, but the size of the dimension 6 is not divisible by the split_size 4!"),
    ("torch.hsplit(x, 0)", RuntimeError, "not divisible by the split_size 0!"),
    ("torch.hsplit(s, 1)", RuntimeError, "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!"),
    ("torch.vsplit(torch.ones(4), 2)", RuntimeError, "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with 1 dimensions!"),
    ("torch.dsplit(x, 1)", RuntimeError, "torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with 2 dimensions!"),
    ("torch.vsplit(x, 3)", RuntimeError, "torch.vsplit attempted to split along dimension 0, but the size of the dimension 4 is not divisible by the split_size 3!"),
    ("torch.hsplit(x, -6)", RuntimeError, "number of sections must be larger than 0, got -6"),
])
def test_split_errors(lib, expr, error, words):
    env = dict(torch=lib, x=lib.ones(4, 6), s=lib.tensor(1.0))
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        eval(expr, env)


@pytest.mark.parametrize("name,args", [("tensor_split", (3, 1)), ("tensor_split", ([1, 3], 0)), ("hsplit", ([2],)),
                                       ("vsplit", (2,)), ("dsplit", (1,))])
def test_split_gradcheck(name, args):
    x = cx.from_numpy(RNG.standard_normal((4, 5, 2))).requires_grad_()
    assert gradcheck(lambda t: getattr(cx, name)(t, *args), (x,))
    assert gradgradcheck(lambda t: getattr(cx, name)(t, *args), (x,))
