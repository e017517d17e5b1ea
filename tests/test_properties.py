"""Property tests: generated shapes, layouts, dtypes and graphs.

Kernels are checked against a float64 numpy reference with the
reduction-scaled bound; random autograd graphs (Tensor methods and the
C-backed Functions) against finite differences with gradcheck.
"""
import numpy as np
from hypothesis import given, settings, strategies as st

import cextend as cx
from cextend import ops
from cextend.autograd import gradcheck
from cextend.functions import Add, LinearFunction, MulConstant
from helpers import assert_product_close, layouts, poisoned

LAYOUT_NAMES = [name for name, _ in layouts(np.zeros((2, 2)))]


def in_layout(a, name):
    return dict(layouts(a))[name]


@st.composite
def linear_problems(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n, k, m = (draw(st.integers(0, 70)) for _ in range(3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    scale = 10.0 ** draw(st.integers(-4, 4))
    x = (rng.standard_normal((n, k)) * scale).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype) if draw(st.booleans()) else None
    dy = rng.standard_normal((n, m)).astype(dtype)
    return (dtype, x, w, b, dy, draw(st.sampled_from(LAYOUT_NAMES)), draw(st.sampled_from(LAYOUT_NAMES)),
            draw(st.sampled_from(cx.available_isas())))


@given(linear_problems())
def test_linear_kernels_on_generated_problems(problem):
    dtype, x, w, b, dy, x_layout, w_layout, isa = problem
    previous = cx.get_isa()
    cx.set_isa(isa)
    try:
        xv, wv = in_layout(x, x_layout), in_layout(w, w_layout)
        y = ops.linear_forward(xv, wv, b, out=poisoned((x.shape[0], w.shape[0]), dtype))
        assert_product_close(y, x, w.T, dtype, b)
        dx, dw, db = ops.linear_backward(in_layout(dy, x_layout), xv, wv)
        assert_product_close(dx, dy, w, dtype)
        assert_product_close(dw, dy.T, x, dtype)
        assert_product_close(db, np.ones(x.shape[0]), dy, dtype)
    finally:
        cx.set_isa(previous)


@given(st.sampled_from([np.float32, np.float64]), st.lists(st.integers(0, 6), min_size=2, max_size=4),
       st.integers(0, 2 ** 32 - 1))
def test_global_max_pool_on_generated_shapes(dtype, shape, seed):
    shape = tuple(shape)
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if x.size and shape[-1] * shape[-2] == 0:
        return
    planes = x.reshape(shape[:-2] + (shape[-2] * shape[-1],))
    if planes.shape[-1] == 0:
        return
    values, indices = ops.global_max_pool_forward(x)
    np.testing.assert_array_equal(indices, planes.argmax(-1))
    np.testing.assert_array_equal(values, planes.max(-1))


# Shape-preserving building blocks for random graphs on (3, 4) tensors.
UNARY = [
    ("tanh", lambda a: a.tanh()),
    ("sigmoid", lambda a: a.sigmoid()),
    ("square", lambda a: a * a),
    ("log1p_sq", lambda a: (a * a + 1).log()),
    ("exp_small", lambda a: (a * 0.3).exp()),
    ("scale", lambda a: a * 1.7 - 0.2),
    ("c_mul_constant", lambda a: MulConstant.apply(a, -0.7)),
    ("transpose_twice", lambda a: a.t().contiguous().t()),
    ("row_softmax", lambda a: cx.nn.functional.softmax(a, 1)),
]
BINARY = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / (b * b + 1)),
    ("c_add", lambda a, b: Add.apply(a, b)),
]
REDUCE = [
    ("sum", lambda a: a.sum()),
    ("mean_rows", lambda a: a.mean(1)),
    ("sum_cols_keep", lambda a: a.sum(0, keepdim=True)),
    ("identity", lambda a: a),
]


@st.composite
def graphs(draw):
    """A program: steps over a growing list of values, then a reduction."""
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            steps.append(("u", draw(st.integers(0, len(UNARY) - 1)), draw(st.integers(0, 10 ** 6))))
        else:
            steps.append(("b", draw(st.integers(0, len(BINARY) - 1)), draw(st.integers(0, 10 ** 6)),
                          draw(st.integers(0, 10 ** 6))))
    use_linear = draw(st.booleans())
    reduce = draw(st.integers(0, len(REDUCE) - 1))
    return steps, use_linear, reduce, draw(st.integers(0, 2 ** 32 - 1))


def run_graph(program, a, b, w):
    steps, use_linear, reduce, _ = program
    values = [a, b]
    if use_linear:
        values.append(LinearFunction.apply(a, w))       # (3, 4) x (4, 4)^T -> (3, 4)
    for step in steps:
        if step[0] == "u":
            values.append(UNARY[step[1]][1](values[step[2] % len(values)]))
        else:
            values.append(BINARY[step[1]][1](values[step[2] % len(values)], values[step[3] % len(values)]))
    return REDUCE[reduce][1](values[-1])


@settings(max_examples=25)
@given(graphs())
def test_random_autograd_graphs_match_finite_differences(program):
    rng = np.random.default_rng(program[3])
    a, b = (cx.from_numpy(rng.standard_normal((3, 4))).requires_grad_() for _ in range(2))
    w = cx.from_numpy(rng.standard_normal((4, 4)) * 0.5).requires_grad_()
    assert gradcheck(lambda a, b, w: run_graph(program, a, b, w), (a, b, w))
