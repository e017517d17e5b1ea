"""The compiled backward loop's AccumulateGrad (src/python/engine.c): a gradient added into an
existing .grad in C must leave exactly what graph.accumulate_into leaves -- the same bits, the
same .grad object and array, its version one higher -- and every case it does not take (other
dtypes, layouts, overlap, grad mode, hooks, capture) must still reach accumulate_into.

Each program runs twice, with the compiled leaf path on and switched off
(configure_leaves(None)), and the two runs are compared."""
import itertools

import numpy as np
import pytest

import cextend as cx
from cextend import _engine, _grad_state
from cextend.autograd import graph


@pytest.fixture
def python_calls(monkeypatch):
    """The accumulate_into calls that reached Python."""
    calls = []
    original = graph.accumulate_into

    def spy(tensor, g, unseen=False):
        calls.append(tensor)
        return original(tensor, g, unseen)

    monkeypatch.setattr(graph, "accumulate_into", spy)
    return calls


class compiled_leaves_off:
    def __enter__(self):
        _engine.configure_leaves(None, _grad_state._state)

    def __exit__(self, *exc):
        _engine.configure_leaves(graph.AccumulateGrad.apply, _grad_state._state)


SHAPES = [(0,), (1,), (7,), (3, 5), (13, 1), (1, 11), (2, 3, 4), (70_001,)]
DTYPES = [np.float32, np.float64]


def _grad_layout(kind, shape, dtype, rng):
    """A starting .grad of `shape` laid out as `kind`."""
    values = rng.standard_normal(shape).astype(dtype)
    if kind == "c":
        return values
    if kind == "fortran":
        return np.asfortranarray(values)
    if kind == "sliced":                # every other element of a larger array
        big = np.zeros(shape[:-1] + (2 * shape[-1],), dtype)
        big[..., ::2] = values
        return big[..., ::2]
    if kind == "readonly":
        values.setflags(write=False)
        return values
    raise ValueError(kind)


def _run(shape, dtype, layout, scale, seed, layouts):
    """p.grad set to a starting value laid out as `layout`, then two backward passes adding
    scale * p's gradient; what .grad holds after each, and whether it stayed the same object.
    layouts receives, for each pass, whether .grad's array was writable and C-contiguous."""
    rng = np.random.default_rng(seed)
    p = cx.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
    start = cx.tensor(_grad_layout(layout, shape, dtype, rng))
    p.grad = start
    versions = [start._version]
    results = []
    for _ in range(2):
        flags = p.grad._data.flags
        layouts.append(flags.c_contiguous and flags.writeable)
        w = cx.tensor(rng.standard_normal(shape).astype(dtype))
        (p * w * scale).sum().backward()
        results.append((p.grad.numpy().copy(), p.grad is start, p.grad._data is start._data,
                        p.grad.stride(), p.grad.dtype))
        versions.append(start._version)
    return results, versions


@pytest.mark.parametrize("shape,dtype,layout", list(itertools.product(
    SHAPES, DTYPES, ["c", "fortran", "sliced", "readonly"])), ids=str)
def test_adding_into_an_existing_grad_matches_python(shape, dtype, layout, python_calls):
    scale = 1.0 / 3.0           # inexact sums: the bits depend on each addition
    seed = len(shape) * 7 + shape[-1]
    layouts = []
    compiled = _run(shape, dtype, layout, scale, seed, layouts)
    taken_in_python = len(python_calls)
    python_calls.clear()
    with compiled_leaves_off():
        python = _run(shape, dtype, layout, scale, seed, [])
    assert len(python_calls) == 2
    for (a, *rest_a), (b, *rest_b) in zip(compiled[0], python[0]):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))      # the same bits
        assert rest_a == rest_b
    assert compiled[1] == python[1]             # the .grad's version counts the same additions
    # The first pass makes the leaf's grad lock in Python; the second is added in C exactly where
    # .grad's array is then writable and C-contiguous (a read-only one was replaced by the first
    # pass's out-of-place sum).
    assert taken_in_python == (1 if layouts[1] else 2)
    assert layouts[1] or layout != "c"


def test_an_added_gradient_is_the_numpy_sum_and_bumps_the_version():
    rng = np.random.default_rng(5)
    for dtype in DTYPES:
        p = cx.tensor(rng.standard_normal((4, 6)).astype(dtype), requires_grad=True)
        w = rng.standard_normal((4, 6)).astype(dtype)
        (p * cx.tensor(w)).sum().backward()
        first = p.grad
        array = first._data
        before = first._version
        expected = array + w * np.asarray(0.1, dtype)
        (p * cx.tensor(w) * 0.1).sum().backward()
        assert p.grad is first and p.grad._data is array       # in place, as accumulate_into
        assert first._version == before + 1
        np.testing.assert_array_equal(p.grad.numpy(), expected)


def test_a_grad_saved_by_a_graph_sees_the_added_version():
    # autograd's version check: a graph that saved .grad refuses to run after .grad was added to
    p = cx.randn(5, requires_grad=True)
    (p * 2.0).sum().backward()
    g = p.grad.detach().requires_grad_()        # shares .grad's array and version counter
    saved = (g * g).sum()
    (p * 3.0).sum().backward()                  # adds into .grad in place
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved.backward()


def test_cases_the_compiled_add_leaves_to_python(python_calls):
    rng = np.random.default_rng(11)

    def again(p, make_loss):
        python_calls.clear()
        make_loss().backward()
        return len(python_calls)

    # float16 and bfloat16 gradients
    for dtype in (cx.float16, cx.bfloat16):
        p = cx.randn(6, dtype=dtype, requires_grad=True)
        (p * 2.0).sum().backward()
        assert again(p, lambda: (p * 2.0).sum()) == 1
        np.testing.assert_array_equal(p.grad.float().numpy(), np.full(6, 4.0, np.float32))
    # an expanded .grad set by hand: the Python path's self-overlap error
    p = cx.randn(2, 3, requires_grad=True)
    p.grad = cx.ones(3).expand(2, 3)
    with pytest.raises(RuntimeError):
        (p * 2.0).sum().backward()
    # a post-accumulate-grad hook
    p = cx.randn(4, requires_grad=True)
    (p * 1.0).sum().backward()
    seen = []
    p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    assert again(p, lambda: (p * 1.0).sum()) == 1
    np.testing.assert_array_equal(seen[0], np.full(4, 2.0, np.float32))
    # create_graph: .grad is replaced out of place, differentiably
    p = cx.randn(4, requires_grad=True)
    (p * p).sum().backward(create_graph=True)
    first = p.grad
    assert again(p, lambda: (p * p).sum()) == 0     # grad mode off in this backward: in place, in C
    assert p.grad is first
    q = cx.randn(3, requires_grad=True)
    (q * q).sum().backward()
    kept = q.grad
    python_calls.clear()
    (q * q).sum().backward(create_graph=True)
    assert len(python_calls) == 1 and q.grad is not kept and q.grad.grad_fn is not None
    np.testing.assert_allclose(q.grad.detach().numpy(), 4 * q.detach().numpy(), rtol=1e-6)
    # a .grad of a Tensor subclass
    r = cx.randn(3, requires_grad=True)

    class Marked(cx.Tensor):
        pass

    r.grad = cx.zeros(3).as_subclass(Marked)
    assert again(r, lambda: (r * 5.0).sum()) == 1
    np.testing.assert_array_equal(r.grad.numpy(), np.full(3, 5.0, np.float32))
    del rng


def test_an_incoming_gradient_sharing_grads_memory():
    """The caller's gradient handed straight to the leaf: the .grad itself (the same memory:
    doubled, as numpy's add gives), or a shifted view of .grad's array (numpy copies the
    overlapping operand first; the compiled add leaves this to Python)."""
    outcomes = []
    for compiled in (True, False):
        buffer = np.arange(1.0, 9.0)
        p = cx.zeros(4, dtype=cx.float64, requires_grad=True)
        p.grad = cx.from_numpy(buffer[:4])
        ctx = compiled_leaves_off() if not compiled else _nothing()
        with ctx:
            p.backward(p.grad)                              # the same memory
            same = buffer.copy()
            p.backward(cx.from_numpy(buffer[2:6]))          # overlapping memory
        outcomes.append((same, buffer.copy(), p.grad.numpy().copy()))
    for a, b in zip(*outcomes):
        np.testing.assert_array_equal(a, b)


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def _accumulator_numbering():
    """A fresh leaf's AccumulateGrad as recording an op makes it: its class, variable, and its
    number relative to the op's node (made first)."""
    w = cx.randn(3, requires_grad=True)
    y = w * 2.0
    accumulator = y.grad_fn.next_functions[0][0]
    return type(accumulator), accumulator.variable is w, accumulator._seq - y.grad_fn._seq


def test_a_leafs_accumulator_is_made_as_graph_py_makes_it(monkeypatch):
    compiled = _accumulator_numbering()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with cx.autograd.detect_anomaly(check_nan=False):      # record.py's Python path
            python = _accumulator_numbering()
    assert compiled == python == (graph.AccumulateGrad, True, 1)
    # while AccumulateGrad keeps another __init__, the compiled recording calls the class
    calls = []
    original = graph.AccumulateGrad.__init__

    def counted(self, variable):
        calls.append(variable)
        original(self, variable)

    monkeypatch.setattr(graph.AccumulateGrad, "__init__", counted)
    v = cx.randn(2, requires_grad=True)
    z = v * 3.0
    assert len(calls) == 1 and calls[0] is v
    assert z.grad_fn.next_functions[0][0].variable is v
