"""Helpers shared by the torch-parity test files (tests/test_parity_*.py).

A plain module, not a test file.  Where torch 2.13 is installed, the
comparisons run the same program in torch too; without it they skip and
the stated answers still run.  `real_torch` is that torch (or None): the
parity files spell cextend `torch` where a test is written against torch's
API, so the real one goes by another name there.
"""
import math

import numpy as np
import pytest

import cextend as cx

try:
    import torch as real_torch
    import torch.nn.functional as tF
except ImportError:     # the comparisons with torch skip; the stated answers still run
    real_torch = tF = None

inf, nan = math.inf, math.nan

LIBS = [cx] + ([real_torch] if real_torch is not None else [])
each_lib = pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
with_torch = pytest.mark.skipif(real_torch is None, reason="torch 2.13 not installed: cross-check skipped")


def _both(program):
    """Run program(lib) with cextend and (if installed) torch; return both results."""
    ours = program(cx)
    theirs = program(real_torch) if real_torch is not None else None
    return ours, theirs


def _same(ours, theirs):
    if theirs is None:
        return
    for a, b in zip(ours, theirs):
        if a is None or b is None:
            assert a is None and b is None
        else:
            np.testing.assert_allclose(np.asarray(a.detach().numpy() if hasattr(a, "detach") else a),
                                       np.asarray(b.detach().numpy() if hasattr(b, "detach") else b))


def _array(t):
    return np.asarray(t.detach().numpy())


def _outcome(program, lib):
    """('ok', array, dtype name) or ('raises', exception type name, message)."""
    try:
        result = program(lib)
    except Exception as e:      # the type and message are what is compared
        return ("raises", type(e).__name__, str(e))
    return ("ok", _array(result), str(result.dtype).split(".")[-1])


def _assert_same_outcome(program, rtol=1e-6):
    """program(cextend) and program(torch) agree: values (NaN, inf and the
    sign of zeros included), dtype, or the exception type and message."""
    if real_torch is None:
        return
    ours, theirs = _outcome(program, cx), _outcome(program, real_torch)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "raises":
        assert ours[1:] == theirs[1:]
        return
    assert ours[2] == theirs[2]
    _assert_values(ours[1], theirs[1], rtol)


def _assert_values(ours, expected, rtol=1e-6):
    ours, expected = np.asarray(ours), np.asarray(expected)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=rtol, atol=0)
    if ours.dtype.kind == "f":       # the sign of zeros (a NaN's sign bit means nothing)
        zeros = expected == 0
        assert np.array_equal(np.signbit(ours[zeros]), np.signbit(expected[zeros])), (ours, expected)
