"""conv2d and conv_transpose2d kernels against the float64 references.

Outputs are poisoned (NaN) before each kernel call; error bounds scale with
the reduction length (K = C_in/groups * kH * kW for y and dx, N * H_out *
W_out for dw); every layout a user can hand us gives bitwise the
contiguous answer, and any thread count gives bitwise the same answer.
"""
import numpy as np
import pytest

import cextend
from cextend import _backend, ops
from cextend.ops._shapes import conv2d_geometry, conv_transpose2d_geometry
from cextend.ops.conv import conv
from helpers import DTYPES, poisoned
from nn_reference import assert_close, conv2d, conv2d_input_grad, conv2d_weight_grad

# (n, c_in, h, w, c_out, (kh, kw), stride, padding, dilation, groups)
EXPLICIT = [
    (2, 5, 7, 11, 3, (1, 1), (1, 1), (0, 0), (1, 1), 1),      # pointwise: no patch matrix
    (3, 6, 5, 4, 9, (1, 1), (1, 1), (0, 0), (1, 1), 3),      # pointwise, grouped
    (2, 4, 9, 9, 4, (1, 1), (2, 2), (0, 0), (1, 1), 1),      # 1x1 but strided: patches
    (1, 3, 13, 17, 5, (3, 3), (1, 1), (1, 1), (1, 1), 1),    # batch 1, prime sizes
    (0, 3, 8, 8, 4, (3, 3), (1, 1), (1, 1), (1, 1), 1),      # batch 0
    (2, 4, 7, 7, 4, (3, 3), (1, 1), (1, 1), (1, 1), 4),      # depthwise
    (2, 2, 6, 9, 3, (2, 4), (2, 3), (1, 2), (2, 1), 1),      # asymmetric everything
    (1, 1, 1, 1, 2, (1, 1), (1, 1), (0, 0), (1, 1), 1),      # 1x1 image
    (2, 3, 5, 5, 2, (5, 5), (1, 1), (0, 0), (1, 1), 1),      # kernel = image
    (4, 3, 100, 100, 4, (3, 3), (1, 1), (1, 1), (1, 1), 1),  # image chunks of 3 and 1
]


def _random_cases(count, seed):
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        groups = int(rng.choice([1, 1, 2, 3]))
        c_in, c_out = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
        kernel = tuple(int(k) for k in rng.integers(1, 4, 2))
        stride = tuple(int(s) for s in rng.integers(1, 4, 2))
        padding = tuple(int(p) for p in rng.integers(0, 3, 2))
        dilation = tuple(int(d) for d in rng.integers(1, 3, 2))
        h, w = (int(s) for s in rng.choice([1, 2, 3, 5, 7, 11, 13], 2))
        if any(size + 2 * p < d * (k - 1) + 1 for size, p, d, k in zip((h, w), padding, dilation, kernel)):
            continue
        cases.append((int(rng.choice([0, 1, 2, 3])), c_in, h, w, c_out, kernel, stride, padding, dilation, groups))
    return cases


CASES = EXPLICIT + _random_cases(40, seed=13)


def _operands(case, dtype, seed=0):
    n, c_in, h, w, c_out, (kh, kw), stride, padding, dilation, groups = case
    rng = np.random.default_rng(seed + 7 * n + 13 * c_in + 31 * h + 101 * w)
    x = rng.standard_normal((n, c_in, h, w)).astype(dtype)
    weight = rng.standard_normal((c_out, c_in // groups, kh, kw)).astype(dtype)
    bias = rng.standard_normal(c_out).astype(dtype)
    return x, weight, bias, dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


def _geometry(x, weight, params):
    return conv2d_geometry(x.shape, weight.shape, None, **params)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_forward_matches_reference(case, dtype):
    x, weight, bias, params = _operands(case, dtype)
    geometry, shape = _geometry(x, weight, params)
    k = weight.shape[1] * weight.shape[2] * weight.shape[3]
    for b in (bias, None):
        out = poisoned(shape, dtype)
        y = ops.conv2d_forward(x, weight, b, out=out, **params)
        assert y is out
        ref, bound = conv2d(x, weight, b, geometry.stride, geometry.padding, geometry.dilation,
                            geometry.groups, geometry.out_size)
        assert_close(y, ref, bound, dtype, k + 1, what="y")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_backward_matches_reference(case, dtype):
    x, weight, _, params = _operands(case, dtype, seed=1)
    geometry, shape = _geometry(x, weight, params)
    dy = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    dx, dw, db = poisoned(x.shape, dtype), poisoned(weight.shape, dtype), poisoned(shape[1], dtype)
    _backend.conv2d_backward(dy, x.shape, x, weight, weight.shape, dx, dw, db, geometry.kernel_args())
    stride, pad, dil, groups = geometry.kernel_args()
    ref, bound = conv2d_input_grad(dy, weight, stride, pad, dil, groups, x.shape)
    k = (weight.shape[0] // groups) * weight.shape[2] * weight.shape[3]
    assert_close(dx, ref, bound, dtype, k, what="dx")
    ref, bound = conv2d_weight_grad(dy, x, stride, pad, dil, groups, weight.shape)
    assert_close(dw, ref, bound, dtype, shape[0] * shape[2] * shape[3] + 1, what="dw")
    dy64 = dy.astype(np.float64)
    assert_close(db, dy64.sum(axis=(0, 2, 3)), np.abs(dy64).sum(axis=(0, 2, 3)), dtype,
                 shape[0] * shape[2] * shape[3], what="db")


@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_computes_exactly_the_requested_gradients(dtype):
    x, weight, _, params = _operands(EXPLICIT[6], dtype)
    geometry, shape = _geometry(x, weight, params)
    dy = np.random.default_rng(4).standard_normal(shape).astype(dtype)
    full = ops.conv2d_backward(dy, x, weight, **params)
    for wanted in [(True, False, False), (False, True, False), (False, False, True), (False, False, False)]:
        got = ops.conv2d_backward(dy, x, weight, input=wanted[0], weight=wanted[1], bias=wanted[2], **params)
        for want, g, ref in zip(wanted, got, full):
            if want:
                np.testing.assert_array_equal(g, ref)
            else:
                assert g is None
    # the C kernel reads x only for dw and w only for dx: NULL is legal otherwise
    dx = poisoned(x.shape, dtype)
    _backend.conv2d_backward(dy, x.shape, None, weight, weight.shape, dx, None, None, geometry.kernel_args())
    np.testing.assert_array_equal(dx, full[0])
    dw = poisoned(weight.shape, dtype)
    _backend.conv2d_backward(dy, x.shape, x, None, weight.shape, None, dw, None, geometry.kernel_args())
    np.testing.assert_array_equal(dw, full[1])


def _layouts(x):
    """(name, view, read in place?) of x's values in the layouts users hand us."""
    n, c, h, w = x.shape
    wide = np.full((n, c + 5, h, w), np.nan, x.dtype)
    wide[:, 2:2 + c] = x
    yield "channel_sliced", wide[:, 2:2 + c], True
    yield "channels_last", np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2), True
    strided = np.full((n, c, 2 * h, 3 * w), np.nan, x.dtype)
    strided[:, :, ::2, ::3] = x
    yield "rows_and_columns_strided", strided[:, :, ::2, ::3], True
    yield "batch_broadcast", np.broadcast_to(x[:1], x.shape), True
    yield "negative_strides", x[:, :, ::-1, ::-1].copy()[:, :, ::-1, ::-1], False
    raw = np.zeros(x.nbytes + 1, np.uint8)[1:].view(x.dtype).reshape(x.shape)
    raw[...] = x
    yield "misaligned", raw, False


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [EXPLICIT[0], EXPLICIT[3], EXPLICIT[6]], ids=["pointwise", "3x3", "asymmetric"])
def test_every_layout_gives_bitwise_the_contiguous_answer(case, dtype):
    x, weight, bias, params = _operands(case, dtype)
    if x.shape[0] > 1:
        x[1:] = x[:1]           # so that the broadcast layout holds the same values
    geometry, shape = _geometry(x, weight, params)
    dy = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    if dy.shape[0] > 1:
        dy[1:] = dy[:1]
    y_ref = ops.conv2d_forward(x, weight, bias, **params)
    grads_ref = ops.conv2d_backward(dy, x, weight, **params)
    for name, view, in_place in _layouts(x):
        assert (_backend.strided(view)[0] is view) == in_place, name
        np.testing.assert_array_equal(ops.conv2d_forward(view, weight, bias, **params), y_ref, err_msg=name)
        for got, ref in zip(ops.conv2d_backward(dy, view, weight, **params), grads_ref):
            np.testing.assert_array_equal(got, ref, err_msg=name)
    for name, view, _ in _layouts(dy):
        for got, ref in zip(ops.conv2d_backward(view, x, weight, **params), grads_ref):
            np.testing.assert_array_equal(got, ref, err_msg="dy " + name)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bitwise_identical_for_any_thread_count(dtype):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 8, 33, 31)).astype(dtype)
    weight = rng.standard_normal((16, 8, 3, 3)).astype(dtype)
    bias = rng.standard_normal(16).astype(dtype)
    dy = rng.standard_normal((4, 16, 33, 31)).astype(dtype)
    before = cextend.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            cextend.set_num_threads(threads)
            results.append((ops.conv2d_forward(x, weight, bias, padding=1),)
                           + ops.conv2d_backward(dy, x, weight, padding=1)
                           + (ops.conv_transpose2d_forward(x, weight.transpose(1, 0, 2, 3).copy(), stride=2),))
    finally:
        cextend.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("isa", _backend.available_isas())
def test_every_gemm_isa_gives_a_correct_convolution(isa):
    x, weight, bias, params = _operands(EXPLICIT[6], np.float32)
    geometry, _ = _geometry(x, weight, params)
    before = _backend.get_isa()
    try:
        _backend.set_isa(isa)
        y = ops.conv2d_forward(x, weight, bias, **params)
    finally:
        _backend.set_isa(before)
    ref, bound = conv2d(x, weight, bias, *geometry.kernel_args(), geometry.out_size)
    assert_close(y, ref, bound, np.float32, 1 + weight[0].size)


# Planes of at most 16 values (float32 on AVX-512 or AVX2 takes kernels/conv_small.c's one-vector
# patches): (n, c_in, h, w, c_out, (kh, kw), stride, padding, dilation, groups)
SMALL_PLANES = [
    (64, 16, 4, 4, 32, (3, 3), (1, 1), (1, 1), (1, 1), 1),   # the CNN demo's second convolution
    (3, 4, 4, 4, 2, (3, 3), (2, 2), (1, 1), (1, 1), 2),      # strided, grouped
    (2, 3, 3, 5, 4, (2, 3), (1, 2), (2, 0), (2, 1), 1),      # asymmetric, dilated, padded past the plane
    (5, 2, 1, 16, 3, (1, 5), (1, 3), (0, 2), (1, 1), 1),     # one row of 16
    (2, 2, 2, 2, 3, (5, 5), (1, 1), (2, 2), (1, 1), 1),      # 25 taps on a 2x2 plane
    (4, 3, 4, 3, 2, (2, 2), (1, 1), (0, 0), (1, 1), 1),      # no padding
    (512, 8, 4, 4, 8, (3, 3), (1, 1), (1, 1), (1, 1), 1),    # enough work for two threads
]


def _awkward(shape, rng):
    values = rng.standard_normal(shape).astype(np.float32)
    flat = values.reshape(-1)
    for special in (np.nan, -0.0, 0.0, np.inf, -np.inf):
        flat[rng.integers(0, flat.size, max(1, flat.size // 40))] = special
    return values


@pytest.mark.parametrize("case", SMALL_PLANES, ids=[str(i) for i in range(len(SMALL_PLANES))])
def test_small_planes_give_the_generic_paths_bits(case):
    """The one-vector patches against the generic pad + im2col (a plane whose own values are
    strided takes that path) on each ISA and thread count; exact integer data, whose every
    sum is exact, must give the same bits on every ISA (the GEMM's blocking differs between
    them, so only exact data can be compared across)."""
    x, weight, bias, params = _operands(case, np.float32)
    geometry, shape = _geometry(x, weight, params)
    dy = np.random.default_rng(11).standard_normal(shape).astype(np.float32)
    ref, bound = conv2d(x, weight, bias, *geometry.kernel_args(), geometry.out_size)
    assert_close(ops.conv2d_forward(x, weight, bias, **params), ref, bound, np.float32, 1 + weight[0].size)
    stride, pad, dil, groups = geometry.kernel_args()
    dx = ops.conv2d_backward(dy, x, weight, **params)[0]
    ref, bound = conv2d_input_grad(dy, weight, stride, pad, dil, groups, x.shape)
    assert_close(dx, ref, bound, np.float32, (weight.shape[0] // groups) * weight.shape[2] * weight.shape[3],
                 what="dx")
    rng = np.random.default_rng(12)
    x, dy = _awkward(x.shape, rng), _awkward(dy.shape, rng)
    wide = np.repeat(x, 2, axis=3)
    generic = wide[..., ::2]                                # the same values, a column stride of 2
    assert np.array_equal(generic, x, equal_nan=True)
    exact = [rng.integers(-3, 4, a.shape).astype(np.float32) for a in (x, weight, bias, dy)]

    def run(x, weight=weight, bias=bias, dy=dy):
        return [ops.conv2d_forward(x, weight, bias, **params)] + list(ops.conv2d_backward(dy, x, weight, **params))

    isa_before, threads_before = _backend.get_isa(), cextend.get_num_threads()
    exact_answers, single = {}, {}
    try:
        for isa in _backend.available_isas():
            _backend.set_isa(isa)
            for threads in (1, 2):
                cextend.set_num_threads(threads)
                got = run(x)
                for a, b, name in zip(got, run(generic), ("y", "dx", "dw", "db")):
                    np.testing.assert_array_equal(a, b, err_msg="%s, %s, %d threads" % (name, isa, threads))
                for a, b, name in zip(got, single.setdefault(isa, got), ("y", "dx", "dw", "db")):
                    np.testing.assert_array_equal(a, b, err_msg="%s, %s: 1 and 2 threads" % (name, isa))
                exact_answers[isa, threads] = run(*exact)
    finally:
        _backend.set_isa(isa_before)
        cextend.set_num_threads(threads_before)
    first = next(iter(exact_answers.values()))
    for key, got in exact_answers.items():
        for a, b, name in zip(got, first, ("y", "dx", "dw", "db")):
            np.testing.assert_array_equal(a, b, err_msg="exact data, %s %s" % (name, key))


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_sizes(dtype):
    rng = np.random.default_rng(8)
    bias = rng.standard_normal(3).astype(dtype)
    # no input channels: the output is the bias, the weight gradient empty
    x = np.zeros((2, 0, 4, 4), dtype)
    weight = np.zeros((3, 0, 3, 3), dtype)
    y = ops.conv2d_forward(x, weight, bias, padding=1)
    np.testing.assert_array_equal(y, np.broadcast_to(bias[None, :, None, None], (2, 3, 4, 4)))
    dx, dw, db = ops.conv2d_backward(np.ones_like(y), x, weight, padding=1)
    assert dx.shape == x.shape and dw.shape == weight.shape and db.tolist() == [16 * 2] * 3
    # an empty batch: the weight and bias gradients are empty sums
    x = np.zeros((0, 2, 5, 5), dtype)
    weight = rng.standard_normal((3, 2, 3, 3)).astype(dtype)
    assert ops.conv2d_forward(x, weight, bias).shape == (0, 3, 3, 3)
    dx, dw, db = ops.conv2d_backward(np.zeros((0, 3, 3, 3), dtype), x, weight)
    assert dx.shape == x.shape and not dw.any() and not db.any() and dw.shape == weight.shape


def test_kernel_output_size_is_the_callers(dtype=np.float64):
    """Positions past the input read as zero: padding='same' with an even
    kernel is pad_before plus a larger output (torch pads the extra after)."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 6, 7))
    weight = rng.standard_normal((2, 3, 4, 2))
    y = ops.conv2d_forward(x, weight, padding="same")
    assert y.shape == (2, 2, 6, 7)
    explicit = np.zeros((2, 3, 9, 8))
    explicit[:, :, 1:7, 0:7] = x                      # 1 before, 2 after; 0 before, 1 after
    np.testing.assert_allclose(y, ops.conv2d_forward(explicit, weight), rtol=1e-13, atol=1e-13)
    assert ops.conv2d_forward(x, weight, padding="valid").shape == (2, 2, 3, 6)


# -- conv_transpose2d ---------------------------------------------------------------------

TRANSPOSED = [
    # (n, c_in, h, w, c_out, kernel, stride, padding, output_padding, dilation, groups)
    (2, 4, 5, 3, 6, (3, 2), (2, 1), (1, 0), (1, 0), (1, 2), 2),
    (1, 3, 7, 7, 2, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (3, 2, 4, 5, 3, (2, 2), (2, 2), (0, 1), (1, 1), (1, 1), 1),
    (0, 2, 4, 5, 3, (2, 2), (2, 2), (0, 0), (0, 0), (1, 1), 1),
    (2, 6, 3, 4, 3, (1, 1), (3, 2), (0, 0), (2, 1), (1, 1), 3),
    (2, 2, 5, 5, 2, (3, 3), (1, 1), (2, 2), (1, 0), (3, 2), 1),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", TRANSPOSED)
def test_conv_transpose2d_matches_reference(case, dtype):
    n, c_in, h, w, c_out, (kh, kw), stride, padding, output_padding, dilation, groups = case
    rng = np.random.default_rng(h * 10 + w)
    x = rng.standard_normal((n, c_in, h, w)).astype(dtype)
    weight = rng.standard_normal((c_in, c_out // groups, kh, kw)).astype(dtype)
    bias = rng.standard_normal(c_out).astype(dtype)
    params = dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)
    geometry, shape = conv_transpose2d_geometry(x.shape, weight.shape, bias.shape, **params)
    out = poisoned(shape, dtype)
    y = ops.conv_transpose2d_forward(x, weight, bias, out=out, **params)
    assert y is out
    ref, bound = conv2d_input_grad(x, weight, stride, padding, dilation, groups, shape)
    ref = ref + bias[None, :, None, None]
    bound = bound + np.abs(bias)[None, :, None, None]
    assert_close(y, ref, bound, dtype, c_in // groups * kh * kw + 1, what="y")

    dy = rng.standard_normal(shape).astype(dtype)
    dx, dw, db = ops.conv_transpose2d_backward(dy, x, weight, **params)
    ref, bound = conv2d(dy, weight, None, stride, padding, dilation, groups, (h, w))
    assert_close(dx, ref, bound, dtype, weight[0].size, what="dx")
    ref, bound = conv2d_weight_grad(x, dy, stride, padding, dilation, groups, weight.shape)
    assert_close(dw, ref, bound, dtype, n * h * w + 1, what="dw")
    np.testing.assert_allclose(db, dy.astype(np.float64).sum(axis=(0, 2, 3)),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_conv_geometry_is_shared_with_the_functions():
    """The kernels take the geometry objects the autograd Functions hold."""
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 5))
    weight = np.random.default_rng(1).standard_normal((3, 2, 3, 3))
    geometry, shape = conv2d_geometry(x.shape, weight.shape, None, stride=2, padding=1)
    np.testing.assert_array_equal(conv(x, weight, None, geometry), ops.conv2d_forward(x, weight, stride=2, padding=1))
    assert shape == (1, 3, 3, 3)


# -- argument checks (Python) --------------------------------------------------------------

BAD_CONV = [
    (dict(x_shape=(2, 3, 5), w_shape=(4, 3, 3, 3)), ValueError, "x must be 4-D"),
    (dict(w_shape=(4, 3, 3)), ValueError, "weight must be 4-D"),
    (dict(w_shape=(4, 2, 3, 3)), ValueError, "expected input.* to have 2 channels, but got 3"),
    (dict(groups=0), ValueError, "non-positive groups"),
    (dict(groups=2, w_shape=(3, 3, 3, 3)), ValueError, "divisible by 2"),
    (dict(stride=0), ValueError, "non-positive stride"),
    (dict(padding=-1), ValueError, "negative padding"),
    (dict(dilation=0), ValueError, "dilation should be greater than zero"),
    (dict(w_shape=(4, 3, 0, 3)), ValueError, "kernel size should be greater than zero"),
    (dict(w_shape=(4, 3, 9, 9)), ValueError, "Kernel size can't be greater than actual input size"),
    (dict(padding="same", stride=2), ValueError, "not supported for strided convolutions"),
    (dict(padding="full"), ValueError, "Invalid padding string"),
    (dict(stride=(1, 2, 3)), ValueError, "stride must be an int or a tuple of 2 ints"),
    (dict(stride=1.5), TypeError, "stride must be an int"),
    (dict(b_shape=(5,)), ValueError, "expected bias to be 1-dimensional with 4 elements"),
]


@pytest.mark.parametrize("change,error,message", BAD_CONV, ids=[c[2][:30] for c in BAD_CONV])
def test_bad_conv2d_arguments_raise_clearly(change, error, message):
    args = dict(x_shape=(2, 3, 5, 5), w_shape=(4, 3, 3, 3), b_shape=(4,))
    args.update(change)
    params = {k: v for k, v in args.items() if not k.endswith("_shape")}
    x = np.zeros(args["x_shape"])
    w = np.zeros(args["w_shape"])
    b = np.zeros(args["b_shape"])
    with pytest.raises(error, match=message):
        ops.conv2d_forward(x, w, b, **params)


def test_bad_operands_raise_clearly():
    x, w = np.zeros((1, 2, 4, 4)), np.zeros((3, 2, 3, 3))
    with pytest.raises(TypeError, match="w is float32 but x is float64"):
        ops.conv2d_forward(x, w.astype(np.float32))
    with pytest.raises(TypeError, match="x must be a numpy.ndarray"):
        ops.conv2d_forward([[1.0]], w)
    with pytest.raises(ValueError, match=r"out must have shape \(1, 3, 2, 2\)"):
        ops.conv2d_forward(x, w, out=np.zeros((1, 3, 3, 3)))
    with pytest.raises(ValueError, match="grad_out must have shape"):
        ops.conv2d_backward(np.zeros((1, 3, 3, 3)), x, w)
    with pytest.raises(ValueError, match="output padding must be smaller than either stride or dilation"):
        ops.conv_transpose2d_forward(x, np.zeros((2, 3, 3, 3)), stride=2, output_padding=2)
    with pytest.raises(ValueError, match="expected input.* to have 3 channels"):
        ops.conv_transpose2d_forward(x, np.zeros((3, 3, 3, 3)))


def test_out_overlapping_the_input_reads_the_input_first():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, 2, 4, 4))
    w = rng.standard_normal((2, 2, 1, 1))
    expected = ops.conv2d_forward(x, w)
    ops.conv2d_forward(x, w, out=x)
    np.testing.assert_array_equal(x, expected)
