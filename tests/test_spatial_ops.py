"""The spatial ops of torch.nn.functional and their layers: pad, interpolate
(and nn.Upsample*), unfold/fold, grid_sample/affine_grid, pixel_shuffle /
pixel_unshuffle, channel_shuffle (cextend/_ops/spatial*.py, cextend/nn/spatial.py).

Each op is checked twice: against a numpy float64 reference or a closed
form stated here (these run without torch), and, where torch 2.13 is
installed, against torch on awkward shapes (sizes 1, odd, prime), both
float dtypes, strided and channels-last inputs: values, the gradients of
every differentiable input, the grad_fn, the output layout and the errors.
Gradcheck and gradgradcheck of the table's samples run in test_op_table.py.
"""
import warnings

import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as F
from cextend._ops.spatial_samples import _grid
from cextend.autograd import gradcheck, gradgradcheck

from parity_helpers import LIBS, each_lib, real_torch, with_torch

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def _t(array, requires_grad=False, layout="contiguous"):
    array = _laid_out(np.asarray(array), layout)
    t = cx.from_numpy(array)
    return t.requires_grad_() if requires_grad else t


def _laid_out(array, layout):
    """The same values in another memory layout: transposed (a view), channels last, sliced."""
    if layout == "transposed":
        return np.ascontiguousarray(np.swapaxes(array, -1, -2)).swapaxes(-1, -2)
    if layout == "channels_last" and array.ndim in (4, 5):
        order = (0,) + tuple(range(2, array.ndim)) + (1,)
        return np.ascontiguousarray(array.transpose(order)).transpose(np.argsort(order))
    if layout == "sliced":
        wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        wide[..., ::2] = array
        return wide[..., ::2]
    return array


def _np(t):
    return np.asarray(t.detach().numpy())


# -- stated answers (numpy float64 references and closed forms) ----------------------------------------

def test_pad_matches_numpy_pad_in_every_mode():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5))
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        out = F.pad(_t(x), (1, 3, 2, 0), mode=mode)
        np.testing.assert_array_equal(_np(out), np.pad(x, ((0, 0), (0, 0), (2, 0), (1, 3)), mode=np_mode))
    out = F.pad(_t(x), (2, 1, 0, 0, 1, 1), value=-7.5)
    np.testing.assert_array_equal(_np(out), np.pad(x, ((0, 0), (1, 1), (0, 0), (2, 1)), constant_values=-7.5))
    # negative pads crop; reflect and replicate count from the cropped edge
    np.testing.assert_array_equal(_np(F.pad(_t(x), (-1, 2, -2, -1))), np.pad(x[..., 2:3, 1:], ((0, 0),) * 3 + ((0, 2),)))
    r = np.arange(5.0)
    np.testing.assert_array_equal(_np(F.pad(_t(r[None]), (-1, 2), mode="reflect"))[0], [1, 2, 3, 4, 3, 2])
    np.testing.assert_array_equal(_np(F.pad(_t(r[None]), (2, -2), mode="replicate"))[0], [0, 0, 0, 1, 2])
    np.testing.assert_array_equal(_np(F.pad(_t(r[None]), (-1, 2), mode="circular"))[0], [1, 2, 3, 4, 1, 2])
    # 3-d reflect of a 5-d input, replicate of an unbatched 4-d one
    y = rng.standard_normal((1, 2, 3, 3, 4))
    np.testing.assert_array_equal(_np(F.pad(_t(y), (1, 2, 0, 2, 1, 1), mode="reflect")),
                                  np.pad(y, ((0, 0), (0, 0), (1, 1), (0, 2), (1, 2)), mode="reflect"))
    np.testing.assert_array_equal(_np(F.pad(_t(y[0]), (1, 2, 0, 2, 3, 1), mode="replicate")),
                                  np.pad(y[0], ((0, 0), (3, 1), (0, 2), (1, 2)), mode="edge"))


def test_pad_gradient_adds_back_where_each_value_came_from():
    x = _t(np.arange(4.0)[None, None], requires_grad=True)
    F.pad(x, (2, 3), mode="reflect").sum().backward()         # [2 1 | 0 1 2 3 | 2 1 0]
    np.testing.assert_array_equal(_np(x.grad)[0, 0], [2, 3, 3, 1])
    x.grad = None
    F.pad(x, (2, 1), mode="replicate").sum().backward()
    np.testing.assert_array_equal(_np(x.grad)[0, 0], [3, 1, 1, 2])
    x.grad = None
    F.pad(x, (-1, 2), value=9.0).sum().backward()             # the crop: no gradient for x[0]
    np.testing.assert_array_equal(_np(x.grad)[0, 0], [0, 1, 1, 1])
    x.grad = None
    F.pad(x, (3, 2), mode="circular").sum().backward()
    np.testing.assert_array_equal(_np(x.grad)[0, 0], [2, 3, 2, 2])


def _source(i, in_size, out_size, align_corners, scale=None):
    """torch's source coordinate of output position i (UpSample.h), in float64."""
    if align_corners:
        return i * (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    ratio = 1.0 / scale if scale else in_size / out_size
    return (i + 0.5) * ratio - 0.5


def _linear_reference(x, out, align_corners):
    """Separable linear interpolation along every spatial dim, loops in float64."""
    for d, size in enumerate(out):
        axis = 2 + d
        in_size = x.shape[axis]
        rows = []
        for i in range(size):
            src = max(_source(i, in_size, size, align_corners), 0.0) if in_size != size else float(i)
            i0 = min(int(np.floor(src)), in_size - 1)
            i1 = min(i0 + 1, in_size - 1)
            lam = min(max(src - i0, 0.0), 1.0)
            rows.append((1 - lam) * np.take(x, i0, axis) + lam * np.take(x, i1, axis))
        x = np.stack(rows, axis)
    return x


def _cubic_reference(x, out, align_corners):
    a = -0.75

    def w(t):
        t = abs(t)
        return ((a + 2) * t - (a + 3)) * t * t + 1 if t <= 1 else ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    for d, size in enumerate(out):
        axis, in_size = 2 + d, x.shape[2 + d]
        rows = []
        for i in range(size):
            src = _source(i, in_size, size, align_corners)
            i0 = int(np.floor(src))
            t = src - i0
            rows.append(sum(w(t - (j - 1)) * np.take(x, min(max(i0 + j - 1, 0), in_size - 1), axis) for j in range(4)))
        x = np.stack(rows, axis)
    return x


@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_modes_match_a_float64_reference(align_corners):
    rng = np.random.default_rng(1)
    for mode, shape, out in (("linear", (2, 3, 7), (4,)), ("linear", (1, 1, 1), (3,)),
                             ("bilinear", (1, 2, 3, 5), (7, 2)), ("bilinear", (2, 1, 4, 4), (4, 9)),
                             ("trilinear", (1, 2, 2, 3, 1), (3, 5, 2))):
        x = rng.standard_normal(shape)
        y = F.interpolate(_t(x), size=out, mode=mode, align_corners=align_corners)
        np.testing.assert_allclose(_np(y), _linear_reference(x, out, align_corners), rtol=1e-13, atol=1e-13)
    x = rng.standard_normal((1, 2, 4, 5))
    y = F.interpolate(_t(x), size=(7, 3), mode="bicubic", align_corners=align_corners)
    np.testing.assert_allclose(_np(y), _cubic_reference(x, (7, 3), align_corners), rtol=1e-13, atol=1e-13)


def test_interpolate_closed_forms():
    h, w = np.meshgrid(np.arange(3.0), np.arange(4.0), indexing="ij")
    ramp = (0.5 * h - 2.0 * w)[None, None]
    # align_corners=True maps corner to corner: a linear ramp is sampled exactly
    y = F.interpolate(_t(ramp), size=(5, 7), mode="bilinear", align_corners=True)
    i, j = np.meshgrid(np.arange(5.0) * 2 / 4, np.arange(7.0) * 3 / 6, indexing="ij")
    np.testing.assert_allclose(_np(y)[0, 0], 0.5 * i - 2.0 * j, atol=1e-14)
    # nearest with an integer factor repeats; nearest-exact halving takes the odd pixels
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    np.testing.assert_array_equal(_np(F.interpolate(_t(x), scale_factor=2)), x.repeat(2, 2).repeat(2, 3))
    np.testing.assert_array_equal(_np(F.interpolate(_t(x[..., :2, :]), scale_factor=0.5, mode="nearest-exact")),
                                  x[..., 1:2, 1::2])
    # the weights sum to one: a constant stays constant in every mode
    for mode, shape in (("linear", (1, 1, 5)), ("bicubic", (1, 1, 3, 4)), ("trilinear", (1, 1, 2, 2, 3))):
        y = F.interpolate(_t(np.full(shape, 2.5)), scale_factor=1.7, mode=mode, align_corners=False)
        np.testing.assert_allclose(_np(y), 2.5, rtol=1e-14)
    # size 1 in, or out: align_corners=True reads the first pixel
    np.testing.assert_array_equal(_np(F.interpolate(_t(x), size=(1, 1), mode="bilinear", align_corners=True)),
                                  x[..., :1, :1])


def test_nearest_index_rules():
    # torch's nearest: floor(i * in / out) in float32 (OpenCV's INTER_NEAREST); nearest-exact: round half up
    x = np.arange(5.0)[None, None]
    np.testing.assert_array_equal(_np(F.interpolate(_t(x), size=3))[0, 0], [0, 1, 3])
    np.testing.assert_array_equal(_np(F.interpolate(_t(x), size=3, mode="nearest-exact"))[0, 0], [0, 2, 4])
    np.testing.assert_array_equal(_np(F.interpolate(_t(x), size=8))[0, 0], [0, 0, 1, 1, 2, 3, 3, 4])
    # scale_factor without recompute: the factor itself sets the scale (1 / 2.1), not in / out
    np.testing.assert_array_equal(_np(F.interpolate(_t(x), scale_factor=2.1))[0, 0],
                                  np.minimum(np.floor(np.arange(10) * np.float32(1 / 2.1)), 4))
    np.testing.assert_array_equal(_np(F.interpolate(_t(x), scale_factor=2.1, recompute_scale_factor=True))[0, 0],
                                  np.arange(10) // 2)


def test_interpolate_gradient_is_the_transposed_map():
    rng = np.random.default_rng(2)
    for mode, shape, kw in (("bilinear", (1, 2, 3, 4), dict(size=(5, 7), align_corners=False)),
                            ("nearest", (2, 1, 5), dict(scale_factor=1.6)),
                            ("bicubic", (1, 1, 4, 3), dict(size=(2, 5), align_corners=True)),
                            ("trilinear", (1, 1, 2, 3, 2), dict(scale_factor=(1.5, 0.7, 2.0), align_corners=True))):
        x, = [_t(rng.standard_normal(shape), requires_grad=True)]
        y = F.interpolate(x, mode=mode, **kw)
        g = rng.standard_normal(tuple(y.shape))
        gx, = cx.autograd.grad(y, x, _t(g))
        # <A x, g> = <x, A^T g> for a linear map A
        np.testing.assert_allclose((_np(y) * g).sum(), (_np(x) * _np(gx)).sum(), rtol=1e-12)


def _unfold_reference(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0], k[1], oh, ow))
    for i in range(k[0]):
        for j in range(k[1]):
            for a in range(oh):
                for b in range(ow):
                    out[:, :, i, j, a, b] = xp[:, :, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


def test_unfold_and_fold_match_loops_and_are_adjoint():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 5, 7))
    for k, d, p, s in (((2, 3), (1, 1), (0, 0), (1, 1)), ((3, 2), (2, 1), (1, 2), (2, 3)), ((1, 1), (1, 1), (0, 0), (1, 1))):
        cols = F.unfold(_t(x), k, dilation=d, padding=p, stride=s)
        np.testing.assert_array_equal(_np(cols), _unfold_reference(x, k, d, p, s))
        y = rng.standard_normal(tuple(cols.shape))
        folded = F.fold(_t(y), (5, 7), k, dilation=d, padding=p, stride=s)
        np.testing.assert_allclose((_np(cols) * y).sum(), (x * _np(folded)).sum(), rtol=1e-12)
    # fold(unfold(ones)) counts the blocks covering each pixel
    counts = F.fold(F.unfold(_t(np.ones((1, 1, 3, 3))), 2), (3, 3), 2)
    np.testing.assert_array_equal(_np(counts)[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    # unbatched forms
    np.testing.assert_array_equal(_np(F.unfold(_t(x[0]), 2)), _np(F.unfold(_t(x[:1]), 2))[0])
    np.testing.assert_array_equal(_np(F.fold(_t(y[0]), (5, 7), (1, 1))), _np(F.fold(_t(y[:1]), (5, 7), (1, 1)))[0])


def test_shuffles_closed_forms():
    x = np.arange(8.0).reshape(1, 8, 1, 1)
    np.testing.assert_array_equal(_np(F.pixel_shuffle(_t(x), 2))[0], [[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    y = np.random.default_rng(4).standard_normal((2, 3, 9, 6, 3))
    np.testing.assert_array_equal(_np(F.pixel_shuffle(F.pixel_unshuffle(_t(y), 3), 3)), y)
    np.testing.assert_array_equal(_np(F.channel_shuffle(_t(np.arange(6.0).reshape(1, 6, 1)), 2))[0, :, 0],
                                  [0, 3, 1, 4, 2, 5])
    # the results are new tensors, never views of the input
    for out in (F.pixel_unshuffle(_t(y[0]), 3), F.channel_shuffle(_t(y), 1), F.pixel_shuffle(_t(x[:, :1]), 1)):
        out.add_(1)
    np.testing.assert_array_equal(_np(F.pixel_shuffle(F.pixel_unshuffle(_t(y), 3), 3)), y)


def _bilinear_reference(x, grid, align_corners):
    """grid_sample(bilinear, zeros) by loops in float64."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b in range(n):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                gx, gy = grid[b, i, j]
                if align_corners:
                    sx, sy = (gx + 1) / 2 * (w - 1), (gy + 1) / 2 * (h - 1)
                else:
                    sx, sy = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
                x0, y0 = int(np.floor(sx)), int(np.floor(sy))
                for yy, wy in ((y0, y0 + 1 - sy), (y0 + 1, sy - y0)):
                    for xx, wx in ((x0, x0 + 1 - sx), (x0 + 1, sx - x0)):
                        if 0 <= yy < h and 0 <= xx < w:
                            out[b, :, i, j] += wy * wx * x[b, :, yy, xx]
    return out


@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_loops_and_identity(align_corners):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4, 5))
    grid = rng.uniform(-1.3, 1.3, (2, 3, 2, 2))
    y = F.grid_sample(_t(x), _t(grid), align_corners=align_corners)
    np.testing.assert_allclose(_np(y), _bilinear_reference(x, grid, align_corners), rtol=1e-13, atol=1e-13)
    # the identity affine grid samples every pixel centre: the input comes back
    theta = np.tile(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 1, 1))
    ident = F.affine_grid(_t(theta), (2, 3, 4, 5), align_corners=align_corners)
    np.testing.assert_allclose(_np(F.grid_sample(_t(x), ident, align_corners=align_corners)), x, atol=1e-14)
    np.testing.assert_allclose(_np(F.grid_sample(_t(x), ident, mode="nearest", align_corners=align_corners)), x)


def test_grid_sample_padding_modes_closed_forms():
    x = _t(np.arange(4.0).reshape(1, 1, 1, 4))
    xs = np.array([-2.0, -1.25, 1.25, 2.0])            # outside [-1, 1] on both sides
    grid = _t(np.stack([xs, np.zeros(4)], -1).reshape(1, 1, 4, 2))
    # align_corners=True: -1 and 1 are the centres of pixels 0 and 3 (source = 1.5 (g + 1))
    border = F.grid_sample(x, grid, padding_mode="border", align_corners=True)
    np.testing.assert_allclose(_np(border)[0, 0, 0], [0, 0, 3, 3])
    reflection = F.grid_sample(x, grid, padding_mode="reflection", align_corners=True)
    np.testing.assert_allclose(_np(reflection)[0, 0, 0], [1.5, 0.375, 2.625, 1.5])
    zeros = F.grid_sample(x, grid, padding_mode="zeros", align_corners=True)
    np.testing.assert_allclose(_np(zeros)[0, 0, 0], [0, 0, 1.875, 0])      # 3.375: 0.625 of pixel 3


def test_affine_grid_closed_forms():
    theta = np.array([[[2.0, 0, 0.5], [0, -1, 0]]])
    grid = _np(F.affine_grid(_t(theta), (1, 1, 2, 3), align_corners=True))
    xs, ys = np.array([-1.0, 0, 1]), np.array([-1.0, 1])
    np.testing.assert_allclose(grid[0, ..., 0], np.broadcast_to(2 * xs + 0.5, (2, 3)))
    np.testing.assert_allclose(grid[0, ..., 1], np.broadcast_to(-ys[:, None], (2, 3)))
    # align_corners=False puts the points at the pixel centres: (2 i + 1) / size - 1
    grid = _np(F.affine_grid(_t(np.eye(3, 4)[None]), (1, 1, 2, 1, 4), align_corners=False))
    np.testing.assert_allclose(grid[0, :, 0, :, 0], np.broadcast_to([-0.75, -0.25, 0.25, 0.75], (2, 4)))
    np.testing.assert_allclose(grid[0, :, 0, 0, 2], [-0.5, 0.5])
    np.testing.assert_allclose(grid[0, :, 0, :, 1], 0.0)


@pytest.mark.parametrize("case", ["pad", "interpolate", "grid_sample"])
def test_second_derivatives(case):
    rng = np.random.default_rng(6)
    if case == "pad":
        x = _t(rng.standard_normal((1, 2, 3, 2, 3)), requires_grad=True)
        fn = (lambda a: F.pad(a, (1, 2, 1, 0, 2, 1), mode="reflect"))
        inputs = (x,)
    elif case == "interpolate":
        x = _t(rng.standard_normal((1, 1, 3, 2)), requires_grad=True)
        fn = (lambda a: F.interpolate(a, size=(4, 5), mode="bicubic", align_corners=True))
        inputs = (x,)
    else:
        x = _t(rng.standard_normal((1, 2, 3, 2, 3)), requires_grad=True)
        g = _t(_grid(rng, 1, (2, 1, 2), (3, 2, 3), False), requires_grad=True)
        fn = (lambda a, b: F.grid_sample(a, b, padding_mode="reflection", align_corners=False))
        inputs = (x, g)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_modules_call_their_functional_op():
    rng = np.random.default_rng(7)
    x = _t(rng.standard_normal((1, 2, 4, 4)))
    nn = cx.nn
    checks = [(nn.ConstantPad2d((1, 0, 2, 1), 3.5), lambda a: F.pad(a, (1, 0, 2, 1), value=3.5)),
              (nn.ZeroPad2d(1), lambda a: F.pad(a, (1, 1, 1, 1))),
              (nn.ReflectionPad1d((2, 1)), lambda a: F.pad(a, (2, 1), mode="reflect")),
              (nn.ReplicationPad3d(1), lambda a: F.pad(a, (1,) * 6, mode="replicate")),
              (nn.CircularPad2d((1, 2, 0, 1)), lambda a: F.pad(a, (1, 2, 0, 1), mode="circular")),
              (nn.Upsample(scale_factor=2, mode="bilinear"), lambda a: F.interpolate(a, scale_factor=2.0,
                                                                                    mode="bilinear")),
              (nn.UpsamplingNearest2d(size=(3, 5)), lambda a: F.interpolate(a, size=(3, 5))),
              (nn.UpsamplingBilinear2d(scale_factor=1.5), lambda a: F.interpolate(a, scale_factor=1.5, mode="bilinear",
                                                                                  align_corners=True)),
              (nn.PixelUnshuffle(2), lambda a: F.pixel_unshuffle(a, 2)),
              (nn.ChannelShuffle(2), lambda a: F.channel_shuffle(a, 2)),
              (nn.Unfold(2, padding=1), lambda a: F.unfold(a, 2, padding=1))]
    for module, functional in checks:
        data = x[0] if isinstance(module, nn.ReflectionPad1d) else x
        np.testing.assert_array_equal(_np(module(data)), _np(functional(data)))
    cols = F.unfold(x, 2)
    np.testing.assert_array_equal(_np(nn.Fold((4, 4), 2)(cols)), _np(F.fold(cols, (4, 4), 2)))
    np.testing.assert_array_equal(_np(nn.PixelShuffle(2)(_t(rng.standard_normal((1, 4, 2, 3))))).shape, (1, 1, 4, 6))
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.CircularPad2d(1)(_t(np.zeros((2, 2))))


# -- against torch --------------------------------------------------------------------------------------

def _both(fn, arrays, dtype, layout="contiguous", grad=True):
    """fn(lib, *tensors) in cextend and torch from the same arrays: (outputs, grads) of each."""
    results = []
    for lib in (cx, real_torch):
        tensors = []
        for a in arrays:
            data = _laid_out(np.asarray(a, dtype), layout if a.ndim >= 2 else "contiguous")
            t = lib.from_numpy(data.copy(order="K") if lib is real_torch else data)
            if lib is real_torch and layout == "transposed":
                t = lib.from_numpy(np.ascontiguousarray(np.swapaxes(np.asarray(a, dtype), -1, -2))).transpose(-1, -2)
            tensors.append(t.requires_grad_() if grad else t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib, *tensors)
        grads = None
        if grad:
            weight = lib.from_numpy(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype(dtype))
            grads = lib.autograd.grad(out, tensors, weight, allow_unused=True)
        results.append((out, grads))
    return results


def _agree(fn, arrays, dtype, layout="contiguous", grad=True):
    (ours, our_grads), (theirs, their_grads) = _both(fn, arrays, dtype, layout, grad)
    assert str(theirs.dtype) == "torch." + str(ours.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), **TOL[dtype])
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    if ours.dim() in (4, 5):
        fmt = (cx.channels_last, real_torch.channels_last) if ours.dim() == 4 else \
            (cx.channels_last_3d, real_torch.channels_last_3d)
        assert ours.is_contiguous(memory_format=fmt[0]) == theirs.is_contiguous(memory_format=fmt[1])
    if grad:
        for g, h in zip(our_grads, their_grads):
            if h is None:
                assert g is None or not _np(g).any()
                continue
            np.testing.assert_allclose(_np(g), h.numpy(), **TOL[dtype])
    return ours


PAD_CASES = [((2, 3, 4), (1, 2), {}), ((2, 3, 4, 5), (1, -1, 0, 2, 1, 1), dict(value=-1.5)),
             ((3, 5), (2, 1), dict(mode="reflect")), ((1, 2, 3, 4), (1, 2, -1, 2), dict(mode="reflect")),
             ((2, 3, 2, 3, 5), (1, 0, 1, 1, 1, 1), dict(mode="reflect")), ((2, 2, 3), (3, 1), dict(mode="replicate")),
             ((1, 3, 3, 7), (2, 1, 0, 3), dict(mode="replicate")), ((2, 1, 2, 2, 3), (1, 1, 2, 0, 1, -1),
                                                                    dict(mode="replicate")),
             ((1, 2, 3, 4), (1, 2, 3, 0), dict(mode="circular")), ((2, 5), (-1, 2), dict(mode="circular")),
             ((1, 2, 2, 3, 2), (1, 1, 1, 1, 2, 2), dict(mode="circular")), ((0, 3, 4), (1, 1), dict(mode="reflect"))]


@with_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,pads,kw", PAD_CASES)
def test_pad_matches_torch(shape, pads, kw, dtype):
    x = np.random.default_rng(8).standard_normal(shape)
    for layout in ("contiguous", "transposed", "channels_last") if len(shape) >= 4 else ("contiguous", "transposed"):
        _agree(lambda lib, a: lib.nn.functional.pad(a, pads, **kw), [x], dtype, layout)


INTERPOLATE_CASES = [((1, 2, 3, 4), dict(size=(5, 3))), ((2, 1, 5), dict(scale_factor=1.7, mode="nearest-exact")),
                     ((1, 3, 7, 2), dict(scale_factor=(0.45, 2.5), mode="nearest")),
                     ((1, 2, 3, 5), dict(size=(4, 7), mode="bilinear", align_corners=False)),
                     ((1, 5, 3, 2), dict(scale_factor=(2.5, 1.5), mode="bilinear", align_corners=True)),
                     ((2, 2, 7), dict(size=3, mode="linear")), ((1, 1, 1), dict(size=4, mode="linear")),
                     ((1, 1, 2, 3, 2), dict(scale_factor=(1.5, 0.7, 2.0), mode="trilinear",
                                            recompute_scale_factor=True)),
                     ((1, 4, 2, 3, 1), dict(size=(3, 1, 2), mode="trilinear", align_corners=True)),
                     ((1, 2, 3, 4), dict(size=(5, 2), mode="bicubic", align_corners=False)),
                     ((1, 1, 5, 3), dict(scale_factor=1.3, mode="bicubic", align_corners=True)),
                     ((1, 4, 2, 3, 1), dict(size=(3, 1, 2), mode="nearest")),
                     ((1, 2, 4, 3), dict(size=(2, 5), mode="area")), ((2, 3, 7), dict(scale_factor=0.6, mode="area")),
                     ((0, 2, 3, 4), dict(size=2, mode="bilinear"))]


@with_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,kw", INTERPOLATE_CASES)
def test_interpolate_matches_torch(shape, kw, dtype):
    x = np.random.default_rng(9).standard_normal(shape)
    for layout in ("contiguous", "transposed", "channels_last") if len(shape) >= 4 else ("contiguous", "sliced"):
        _agree(lambda lib, a: lib.nn.functional.interpolate(a, **kw), [x], dtype, layout)


@with_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nearest_indices_match_torch_on_many_sizes(dtype):
    """The index rules in float32 and float64 (including the fused multiply-add of
    torch's build, and its two nearest kernels: small outputs and channels-last
    take nearest_idx) across sizes and factors: the gathered values are equal."""
    rng = np.random.default_rng(10)
    for _ in range(60):
        shape = (1, int(rng.choice([1, 4])), int(rng.integers(1, 30)), int(rng.integers(1, 12)))
        x = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
        if rng.random() < 0.5:
            kw = dict(size=(int(rng.integers(1, 200)), int(rng.integers(1, 130))))
        else:
            kw = dict(scale_factor=float(rng.choice([2.1, 1.9999, 1 / 3, 3.3, 0.999, rng.uniform(0.3, 5)])))
            if min(int(s * kw["scale_factor"]) for s in shape[2:]) < 1:
                continue
        for mode in ("nearest", "nearest-exact"):
            for layout in ("contiguous", "channels_last"):
                ours = F.interpolate(_t(x, layout=layout), mode=mode, **kw)
                theirs = real_torch.nn.functional.interpolate(real_torch.from_numpy(_laid_out(x, layout).copy(order="K")),
                                                              mode=mode, **kw)
                np.testing.assert_array_equal(_np(ours), theirs.numpy())


UNFOLD_CASES = [((2, 2, 4, 5), (2, 3), {}), ((3, 5, 4), 2, dict(dilation=(2, 1), padding=1, stride=(2, 3))),
                ((1, 1, 1, 1), 1, {}), ((2, 3, 7, 3), (3, 1), dict(padding=(0, 2), stride=2))]
FOLD_CASES = [((2, 12, 6), (3, 4), (2, 2), {}), ((4, 6), (5, 4), 2, dict(dilation=(2, 1), padding=1, stride=(2, 3))),
              ((1, 7, 35), (5, 7), (7, 1), dict(padding=(3, 0)))]


@with_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unfold_fold_shuffles_affine_grid_match_torch(dtype):
    rng = np.random.default_rng(11)
    for shape, k, kw in UNFOLD_CASES:
        for layout in ("contiguous", "transposed"):
            _agree(lambda lib, a: lib.nn.functional.unfold(a, k, **kw), [rng.standard_normal(shape)], dtype, layout)
    for shape, out, k, kw in FOLD_CASES:
        _agree(lambda lib, a: lib.nn.functional.fold(a, out, k, **kw), [rng.standard_normal(shape)], dtype,
               "transposed")
    for shape, r in (((1, 8, 2, 3), 2), ((2, 1, 9, 1, 2), 3), ((3, 4, 5), 1)):
        for layout in ("contiguous", "channels_last", "sliced"):
            _agree(lambda lib, a: lib.nn.functional.pixel_shuffle(a, r), [rng.standard_normal(shape)], dtype, layout)
    for shape, r in (((1, 2, 4, 6), 2), ((3, 3, 3), 3)):
        for layout in ("contiguous", "channels_last", "transposed"):
            _agree(lambda lib, a: lib.nn.functional.pixel_unshuffle(a, r), [rng.standard_normal(shape)], dtype,
                   layout)
    for shape, g in (((2, 6, 2, 1), 3), ((1, 4, 3), 2), ((1, 5, 2, 2, 2), 5)):
        for layout in ("contiguous", "channels_last"):
            _agree(lambda lib, a: lib.nn.functional.channel_shuffle(a, g), [rng.standard_normal(shape)], dtype,
                   layout)
    for theta_shape, size, ac in (((2, 2, 3), (2, 3, 4, 5), False), ((1, 2, 3), (1, 1, 1, 7), True),
                                  ((2, 3, 4), (2, 1, 2, 3, 1), False), ((1, 3, 4), (1, 2, 3, 2, 4), True)):
        _agree(lambda lib, t: lib.nn.functional.affine_grid(t, size, align_corners=ac),
               [rng.standard_normal(theta_shape)], dtype)


GRID_CASES = [((2, 2, 3, 4), (2, 3), "bilinear", "zeros", False), ((1, 1, 3, 5), (3, 2), "bilinear", "border", True),
              ((1, 2, 4, 3), (2, 2), "bilinear", "reflection", False),
              ((1, 1, 3, 3), (2, 3), "bilinear", "reflection", True),
              ((2, 1, 1, 4), (2, 2), "nearest", "zeros", False), ((1, 3, 2, 5), (4, 1), "nearest", "reflection", True),
              ((2, 2, 3, 4), (2, 3), "bicubic", "zeros", False), ((1, 1, 4, 1), (3, 2), "bicubic", "border", True),
              ((1, 2, 2, 3), (2, 2), "bicubic", "reflection", False),
              ((1, 2, 2, 3, 2), (2, 1, 2), "bilinear", "zeros", False),
              ((1, 1, 2, 2, 3), (1, 2, 2), "nearest", "border", True),
              ((2, 1, 3, 1, 2), (2, 2, 1), "bilinear", "reflection", True)]


@with_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,out,mode,padding_mode,align_corners", GRID_CASES)
def test_grid_sample_matches_torch(shape, out, mode, padding_mode, align_corners, dtype):
    rng = np.random.default_rng(12)
    x = rng.standard_normal(shape)
    grid = rng.uniform(-1.4, 1.4, (shape[0],) + out + (len(shape) - 2,))
    grid.flat[::3] = np.round(grid.flat[::3] * 4) / 4        # some exactly on pixel centres and borders
    for layout in ("contiguous", "transposed"):
        _agree(lambda lib, a, g: lib.nn.functional.grid_sample(a, g, mode=mode, padding_mode=padding_mode,
                                                               align_corners=align_corners),
               [x, grid], dtype, layout)


@with_torch
def test_grid_sample_second_derivatives_match_torch():
    rng = np.random.default_rng(13)
    for shape, out, mode, padding_mode, align_corners in GRID_CASES[:5] + GRID_CASES[6:9]:
        arrays = [rng.standard_normal(shape), rng.uniform(-1.4, 1.4, (shape[0],) + out + (len(shape) - 2,))]
        found = []
        for lib in (cx, real_torch):
            x, g = [lib.from_numpy(a.copy()).requires_grad_() for a in arrays]
            y = lib.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
            go = lib.from_numpy(np.sin(np.arange(y.numel())).reshape(tuple(y.shape))).requires_grad_()
            gx, gg = lib.autograd.grad(y, (x, g), go, create_graph=True)
            total = (gx * gx.detach().cos()).sum() + (gg * gg.detach().sin()).sum()
            found.append([None if r is None else r.detach().numpy()
                          for r in lib.autograd.grad(total, (x, g, go), allow_unused=True)])
        for ours, theirs in zip(*found):
            ours = np.zeros_like(theirs) if ours is None and theirs is not None else ours
            theirs = np.zeros_like(ours) if theirs is None and ours is not None else theirs
            if ours is not None:
                np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@with_torch
def test_double_backward_nodes_match_torch():
    rng = np.random.default_rng(14)
    cases = [(lambda lib, a: lib.nn.functional.pad(a, (1, 1, 2, 0), mode="reflect"), (1, 2, 3, 4)),
             (lambda lib, a: lib.nn.functional.pad(a, (1, 2), mode="replicate"), (2, 3)),
             (lambda lib, a: lib.nn.functional.pad(a, (1, -1)), (2, 3)),
             (lambda lib, a: lib.nn.functional.interpolate(a, scale_factor=1.5, mode="bilinear"), (1, 1, 2, 3)),
             (lambda lib, a: lib.nn.functional.unfold(a, 2), (1, 2, 3, 3)),
             (lambda lib, a: lib.nn.functional.fold(a, (3, 3), 2), (1, 4, 4)),
             (lambda lib, a: lib.nn.functional.pixel_shuffle(a, 2), (1, 4, 2, 2)),
             (lambda lib, a: lib.nn.functional.channel_shuffle(a, 2), (1, 4, 2))]
    for fn, shape in cases:
        names = []
        for lib in (cx, real_torch):
            x = lib.from_numpy(rng.standard_normal(shape)).requires_grad_()
            y = fn(lib, x)
            go = lib.ones_like(y).requires_grad_()
            g, = lib.autograd.grad(y, x, go, create_graph=True)
            names.append((type(g.grad_fn).__name__, len(g.grad_fn.next_functions)))
        assert names[0] == names[1]


# -- errors: the same exception type (and message) in both libraries ------------------------------------------

def _x(lib, shape=(2, 3, 4, 5), dtype="float32"):
    return lib.from_numpy(np.zeros(shape, dtype))


ERRORS = [
    ("pad odd length", lambda lib: lib.nn.functional.pad(_x(lib), (1, 2, 3)), RuntimeError, "divisible by 2"),
    ("pad too long", lambda lib: lib.nn.functional.pad(_x(lib), (1,) * 10), RuntimeError, "two times the input"),
    ("pad float", lambda lib: lib.nn.functional.pad(_x(lib), (1.0, 1)), TypeError, "tuple of ints"),
    ("pad unknown mode", lambda lib: lib.nn.functional.pad(_x(lib), (1, 1), mode="wrap"), NotImplementedError,
     "Unrecognised padding mode wrap"),
    ("reflect too wide", lambda lib: lib.nn.functional.pad(_x(lib), (5, 0, 0, 0), mode="reflect"), RuntimeError,
     "Padding size should be less than the corresponding input dimension"),
    ("reflect, a value", lambda lib: lib.nn.functional.pad(_x(lib), (1, 1, 1, 1), mode="reflect", value=1.0),
     RuntimeError, "doesn't take in value argument"),
    ("reflect of a 4-d input by 2", lambda lib: lib.nn.functional.pad(_x(lib), (1, 1), mode="reflect"),
     NotImplementedError, "Padding size 2 is not supported for 4D input tensor"),
    ("replicate of an empty dim", lambda lib: lib.nn.functional.pad(_x(lib, (2, 0, 4)), (1, 1), mode="replicate"),
     RuntimeError, "non-zero dimensions"),
    ("reflect of bool", lambda lib: lib.nn.functional.pad(_x(lib, (1, 2, 3), "bool"), (1, 1), mode="reflect"),
     NotImplementedError, "not implemented for 'Bool'"),
    ("circular wraps twice", lambda lib: lib.nn.functional.pad(_x(lib), (6, 0, 0, 0), mode="circular"),
     RuntimeError, "wrapping around more than once"),
    ("constant crop past the size", lambda lib: lib.nn.functional.pad(_x(lib), (-3, -3)), RuntimeError,
     "length must be non-negative"),
    ("interpolate 2-d", lambda lib: lib.nn.functional.interpolate(_x(lib, (4, 5)), size=3), NotImplementedError,
     "Only 3D, 4D and 5D input"),
    ("bilinear of 3-d", lambda lib: lib.nn.functional.interpolate(_x(lib, (1, 2, 3)), size=3, mode="bilinear"),
     NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    ("size and scale", lambda lib: lib.nn.functional.interpolate(_x(lib), size=3, scale_factor=2), ValueError,
     "only one of size or scale_factor"),
    ("neither", lambda lib: lib.nn.functional.interpolate(_x(lib)), ValueError, "either size or scale_factor"),
    ("align_corners for nearest", lambda lib: lib.nn.functional.interpolate(_x(lib), size=3, align_corners=True),
     ValueError, "align_corners option can only be set"),
    ("size length", lambda lib: lib.nn.functional.interpolate(_x(lib), size=(3,)), ValueError,
     "same number of spatial dimensions"),
    ("size float", lambda lib: lib.nn.functional.interpolate(_x(lib), size=(3.0, 2)), TypeError,
     "expected size to be one of int"),
    ("size 0", lambda lib: lib.nn.functional.interpolate(_x(lib), size=(0, 2)), RuntimeError,
     "Input and output sizes should be greater than 0"),
    ("recompute with size", lambda lib: lib.nn.functional.interpolate(_x(lib), size=3, recompute_scale_factor=True),
     ValueError, "recompute_scale_factor is not meaningful"),
    ("interpolate of int64", lambda lib: lib.nn.functional.interpolate(_x(lib, (1, 1, 3), "int64"), size=2,
                                                                      mode="linear"),
     NotImplementedError, "not implemented for 'Long'"),
    ("no channels", lambda lib: lib.nn.functional.interpolate(_x(lib, (1, 0, 3, 4)), size=3), RuntimeError,
     "Non-empty 4D data tensor expected"),
    ("antialias of linear", lambda lib: lib.nn.functional.interpolate(_x(lib, (1, 1, 3)), size=3, mode="linear",
                                                                     antialias=True), ValueError, "Anti-alias option"),
    ("unfold kernel 0", lambda lib: lib.nn.functional.unfold(_x(lib), 0), RuntimeError,
     "kernel size should be greater than zero"),
    ("unfold too big", lambda lib: lib.nn.functional.unfold(_x(lib), 6), RuntimeError, "must be at least one"),
    ("unfold 5-d", lambda lib: lib.nn.functional.unfold(_x(lib, (1, 2, 3, 4, 5)), 2), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor"),
    ("unfold of int64", lambda lib: lib.nn.functional.unfold(_x(lib, (1, 1, 4, 5), "int64"), 2), NotImplementedError,
     "\"im2col_out_cpu\" not implemented for 'Long'"),
    ("fold blocks", lambda lib: lib.nn.functional.fold(_x(lib, (2, 12, 5)), (3, 4), 2), RuntimeError,
     "to match the calculated number of sliding blocks 2 * 3 = 6"),
    ("fold channels", lambda lib: lib.nn.functional.fold(_x(lib, (2, 10, 6)), (3, 4), 2), RuntimeError,
     "divisible by the product of kernel_size"),
    ("fold output_size", lambda lib: lib.nn.functional.fold(_x(lib, (1, 12, 6)), (3,), 2), RuntimeError,
     "It is expected output_size equals to 2"),
    ("pixel_shuffle channels", lambda lib: lib.nn.functional.pixel_shuffle(_x(lib), 2), RuntimeError,
     "is not divisible by 4"),
    ("pixel_shuffle 2-d", lambda lib: lib.nn.functional.pixel_shuffle(_x(lib, (4, 5)), 2), RuntimeError,
     "at least 3 dimensions"),
    ("pixel_unshuffle width", lambda lib: lib.nn.functional.pixel_unshuffle(_x(lib), 2), RuntimeError,
     "width to be divisible by downscale_factor"),
    ("channel_shuffle groups", lambda lib: lib.nn.functional.channel_shuffle(_x(lib), 2), RuntimeError,
     "Number of channels must be divisible by groups"),
    ("grid batch", lambda lib: lib.nn.functional.grid_sample(_x(lib), _x(lib, (1, 3, 3, 2)), align_corners=False),
     RuntimeError, "same batch size"),
    ("grid last dim", lambda lib: lib.nn.functional.grid_sample(_x(lib), _x(lib, (2, 3, 3, 3)), align_corners=False),
     RuntimeError, "expected grid to have size 2 in last dimension"),
    ("grid mode", lambda lib: lib.nn.functional.grid_sample(_x(lib), _x(lib, (2, 3, 3, 2)), mode="area"),
     ValueError, "expected mode to be 'bilinear', 'nearest' or 'bicubic'"),
    ("grid padding", lambda lib: lib.nn.functional.grid_sample(_x(lib), _x(lib, (2, 3, 3, 2)), padding_mode="edge"),
     ValueError, "expected padding_mode to be 'zeros', 'border', or 'reflection'"),
    ("grid dtypes", lambda lib: lib.nn.functional.grid_sample(_x(lib), _x(lib, (2, 3, 3, 2), "float64"),
                                                              align_corners=False),
     RuntimeError, "expected scalar type Float but found Double"),
    ("grid empty input", lambda lib: lib.nn.functional.grid_sample(_x(lib, (2, 3, 0, 5)), _x(lib, (2, 3, 3, 2)),
                                                                   align_corners=False),
     RuntimeError, "non-empty spatial dimensions"),
    ("bicubic 3-d grid", lambda lib: lib.nn.functional.grid_sample(_x(lib, (1, 1, 2, 2, 2)), _x(lib, (1, 2, 2, 2, 3)),
                                                                   mode="bicubic", align_corners=False),
     RuntimeError, "bicubic interpolation only supports 4D input"),
    ("affine_grid size", lambda lib: lib.nn.functional.affine_grid(_x(lib, (2, 2, 3)), (2, 3, 4), align_corners=False),
     NotImplementedError, "affine_grid only supports 4D and 5D sizes"),
    ("affine_grid theta", lambda lib: lib.nn.functional.affine_grid(_x(lib, (2, 3, 3)), (2, 3, 4, 5),
                                                                    align_corners=False),
     ValueError, "Expected a batch of 2D affine matrices of shape Nx2x3"),
    ("affine_grid int", lambda lib: lib.nn.functional.affine_grid(_x(lib, (2, 2, 3), "int64"), (2, 3, 4, 5),
                                                                  align_corners=False),
     ValueError, "Expected theta to have floating point type"),
    ("affine_grid empty", lambda lib: lib.nn.functional.affine_grid(_x(lib, (2, 2, 3)), (2, 3, 0, 5),
                                                                    align_corners=False),
     ValueError, "Expected non-zero, positive output size"),
]


@each_lib
@pytest.mark.parametrize("name,program,error,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(lib, name, program, error, message):
    with pytest.raises(error) as caught:
        program(lib)
    assert message in str(caught.value)


@each_lib
def test_warnings(lib):
    x = _x(lib, (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        lib.nn.functional.grid_sample(x, _x(lib, (1, 1, 1, 2)))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        lib.nn.functional.affine_grid(_x(lib, (1, 2, 3)), (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        lib.nn.functional.upsample_bilinear(x, scale_factor=2)


@with_torch
def test_module_reprs_match_torch():
    specs = [("ConstantPad1d", (2, 1.5)), ("ConstantPad2d", ((1, 2, 0, 1), 0.0)), ("ConstantPad3d", (1, -2)),
             ("ZeroPad1d", (3,)), ("ZeroPad2d", (1,)), ("ZeroPad3d", ((1, 0, 1, 0, 1, 0),)),
             ("ReflectionPad1d", (2,)), ("ReflectionPad2d", ((1, 2, 3, 4),)), ("ReflectionPad3d", (1,)),
             ("ReplicationPad1d", ((0, 2),)), ("ReplicationPad2d", (1,)), ("ReplicationPad3d", (2,)),
             ("CircularPad1d", (1,)), ("CircularPad2d", ((1, 0, 2, 1),)), ("CircularPad3d", (1,)),
             ("Upsample", ((3, 4),)), ("Upsample", (None, 2, "bilinear", True)), ("UpsamplingNearest2d", (None, 2)),
             ("UpsamplingBilinear2d", ((2, 3),)), ("Fold", ((4, 5), 2)), ("Unfold", ((2, 3), 1, 1, 2)),
             ("PixelShuffle", (3,)), ("PixelUnshuffle", (2,)), ("ChannelShuffle", (4,))]
    for name, args in specs:
        assert repr(getattr(cx.nn, name)(*args)) == repr(getattr(real_torch.nn, name)(*args)), name


def test_every_lib_runs_the_stated_forms():
    """The libraries this file compares (cextend, and torch where installed) agree on a small program."""
    outs = []
    for lib in LIBS:
        x = lib.from_numpy(np.arange(12.0).reshape(1, 1, 3, 4))
        y = lib.nn.functional.pad(lib.nn.functional.interpolate(x, scale_factor=2, mode="nearest"), (1, 1, 1, 1),
                                  mode="replicate")
        outs.append(y.numpy())
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    assert outs[0].shape == (1, 1, 8, 10)
