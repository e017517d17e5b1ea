"""Sample inputs for the spatial ops of the op table (pad, interpolate,
unfold/fold, grid_sample, affine_grid, pixel and channel shuffles).

Shapes are small and awkward (sizes 1, odd, prime).  grid_sample's grids
keep their source coordinates a gap away from the integers and half
integers, where bilinear weights, nearest rounding, clipping and
reflection have kinks (finite differences are meaningless there).
"""
import numpy as np

from cextend._ops.registry import Sample


def pad_samples(rng):
    yield Sample(rng.standard_normal((2, 3, 4)), (1, 2), value=0.5, note="constant, last dim")
    yield Sample(rng.standard_normal((2, 3, 4, 5)), (1, -1, 0, 2, 1, 1), note="constant, 3 dims, a crop")
    yield Sample(rng.standard_normal((3, 5)), (2, 1), mode="reflect", note="reflect 1-d, unbatched")
    yield Sample(rng.standard_normal((1, 2, 3, 4)), (1, 2, -1, 2), mode="reflect", note="reflect 2-d, a crop")
    yield Sample(rng.standard_normal((1, 2, 3, 2, 3)), (1, 0, 1, 1, 2, 1), mode="reflect", note="reflect 3-d")
    yield Sample(rng.standard_normal((2, 2, 3)), (3, 1), mode="replicate", note="replicate 1-d")
    yield Sample(rng.standard_normal((2, 3, 3)), (2, 1, 0, 3), mode="replicate", note="replicate 2-d, unbatched")
    yield Sample(rng.standard_normal((1, 1, 2, 2, 3)), (1, 1, 2, 0, 1, -1), mode="replicate", note="replicate 3-d")
    yield Sample(rng.standard_normal((1, 1, 3, 4)), (1, 2, 3, 0), mode="circular", note="circular 2-d")
    yield Sample(rng.standard_normal((2, 5)), (-1, 2), mode="circular", note="circular 1-d, unbatched")


def interpolate_samples(rng):
    yield Sample(rng.standard_normal((1, 2, 3, 4)), size=(5, 3), note="nearest")
    yield Sample(rng.standard_normal((2, 1, 5)), scale_factor=1.7, mode="nearest-exact", note="nearest-exact 1-d")
    yield Sample(rng.standard_normal((1, 2, 3, 5)), size=(4, 7), mode="bilinear", align_corners=False)
    yield Sample(rng.standard_normal((1, 1, 3, 2)), scale_factor=(2.5, 1.5), mode="bilinear", align_corners=True)
    yield Sample(rng.standard_normal((2, 2, 7)), size=3, mode="linear", note="downsampling")
    yield Sample(rng.standard_normal((1, 1, 2, 3, 2)), scale_factor=(1.5, 0.7, 2.0), mode="trilinear",
                 recompute_scale_factor=True)
    yield Sample(rng.standard_normal((1, 2, 3, 4)), size=(5, 2), mode="bicubic", align_corners=False)
    yield Sample(rng.standard_normal((1, 1, 2, 3, 1)), size=(3, 1, 2), mode="nearest", note="nearest 3-d")


def unfold_samples(rng):
    yield Sample(rng.standard_normal((2, 2, 4, 5)), (2, 3))
    yield Sample(rng.standard_normal((3, 5, 4)), 2, dilation=(2, 1), padding=1, stride=(2, 3), note="unbatched")


def fold_samples(rng):
    yield Sample(rng.standard_normal((2, 12, 6)), (3, 4), (2, 2), note="overlapping blocks")
    yield Sample(rng.standard_normal((4, 6)), (5, 4), 2, dilation=(2, 1), padding=1, stride=(2, 3), note="unbatched")


def pixel_shuffle_samples(rng):
    yield Sample(rng.standard_normal((1, 8, 2, 3)), 2)
    yield Sample(rng.standard_normal((2, 1, 9, 1, 2)), 3, note="5-d")


def pixel_unshuffle_samples(rng):
    yield Sample(rng.standard_normal((1, 2, 4, 6)), 2)
    yield Sample(rng.standard_normal((3, 3, 3)), 3, note="unbatched")


def channel_shuffle_samples(rng):
    yield Sample(rng.standard_normal((2, 6, 2, 1)), 3)
    yield Sample(rng.standard_normal((1, 4, 3)), 2, note="3-d")


def _grid_coordinates(rng, shape, size, align_corners, inside):
    """Normalised coordinates whose source positions along a dim of `size` sit
    a gap away from integers and half integers (inside: within the image)."""
    low, high = (0, size - 1) if inside else (-2, size + 1)
    whole = rng.integers(low, max(high, low + 1), shape)
    frac = rng.choice([0.15, 0.3, 0.65, 0.85], shape) + rng.uniform(-0.05, 0.05, shape)
    source = np.minimum(whole + frac, size - 1.1) if inside and size > 1 else whole + frac
    if inside and size == 1:
        source = np.full(shape, 0.0)
    if align_corners:
        return source * 2 / max(size - 1, 1) - 1
    return (2 * source + 1) / size - 1


def _grid(rng, n, out, spatial, align_corners, inside=False):
    d = len(spatial)
    grid = np.empty((n,) + tuple(out) + (d,))
    for k in range(d):
        grid[..., k] = _grid_coordinates(rng, (n,) + tuple(out), spatial[d - 1 - k], align_corners, inside)
    return grid


def grid_sample_samples(rng):
    yield Sample(rng.standard_normal((2, 1, 3, 4)), _grid(rng, 2, (2, 2), (3, 4), False), align_corners=False,
                 note="bilinear, zeros")
    yield Sample(rng.standard_normal((1, 1, 3, 5)), _grid(rng, 1, (3, 2), (3, 5), True), padding_mode="border",
                 align_corners=True)
    yield Sample(rng.standard_normal((1, 2, 4, 3)), _grid(rng, 1, (2, 2), (4, 3), False), padding_mode="reflection",
                 align_corners=False)
    yield Sample(rng.standard_normal((1, 1, 3, 3)), _grid(rng, 1, (2, 3), (3, 3), True), padding_mode="reflection",
                 align_corners=True)
    yield Sample(rng.standard_normal((2, 1, 3, 4)), _grid(rng, 2, (2, 2), (3, 4), False), mode="nearest",
                 align_corners=False)
    yield Sample(rng.standard_normal((1, 1, 3, 4)), _grid(rng, 1, (2, 2), (3, 4), False), mode="bicubic",
                 padding_mode="reflection", align_corners=False)
    yield Sample(rng.standard_normal((1, 2, 2, 3)), _grid(rng, 1, (1, 3), (2, 3), True), mode="bicubic",
                 padding_mode="border", align_corners=True, note="bicubic, border")
    yield Sample(rng.standard_normal((1, 2, 2, 3, 2)), _grid(rng, 1, (1, 1, 3), (2, 3, 2), False),
                 align_corners=False, note="3-d, bilinear")
    yield Sample(rng.standard_normal((1, 1, 2, 2, 3)), _grid(rng, 1, (1, 2, 2), (2, 2, 3), True), mode="nearest",
                 padding_mode="border", align_corners=True, note="3-d, nearest")


def affine_grid_samples(rng):
    yield Sample(rng.standard_normal((2, 2, 3)), (2, 3, 4, 5), align_corners=False)
    yield Sample(rng.standard_normal((1, 3, 4)), (1, 1, 2, 3, 1), align_corners=False, note="3-d, a unit dim")
