"""Resampling ops of torch.nn.functional: interpolate (torch's upsample_*
ops: nearest, nearest-exact, linear, bilinear, trilinear, bicubic; area is
adaptive average pooling), grid_sample and affine_grid.

Interpolation is separable: along each resized dim, every output position
reads K input positions (K = 1 nearest, 2 linear, 4 cubic) with weights,
and the result is built dim by dim from the last one inwards, which is the
order of torch's nested CPU kernel (w_h0 * (w_w0 x00 + w_w1 x01) + ...).
The indices and weights are torch's (aten/src/ATen/native/UpSample.h),
computed in the input's dtype as there: the scale in float for float32
input (and in double for float64), source indices through floorf, nearest
mode's two index rules (the generic kernel's and nearest_idx, which the
channels-last / small-output kernel and every backward use).

grid_sample samples at grid positions (x for W, y for H, z for D) with
bilinear or nearest interpolation and zeros, border or reflection padding,
as torch's CPU kernels; its backward gives the input and grid gradients,
and the backward's own derivative (GridSampler2DBackwardBackward0) is that
of the same sampling written in Tensor ops.
"""
import math
import numbers
import warnings

import numpy as np

from cextend._fpe import quietly
from cextend._memory_format import channels_last, channels_last_3d, is_contiguous_in, like_input_format
from cextend._ops import spatial_samples as S
from cextend._ops._nn_checks import functional_call, host_tensor
from cextend._ops._spatial_maps import Map, apply, take, take_transpose
from cextend._ops.pooling import adaptive_avg_pool2d as _adaptive_avg_pool2d
from cextend._ops.registry import register
from cextend._ops.spatial import not_implemented_for, shape_text
from cextend.autograd import grad_mode
from cextend.autograd import record as rec
from cextend.autograd.engine import grad as autograd_grad
from cextend.tensor import _wrap

_F32 = np.float32


# -- torch's index and weight rules (UpSample.h) --------------------------------------------------

def _floorf(real):
    """C's floorf of a float or double value: rounded to float first."""
    return np.floor(np.asarray(real).astype(_F32)).astype(np.int64)


def _scales_value(scale, in_size, out_size, dt):
    """compute_scales_value<dt>: 1 / scale (in double, then cast) if given, else in / out in dt."""
    if scale is not None and scale > 0:
        return dt(1.0 / scale)
    return dt(in_size) / dt(out_size)


def _area_scale(in_size, out_size, align_corners, scale, dt):
    """area_pixel_compute_scale<dt>."""
    if align_corners:
        return dt(in_size - 1) / dt(out_size - 1) if out_size > 1 else dt(0)
    return _scales_value(scale, in_size, out_size, dt)


def _source_index(scale, out_size, align_corners, cubic, dt):
    """area_pixel_compute_source_index<dt> for every output position."""
    i = np.arange(out_size, dtype=dt)
    if align_corners:
        return scale * i
    if dt is np.float32:
        # torch's build contracts scale * (i + 0.5) - 0.5 into one fused multiply-add: the
        # float product is exact in double, so this rounds once, as the FMA does
        real = (np.float64(scale) * (i + dt(0.5)).astype(np.float64) - 0.5).astype(dt)
    else:
        real = scale * (i + dt(0.5)) - dt(0.5)
    return real if cubic else np.where(real < 0, dt(0), real).astype(dt)


def _nearest_generic(in_size, out_size, scale, dt, exact):
    """The generic kernel's nearest indices (HelperInterpNearest / NearestExact), scale in dt."""
    s = _area_scale(in_size, out_size, False, scale, dt)
    if exact:
        real = _source_index(s, out_size, False, False, dt)
        index = _floorf(real.astype(np.float64) + 0.5)
    else:
        index = _floorf(s * np.arange(out_size, dtype=dt))
    return np.minimum(index, in_size - 1)


def _nearest_idx(in_size, out_size, scale, exact):
    """nearest_idx / nearest_exact_idx: the float scale, and for nearest the exact
    copies of a 1x or 2x resize."""
    i = np.arange(out_size)
    if not exact:
        if out_size == in_size:
            return i
        if out_size == 2 * in_size:
            return i >> 1
    s = _scales_value(scale, in_size, out_size, _F32)
    if exact:
        index = _floorf((i + 0.5) * np.float64(s))
    else:
        index = _floorf(i.astype(_F32) * s)
    return np.minimum(index, in_size - 1)


def _linear_weights(in_size, out_size, align_corners, scale, dt):
    """compute_source_index_and_lambda: (indices (n, 2), weights (n, 2))."""
    if out_size == in_size:
        i = np.arange(out_size)
        return np.stack([i, i], 1), np.stack([np.ones(out_size, dt), np.zeros(out_size, dt)], 1)
    s = _area_scale(in_size, out_size, align_corners, scale, dt)
    real = _source_index(s, out_size, align_corners, False, dt)
    i0 = np.minimum(_floorf(real), in_size - 1)
    lambda1 = np.minimum(np.maximum(real - i0.astype(dt), dt(0)), dt(1)).astype(dt)
    i1 = i0 + (i0 < in_size - 1)
    return np.stack([i0, i1], 1), np.stack([dt(1) - lambda1, lambda1], 1).astype(dt)


def _cubic1(x, a, dt):
    return ((dt(a + 2) * x - dt(a + 3)) * x * x + dt(1)).astype(dt)


def _cubic2(x, a, dt):
    return (((dt(a) * x - dt(5 * a)) * x + dt(8 * a)) * x - dt(4 * a)).astype(dt)


def _cubic_weights(in_size, out_size, align_corners, scale, dt):
    """HelperInterpCubic: four taps around floor(source), clamped into the input, A = -0.75."""
    s = _area_scale(in_size, out_size, align_corners, scale, dt)
    real = _source_index(s, out_size, align_corners, True, dt)
    i0 = np.minimum(_floorf(real), in_size - 1)
    t = np.minimum(np.maximum(real - i0.astype(dt), dt(0)), dt(1)).astype(dt)
    x2 = (dt(1) - t).astype(dt)
    weights = np.stack([_cubic2((t + dt(1)).astype(dt), -0.75, dt), _cubic1(t, -0.75, dt),
                        _cubic1(x2, -0.75, dt), _cubic2((x2 + dt(1)).astype(dt), -0.75, dt)], 1)
    index = np.stack([np.clip(i0 + j - 1, 0, in_size - 1) for j in range(4)], 1)
    return index, weights


# -- upsampling as a Map ---------------------------------------------------------------------------

_NODE_NAMES = {"nearest": "UpsampleNearest%dD", "nearest-exact": "UpsampleNearestExact%dD",
               "linear": "UpsampleLinear%dD", "bilinear": "UpsampleBilinear%dD", "trilinear": "UpsampleTrilinear%dD",
               "bicubic": "UpsampleBicubic%dD"}


class Upsample(Map):
    """torch's upsample_<mode><n>d (transpose=False) or its backward (transpose=True)."""

    keeps_format = True

    def __init__(self, mode, in_sizes, out_sizes, scales, align_corners, transpose=False):
        self.mode, self.in_sizes, self.out_sizes = mode, tuple(in_sizes), tuple(out_sizes)
        self.scales, self.align_corners, self.transpose = tuple(scales), align_corners, transpose
        self.node = (_NODE_NAMES[mode] % len(in_sizes)) + ("BackwardBackward0" if transpose else "Backward0")
        # torch's bicubic backward allocates a contiguous input gradient
        self.keeps_format = not (transpose and mode == "bicubic")

    def adjoint(self):
        return Upsample(self.mode, self.in_sizes, self.out_sizes, self.scales, self.align_corners, not self.transpose)

    def _vectorized(self, a):
        """Whether torch's forward nearest takes its channels-last kernel (nearest_idx)."""
        if a.ndim == 4:
            return (is_contiguous_in(a, channels_last) and a.shape[1] > 3) or sum(self.out_sizes) <= 128
        if a.ndim == 5:
            return is_contiguous_in(a, channels_last_3d) and a.shape[1] > 3
        return False

    def _taps(self, d, dt, vectorized):
        """(index (n, K), weights (n, K) or None) along spatial dim d."""
        in_size, out_size, scale = self.in_sizes[d], self.out_sizes[d], self.scales[d]
        if self.mode in ("nearest", "nearest-exact"):
            exact = self.mode == "nearest-exact"
            if self.transpose or vectorized:
                index = _nearest_idx(in_size, out_size, scale, exact)
            else:
                index = _nearest_generic(in_size, out_size, scale, dt if dt in (np.float32, np.float64) else _F32,
                                         exact)
            return index[:, None], None
        if self.mode == "bicubic":
            return _cubic_weights(in_size, out_size, self.align_corners, scale, dt)
        return _linear_weights(in_size, out_size, self.align_corners, scale, dt)

    def compute(self, a):
        dtype = a.dtype
        work = a.astype(_F32) if dtype == np.float16 else a
        dt = work.dtype.type
        vectorized = self._vectorized(a)
        dims = len(self.in_sizes)
        if self.transpose:
            for d in range(dims):
                index, weights = self._taps(d, dt, vectorized)
                work = take_transpose(work, index, 2 + d, self.in_sizes[d], weights)
        else:
            for d in reversed(range(dims)):
                index, weights = self._taps(d, dt, vectorized)
                work = take(work, index, 2 + d, weights)
        return np.ascontiguousarray(work.astype(dtype, copy=False))


def _size_check(x, out_sizes):
    """upsample_{1,2,3}d_common_check and the meta function's non-empty check."""
    in_sizes = x.shape[2:]
    names = ("W",) if len(in_sizes) == 1 else ("H", "W") if len(in_sizes) == 2 else ("D", "H", "W")
    if min(in_sizes) <= 0 or min(out_sizes) <= 0:
        given = ", ".join("%s: %d" % (n, s) for n, s in zip(names, in_sizes))
        wanted = ", ".join("%s: %d" % (n, s) for n, s in zip(names, out_sizes))
        joiner = ") and output (" if len(names) == 1 else ") output ("
        raise RuntimeError("Input and output sizes should be greater than 0, but got input (%s%s%s)"
                           % (given, joiner, wanted))
    if x.numel() == 0 and int(np.prod(x.shape[1:])) == 0:
        raise RuntimeError("Non-empty %dD data tensor expected but got a tensor with sizes %s"
                           % (x.dim(), shape_text(x.shape)))


def _output_sizes(x, output_size, scale_factors):
    """upsample::compute_output_size: the given size, or int(size * scale)."""
    if output_size is not None:
        return [int(s) for s in output_size]
    sizes = []
    for s, f in zip(x.shape[2:], scale_factors):
        value = s * float(f)
        if not math.isfinite(value) or abs(value) >= 2.0 ** 63:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        sizes.append(int(value))
    return sizes


def _upsample(x, mode, output_size, scale_factors, align_corners=False):
    out_sizes = _output_sizes(x, output_size, scale_factors)
    _size_check(x, out_sizes)
    dims = x.dim() - 2
    kind = x._data.dtype
    if kind.kind != "f" and not (kind == np.uint8 and mode in ("nearest", "nearest-exact")):
        raise not_implemented_for(x, "upsample_%s%dd" % (mode.replace("-", "_"), dims))
    scales = list(scale_factors) if scale_factors is not None else [None] * dims
    return apply(Upsample(mode, x.shape[2:], out_sizes, [None if s is None else float(s) for s in scales],
                          bool(align_corners)), x)


def _area(x, output_size):
    """mode='area': adaptive average pooling to output_size (1-D through the 2-D op)."""
    if x.dim() == 3:
        return _adaptive_avg_pool2d(x.unsqueeze(-2), (1, int(output_size[0]))).squeeze(-2)
    if x.dim() == 4:
        return like_input_format(_adaptive_avg_pool2d(x, tuple(int(s) for s in output_size)), x)
    raise NotImplementedError("interpolate(mode='area') of a 5-D input (adaptive_avg_pool3d) is not supported by "
                              "cextend")


def _is_int(value):
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate of a 3-D, 4-D or 5-D (N, C, *) input."""
    x = host_tensor(input, "interpolate")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = x.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input with "
                                 "spatial dimensions of %s and output size of %s. Please provide input tensor in (N, C, "
                                 "d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
                                 % (list(x.shape[2:]), size))
            if not all(_is_int(s) for s in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                                "int], but got size with types %s" % [type(s) for s in size])
            output_size = size
        else:
            output_size = [size for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got input "
                                 "with spatial dimensions of %s and scale_factor of shape %s. Please provide input "
                                 "tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                                 % (list(x.shape[2:]), scale_factor))
            scale_factors = scale_factor
        else:
            scale_factors = [scale_factor for _ in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = [int(x.shape[i + 2] * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and x.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported by cextend")
    wanted = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "linear": (3,), "bilinear": (4,),
              "trilinear": (5,), "bicubic": (4,)}
    if mode in wanted and x.dim() in wanted[mode]:
        return _upsample(x, mode, output_size, scale_factors, align_corners)
    if mode == "area" and x.dim() in (3, 4, 5):
        return _area(x, output_size)
    needs = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if mode in needs and x.dim() in (3, 4, 5):
        raise NotImplementedError("Got %dD input, but %s mode needs %dD input" % (x.dim(), mode, needs[mode]))
    if mode == "lanczos" and x.dim() in (3, 4, 5):
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        raise ValueError("Lanczos mode requires antialias=True")
    raise NotImplementedError("Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: "
                              "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact "
                              "(got %s)" % (x.dim(), mode))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The deprecated torch.nn.functional.upsample: interpolate, with torch's warning."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- grid_sample --------------------------------------------------------------------------------------

def _clip(x, size, dt):
    """clip_coordinates as torch's vectorised kernel: into [0, size - 1], NaN to 0;
    and its derivative (0 where clipped)."""
    top = dt(size - 1)
    inside = (x > 0) & (x < top)
    return np.minimum(np.where(x > 0, x, dt(0)), top).astype(dt), inside.astype(dt)


def _reflect(x, twice_low, twice_high, dt):
    """reflect_coordinates_set_grad: x reflected into [low, high], and its derivative (+-1)."""
    if twice_low == twice_high:
        return np.zeros_like(x), np.zeros_like(x)
    low = dt(twice_low) / dt(2)
    span = dt(twice_high - twice_low) / dt(2)
    shifted = x - low
    sign = np.where(shifted < 0, dt(-1), dt(1)).astype(dt)
    shifted = np.abs(shifted)
    extra = np.fmod(shifted, span)
    flips = np.floor(shifted / span)
    even = np.fmod(flips, 2) == 0
    return (np.where(even, extra + low, span - extra + low).astype(dt),
            np.where(even, sign, -sign).astype(dt))


def _pad_coordinate(x, size, padding_mode, align_corners):
    """compute_coordinates_set_grad: x clipped or reflected into the input, and its derivative."""
    dt = x.dtype.type
    if padding_mode == "border":
        return _clip(x, size, dt)
    if padding_mode == "reflection":
        if align_corners:
            x, g = _reflect(x, 0, 2 * (size - 1), dt)
        else:
            x, g = _reflect(x, -1, 2 * size - 1, dt)
        x, g2 = _clip(x, size, dt)
        return x, g * g2
    return x, np.ones_like(x)


def _source(coord, size, padding_mode, align_corners):
    """grid_sampler_compute_source_index_set_grad: the input coordinate of each
    normalised grid coordinate, and d coordinate / d grid (padding_mode None:
    unnormalised only, as bicubic's, which pads each tap)."""
    dt = coord.dtype.type
    if align_corners:
        mult = dt(size - 1) / dt(2)
        x = ((coord + dt(1)) * mult).astype(dt)
    else:
        mult = dt(size) / dt(2)
        x = ((coord + dt(1)) * mult - dt(0.5)).astype(dt)
    grad = np.full(coord.shape, mult, dt)
    if padding_mode is None:
        return x, grad
    x, g = _pad_coordinate(x, size, padding_mode, align_corners)
    return x, (grad * g).astype(dt)


class GridParams:
    __slots__ = ("mode", "padding_mode", "align_corners")

    def __init__(self, mode, padding_mode, align_corners):
        self.mode, self.padding_mode, self.align_corners = mode, padding_mode, align_corners


def _corners(grid, spatial, params):
    """The sampling taps: a list of (flat index (N, P), valid (N, P), weight (N, P),
    d weight / d grid coordinate k for each k), plus the coordinates' derivatives.
    Grid coordinate k indexes spatial dim -1-k (x: W, y: H, z: D)."""
    d = len(spatial)
    coords, mults = [], []
    bicubic = params.mode == "bicubic"
    for k in range(d):
        size = spatial[d - 1 - k]
        x, m = _source(grid[..., k], size, None if bicubic else params.padding_mode, params.align_corners)
        coords.append(x)
        mults.append(m)
    dt = grid.dtype.type
    taps = []
    if bicubic:
        return _cubic_taps(coords, spatial, params, dt), mults
    if params.mode == "nearest":
        rounded = [np.rint(c) for c in coords]
        valid, flat = _gather_index(rounded, spatial)
        taps.append((flat, valid, None, None))
        return taps, mults
    floors = [np.floor(c) for c in coords]
    fracs = [(c - f).astype(dt) for c, f in zip(coords, floors)]
    for corner in range(2 ** d):
        bits = [(corner >> k) & 1 for k in range(d)]      # bit k: the upper neighbour along coordinate k
        positions = [f + b for f, b in zip(floors, bits)]
        valid, flat = _gather_index(positions, spatial)
        factors = [fr if b else (dt(1) - fr).astype(dt) for fr, b in zip(fracs, bits)]
        weight = factors[d - 1]
        for k in range(d - 2, -1, -1):          # torch's order: the y factor times the x factor
            weight = (weight * factors[k]).astype(dt)
        dweights = []
        for k in range(d):
            others = np.ones_like(fracs[0])
            for j in range(d):
                if j != k:
                    others = (others * factors[j]).astype(dt)
            dweights.append(others if bits[k] else -others)
        taps.append((flat, valid, weight, dweights))
    return taps, mults


_A = -0.75


def _cubic_coefficients(t, dt):
    """get_cubic_upsample_coefficients (A = -0.75) of the fractions t, and their derivatives
    in t (get_cubic_coefficients_grad, which the kernel subtracts)."""
    a = dt(_A)
    x2 = (dt(1) - t).astype(dt)
    coeffs = [_cubic2((t + dt(1)).astype(dt), _A, dt), _cubic1(t, _A, dt), _cubic1(x2, _A, dt),
              _cubic2((x2 + dt(1)).astype(dt), _A, dt)]
    x = (dt(-1) - t).astype(dt)
    g0 = (dt(-3) * a * x - dt(10) * a) * x - dt(8) * a
    x = -t
    g1 = (dt(-3) * (a + dt(2)) * x - dt(2) * (a + dt(3))) * x
    x = (dt(1) - t).astype(dt)
    g2 = (dt(3) * (a + dt(2)) * x - dt(2) * (a + dt(3))) * x
    x = (dt(2) - t).astype(dt)
    g3 = (dt(3) * a * x - dt(10) * a) * x + dt(8) * a
    return coeffs, [(-g).astype(dt) for g in (g0, g1, g2, g3)]     # torch's formulas give minus the derivative


def _cubic_tap_positions(floors, spatial, params):
    """The 16 taps (j over y, i over x) of bicubic sampling: each tap's position
    padded on its own (clipped or reflected into the input), then its (valid, flat index)."""
    out = []
    for j in range(4):
        for i in range(4):
            positions = []
            for k, offset in ((0, i), (1, j)):
                p = floors[k] + (offset - 1)
                if params.padding_mode != "zeros":
                    p = _pad_coordinate(p, spatial[1 - k], params.padding_mode, params.align_corners)[0]
                positions.append(np.trunc(p))
            out.append((i, j) + _gather_index(positions, spatial))
    return out


def _cubic_taps(coords, spatial, params, dt):
    floors = [np.floor(c) for c in coords]
    (cx, gx), (cy, gy) = [_cubic_coefficients((c - f).astype(dt), dt) for c, f in zip(coords, floors)]
    taps = []
    for i, j, valid, flat in _cubic_tap_positions(floors, spatial, params):
        taps.append((flat, valid, (cx[i] * cy[j]).astype(dt), [(gx[i] * cy[j]).astype(dt), (cx[i] * gy[j]).astype(dt)]))
    return taps


def _gather_index(positions, spatial):
    """(valid, flat index) of integer-valued float positions (per coordinate k)."""
    d = len(spatial)
    valid = np.ones(positions[0].shape, bool)
    flat = np.zeros(positions[0].shape, np.int64)
    stride = 1
    for k in range(d):
        size = spatial[d - 1 - k]
        p = positions[k]
        ok = (p >= 0) & (p <= size - 1)
        valid &= ok
        flat += np.where(ok, p, 0).astype(np.int64) * stride
        stride *= size
    return valid, np.where(valid, flat, 0)


def _sample_forward(x, grid, params):
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    out_spatial = grid.shape[1:-1]
    values = x.reshape(n, c, -1)
    taps, _ = quietly(_corners, grid, spatial, params)
    points = int(np.prod(out_spatial))
    # torch's 3-D kernel adds the taps to a zero (0 + -0 is +0); its 2-D one sums the four
    out = np.zeros((n, c, points), x.dtype) if len(spatial) == 3 and params.mode != "nearest" else None
    for flat, valid, weight, _ in taps:
        flat2, valid2 = flat.reshape(n, 1, points), valid.reshape(n, 1, points)
        gathered = np.take_along_axis(values, np.broadcast_to(flat2, (n, c, points)), 2)
        gathered = np.where(valid2, gathered, x.dtype.type(0))
        term = gathered if weight is None else gathered * weight.reshape(n, 1, points)
        out = term if out is None else out + term
    return out.reshape((n, c) + tuple(out_spatial))


def _sample_backward(g, x, grid, params, mask):
    """(grad_input, grad_grid) of grid_sample, None where mask says not wanted."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    size = int(np.prod(spatial))
    points = int(np.prod(grid.shape[1:-1]))
    g = g.reshape(n, c, points)
    taps, mults = quietly(_corners, grid, spatial, params)
    grad_input = grad_grid = None
    if mask[0]:
        acc = np.zeros((n * size, c), x.dtype)
        offsets = (np.arange(n) * size)[:, None]
        for flat, valid, weight, _ in taps:
            contrib = g if weight is None else g * weight.reshape(n, 1, points)
            contrib = np.where(valid.reshape(n, 1, points), contrib, x.dtype.type(0))
            np.add.at(acc, (flat.reshape(n, points) + offsets).ravel(), contrib.transpose(0, 2, 1).reshape(-1, c))
        grad_input = acc.reshape(n, size, c).transpose(0, 2, 1).reshape(x.shape)
    if mask[1]:
        grad_grid = np.zeros(grid.shape, grid.dtype)
        if params.mode != "nearest":
            values = x.reshape(n, c, size)
            d = len(spatial)
            sums = [np.zeros((n, points), grid.dtype) for _ in range(d)]
            for flat, valid, weight, dweights in taps:
                gathered = np.take_along_axis(values, np.broadcast_to(flat.reshape(n, 1, points), (n, c, points)), 2)
                gathered = np.where(valid.reshape(n, 1, points), gathered, x.dtype.type(0))
                dot = (gathered * g).sum(1)
                for k in range(d):
                    sums[k] += dot * dweights[k].reshape(n, points)
            for k in range(d):
                grad_grid[..., k] = sums[k].reshape(grid.shape[:-1]) * mults[k]
    return grad_input, grad_grid


def _sample_composite(x, grid, params):
    """grid_sample in Tensor ops (for its double backward): the coordinates are
    affine in the grid near any point (their derivative taken from the kernel's
    rule), the weights polynomials in them, the taps gathers of the input."""
    n, c = x.shape[:2]
    spatial = tuple(x.shape[2:])
    d = len(spatial)
    points = int(np.prod(grid.shape[1:-1]))
    g_np = grid._data
    dt = g_np.dtype.type
    coords = []
    bicubic = params.mode == "bicubic"
    for k in range(d):
        src, mult = quietly(_source, g_np[..., k], spatial[d - 1 - k], None if bicubic else params.padding_mode,
                            params.align_corners)
        raw = grid[..., k]
        coords.append(raw * _wrap(mult) + _wrap((src - g_np[..., k] * mult).astype(dt)))
    values = x.reshape(n, c, -1)
    if bicubic:
        floors = [np.floor(cd._data) for cd in coords]
        coeffs = [_cubic_tensors(cd - _wrap(f.astype(dt))) for cd, f in zip(coords, floors)]
        out = None
        for i, j, valid, flat in quietly(_cubic_tap_positions, floors, spatial, params):
            index = _wrap(np.broadcast_to(flat.reshape(n, 1, points), (n, c, points)).copy())
            tap = values.gather(2, index) * _wrap(valid.reshape(n, 1, points).astype(dt))
            term = tap * (coeffs[0][i] * coeffs[1][j]).reshape(n, 1, points)
            out = term if out is None else out + term
        return out.reshape((n, c) + tuple(grid.shape[1:-1]))
    if params.mode == "nearest":
        valid, flat = _gather_index([np.rint(cd._data) for cd in coords], spatial)
        index = _wrap(np.broadcast_to(flat.reshape(n, 1, points), (n, c, points)).copy())
        gathered = values.gather(2, index) * _wrap(valid.reshape(n, 1, points).astype(dt))
        return gathered.reshape((n, c) + tuple(grid.shape[1:-1]))
    floors = [np.floor(cd._data) for cd in coords]
    fracs = [cd - _wrap(f.astype(dt)) for cd, f in zip(coords, floors)]
    out = None
    for corner in range(2 ** d):
        bits = [(corner >> k) & 1 for k in range(d)]
        valid, flat = _gather_index([f + b for f, b in zip(floors, bits)], spatial)
        weight = None
        for k in range(d - 1, -1, -1):
            factor = fracs[k] if bits[k] else 1 - fracs[k]
            weight = factor if weight is None else weight * factor
        index = _wrap(np.broadcast_to(flat.reshape(n, 1, points), (n, c, points)).copy())
        tap = values.gather(2, index) * _wrap(valid.reshape(n, 1, points).astype(dt))
        term = tap * weight.reshape(n, 1, points)
        out = term if out is None else out + term
    return out.reshape((n, c) + tuple(grid.shape[1:-1]))


def _cubic_tensors(t):
    """The four cubic convolution coefficients (A = -0.75) of the Tensor t, in Tensor ops."""
    a = _A

    def near(x):        # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):         # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _grid_backward(node, grad, input, grid):
    return grid_sampler_backward(grad, input, grid, node.params, (node.needs(0), node.needs(1)))


GridSampler2DBackward0 = rec.node_class("GridSampler2DBackward", _grid_backward)
GridSampler3DBackward0 = rec.node_class("GridSampler3DBackward", _grid_backward)


class _GridSamplerBackwardBackward(rec.FormulaNode):
    differentiable = (0, 1, 2)      # grad_output, input, grid

    def formulas(self, mask, g, x, grid):
        with grad_mode.enable_grad():
            out = _sample_composite(x, grid, self.params)
            found = autograd_grad([out], [x, grid], grad_outputs=[g], create_graph=True, allow_unused=True)
        return tuple(f if m else None for f, m in zip(found, mask))


GridSampler2DBackwardBackward0 = type("GridSampler2DBackwardBackward0", (_GridSamplerBackwardBackward,),
                                      {"__module__": __name__})
GridSampler3DBackwardBackward0 = type("GridSampler3DBackwardBackward0", (_GridSamplerBackwardBackward,),
                                      {"__module__": __name__})


def grid_sampler_backward(grad, input, grid, params, mask):
    gi, gg = _sample_backward(grad._data, input._data, grid._data, params, mask)
    grads = (None if gi is None else _wrap(gi), None if gg is None else _wrap(gg))
    if rec.needs_grad(grad, input, grid):
        cls = GridSampler2DBackwardBackward0 if input.dim() == 4 else GridSampler3DBackwardBackward0
        node = rec.record(cls, (grad, input, grid), grads)
        node.params = params
        node._saved = (rec.save(grad), rec.save(input), rec.save(grid))
    return grads


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """torch.nn.functional.grid_sample: input (N, C, H, W) sampled at grid (N, Ho, Wo, 2)
    (or 5-D input and grid (N, Do, Ho, Wo, 3)); bilinear or nearest."""
    if mode not in _GRID_MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         "but got: '%s'" % (mode,))
    if padding_mode not in _PADDING_MODES:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         "'reflection', but got: '%s'" % (padding_mode,))
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=2)
        align_corners = False
    x = host_tensor(input, "grid_sampler", "input")
    g = host_tensor(grid, "grid_sampler", "grid")
    xs, gs = x.shape, g.shape
    if x.dim() == 0 or g.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if xs[0] != gs[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but got input with "
                           "sizes %s and grid with sizes %s" % (shape_text(xs), shape_text(gs)))
    if gs[-1] != x.dim() - 2:
        raise RuntimeError("grid_sampler(): expected grid to have size %d in last dimension, but got grid with "
                           "sizes %s" % (x.dim() - 2, shape_text(gs)))
    for i in range(2, x.dim()):
        if xs[i] <= 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               "sizes %s with dimension %d being empty" % (shape_text(xs), i))
    rank = 4 if x.dim() == 4 else 5
    if x.dim() != rank or g.dim() != rank:
        raise RuntimeError("grid_sampler(): expected %dD input and grid with same number of dimensions, but got "
                           "input with sizes %s and grid with sizes %s" % (rank, shape_text(xs), shape_text(gs)))
    if rank == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if x._data.dtype.kind != "f":
        raise not_implemented_for(x, "grid_sampler_%dd_cpu_kernel_impl" % (x.dim() - 2))
    if g._data.dtype != x._data.dtype:
        raise RuntimeError("expected scalar type %s but found %s"
                           % (_torch_type(x._data.dtype), _torch_type(g._data.dtype)))
    params = GridParams(mode, padding_mode, bool(align_corners))
    out = _wrap(_sample_forward(x._data, g._data, params))
    if rec.needs_grad(x, g):
        node = rec.record(GridSampler2DBackward0 if x.dim() == 4 else GridSampler3DBackward0, (x, g), out)
        node.params = params
        node._saved = (rec.save(x), rec.save(g))
    return out


def _torch_type(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half"}.get(np.dtype(dtype).name, str(dtype))


# -- affine_grid ------------------------------------------------------------------------------------

def _linspace(steps, align_corners, dt):
    """torch's linspace_from_neg_one: [-1, 1] in steps points, scaled by (steps - 1) / steps
    unless align_corners."""
    if steps <= 1:
        return np.zeros(max(steps, 0), dt)
    values = np.linspace(-1, 1, steps).astype(dt)
    if not align_corners:
        values = (values * dt(steps - 1) / dt(steps)).astype(dt)
    return values


def _base_grid(spatial, align_corners, dt):
    """(prod(spatial), d + 1): each point's (x, y[, z], 1), x along the last dim."""
    d = len(spatial)
    axes = [_linspace(s, align_corners, dt) for s in spatial]
    base = np.ones(tuple(spatial) + (d + 1,), dt)
    mesh = np.meshgrid(*axes, indexing="ij")
    for k in range(d):
        base[..., k] = mesh[d - 1 - k]
    return base.reshape(-1, d + 1)


def _affine_backward(node, grad):
    n, d = node.theta_shape[0], node.theta_shape[1]
    base = _wrap(node.base)
    g = grad.reshape(n, -1, d)
    return (g.transpose(1, 2) @ base)


AffineGridGeneratorBackward0 = rec.node_class("AffineGridGeneratorBackward", _affine_backward)


def affine_grid(theta, size, align_corners=None):
    """torch.nn.functional.affine_grid: the sampling grid (N, H, W, 2) (or (N, D, H, W, 3))
    of the affine maps theta (N, 2, 3) (or (N, 3, 4))."""
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=2)
        align_corners = False
    t = host_tensor(theta, "affine_grid", "theta")
    if t._data.dtype.kind != "f":
        raise ValueError("Expected theta to have floating point type, but got %s" % (t.dtype,))
    size = list(size)
    if len(size) == 4:
        if t.dim() != 3 or t.shape[-2] != 2 or t.shape[-1] != 3:
            raise ValueError("Expected a batch of 2D affine matrices of shape Nx2x3 for size %s. Got %s."
                             % (tuple(size), t.shape))
        spatial = size[-2:]
    elif len(size) == 5:
        if t.dim() != 3 or t.shape[-2] != 3 or t.shape[-1] != 4:
            raise ValueError("Expected a batch of 3D affine matrices of shape Nx3x4 for size %s. Got %s."
                             % (tuple(size), t.shape))
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  "respectively. Got size %s." % (tuple(size),))
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError("Expected non-zero, positive output size. Got %s" % (tuple(size),))
    n = size[0]
    if t.shape[0] != n:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: [%d, %d]."
                           % (n, t.shape[2], t.shape[0], t.shape[2]))
    d = len(spatial)
    dt = t._data.dtype.type
    base = _base_grid(spatial, bool(align_corners), dt)
    grid = np.matmul(base[None], np.swapaxes(t._data, 1, 2)).astype(dt)
    out = _wrap(np.ascontiguousarray(grid.reshape([n] + list(spatial) + [d])))
    if rec.needs_grad(t):
        node = rec.record(AffineGridGeneratorBackward0, (t,), out)
        node.base, node.theta_shape = base, tuple(t.shape)
    return out


# -- the table entries (torch.nn.functional only) --------------------------------------------------------

def _nn_only(name, function, samples, **info):
    register(name, function, method=False, module=False, family="nn", samples=samples,
             call=functional_call(name), **info)


_nn_only("interpolate", interpolate, S.interpolate_samples)
_nn_only("grid_sample", grid_sample, S.grid_sample_samples)
_nn_only("affine_grid", affine_grid, S.affine_grid_samples)
