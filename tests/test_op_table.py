"""Every op in the table (cextend._ops.OPS), from its own samples:
gradcheck and gradgradcheck in float64 on contiguous, transposed and
sliced inputs; the method, function and in-place spellings agree; and the
result matches torch 2.13 when torch is installed.  Adding an op to the
table adds it here."""
import os

import numpy as np
import pytest

import cextend as cx
from cextend._ops import OPS
from cextend._ops.registry import Const
from cextend.autograd import gradcheck, gradgradcheck

LAYOUTS = ("contiguous", "transposed", "sliced")


def _layout(array, layout):
    """The same values in another memory layout (a view of a bigger array)."""
    if layout == "transposed" and array.ndim >= 2:
        return np.ascontiguousarray(array.T).T
    if layout == "sliced" and array.ndim >= 1:
        wide = np.empty(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        wide[..., ::2] = array
        return wide[..., ::2]
    return array


def _convert(value, layout, requires_grad):
    if isinstance(value, Const):
        return cx.from_numpy(value.array)
    if isinstance(value, np.ndarray):
        t = cx.from_numpy(_layout(value.astype(np.float64), layout))
        return t.requires_grad_(requires_grad) if value.dtype.kind == "f" else t
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], np.ndarray):
        return type(value)(_convert(v, layout, requires_grad) for v in value)
    return value


def _cases(flag):
    cases = []
    for name, info in sorted(OPS.items()):
        if info.samples is None or not getattr(info, flag):
            continue
        for i, sample in enumerate(info.samples(np.random.default_rng(0))):
            cases.append(pytest.param(name, i, id="%s-%d" % (name, i)))
    return cases


def _sample(name, index):
    info = OPS[name]
    return info, list(info.samples(np.random.default_rng(0)))[index]


def _call(info, args, kwargs):
    if info.call is not None:
        return info.call(cx, *args, **kwargs)
    return info.function(*args, **kwargs)


def _differentiable(outputs):
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    return tuple(o for o in outs if isinstance(o, cx.Tensor) and o.requires_grad)


def _gradcheck_cases():
    """Every sample on every layout.  The strided layouts of an op's later
    samples are long runs (`make test-all`): the layout handling is the op's,
    which its first sample on that layout exercises, and the later samples'
    shapes and arguments run contiguous."""
    cases = []
    for case in _cases("gradcheck"):
        name, index = case.values
        for layout in LAYOUTS:
            marks = [pytest.mark.long_run] if layout != "contiguous" and index > 0 else []
            cases.append(pytest.param(name, index, layout, id="%s-%s" % (case.id, layout), marks=marks))
    return cases


@pytest.mark.parametrize("name,index,layout", _gradcheck_cases())
def test_gradcheck(name, index, layout):
    info, sample = _sample(name, index)
    if layout not in info.layouts:
        pytest.skip("%s takes only %s inputs" % (name, "/".join(info.layouts)))
    args = [_convert(a, layout, True) for a in sample.args]
    kwargs = {k: _convert(v, layout, False) for k, v in sample.kwargs.items()}
    tensors = [a for a in args if isinstance(a, cx.Tensor) and a.requires_grad]
    if not tensors:
        pytest.skip("sample has no differentiable input")
    positions = [i for i, a in enumerate(args) if isinstance(a, cx.Tensor) and a.requires_grad]

    def fn(*inputs):
        call_args = list(args)
        for p, t in zip(positions, inputs):
            call_args[p] = t
        return _differentiable(_call(info, call_args, kwargs))
    assert gradcheck(fn, tuple(tensors))
    # second derivatives on every sample, and on strided layouts for each op's first sample
    if info.gradgradcheck and (layout == "contiguous" or index == 0):
        assert gradgradcheck(fn, tuple(tensors))


def _values(outputs):
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    return [o.detach().numpy() if isinstance(o, cx.Tensor) else o for o in outs]


@pytest.mark.parametrize("name,index", _cases("method"))
def test_method_and_function_agree(name, index):
    info, sample = _sample(name, index)
    if info.call is not None or not info.module:
        pytest.skip("not reachable both as a function and a method")
    args = [_convert(a, "contiguous", False) for a in sample.args]
    if not isinstance(args[0], cx.Tensor):
        pytest.skip("first argument is not a tensor")
    by_function = _values(info.function(*args, **sample.kwargs))
    by_method = _values(getattr(args[0], name)(*args[1:], **sample.kwargs))
    for f, m in zip(by_function, by_method):
        np.testing.assert_array_equal(f, m)


def _inplace_cases():
    cases = []
    for name, info in sorted(OPS.items()):
        if info.inplace is None or info.samples is None:
            continue
        for i, sample in enumerate(info.samples(np.random.default_rng(0))):
            cases.append(pytest.param(name, i, id="%s-%d" % (name, i)))
    return cases


@pytest.mark.parametrize("name,index", _inplace_cases())
def test_inplace_matches_out_of_place(name, index):
    info, sample = _sample(name, index)
    args = [_convert(a, "contiguous", False) for a in sample.args]
    if not isinstance(args[0], cx.Tensor):
        pytest.skip("first argument is not a tensor")
    try:
        expected = _call(info, args, sample.kwargs)
    except Exception as error:      # e.g. an op that only defines some dtypes
        pytest.skip("out-of-place call raises: %s" % error)
    target = args[0].clone()
    if expected.shape != target.shape:
        with pytest.raises(RuntimeError):
            getattr(target, name + "_")(*args[1:], **sample.kwargs)
        return
    version = target._version
    try:
        result = getattr(target, name + "_")(*args[1:], **sample.kwargs)
    except RuntimeError:
        # torch refuses only results its dtype cannot hold (float into int, ...)
        assert not cx.can_cast(expected.dtype, target.dtype)
        return
    assert result is target and target._version > version
    np.testing.assert_array_equal(target.numpy(), expected.numpy().astype(target.numpy().dtype))


try:
    import torch
except ImportError:     # the torch comparison below skips, saying why
    torch = None


def _torch_value(value):
    if isinstance(value, Const):
        return torch.from_numpy(np.array(value.array))
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], np.ndarray):
        return type(value)(_torch_value(v) for v in value)
    return value


def _torch_callable(name, info):
    if info.call is not None:
        return lambda *args, **kwargs: info.call(torch, *args, **kwargs)
    if info.module and hasattr(torch, name):
        return getattr(torch, name)
    if hasattr(torch.Tensor, name):
        return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)
    return None


def _outputs(result):
    if isinstance(result, tuple):
        return list(result)
    return [result]


@pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: cross-check skipped")
@pytest.mark.parametrize("name,index", _cases("difftest"))
def test_matches_torch(name, index):
    info, sample = _sample(name, index)
    theirs_fn = _torch_callable(name, info)
    if theirs_fn is None:
        pytest.skip("torch has no %s" % name)
    ours = _outputs(_call(info, [_convert(a, "contiguous", False) for a in sample.args],
                          {k: _convert(v, "contiguous", False) for k, v in sample.kwargs.items()}))
    theirs = _outputs(theirs_fn(*[_torch_value(a) for a in sample.args],
                                **{k: _torch_value(v) for k, v in sample.kwargs.items()}))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        if not isinstance(t, torch.Tensor):
            assert o == t
            continue
        assert str(t.dtype) == "torch." + o.dtype.name, (o.dtype, t.dtype)
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)


# Entries the differential tester leaves out, each for a reason (a new op
# is in the tester unless its entry says difftest=False and it is named here).
NOT_IN_THE_TESTER = {
    "bitwise_and": "integer-only bit patterns; tested against torch in test_elementwise",
    "bitwise_or": "as bitwise_and", "bitwise_xor": "as bitwise_and", "bitwise_not": "as bitwise_and",
    "broadcast_tensors": "a view of each operand; its sizes are the tester's expand",
    "detach": "the tester's own view op (features.view_op)",
}


def test_the_testers_vocabulary_and_the_gradcheck_cases_are_the_table():
    """Adding an op is one table entry: the differential tester's vocabulary
    and the gradcheck cases are generated from the table, so an entry missing
    from either (no samples, no floating sample, an unexplained opt-out) fails."""
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from difftest.ops import VOCABULARY
    assert sorted(info.name for info in VOCABULARY) == sorted(n for n, i in OPS.items() if i.difftest)
    assert sorted(n for n, i in OPS.items() if not i.difftest) == sorted(NOT_IN_THE_TESTER)
    assert [i.name for i in VOCABULARY if i.samples is None] == []
    gradchecked = {param.values[0] for param in _cases("gradcheck")}
    for name, info in OPS.items():
        if info.gradcheck:
            assert name in gradchecked, "%s claims a gradient but has no sample to gradcheck" % name
            floating = [s for s in info.samples(np.random.default_rng(0))
                        if any(getattr(a, "dtype", None) is not None and a.dtype.kind == "f" for a in s.args)]
            assert floating, "%s: no sample has a floating-point tensor to differentiate" % name
