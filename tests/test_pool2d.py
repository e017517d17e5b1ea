"""max_pool2d, avg_pool2d and adaptive_avg_pool2d kernels against loop references.

Max pooling is exact (values and int64 indices, NaN and ties as torch);
average pooling is bounded by c * window * u * sum |x|.  Outputs are
poisoned before each call; layouts and thread counts give bitwise the same
answer.
"""
import numpy as np
import pytest

import cextend
from cextend import _backend, ops
from cextend.ops._shapes import pool2d_window
from helpers import DTYPES, poisoned
from nn_reference import (adaptive_avg_pool2d, adaptive_avg_pool2d_backward, assert_close, avg_pool2d,
                          avg_pool2d_backward, max_pool2d)


def _pool_cases(count, seed, dilated):
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        kernel = tuple(int(k) for k in rng.integers(1, 4, 2))
        stride = tuple(int(s) for s in rng.integers(1, 4, 2))
        padding = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
        dilation = tuple(int(d) for d in rng.integers(1, 3, 2)) if dilated else (1, 1)
        ceil_mode = bool(rng.integers(0, 2))
        shape = (int(rng.choice([0, 1, 2])), int(rng.choice([1, 3])),
                 int(rng.choice([1, 2, 5, 7, 11])), int(rng.choice([1, 2, 5, 7, 11])))
        try:
            pool2d_window(shape, kernel, stride, padding, dilation, ceil_mode, "test")
        except ValueError:
            continue
        cases.append((shape, kernel, stride, padding, dilation, ceil_mode))
    return cases


MAX_CASES = _pool_cases(40, seed=21, dilated=True)
AVG_CASES = _pool_cases(40, seed=22, dilated=False)


def _data(shape, dtype, seed, ties=False):
    rng = np.random.default_rng(seed)
    if ties:    # few distinct values, so windows hold equal maxima
        return rng.integers(-2, 3, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MAX_CASES, ids=[str(i) for i in range(len(MAX_CASES))])
def test_max_pool_matches_reference(case, dtype):
    shape, kernel, stride, padding, dilation, ceil_mode = case
    for ties in (False, True):
        x = _data(shape, dtype, seed=len(shape) + sum(shape), ties=ties)
        window, out_shape = pool2d_window(shape, kernel, stride, padding, dilation, ceil_mode, "test")
        values, indices = poisoned(out_shape, dtype), np.full(out_shape, -7, np.int64)
        if values.size:
            _backend.max_pool2d_forward(x, values, indices, window)
        ref_values, ref_indices = max_pool2d(x, kernel, stride, padding, dilation, out_shape[2:])
        np.testing.assert_array_equal(values, ref_values)
        np.testing.assert_array_equal(indices, ref_indices)

        dy = _data(out_shape, dtype, seed=5)
        dx = poisoned(shape, dtype)
        if dx.size:
            _backend.max_pool2d_backward(dy, indices, dx)
        ref = np.zeros(shape)
        flat = ref.reshape(shape[0], shape[1], shape[2] * shape[3])
        for b in range(shape[0]):
            for c in range(shape[1]):
                inside = indices[b, c].ravel() < shape[2] * shape[3]     # empty windows point past
                np.add.at(flat[b, c], indices[b, c].ravel()[inside], dy[b, c].astype(np.float64).ravel()[inside])
        windows = np.prod(kernel)
        assert_close(dx, ref, np.abs(ref) + np.abs(dy).max(initial=0), dtype, windows, what="dx")


def test_max_pool_nan_and_ties_follow_torch():
    x = np.array([[[[1.0, np.nan, 3.0, np.nan]]]])
    values, indices = ops.max_pool2d_forward(x, (1, 4))
    assert np.isnan(values).all() and indices.item() == 3            # the last NaN wins
    values, indices = ops.max_pool2d_forward(np.array([[[[1.0, 3.0, 3.0, 2.0]]]]), (1, 4))
    assert values.item() == 3.0 and indices.item() == 1              # the first maximum wins
    values, indices = ops.max_pool2d_forward(np.full((1, 1, 1, 4), -np.inf), (1, 3), padding=(0, 1))
    assert values.tolist() == [[[[-np.inf, -np.inf]]]] and indices.tolist() == [[[[0, 2]]]]


def test_max_pool_window_with_no_element_inside_gives_torchs_answer():
    """torch 2.13: max_pool2d(zeros(1,1,1,5), 2, stride=1, padding=1,
    dilation=2) gives -inf with indices [6, 5, 6, 7, 8] (past the plane) and
    a zero gradient: the backward skips indices outside the plane."""
    x = np.arange(5.0).reshape(1, 1, 1, 5)
    values, indices = ops.max_pool2d_forward(x, 2, stride=1, padding=1, dilation=2)
    assert values.tolist() == [[[[-np.inf] * 5]]]
    assert indices.tolist() == [[[[6, 5, 6, 7, 8]]]]
    dx = ops.max_pool2d_backward(np.ones(values.shape), indices, x.shape)
    assert dx.tolist() == [[[[0.0] * 5]]]


def _scan_2x2(x):
    """torch's scan over each 2x2, stride 2 window (numpy, every window at once): top-left
    first, then top-right, bottom-left, bottom-right; a NaN always replaces, else only a
    strictly larger value.  (values, indices in the plane)."""
    h_out, w_out = x.shape[2] // 2, x.shape[3] // 2
    w = x.shape[3]
    window = x[:, :, :2 * h_out, :2 * w_out]
    candidates = [window[:, :, 0::2, 0::2], window[:, :, 0::2, 1::2], window[:, :, 1::2, 0::2],
                  window[:, :, 1::2, 1::2]]
    rows, cols = np.meshgrid(np.arange(h_out), np.arange(w_out), indexing="ij")
    top_left = 2 * rows * w + 2 * cols
    best = candidates[0].copy()
    place = np.broadcast_to(top_left, best.shape).astype(np.int64)
    with np.errstate(invalid="ignore"):
        for value, offset in zip(candidates[1:], (1, w, w + 1)):
            take = (value > best) | np.isnan(value)
            best = np.where(take, value, best)
            place = np.where(take, top_left + offset, place)
    return best, place


def _awkward(shape, dtype, rng):
    """Values with ties, NaN, +-0.0 and +-inf scattered through (where which value wins matters)."""
    x = rng.integers(-2, 3, shape).astype(dtype)
    flat = x.reshape(-1)
    for value in (np.nan, -0.0, 0.0, np.inf, -np.inf):
        flat[rng.integers(0, flat.size, max(1, flat.size // 50))] = value
    return x


# (n, c, h, w): exact halves with 1, 2, 4, 8 windows a row (the run-of-pairs path; 5 x 70
# planes of 4 x 4 windows span several chunks, the last one partial; 2400 windows a plane is
# over a chunk), the row-by-row path (other widths, odd sizes), and two large enough for
# two threads
POOL_2X2_SHAPES = [(1, 1, 2, 2), (2, 3, 6, 2), (3, 2, 8, 4), (64, 16, 8, 8), (5, 70, 8, 8), (2, 3, 10, 16),
                   (1, 1, 600, 16), (2, 2, 6, 6), (2, 3, 7, 9), (1, 2, 4, 32), (2, 1, 5, 34), (1, 1, 3, 9),
                   (16, 80, 16, 16), (8, 40, 32, 34)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", POOL_2X2_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_max_pool_2x2_matches_torchs_scan_on_every_layout_and_isa(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = _awkward(shape, dtype, rng)
    ref_values, ref_indices = _scan_2x2(x)
    if x.size <= 400:
        slow_values, slow_indices = max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), ref_values.shape[2:])
        np.testing.assert_array_equal(ref_values, slow_values)
        np.testing.assert_array_equal(ref_indices, slow_indices)
    window, out_shape = pool2d_window(shape, 2, 2, 0, 1, False, "test")
    wide = np.full(shape[:3] + (shape[3] + 3,), 7, dtype)       # rows with a stride past their width
    wide[..., :shape[3]] = x
    swapped = np.ascontiguousarray(x.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    layouts = [("contiguous", x), ("row stride", wide[..., :shape[3]]), ("planes swapped", swapped)]
    previous, threads_before = _backend.get_isa(), cextend.get_num_threads()
    try:
        for isa, threads in [(isa, 1) for isa in _backend.available_isas()] + [(previous, 2)]:
            _backend.set_isa(isa)
            cextend.set_num_threads(threads)
            for name, view in layouts:
                values, indices = poisoned(out_shape, dtype), np.full(out_shape, -7, np.int64)
                _backend.max_pool2d_forward(view, values, indices, window)
                np.testing.assert_array_equal(values, ref_values, err_msg="%s, %s" % (isa, name))
                np.testing.assert_array_equal(indices, ref_indices, err_msg="%s, %s" % (isa, name))
                alone = poisoned(out_shape, dtype)          # without indices (no grad wanted)
                _backend.max_pool2d_forward(view, alone, None, window)
                np.testing.assert_array_equal(alone, ref_values, err_msg="%s, %s" % (isa, name))
    finally:
        _backend.set_isa(previous)
        cextend.set_num_threads(threads_before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", AVG_CASES, ids=[str(i) for i in range(len(AVG_CASES))])
def test_avg_pool_matches_reference(case, dtype):
    shape, kernel, stride, padding, _, ceil_mode = case
    x = _data(shape, dtype, seed=sum(shape))
    for count_include_pad, divisor_override in [(True, None), (False, None), (True, 3), (False, 5)]:
        window, out_shape = pool2d_window(shape, kernel, stride, padding, 1, ceil_mode, "test")
        y = poisoned(out_shape, dtype)
        if y.size:
            _backend.avg_pool2d_forward(x, y, window[:3], count_include_pad, divisor_override or 0)
        ref, windows = avg_pool2d(x, kernel, stride, padding, count_include_pad, divisor_override, out_shape[2:])
        bound, _ = avg_pool2d(np.abs(x), kernel, stride, padding, count_include_pad, divisor_override,
                              out_shape[2:])
        k = int(np.prod(kernel))
        assert_close(y, ref, bound, dtype, k + 1, what="y")

        dy = _data(out_shape, dtype, seed=6)
        dx = poisoned(shape, dtype)
        if dx.size:
            _backend.avg_pool2d_backward(dy, dx, window[:3], count_include_pad, divisor_override or 0)
        ref = avg_pool2d_backward(dy, shape, windows)
        assert_close(dx, ref, avg_pool2d_backward(np.abs(dy), shape, windows), dtype, k + 1, what="dx")


ADAPTIVE = [((2, 3, 7, 5), (3, 2)), ((1, 2, 5, 5), (5, 5)), ((2, 1, 4, 9), (1, 1)), ((0, 2, 3, 3), (2, 2)),
            ((1, 1, 3, 2), (7, 5)), ((2, 2, 13, 11), (4, 3)), ((1, 2, 6, 6), (0, 3))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,out_size", ADAPTIVE)
def test_adaptive_avg_pool_matches_reference(shape, out_size, dtype):
    x = _data(shape, dtype, seed=3)
    out_shape = shape[:2] + out_size
    y = poisoned(out_shape, dtype)
    if y.size:
        _backend.adaptive_avg_pool2d_forward(x, y)
    window = max(-(-shape[2] // max(out_size[0], 1)) + 1, 1) * max(-(-shape[3] // max(out_size[1], 1)) + 1, 1)
    assert_close(y, adaptive_avg_pool2d(x, out_size), adaptive_avg_pool2d(np.abs(x), out_size), dtype,
                 window, what="y")
    np.testing.assert_array_equal(ops.adaptive_avg_pool2d_forward(x, out_size), y)
    dy = _data(out_shape, dtype, seed=4)
    dx = poisoned(shape, dtype)
    if dx.size:
        _backend.adaptive_avg_pool2d_backward(dy, dx)
    assert_close(dx, adaptive_avg_pool2d_backward(dy, shape), adaptive_avg_pool2d_backward(np.abs(dy), shape),
                 dtype, window, what="dx")


def test_adaptive_output_size_none_keeps_the_input_size():
    x = _data((1, 2, 5, 4), np.float64, seed=1)
    assert ops.adaptive_avg_pool2d_forward(x, (2, None)).shape == (1, 2, 2, 4)
    assert ops.adaptive_avg_pool2d_forward(x, 3).shape == (1, 2, 3, 3)


def _layouts(x):
    n, c, h, w = x.shape
    wide = np.full((n, c + 3, h, w), np.nan, x.dtype)
    wide[:, 1:1 + c] = x
    yield "channel_sliced", wide[:, 1:1 + c]
    yield "channels_last", np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    yield "transposed_planes", np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    yield "negative_strides", x[:, :, ::-1].copy()[:, :, ::-1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_layouts_and_threads_give_bitwise_the_same_answer(dtype):
    x = _data((3, 5, 40, 37), dtype, seed=9)
    x[0, 0, 3, 3] = np.nan

    def run(x):
        values, indices = ops.max_pool2d_forward(x, 3, 2, 1, 2, True)
        avg = ops.avg_pool2d_forward(x, 3, 2, 1, True, False)
        adaptive = ops.adaptive_avg_pool2d_forward(x, (7, 5))
        return [values, indices, avg, adaptive,
                ops.max_pool2d_backward(values, indices, x.shape),
                ops.avg_pool2d_backward(avg, x.shape, 3, 2, 1, True, False),
                ops.adaptive_avg_pool2d_backward(adaptive, x.shape)]

    reference = run(x)
    for name, view in _layouts(x):
        for got, ref in zip(run(view), reference):
            np.testing.assert_array_equal(got, ref, err_msg=name)
    before = cextend.get_num_threads()
    try:
        for threads in (1, 2):
            cextend.set_num_threads(threads)
            big = np.repeat(x, 8, axis=0)
            for got, ref in zip(run(big), run(big.copy())):
                np.testing.assert_array_equal(got, ref)
            if threads == 1:
                single = run(big)
            else:
                for got, ref in zip(run(big), single):
                    np.testing.assert_array_equal(got, ref)
    finally:
        cextend.set_num_threads(before)


def test_remembered_window_sizes_still_refuse_what_they_refuse():
    """pool2d_window and conv2d_geometry keep their answers by argument: an argument equal to
    a valid one (True == 1 == 1.0) must still be refused, every time, after the valid one."""
    x, w = np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 1, 3, 3), np.float32)
    for _ in range(2):
        ops.max_pool2d_forward(x, 2, stride=1)
        ops.conv2d_forward(x, w, stride=1, groups=1)
        for bad, name in ((True, "bool"), (1.0, "float")):
            with pytest.raises(TypeError, match="stride must be an int or a tuple of ints, got " + name):
                ops.max_pool2d_forward(x, 2, stride=bad)
            with pytest.raises(TypeError, match="got " + name):
                ops.conv2d_forward(x, w, stride=(1, bad))
        with pytest.raises(TypeError, match="groups must be an int, got bool"):
            ops.conv2d_forward(x, w, groups=True)


BAD_POOL = [
    (dict(kernel_size=0), "kernel size should be greater than zero"),
    (dict(kernel_size=2, stride=0), "stride should be greater than zero"),
    (dict(kernel_size=2, padding=2), "pad should be at most half of effective kernel size"),
    (dict(kernel_size=2, padding=-1), "pad must be non-negative"),
    (dict(kernel_size=8), "Output size is too small"),
    (dict(kernel_size=(1, 2, 3)), "kernel_size must be an int or a tuple of 2 ints"),
]


@pytest.mark.parametrize("change,message", BAD_POOL, ids=[m[:25] for _, m in BAD_POOL])
def test_bad_pool_arguments_raise_clearly(change, message):
    x = np.zeros((1, 2, 5, 5))
    with pytest.raises(ValueError, match=message):
        ops.max_pool2d_forward(x, **change)
    with pytest.raises(ValueError, match=message):
        ops.avg_pool2d_forward(x, **change)


def test_bad_pool_inputs_raise_clearly():
    with pytest.raises(ValueError, match="dilation should be greater than zero"):
        ops.max_pool2d_forward(np.zeros((1, 2, 5, 5)), 2, dilation=0)
    with pytest.raises(ValueError, match="expected a 4-D"):
        ops.max_pool2d_forward(np.zeros((2, 5, 5)), 2)
    with pytest.raises(ValueError, match="non-zero C, H and W"):
        ops.avg_pool2d_forward(np.zeros((1, 0, 5, 5)), 2)
    with pytest.raises(ValueError, match="divisor must be not zero"):
        ops.avg_pool2d_forward(np.zeros((1, 1, 5, 5)), 2, divisor_override=0)
    with pytest.raises(TypeError, match="x must be float32 or float64"):
        ops.max_pool2d_forward(np.zeros((1, 1, 5, 5), np.int64), 2)
    with pytest.raises(TypeError, match="indices must be int64"):
        ops.max_pool2d_backward(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2, 2), np.int32), (1, 1, 4, 4))
    with pytest.raises(ValueError, match="non-zero size for non-batch dimensions"):
        ops.adaptive_avg_pool2d_forward(np.zeros((1, 2, 0, 3)), 2)
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        ops.adaptive_avg_pool2d_forward(np.zeros((1, 2, 3, 3)), -1)
    with pytest.raises(ValueError, match="grad_out must have shape"):
        ops.avg_pool2d_backward(np.zeros((1, 1, 3, 3)), (1, 1, 4, 4), 2)
