"""gradcheck and gradgradcheck for every differentiable op, in float64, on
contiguous, transposed and sliced inputs (the samples in samples.py)."""
import pytest

from cextend.autograd import gradcheck, gradgradcheck
from samples import LAYOUTS, OPS, inputs

CASES = [(name, layout) for name in OPS for layout in LAYOUTS]


@pytest.mark.parametrize("name,layout", CASES, ids=["%s-%s" % c for c in CASES])
def test_gradcheck(name, layout):
    fn, shapes = OPS[name]
    assert gradcheck(fn, inputs(shapes, layout))


@pytest.mark.parametrize("name,layout", CASES, ids=["%s-%s" % c for c in CASES])
def test_gradgradcheck(name, layout):
    fn, shapes = OPS[name]
    assert gradgradcheck(fn, inputs(shapes, layout, seed=1))
