"""Misuse of the numpy-level API raises a clear exception naming the argument."""
import numpy as np
import pytest

from cextend import ops

F32, F64 = np.float32, np.float64


def arr(*shape, dtype=F64):
    return np.ones(shape, dtype)


def read_only(a):
    a.flags.writeable = False
    return a


# (call, exception type, regex the message must match)
LINEAR_CASES = {
    "x int64": (lambda: ops.linear_forward(arr(2, 3, dtype=np.int64), arr(4, 3)), TypeError, r"^x must be float32 or float64, got int64"),
    "x bool": (lambda: ops.linear_forward(arr(2, 3, dtype=bool), arr(4, 3)), TypeError, r"^x must be float32 or float64"),
    "x complex": (lambda: ops.linear_forward(arr(2, 3, dtype=complex), arr(4, 3)), TypeError, r"^x must be float32 or float64"),
    "x float16": (lambda: ops.linear_forward(arr(2, 3, dtype=np.float16), arr(4, 3)), TypeError, r"^x must be float32 or float64"),
    "x object": (lambda: ops.linear_forward(arr(2, 3, dtype=object), arr(4, 3)), TypeError, r"^x must be float32 or float64"),
    "w big-endian": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3, dtype=">f8")), TypeError, r"^w must be in native byte order"),
    "mixed dtypes": (lambda: ops.linear_forward(arr(2, 3, dtype=F32), arr(4, 3)), TypeError, r"^w is float64 but x is float32"),
    "mixed bias": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3), arr(4, dtype=F32)), TypeError, r"^b is float32 but x is float64"),
    "x list": (lambda: ops.linear_forward([[1.0, 2.0]], arr(4, 2)), TypeError, r"^x must be a numpy.ndarray, got list"),
    "x None": (lambda: ops.linear_forward(None, arr(4, 2)), TypeError, r"^x must be a numpy.ndarray, got NoneType"),
    "w None": (lambda: ops.linear_forward(arr(2, 2), None), TypeError, r"^w must be a numpy.ndarray, got NoneType"),
    "x 0-d": (lambda: ops.linear_forward(np.float64(1.0), arr(4, 1)), TypeError, r"^x must be a numpy.ndarray"),
    "x scalar array": (lambda: ops.linear_forward(np.array(1.0), arr(4, 1)), ValueError, r"^x must have at least 1 dimension"),
    "w 1-D": (lambda: ops.linear_forward(arr(2, 3), arr(3)), ValueError, r"^w must be 2-D \(M, K\), got shape \(3,\)"),
    "w 3-D": (lambda: ops.linear_forward(arr(2, 3), arr(1, 4, 3)), ValueError, r"^w must be 2-D"),
    "K mismatch": (lambda: ops.linear_forward(arr(2, 3), arr(4, 5)), ValueError, r"^w must have shape \(M, K\) with K = x.shape\[-1\] = 3, got w.shape \(4, 5\)"),
    "bias length": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3), arr(5)), ValueError, r"^b must have shape \(4,\) \(M = w.shape\[0\]\), got \(5,\)"),
    "bias 2-D": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3), arr(1, 4)), ValueError, r"^b must be 1-D"),
    "out read-only": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3), out=read_only(arr(2, 4))), ValueError, r"^out is read-only"),
    "out wrong shape": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3), out=arr(4, 2)), ValueError, r"^out must have shape \(2, 4\), got \(4, 2\)"),
    "out wrong dtype": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3), out=arr(2, 4, dtype=F32)), TypeError, r"^out is float32 but x is float64"),
    "out strided": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3), out=arr(2, 8)[:, ::2]), ValueError, r"^out must be C-contiguous"),
    "out list": (lambda: ops.linear_forward(arr(2, 3), arr(4, 3), out=[[0.0] * 4] * 2), TypeError, r"^out must be a numpy.ndarray, got list"),
    "grad_out shape": (lambda: ops.linear_backward(arr(2, 5), arr(2, 3), arr(4, 3)), ValueError, r"^grad_out must have shape \(2, 4\)"),
    "grad_out dtype": (lambda: ops.linear_backward(arr(2, 4, dtype=F32), arr(2, 3), arr(4, 3)), TypeError, r"^x is float64 but grad_out is float32"),
    "grad_out None": (lambda: ops.linear_backward(None, arr(2, 3), arr(4, 3)), TypeError, r"^grad_out must be a numpy.ndarray"),
}

OTHER_CASES = {
    "add shapes": (lambda: ops.add_forward(arr(3), arr(4)), ValueError, r"^a and b must have the same shape, got \(3,\) and \(4,\)"),
    "add int": (lambda: ops.add_forward(arr(3, dtype=np.int32), arr(3, dtype=np.int32)), TypeError, r"^a must be float32 or float64, got int32"),
    "add mixed": (lambda: ops.add_forward(arr(3), arr(3, dtype=F32)), TypeError, r"^b is float32 but a is float64"),
    "add out read-only": (lambda: ops.add_forward(arr(3), arr(3), out=read_only(arr(3))), ValueError, r"^out is read-only"),
    "add b None": (lambda: ops.add_forward(arr(3), None), TypeError, r"^b must be a numpy.ndarray"),
    "mul c string": (lambda: ops.mul_constant_forward(arr(3), "2"), TypeError, r"^c must be a real number, got str"),
    "mul c complex": (lambda: ops.mul_constant_forward(arr(3), 1j), TypeError, r"^c must be a real number, got complex"),
    "mul c array": (lambda: ops.mul_constant_forward(arr(3), arr(3)), TypeError, r"^c must be a real number, got ndarray"),
    "mul c bool": (lambda: ops.mul_constant_forward(arr(3), True), TypeError, r"^c must be a real number, got bool"),
    "mul x int": (lambda: ops.mul_constant_forward(arr(3, dtype=np.int64), 2), TypeError, r"^x must be float32 or float64"),
    "pool 1-D": (lambda: ops.global_max_pool_forward(arr(4)), ValueError, r"^x must have at least 2 dimension"),
    "pool int": (lambda: ops.global_max_pool_forward(arr(1, 1, 2, 2, dtype=np.int64)), TypeError, r"^x must be float32 or float64"),
    "pool grad shape": (lambda: ops.global_max_pool_backward(arr(3), np.zeros(2, np.int64), (2, 2, 2)), ValueError, r"^grad_values must have shape \(2,\)"),
    "pool index dtype": (lambda: ops.global_max_pool_backward(arr(2), np.zeros(2, np.int32), (2, 2, 2)), TypeError, r"^indices must be int64, got int32"),
    "pool index shape": (lambda: ops.global_max_pool_backward(arr(2), np.zeros(3, np.int64), (2, 2, 2)), ValueError, r"^indices must have shape \(2,\)"),
    "pool x_shape": (lambda: ops.global_max_pool_backward(arr(2), np.zeros(2, np.int64), (2,)), ValueError, r"^x_shape must have at least 2"),
}


@pytest.mark.parametrize("case", sorted(LINEAR_CASES.items()) + sorted(OTHER_CASES.items()),
                         ids=lambda c: c[0])
def test_bad_input_raises_a_clear_error(case):
    _, (call, error, pattern) = case
    with pytest.raises(error, match=pattern):
        call()


def test_misaligned_input_is_copied_not_misread():
    raw = np.zeros(8 * 13 + 1, np.uint8)
    x = np.frombuffer(raw.data, dtype=F64, count=12, offset=1).reshape(3, 4)
    assert not x.flags.aligned
    w = np.eye(4)
    np.testing.assert_array_equal(ops.linear_forward(x, w), np.zeros((3, 4)))


def test_misaligned_out_is_rejected():
    raw = np.zeros(8 * 9 + 1, np.uint8)
    out = np.frombuffer(raw.data, dtype=F64, count=8, offset=1).reshape(2, 4)
    with pytest.raises(ValueError, match="^out must be aligned"):
        ops.linear_forward(arr(2, 3), arr(4, 3), out=out)


def test_huge_sizes_use_64_bit_sizes_and_never_copy_for_nothing():
    # K = 2**31 elements per row: sizes past int32, no memory behind them.
    x = np.empty((0, 2 ** 31), F32)
    w = np.broadcast_to(np.zeros(1, F32), (3, 2 ** 31))
    assert ops.linear_forward(x, w).shape == (0, 3)
    dx, dw, db = ops.linear_backward(np.empty((0, 3), F32), x, w, weight=False, bias=False)
    assert dx.shape == (0, 2 ** 31) and dw is None and db is None


def test_impossible_allocation_raises_memory_error():
    x = np.broadcast_to(np.ones(1), (2 ** 40, 4))
    with pytest.raises(MemoryError):
        ops.linear_forward(x, np.ones((3, 4)))


# ---- the same discipline one level up: C-backed Functions and Tensors --------

import cextend as cx                                          # noqa: E402
from cextend.functions import Add, GlobalMaxPool, LinearFunction, MulConstant  # noqa: E402

T64 = lambda *s: cx.randn(*s, dtype=cx.double)               # noqa: E731

FUNCTION_CASES = {
    "Linear input ndarray": (lambda: LinearFunction.apply(np.ones((2, 3)), T64(4, 3)), TypeError, r"^input must be a cextend Tensor, got ndarray"),
    "Linear weight None": (lambda: LinearFunction.apply(T64(2, 3), None), TypeError, r"^weight must be a cextend Tensor, got NoneType"),
    "Linear bias list": (lambda: LinearFunction.apply(T64(2, 3), T64(4, 3), [0.0] * 4), TypeError, r"^bias must be a cextend Tensor, got list"),
    "Linear int input": (lambda: LinearFunction.apply(cx.ones(2, 3, dtype=cx.long), T64(4, 3)), TypeError, r"^x must be float32 or float64, got int64"),
    "Linear mixed dtypes": (lambda: LinearFunction.apply(cx.randn(2, 3), T64(4, 3)), TypeError, r"^w is float64 but x is float32"),
    "Linear K mismatch": (lambda: LinearFunction.apply(T64(2, 3), T64(4, 5)), ValueError, r"K = x.shape\[-1\] = 3"),
    "Linear bias length": (lambda: LinearFunction.apply(T64(2, 3), T64(4, 3), T64(5)), ValueError, r"^b must have shape \(4,\)"),
    "Linear 1-D weight": (lambda: LinearFunction.apply(T64(2, 3), T64(3)), ValueError, r"^w must be 2-D"),
    "MulConstant string": (lambda: MulConstant.apply(T64(3), "x"), TypeError, r"^constant must be a real number, got str"),
    "MulConstant tensor constant": (lambda: MulConstant.apply(T64(3), T64(2)), TypeError, r"^constant must be a number or a one-element Tensor"),
    "Add shapes": (lambda: Add.apply(T64(3), T64(4)), ValueError, r"^a and b must have the same shape"),
    "Add ndarray": (lambda: Add.apply(T64(3), np.ones(3)), TypeError, r"^input2 must be a cextend Tensor"),
    "Pool 1-D": (lambda: GlobalMaxPool.apply(T64(5)), ValueError, r"^x must have at least 2 dimension"),
    "Pool empty plane": (lambda: GlobalMaxPool.apply(T64(2, 0, 3)), ValueError, r"^x has empty"),
    "Tensor numpy requires grad": (lambda: cx.randn(2, requires_grad=True).numpy(), RuntimeError, r"detach\(\)\.numpy\(\)"),
    "Tensor int requires grad": (lambda: cx.tensor([1, 2], requires_grad=True), RuntimeError, r"floating point"),
    "Tensor view non-contiguous": (lambda: T64(2, 3).t().view(6), RuntimeError, r"\.reshape"),
    "Tensor mm shapes": (lambda: T64(2, 3).mm(T64(2, 3)), RuntimeError, r"cannot be multiplied"),
    "Tensor bad dim": (lambda: T64(2, 3).sum(5), IndexError, r"Dimension out of range"),
    "Tensor cuda": (lambda: T64(2).to("cuda"), RuntimeError, r"device cuda is not available: "),
    "Tensor leaf in-place": (lambda: cx.randn(2, requires_grad=True).add_(1), RuntimeError, r"leaf Variable"),
    "Tensor complex data": (lambda: cx.tensor(np.zeros(2, complex)), TypeError, r"complex"),
    "backward non-scalar": (lambda: (cx.randn(2, requires_grad=True) * 2).backward(), RuntimeError, r"scalar outputs"),
    "cross_entropy target": (lambda: cx.nn.functional.cross_entropy(T64(2, 3), cx.tensor([0, 3])), IndexError, r"Target 3 is out of bounds"),
    "set_isa unknown": (lambda: cx.set_isa("mmx"), ValueError, r"^isa must be one of"),
    "set_num_threads zero": (lambda: cx.set_num_threads(0), ValueError, r"^n must be >= 1"),
}


@pytest.mark.parametrize("case", sorted(FUNCTION_CASES.items()), ids=lambda c: c[0])
def test_bad_input_to_functions_and_tensors(case):
    _, (call, error, pattern) = case
    with pytest.raises(error, match=pattern):
        call()


def test_stride_zero_and_negative_views_give_correct_results():
    row = np.arange(4.0)
    x = np.broadcast_to(row, (5, 4))                 # every row the same, stride 0
    w = np.eye(4)[::-1]                               # negative row stride
    np.testing.assert_array_equal(ops.linear_forward(x, w), np.tile(row[::-1], (5, 1)))
    dx, dw, db = ops.linear_backward(np.broadcast_to(np.ones(4), (5, 4)), x, w)
    np.testing.assert_array_equal(db, np.full(4, 5.0))
    np.testing.assert_array_equal(dw, np.ones((4, 1)) * (row * 5))


def test_nan_and_inf_stay_where_the_math_puts_them():
    x = np.array([[np.nan, 0.0], [1.0, 2.0], [np.inf, 1.0]])
    w = np.array([[0.0, 1.0], [1.0, 0.0]])
    y = ops.linear_forward(x, w)
    # NaN * 0 is NaN and inf * 0 is NaN, as IEEE says; clean rows stay clean.
    assert np.isnan(y[0]).all() and np.array_equal(y[1], [2.0, 1.0])
    assert np.isnan(y[2, 0]) and y[2, 1] == np.inf
    values, indices = ops.global_max_pool_forward(np.array([[[1.0, np.inf], [np.nan, 2.0]]]))
    assert indices[0] == 2 and np.isnan(values[0])
    g = ops.global_max_pool_backward(np.array([5.0]), indices, (1, 2, 2))
    np.testing.assert_array_equal(g, [[[0, 0], [5, 0]]])   # only the argmax receives it
