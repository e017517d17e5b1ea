"""Shared test helpers: the float64 references, error bounds, layouts.

One sample-input generator feeds every kernel test: `layouts` yields the
same values in every memory layout a user can hand us.
"""
import os
import shutil

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = (np.float32, np.float64)


def unit_roundoff(dtype):
    return np.finfo(dtype).eps / 2


def poisoned(shape, dtype):
    """An output buffer full of NaN: any element a kernel forgets stays NaN."""
    return np.full(shape, np.nan, dtype=dtype)


def product_bound(a, b, dtype, bias=None, c=4.0):
    """The elementwise error bound of assert_product_close for a @ b (+ bias)."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    u = unit_roundoff(dtype)
    bound = c * max(a64.shape[-1], 1) * u * (np.abs(a64) @ np.abs(b64))
    if bias is not None:
        bound = bound + c * u * np.abs(np.asarray(bias, np.float64))
    return bound


def assert_product_close(ours, a, b, dtype, bias=None, c=4.0):
    """ours ~= a @ b (+ bias) within the reduction-scaled bound of DESIGN.md:

        |ours - ref| <= c * K * u * (|a| |b|)  (+ c * u * |bias|)

    elementwise, with ref computed in float64 from the same (exactly
    representable) inputs and u the unit roundoff of `dtype`.
    """
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    ref = a64 @ b64
    k = a64.shape[-1]
    u = unit_roundoff(dtype)
    bound = c * max(k, 1) * u * (np.abs(a64) @ np.abs(b64))
    if bias is not None:
        ref = ref + np.asarray(bias, np.float64)
        bound = bound + c * u * np.abs(np.asarray(bias, np.float64))
    ours = np.asarray(ours)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    assert ours.dtype == np.dtype(dtype)
    assert not np.isnan(ours).any(), "kernel left NaN (unwritten or wrong) elements"
    err = np.abs(ours.astype(np.float64) - ref)
    worst = np.unravel_index(np.argmax(err - bound), err.shape) if err.size else None
    assert np.all(err <= bound), "error %g > bound %g at %s" % (err[worst], bound[worst], worst)


def layouts(a):
    """(name, view) pairs: `a`'s values in every layout the kernels must read.

    Contiguous, Fortran (transposed storage), row-sliced (a leading dimension
    larger than the row), transposed with padding, column-sliced and
    negative-stride (both must be copied by the bridge, not misread).
    """
    a = np.asarray(a)
    rows, cols = a.shape
    yield "contiguous", a.copy()
    yield "fortran", np.asfortranarray(a)
    tall = np.full((2 * rows, cols), np.nan, a.dtype)
    tall[::2] = a
    yield "row_sliced", tall[::2]
    padded = np.full((cols, rows + 5), np.nan, a.dtype)
    padded[:, :rows] = a.T
    yield "transposed_padded", padded[:, :rows].T
    wide = np.full((rows, 2 * cols), np.nan, a.dtype)
    wide[:, ::2] = a
    yield "column_sliced", wide[:, ::2]
    yield "negative_strides", a[::-1, ::-1].copy()[::-1, ::-1]


# What a user's build leaves in an example's folder (build.py's _ext/,
# setuptools' build/ and egg-info, compiled modules): a test copies the
# sources, never a build made by following the docs in the checkout.
BUILD_PRODUCTS = shutil.ignore_patterns("_ext", "build", "dist", "*.egg-info", "*.so", "*.o",
                                        "__pycache__", ".pytest_cache")


def copy_sources(relative, dest):
    """A copy of ROOT/relative (e.g. examples/script) without build products."""
    shutil.copytree(os.path.join(ROOT, relative), str(dest), ignore=BUILD_PRODUCTS)
    return dest


# The input layouts the gradient tests run on: contiguous, transposed (a
# permuted view of a contiguous array) and sliced (every other element of a
# wider array), as tests/test_op_table.py does for the op table's entries.
GRAD_LAYOUTS = ("contiguous", "transposed", "sliced")


def _layout_array(rng, shape, layout):
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        return np.ascontiguousarray(rng.standard_normal(shape[::-1])).transpose()
    if layout == "sliced" and len(shape) >= 1:
        return rng.standard_normal(shape[:-1] + (2 * shape[-1],))[..., ::2]
    return rng.standard_normal(shape)


def grad_inputs(shapes, layout="contiguous", seed=0):
    """float64 leaf tensors that require grad, one per shape, in `layout`."""
    import cextend as cx
    rng = np.random.default_rng(seed)
    return tuple(cx.from_numpy(_layout_array(rng, s, layout)).requires_grad_() for s in shapes)


def over_layouts(table):
    """Parametrize a test over (name, layout) for a {name: (fn, shapes)} table."""
    import pytest
    cases = [(name, layout) for name in table for layout in GRAD_LAYOUTS]
    return pytest.mark.parametrize("name,layout", cases, ids=["%s-%s" % c for c in cases])


def assert_gradients(fn, shapes, layout):
    """gradcheck and gradgradcheck of fn on inputs of shapes in layout."""
    from cextend.autograd import gradcheck, gradgradcheck
    assert gradcheck(fn, grad_inputs(shapes, layout))
    assert gradgradcheck(fn, grad_inputs(shapes, layout, seed=1))
