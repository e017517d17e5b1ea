"""The C kernels of a training step (src/generic/training.c): relu, its
backward, add with alpha (axpy) and the fused SGD update.

References are independent of the kernels: exact rational arithmetic
(fractions) rounded once to the dtype for every fused multiply-add, and
numpy's select for relu.  Each kernel must give those bits exactly, on
awkward sizes, and hand strided or foreign operands back to numpy (None /
False) without touching them.
"""
from fractions import Fraction

import numpy as np
import pytest

import cextend as cx
from cextend import _backend

try:
    import torch
except ImportError:
    torch = None

DTYPES = [np.float32, np.float64]
SIZES = [0, 1, 7, 31, 1003]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38, 1.0, -1.0]


def bits(a):
    return np.ascontiguousarray(a).view(np.uint32 if a.dtype == np.float32 else np.uint64)


def sample(rng, dtype, size):
    values = rng.standard_normal(size) * rng.choice([1e-3, 1.0, 1e3], size)
    values[: min(size, len(SPECIAL))] = SPECIAL[: min(size, len(SPECIAL))]
    return values.astype(dtype)


def rounded(exact, dtype):
    """An exact rational rounded once to dtype, to nearest, ties to even (finite values)."""
    guess = np.array(float(exact), dtype)             # within one ulp of the answer
    candidates = [guess, np.nextafter(guess, dtype(-np.inf)), np.nextafter(guess, dtype(np.inf))]
    candidates = [c for c in candidates if np.isfinite(c)]
    best = min(abs(Fraction(float(c)) - exact) for c in candidates)
    ties = [c for c in candidates if abs(Fraction(float(c)) - exact) == best]
    return min(ties, key=lambda c: int(bits(np.array([c], dtype))[0]) & 1)


def fma(a, b, c, dtype):
    return rounded(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES)
def test_relu_and_its_backward_are_numpys_select_to_the_bit(dtype, size):
    rng = np.random.default_rng(size)
    x, g = sample(rng, dtype, size), sample(rng, dtype, size)[::-1].copy()
    out = _backend.relu(x)
    np.testing.assert_array_equal(bits(out), bits(np.where(x < 0, dtype(0), x)))   # NaN and -0.0 pass
    back = _backend.threshold_backward(g, out)
    np.testing.assert_array_equal(bits(back), bits(np.where(out <= 0, dtype(0), g)))
    assert out.flags.c_contiguous and back.flags.c_contiguous


@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_layer_gives_the_same_bits_on_strided_inputs_which_numpy_computes(dtype):
    rng = np.random.default_rng(3)
    base = sample(rng, dtype, 2 * 40).reshape(8, 10)
    assert _backend.relu(base[:, ::2]) is None                  # strided: numpy's path
    strided = cx.from_numpy(base)[:, ::2].relu()
    contiguous = cx.from_numpy(np.ascontiguousarray(base[:, ::2])).relu()
    np.testing.assert_array_equal(bits(strided.numpy()), bits(contiguous.numpy()))


def test_kernels_refuse_what_they_do_not_take():
    x32 = np.ones(4, np.float32)
    assert _backend.relu(np.ones(4, np.int64)) is None
    assert _backend.relu(np.ones(4, np.float16)) is None
    assert _backend.threshold_backward(x32, np.ones(4)) is None            # mixed dtypes
    assert _backend.threshold_backward(x32, np.ones(5, np.float32)) is None
    assert _backend.axpy(2.0, x32, np.ones(3, np.float32)) is None          # shapes differ
    frozen = np.ones(4, np.float32)
    frozen.setflags(write=False)
    assert _backend.axpy(2.0, x32, frozen, out=frozen) is None
    assert not _backend.sgd_step(frozen, x32, None, False, 0.1, 0, 0, 0, False, False)
    np.testing.assert_array_equal(frozen, 1)
    strided = np.ones(8, np.float32)[::2]
    assert not _backend.sgd_step(strided, x32, None, False, 0.1, 0, 0, 0, False, False)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, 7, 64])
def test_axpy_rounds_once(dtype, size):
    rng = np.random.default_rng(size)
    x = rng.standard_normal(size).astype(dtype)
    y = (rng.standard_normal(size) * 1e-3).astype(dtype)
    alpha = -0.37
    out = _backend.axpy(alpha, x, y)
    a = np.array(alpha, dtype)                                         # torch casts alpha to the dtype
    expected = np.array([fma(a, xi, yi, dtype) for xi, yi in zip(x, y)], dtype)
    np.testing.assert_array_equal(bits(out), bits(expected))


def reference_sgd(p, grads, lr, momentum, dampening, weight_decay, nesterov, maximize, dtype):
    """torch's _single_tensor_sgd element by element, every operation rounded once."""
    p = [dtype(v) for v in p]
    buf = None
    R = lambda v: dtype(v)                                              # noqa: E731
    for grad in grads:
        new_buf = []
        for i, gi in enumerate(grad):
            g = -gi if maximize else gi
            if weight_decay != 0:
                g = fma(R(weight_decay), p[i], g, dtype)
            if momentum != 0:
                if buf is None:
                    b = g
                else:
                    b = R(buf[i] * R(momentum))
                    b = fma(R(1 - dampening), g, b, dtype)
                new_buf.append(b)
                g = fma(R(momentum), b, g, dtype) if nesterov else b
            p[i] = fma(R(-lr), g, p[i], dtype)
        buf = new_buf if momentum != 0 else None
    return np.array(p, dtype)


SGD_CASES = [dict(), dict(momentum=0.9), dict(momentum=0.9, dampening=0.3, weight_decay=0.01),
             dict(momentum=0.8, nesterov=True, weight_decay=0.1), dict(maximize=True, weight_decay=0.05),
             dict(momentum=0.5, maximize=True)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", SGD_CASES, ids=lambda k: ",".join(sorted(k)) or "plain")
def test_fused_sgd_is_the_exactly_rounded_single_tensor_step(dtype, kwargs):
    rng = np.random.default_rng(7)
    init = rng.standard_normal(13).astype(dtype)
    grads = [rng.standard_normal(13).astype(dtype) for _ in range(4)]
    p = cx.nn.Parameter(cx.from_numpy(init.copy()))
    opt = cx.optim.SGD([p], lr=0.05, **kwargs)
    for g in grads:
        p.grad = cx.from_numpy(g.copy())
        opt.step()
    full = dict(momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False)
    full.update(kwargs)
    expected = reference_sgd(init, grads, 0.05, dtype=dtype, **full)
    np.testing.assert_array_equal(bits(p.detach().numpy()), bits(expected))


@pytest.mark.parametrize("kwargs", SGD_CASES, ids=lambda k: ",".join(sorted(k)) or "plain")
def test_fused_sgd_equals_the_op_by_op_step_in_float32(kwargs):
    """A strided parameter takes the op-by-op path (float64-emulated fused multiply-adds):
    the same bits as the one C call, momentum buffer included."""
    rng = np.random.default_rng(11)
    init = rng.standard_normal((6, 5)).astype(np.float32)
    grads = [rng.standard_normal((6, 5)).astype(np.float32) for _ in range(5)]
    fused = cx.nn.Parameter(cx.from_numpy(init.copy()))
    strided = cx.nn.Parameter(cx.from_numpy(np.asfortranarray(init.copy())))
    assert not strided._data.flags.c_contiguous
    optimizers = [cx.optim.SGD([q], lr=0.1, **kwargs) for q in (fused, strided)]
    for g in grads:
        for q, opt in zip((fused, strided), optimizers):
            q.grad = cx.from_numpy(g.copy())
            opt.step()
    np.testing.assert_array_equal(bits(fused.detach().numpy()), bits(strided.detach().numpy()))
    if kwargs.get("momentum"):
        a, b = (opt.state[q]["momentum_buffer"].numpy() for q, opt in zip((fused, strided), optimizers))
        np.testing.assert_array_equal(bits(a), bits(b))


def test_fused_sgd_bumps_versions_and_keeps_the_buffer_a_tensor():
    p = cx.nn.Parameter(cx.ones(3))
    opt = cx.optim.SGD([p], lr=0.1, momentum=0.9)
    before = p._version
    p.grad = cx.ones(3)
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    assert isinstance(buf, cx.Tensor) and p._version == before + 1
    version = buf._version
    opt.step()
    assert buf._version == version + 1 and opt.state[p]["momentum_buffer"] is buf


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", SGD_CASES, ids=lambda k: ",".join(sorted(k)) or "plain")
def test_fused_sgd_is_torchs_to_the_bit_in_both_dtypes(dtype, kwargs):
    rng = np.random.default_rng(5)
    init = rng.standard_normal((17, 9)).astype(dtype)
    ours = cx.nn.Parameter(cx.from_numpy(init.copy()))
    theirs = torch.nn.Parameter(torch.from_numpy(init.copy()))
    opt_ours = cx.optim.SGD([ours], lr=0.03, **kwargs)
    opt_theirs = torch.optim.SGD([theirs], lr=0.03, foreach=False, **kwargs)
    for _ in range(20):
        g = rng.standard_normal(init.shape).astype(dtype)
        ours.grad, theirs.grad = cx.from_numpy(g.copy()), torch.from_numpy(g.copy())
        opt_ours.step()
        opt_theirs.step()
    np.testing.assert_array_equal(bits(ours.detach().numpy()), bits(theirs.detach().numpy()))


ADAM_CASES = [("Adam", dict()), ("Adam", dict(weight_decay=0.1)), ("Adam", dict(maximize=True, eps=1e-3)),
              ("AdamW", dict()), ("AdamW", dict(weight_decay=0.5, betas=(0.5, 0.9))),
              ("Adam", dict(betas=(0.7, 0.3), weight_decay=1.0))]      # lerp's other branch (1 - beta1 >= 0.5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,kwargs", ADAM_CASES, ids=lambda v: v if isinstance(v, str) else
                         ",".join("%s=%s" % kv for kv in sorted(v.items())) or "plain")
def test_fused_adam_equals_the_op_by_op_step(dtype, name, kwargs):
    """The one C call against the op-by-op step (a Fortran-ordered parameter takes it): the same
    bits for the parameter and both moments, over steps whose bias corrections change."""
    rng = np.random.default_rng(13)
    init = rng.standard_normal((7, 5)).astype(dtype)
    fused = cx.nn.Parameter(cx.from_numpy(init.copy()))
    strided = cx.nn.Parameter(cx.from_numpy(np.asfortranarray(init.copy())))
    optimizers = [getattr(cx.optim, name)([q], lr=0.01, **kwargs) for q in (fused, strided)]
    for _ in range(12):
        g = (rng.standard_normal(init.shape) * rng.choice([1e-4, 1.0, 1e2], init.shape)).astype(dtype)
        for q, opt in zip((fused, strided), optimizers):
            q.grad = cx.from_numpy(g.copy())
            opt.step()
    np.testing.assert_array_equal(bits(fused.detach().numpy()), bits(strided.detach().numpy()))
    for key in ("exp_avg", "exp_avg_sq"):
        a, b = (opt.state[q][key].numpy() for q, opt in zip((fused, strided), optimizers))
        np.testing.assert_array_equal(bits(a), bits(b))
    assert optimizers[0].state[fused]["step"].item() == 12


def test_fused_adam_bumps_versions_and_counts_steps():
    p = cx.nn.Parameter(cx.ones(4))
    opt = cx.optim.AdamW([p], lr=0.1)
    p.grad = cx.ones(4)
    versions = p._version
    opt.step()
    state = opt.state[p]
    assert p._version == versions + 1 and state["step"].item() == 1
    moments = state["exp_avg"]._version, state["exp_avg_sq"]._version
    opt.step()
    assert (state["exp_avg"]._version, state["exp_avg_sq"]._version) == (moments[0] + 1, moments[1] + 1)


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name,kwargs", ADAM_CASES, ids=lambda v: v if isinstance(v, str) else
                         ",".join("%s=%s" % kv for kv in sorted(v.items())) or "plain")
def test_fused_adam_follows_torch_in_float64(name, kwargs):
    rng = np.random.default_rng(17)
    init = rng.standard_normal((9, 4))
    ours = cx.nn.Parameter(cx.from_numpy(init.copy()))
    theirs = torch.nn.Parameter(torch.from_numpy(init.copy()))
    opt_ours = getattr(cx.optim, name)([ours], lr=0.01, **kwargs)
    opt_theirs = getattr(torch.optim, name)([theirs], lr=0.01, foreach=False, **kwargs)
    for _ in range(30):
        g = rng.standard_normal(init.shape)
        ours.grad, theirs.grad = cx.from_numpy(g.copy()), torch.from_numpy(g.copy())
        opt_ours.step()
        opt_theirs.step()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_with_alpha_rounds_once_on_every_layout(dtype):
    """_inplace.add/add_ (the op-by-op optimizer steps' add): strided operands give the bits of
    contiguous ones, which are the exactly rounded multiply-add."""
    from cextend.optim import _inplace as F
    rng = np.random.default_rng(19)
    a = rng.standard_normal((6, 8)).astype(dtype)
    b = rng.standard_normal((6, 8)).astype(dtype) * dtype(1e-3)
    contiguous = F.add(a, b, alpha=0.3)
    strided = F.add(np.asfortranarray(a), np.asfortranarray(b), alpha=0.3)
    expected = np.array([fma(np.array(0.3, dtype), bi, ai, dtype) for ai, bi in zip(a.ravel(), b.ravel())],
                        dtype).reshape(a.shape)
    np.testing.assert_array_equal(bits(contiguous), bits(expected))
    np.testing.assert_array_equal(bits(strided), bits(expected))
    target = np.asfortranarray(a.copy())
    F.add_(target, b, alpha=0.3)
    np.testing.assert_array_equal(bits(target), bits(expected))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_relu_gives_numpys_bits_and_gradient_on_every_layout(dtype):
    """Tensor.relu hands a contiguous float array straight to the kernel and
    any other layout to numpy's formula: values, layout and gradient agree."""
    rng = np.random.default_rng(11)
    base = sample(rng, dtype, 6 * 35).reshape(6, 35)
    for view in (base, base.T, base[:, 1::3], base[:0]):
        x = cx.from_numpy(view).requires_grad_()        # the view's own strides
        y = x.relu()
        expected = np.where(view < 0, dtype(0), view)
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(bits(y.detach().numpy()), bits(expected))
        g = sample(rng, dtype, view.size).reshape(view.shape)
        y.backward(cx.from_numpy(g))
        np.testing.assert_array_equal(bits(x.grad.numpy()), bits(np.where(expected <= 0, dtype(0), g)))
