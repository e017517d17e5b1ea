"""The Linear kernels' common case called from C (cextend._engine.linear_forward / linear_backward,
src/python/quick_linear.c): the same entry points of cextend.h as the cffi path, on plain arrays'
buffers.  Same bits as the cffi path for every shape; anything not plain is declined (None) and
ops.linear_forward / linear_backward still answer it as before."""
import sys
import threading

import numpy as np
import pytest

import cextend as cx
from cextend import _backend, _engine, ops

SHAPES = [(0, 5, 3), (3, 0, 4), (2, 5, 0), (1, 8, 8), (1, 1, 1), (7, 13, 11), (5, 17, 31), (64, 257, 10),
          (33, 64, 129)]


def _operands(rng, n, k, m, dtype):
    return (rng.standard_normal((n, k)).astype(dtype), rng.standard_normal((m, k)).astype(dtype),
            rng.standard_normal(m).astype(dtype))


def _through_cffi(x, w, b):
    """The kernel through _backend's general path (ffi.from_buffer and cffi's call)."""
    y = np.empty((x.shape[0], w.shape[0]), x.dtype)
    _backend.linear_forward(x, w, b, y)
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, k, m", SHAPES)
def test_forward_gives_the_cffi_paths_bits(n, k, m, dtype):
    rng = np.random.default_rng(n * 1000 + k * 10 + m)
    x, w, b = _operands(rng, n, k, m, dtype)
    for bias in (b, None):
        y = _engine.linear_forward(x, w, bias)
        assert type(y) is np.ndarray and y.dtype == dtype and y.shape == (n, m) and y.flags.c_contiguous
        assert np.array_equal(y, _through_cffi(x, w, bias))
        reference = x.astype(np.float64) @ w.astype(np.float64).T + (0 if bias is None else bias)
        np.testing.assert_allclose(y, reference, rtol=1e-4 if dtype == np.float32 else 1e-12,
                                   atol=1e-4 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, k, m", SHAPES)
def test_backward_gives_the_cffi_paths_bits_for_every_choice_of_outputs(n, k, m, dtype):
    rng = np.random.default_rng(n * 7 + k * 3 + m)
    x, w, _ = _operands(rng, n, k, m, dtype)
    dy = rng.standard_normal((n, m)).astype(dtype)
    for want in ((1, 1, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1), (0, 0, 0)):
        answer = _engine.linear_backward(dy, x, w, *map(bool, want))
        assert type(answer) is tuple and len(answer) == 3
        dx, dw, db = (np.empty((n, k), dtype) if want[0] else None, np.empty((m, k), dtype) if want[1] else None,
                      np.empty(m, dtype) if want[2] else None)
        _backend.linear_backward(dy, x, w, dx, dw, db)
        for ours, theirs in zip(answer, (dx, dw, db)):
            if theirs is None:
                assert ours is None
            else:
                assert ours.dtype == dtype and ours.shape == theirs.shape and np.array_equal(ours, theirs)
    dx, dw, db = _engine.linear_backward(dy, x, w, True, True, True)
    d64 = dy.astype(np.float64)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, d64 @ w, **tol)
    np.testing.assert_allclose(dw, d64.T @ x, **tol)
    np.testing.assert_allclose(db, d64.sum(0), **tol)


class _Sub(np.ndarray):
    pass


def _misaligned(a):
    raw = np.zeros(a.nbytes + 1, np.uint8)
    view = np.frombuffer(raw.data, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    view[...] = a
    return view


@pytest.mark.parametrize("case", ["transposed x", "row-sliced x", "float16", "int64", "mixed dtypes",
                                  "big-endian w", "subclass x", "1-D x", "3-D x", "bias (1,)", "bias 2-D",
                                  "bias of another dtype", "k mismatch", "list x", "misaligned x"])
def test_anything_not_plain_is_declined_and_ops_still_answers_it(case):
    rng = np.random.default_rng(5)
    x, w, b = _operands(rng, 6, 4, 3, np.float32)
    if case == "transposed x":
        x = np.ascontiguousarray(x.T).T
    elif case == "row-sliced x":
        x = rng.standard_normal((12, 4)).astype(np.float32)[::2]
    elif case == "float16":
        x, w, b = x.astype(np.float16), w.astype(np.float16), b.astype(np.float16)
    elif case == "int64":
        x, w, b = (a.astype(np.int64) for a in (x, w, b))
    elif case == "mixed dtypes":
        w = w.astype(np.float64)
    elif case == "big-endian w":
        w = w.astype(">f4")
    elif case == "subclass x":
        x = x.view(_Sub)
    elif case == "1-D x":
        x = x[0]
    elif case == "3-D x":
        x = x.reshape(2, 3, 4)
    elif case == "bias (1,)":
        b = b[:1]
    elif case == "bias 2-D":
        b = b.reshape(1, 3)
    elif case == "bias of another dtype":
        b = b.astype(np.float64)
    elif case == "k mismatch":
        w = rng.standard_normal((3, 5)).astype(np.float32)
    elif case == "list x":
        x = x.tolist()
    elif case == "misaligned x":
        x = _misaligned(x)
        assert not x.flags.aligned
    assert _engine.linear_forward(x, w, b) is None
    try:
        y = ops.linear_forward(x, w, b)               # the Python path: copies, reads in place, or refuses
    except (ValueError, TypeError):
        assert case not in ("transposed x", "row-sliced x", "subclass x", "1-D x", "3-D x", "misaligned x")
        return
    xs = np.asarray(x, dtype=np.float64)
    np.testing.assert_allclose(y, xs @ np.asarray(w, np.float64).T + np.asarray(b, np.float64),
                               rtol=1e-5, atol=1e-5)


def test_backward_declines_a_broadcast_gradient_and_ops_copies_it():
    rng = np.random.default_rng(9)
    x, w, _ = _operands(rng, 4, 3, 2, np.float64)
    dy = np.broadcast_to(np.ones(2), (4, 2))          # what sum() hands back: strided
    assert _engine.linear_backward(dy, x, w, True, True, True) is None
    dx, dw, db = ops.linear_backward(dy, x, w)
    np.testing.assert_allclose(dx, np.ones((4, 2)) @ w)
    np.testing.assert_allclose(dw, np.ones((2, 4)) @ x)
    np.testing.assert_allclose(db, [4.0, 4.0])
    assert _engine.linear_backward(dy.astype(np.float32), x, w, True, True, True) is None     # mixed dtypes


def test_a_captured_step_records_the_call_so_c_declines_inside_it():
    model = cx.nn.Linear(4, 3)
    opt = cx.optim.SGD(model.parameters(), lr=0.1)
    x = cx.randn(5, 4)

    def step(xb):
        opt.zero_grad()
        loss = model(xb).sum()
        loss.backward()
        opt.step()
        return loss

    eager = cx.nn.Linear(4, 3)
    eager.load_state_dict(model.state_dict())
    eager_opt = cx.optim.SGD(eager.parameters(), lr=0.1)
    captured = cx.capture(step)
    for _ in range(5):
        captured(x)
        eager_opt.zero_grad()
        eager(x).sum().backward()
        eager_opt.step()
    assert captured.reason is None and captured.replays >= 1
    assert np.array_equal(model.weight.detach().numpy(), eager.weight.detach().numpy())
    assert np.array_equal(model.bias.detach().numpy(), eager.bias.detach().numpy())


def test_the_c_path_keeps_no_reference_and_leaks_nothing():
    rng = np.random.default_rng(3)
    x, w, b = _operands(rng, 3, 4, 5, np.float32)
    dy = rng.standard_normal((3, 5)).astype(np.float32)
    counts = [sys.getrefcount(a) for a in (x, w, b, dy)]
    for _ in range(200):
        _engine.linear_forward(x, w, b)
        _engine.linear_backward(dy, x, w, True, True, True)
        _engine.linear_forward(x.T, w, b)               # declined: every buffer released too
    assert [sys.getrefcount(a) for a in (x, w, b, dy)] == counts
    y = _engine.linear_forward(x, w, b)
    assert sys.getrefcount(y) == 2                      # only ours


def test_bad_calls_raise():
    with pytest.raises(TypeError, match="takes 3 arguments"):
        _engine.linear_forward(np.ones((1, 1)), np.ones((1, 1)))
    with pytest.raises(TypeError, match="takes 6 arguments"):
        _engine.linear_backward(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)))


def test_threads_run_it_at_once_with_the_same_bits():
    rng = np.random.default_rng(11)
    x, w, b = _operands(rng, 96, 300, 200, np.float32)
    expected = _through_cffi(x, w, b)
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(_engine.linear_forward(x, w, b))
        except Exception as error:          # pragma: no cover - reported below
            errors.append(error)
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 60
    assert all(np.array_equal(r, expected) for r in results)


def test_ops_and_layers_take_it_for_plain_operands(monkeypatch):
    calls = []
    real = _backend._quick_forward_in_c

    def spy(x, w, b):
        out = real(x, w, b)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(_backend, "_quick_forward_in_c", spy)
    x = np.ones((2, 3), np.float32)
    ops.linear_forward(x, np.ones((4, 3), np.float32), np.zeros(4, np.float32))
    cx.nn.Linear(3, 4)(cx.from_numpy(x))
    assert calls == [True, True]
