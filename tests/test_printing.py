"""repr/str of tensors, Size, Parameter and Modules, exactly as torch 2.13 prints them.

Two kinds of check:
- hand-written expected strings (read from torch 2.13 once, and re-checked
  against torch below when it is installed), so the suite tests printing
  without torch;
- the same tensors built in torch and in cextend, printed, and compared
  after writing `torch.` as `cextend.`: random values of every dtype
  cextend holds, in awkward shapes, with summarisation, wrapping, every
  float mode, nan/inf/-0.0, autograd suffixes and each print option.
"""
import re
import zlib

import numpy as np
import pytest

import cextend as cx
from cextend import _device, nn
from cextend._printing import get_printoptions, printoptions

try:
    import torch
except ImportError:     # the torch comparisons skip; the hand-written strings still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed: nothing to compare with")

DTYPES = ("float16", "float32", "float64", "int32", "int64", "uint8", "bool")


def as_torch_text(text):
    """torch's repr as cextend writes it: the module's name."""
    return text.replace("torch.", "cextend.")


def unwrapped_grad_fn(text):
    """The text with a grad_fn suffix on the line before, wherever it was.

    torch's node names are one character longer (the digit), which can move
    the suffix to a line of its own in torch and not in cextend, or back;
    tensors made through a custom Function (same name in both) are compared
    with their line breaks.
    """
    return re.sub(r",\n *grad_fn=", ", grad_fn=", text)


@pytest.fixture(autouse=True)
def default_print_options():
    """Every test starts and ends with the default options, in both libraries."""
    yield
    cx.set_printoptions(profile="default")
    if torch is not None:
        torch.set_printoptions(profile="default")


# -- hand-written expectations -------------------------------------------------------
# (expression with `lib.` for the library, repr with `LIB.` for its name)
EXPECTED = [
    ("lib.tensor([1., float('inf')])", "tensor([1., inf])"),
    ("lib.tensor([1., float('nan'), -float('inf')])", "tensor([1., nan, -inf])"),
    ("lib.tensor([0., -0.])", "tensor([0., -0.])"),
    ("lib.tensor(-0.)", "tensor(-0.)"),
    ("lib.tensor(3.14159)", "tensor(3.1416)"),
    ("lib.tensor(7)", "tensor(7)"),
    ("lib.tensor([1.5, 2.25, -3.125])", "tensor([ 1.5000,  2.2500, -3.1250])"),
    ("lib.tensor([1e-5, 1.0])", "tensor([1.0000e-05, 1.0000e+00])"),
    ("lib.tensor([1e9, 1.0])", "tensor([1.0000e+09, 1.0000e+00])"),
    ("lib.tensor([1.0, 1000.0])", "tensor([   1., 1000.])"),
    ("lib.tensor([1.0, 1001.0])", "tensor([1.0000e+00, 1.0010e+03])"),
    ("lib.tensor([123456789., 1.])", "tensor([1.2346e+08, 1.0000e+00])"),
    ("lib.tensor([0.1, 12345.678])", "tensor([1.0000e-01, 1.2346e+04])"),
    ("lib.tensor([1., 2.], dtype=lib.float64)", "tensor([1., 2.], dtype=LIB.float64)"),
    ("lib.tensor([1, -20, 300], dtype=lib.int32)", "tensor([  1, -20, 300], dtype=LIB.int32)"),
    ("lib.tensor([0, 255], dtype=lib.uint8)", "tensor([  0, 255], dtype=LIB.uint8)"),
    ("lib.tensor([True, False, True])", "tensor([ True, False,  True])"),
    ("lib.tensor([True, True])", "tensor([True, True])"),
    ("lib.tensor([[1, 2], [3, 4]])", "tensor([[1, 2],\n        [3, 4]])"),
    ("lib.arange(8.).reshape(2, 2, 2)",
     "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])"),
    ("lib.zeros(0)", "tensor([])"),
    ("lib.zeros(0, 3)", "tensor([], size=(0, 3))"),
    ("lib.zeros(2, 0, dtype=lib.int64)", "tensor([], size=(2, 0), dtype=LIB.int64)"),
    ("lib.zeros(0, dtype=lib.bool)", "tensor([], dtype=LIB.bool)"),
    ("lib.tensor([65504., 0.5], dtype=lib.float16)",
     "tensor([6.5504e+04, 5.0000e-01], dtype=LIB.float16)"),
    ("lib.arange(1001)", "tensor([   0,    1,    2,  ...,  998,  999, 1000])"),
    ("lib.arange(30.) / 7",
     "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
     "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
     "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
     "        3.8571, 4.0000, 4.1429])"),
    ("lib.arange(3000.).reshape(3, 1000)",
     "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02, 9.9800e+02,\n"
     "         9.9900e+02],\n"
     "        [1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
     "         1.9990e+03],\n"
     "        [2.0000e+03, 2.0010e+03, 2.0020e+03,  ..., 2.9970e+03, 2.9980e+03,\n"
     "         2.9990e+03]])"),
    ("lib.arange(24).reshape(2, 3, 4).transpose(0, 2)[1:3]",
     "tensor([[[ 1, 13],\n         [ 5, 17],\n         [ 9, 21]],\n\n"
     "        [[ 2, 14],\n         [ 6, 18],\n         [10, 22]]])"),
    ("lib.tensor([1.5, 2.], requires_grad=True)", "tensor([1.5000, 2.0000], requires_grad=True)"),
    ("lib.tensor([1.5, 2.], dtype=lib.float64, requires_grad=True) * 2",
     "tensor([3., 4.], dtype=LIB.float64, grad_fn=<MulBackward0>)"),
    ("lib.arange(25., requires_grad=True).reshape(5, 5) + 1",
     "tensor([[ 1.,  2.,  3.,  4.,  5.],\n        [ 6.,  7.,  8.,  9., 10.],\n"
     "        [11., 12., 13., 14., 15.],\n        [16., 17., 18., 19., 20.],\n"
     "        [21., 22., 23., 24., 25.]], grad_fn=<AddBackward0>)"),
    # The suffixes fit after a short last line ...
    ("lib.linspace(0, 1, 20, dtype=lib.float64, requires_grad=True)",
     "tensor([0.0000, 0.0526, 0.1053, 0.1579, 0.2105, 0.2632, 0.3158, 0.3684, 0.4211,\n"
     "        0.4737, 0.5263, 0.5789, 0.6316, 0.6842, 0.7368, 0.7895, 0.8421, 0.8947,\n"
     "        0.9474, 1.0000], dtype=LIB.float64, requires_grad=True)"),
    # ... and go to their own line, under the bracket, after a full one.
    ("lib.linspace(0, 1, 18, dtype=lib.float64, requires_grad=True) * 1",
     "tensor([0.0000, 0.0588, 0.1176, 0.1765, 0.2353, 0.2941, 0.3529, 0.4118, 0.4706,\n"
     "        0.5294, 0.5882, 0.6471, 0.7059, 0.7647, 0.8235, 0.8824, 0.9412, 1.0000],\n"
     "       dtype=LIB.float64, grad_fn=<MulBackward0>)"),
]

# (set_printoptions keywords, expression, expected repr)
EXPECTED_WITH_OPTIONS = [
    (dict(precision=2), "lib.tensor([1.23456, 2.5])", "tensor([1.23, 2.50])"),
    (dict(threshold=5), "lib.arange(10)", "tensor([0, 1, 2,  ..., 7, 8, 9])"),
    (dict(sci_mode=True), "lib.tensor([1.5, 0.])", "tensor([1.5000e+00, 0.0000e+00])"),
    # Forced scientific mode needs a nonzero finite value to take effect.
    (dict(sci_mode=True), "lib.tensor([0., 0.])", "tensor([0., 0.])"),
    (dict(sci_mode=False), "lib.tensor([1e-6, 1e9])", "tensor([         0.0000, 1000000000.0000])"),
    (dict(edgeitems=0), "lib.arange(6.)", "tensor([0., 1., 2., 3., 4., 5.], size=(6,))"),
    (dict(edgeitems=0), "lib.arange(2000.).reshape(2, 1000)", "tensor([...], size=(2, 1000))"),
    (dict(edgeitems=0), "lib.arange(2000.)", "tensor([...], size=(2000,))"),
    (dict(linewidth=30), "lib.arange(12.).reshape(2, 6) / 3",
     "tensor([[0.0000, 0.3333,\n         0.6667, 1.0000,\n         1.3333, 1.6667],\n"
     "        [2.0000, 2.3333,\n         2.6667, 3.0000,\n         3.3333, 3.6667]])"),
    (dict(profile="short"), "lib.arange(10.) / 3",
     "tensor([0.00, 0.33, 0.67, 1.00, 1.33, 1.67, 2.00, 2.33, 2.67, 3.00])"),
    (dict(profile="short"), "lib.arange(1001)", "tensor([   0,    1,  ...,  999, 1000])"),
]


def _evaluate(expression, lib):
    return eval(expression, {"lib": lib})


@pytest.mark.parametrize("expression, expected", EXPECTED, ids=[e for e, _ in EXPECTED])
def test_repr_matches_the_written_string(expression, expected):
    assert repr(_evaluate(expression, cx)) == expected.replace("LIB.", "cextend.")
    assert str(_evaluate(expression, cx)) == expected.replace("LIB.", "cextend.")


@needs_torch
@pytest.mark.parametrize("expression, expected", EXPECTED, ids=[e for e, _ in EXPECTED])
def test_written_strings_are_torchs(expression, expected):
    assert as_torch_text(repr(_evaluate(expression, torch))) == expected.replace("LIB.", "cextend.")


@pytest.mark.parametrize("options, expression, expected", EXPECTED_WITH_OPTIONS,
                         ids=["%s-%s" % (o, e) for o, e, _ in EXPECTED_WITH_OPTIONS])
def test_print_options_written(options, expression, expected):
    cx.set_printoptions(**options)
    assert repr(_evaluate(expression, cx)) == expected
    if torch is not None:
        torch.set_printoptions(**options)
        assert repr(_evaluate(expression, torch)) == expected


# -- random tensors against torch ------------------------------------------------------
SHAPES = [(), (0,), (0, 3), (3, 0, 2), (1,), (1, 1, 1), (2,), (5,), (7,), (13,), (31,), (97,),
          (4, 17), (3, 5, 7), (2, 1, 3, 5), (1001,), (3, 400), (31, 37), (11, 11, 11),
          (2, 3, 13, 13), (4, 3, 2, 50), (10, 100)]

# value kinds for floating dtypes: (name, fn(rng, shape) -> float64 array)
FLOAT_VALUES = {
    "whole": lambda rng, shape: rng.integers(-1000, 1000, shape).astype(np.float64),
    "small_whole": lambda rng, shape: rng.integers(-9, 10, shape).astype(np.float64),
    "normal": lambda rng, shape: rng.standard_normal(shape),
    "tiny": lambda rng, shape: rng.standard_normal(shape) * 1e-5,
    "huge": lambda rng, shape: rng.standard_normal(shape) * 1e8,
    "mixed": lambda rng, shape: np.exp(rng.uniform(-12, 12, shape)) * rng.choice([-1, 1], shape),
    "narrow": lambda rng, shape: rng.uniform(1.0, 999.0, shape),
    "specials": lambda rng, shape: rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.0, 1e-3], shape),
    "specials_whole": lambda rng, shape: rng.choice([0.0, -0.0, np.inf, np.nan, 3.0, -40.0], shape),
    "zeros": lambda rng, shape: np.zeros(shape),
}


def _random_array(rng, shape, dtype, kind):
    if dtype == "bool":
        return rng.random(shape) < (0.5 if kind != "all_true" else 2.0)
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if dtype in ("int32", "int64"):
        bound = {"big": 2 ** 31 - 1, "small": 10}.get(kind, 1000)
        return rng.integers(-bound, bound, shape).astype(dtype)
    with np.errstate(over="ignore"):    # float16 overflows to inf, a case in itself
        return FLOAT_VALUES[kind](rng, shape).astype(dtype)


def _kinds(dtype):
    if dtype.startswith("float"):
        return list(FLOAT_VALUES)
    if dtype == "bool":
        return ["mixed", "all_true"]
    if dtype == "uint8":
        return ["any"]
    return ["small", "thousand", "big"]


CASES = [(shape, dtype, kind) for dtype in DTYPES for kind in _kinds(dtype) for shape in SHAPES]


def _pair(array):
    return cx.from_numpy(np.array(array)), torch.from_numpy(np.array(array))


def assert_same_repr(ours, theirs):
    expected = as_torch_text(repr(theirs))
    if theirs.grad_fn is not None and theirs.grad_fn.name()[-1].isdigit():
        assert unwrapped_grad_fn(repr(ours)) == unwrapped_grad_fn(expected)
    else:
        assert repr(ours) == expected
    assert str(ours) == repr(ours)


@needs_torch
@pytest.mark.parametrize("shape, dtype, kind", CASES, ids=["%s-%s-%s" % c for c in CASES])
def test_repr_matches_torch(shape, dtype, kind):
    rng = np.random.default_rng(zlib.crc32(repr((shape, dtype, kind)).encode()))
    array = _random_array(rng, shape, dtype, kind)
    assert_same_repr(*_pair(array))


@needs_torch
@pytest.mark.parametrize("seed", range(40))
def test_repr_of_views_matches_torch(seed):
    """Transposed, strided and sliced layouts print their values, not their storage."""
    rng = np.random.default_rng(seed)
    dtype = DTYPES[seed % len(DTYPES)]
    kind = _kinds(dtype)[seed % len(_kinds(dtype))]
    shape = tuple(int(n) for n in rng.integers(1, 9, rng.integers(2, 4)))
    ours, theirs = _pair(_random_array(rng, shape, dtype, kind))
    views = [lambda t: t.transpose(0, 1), lambda t: t[..., ::2], lambda t: t[1:], lambda t: t.permute(*reversed(range(t.dim())))]
    view = views[seed % len(views)]
    assert_same_repr(view(ours), view(theirs))


@needs_torch
@pytest.mark.parametrize("length", range(1, 40))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_suffix_placement_matches_torch(length, dtype):
    """Lengths that end the last line anywhere: the suffixes fit or wrap as torch's do."""
    rng = np.random.default_rng(length)
    array = rng.standard_normal(length).astype(dtype)
    ours, theirs = _pair(array)
    assert_same_repr(ours.requires_grad_(), theirs.requires_grad_())
    assert_same_repr(ours * 3, theirs * 3)
    square = int(length ** 0.5) or 1
    ours, theirs = _pair(array[:square * square].reshape(square, square))
    assert_same_repr(ours.requires_grad_() + 1, theirs.requires_grad_() + 1)


def _scale_function(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    return Scale


@needs_torch
@pytest.mark.parametrize("length", range(1, 40, 2))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_fn_placement_matches_torch_exactly(length, dtype):
    """A custom Function's node has the same name in both: line breaks compared too."""
    array = np.random.default_rng(length).standard_normal(length).astype(dtype)
    ours, theirs = _pair(array)
    ours = _scale_function(cx).apply(ours.requires_grad_())
    theirs = _scale_function(torch).apply(theirs.requires_grad_())
    assert repr(ours) == as_torch_text(repr(theirs))


@needs_torch
@pytest.mark.parametrize("default", ["float64", "float32"])
def test_default_dtype_decides_which_dtype_is_named(default):
    rng = np.random.default_rng(3)
    cx.set_default_dtype(getattr(cx, default))
    torch.set_default_dtype(getattr(torch, default))
    try:
        for dtype in DTYPES:
            for shape in [(0,), (2, 0), (3,), ()]:
                assert_same_repr(*_pair(_random_array(rng, shape, dtype, _kinds(dtype)[0])))
    finally:
        cx.set_default_dtype(cx.float32)
        torch.set_default_dtype(torch.float32)


OPTION_SETS = [
    dict(precision=2), dict(precision=0), dict(precision=10), dict(threshold=5), dict(threshold=0),
    dict(threshold=float("inf")), dict(edgeitems=1), dict(edgeitems=0), dict(edgeitems=5),
    dict(linewidth=40), dict(linewidth=10), dict(linewidth=200), dict(profile="short"),
    dict(profile="full"), dict(sci_mode=True), dict(sci_mode=False),
    dict(profile="short", precision=6, linewidth=60), dict(threshold=20, edgeitems=2, sci_mode=True),
]


@needs_torch
@pytest.mark.parametrize("options", OPTION_SETS, ids=[str(o) for o in OPTION_SETS])
def test_print_options_match_torch(options):
    cx.set_printoptions(**options)
    torch.set_printoptions(**options)
    rng = np.random.default_rng(len(str(options)))
    for shape in [(), (1,), (7,), (30,), (3, 40), (4, 5, 6), (1001,), (2, 3, 2, 3)]:
        for dtype, kind in [("float32", "normal"), ("float64", "mixed"), ("float32", "whole"),
                            ("float16", "specials"), ("int64", "thousand"), ("bool", "mixed"),
                            ("float32", "zeros")]:
            ours, theirs = _pair(_random_array(rng, shape, dtype, kind))
            assert_same_repr(ours, theirs)
            if dtype.startswith("float"):
                assert_same_repr(ours.requires_grad_(), theirs.requires_grad_())


def test_set_printoptions_semantics():
    cx.set_printoptions(precision=2, sci_mode=True)
    assert get_printoptions() == dict(precision=2, threshold=1000, edgeitems=3, linewidth=80, sci_mode=True)
    # As in torch, leaving sci_mode out resets it to automatic; a profile
    # resets the numeric options, and the explicit ones override it.
    cx.set_printoptions(linewidth=100)
    assert get_printoptions() == dict(precision=2, threshold=1000, edgeitems=3, linewidth=100, sci_mode=None)
    cx.set_printoptions(profile="full", edgeitems=4)
    assert get_printoptions() == dict(precision=4, threshold=float("inf"), edgeitems=4, linewidth=80,
                                      sci_mode=None)
    with printoptions(precision=1):
        assert repr(cx.tensor([0.25, 1.5])) == "tensor([0.2, 1.5])"
    assert get_printoptions()["precision"] == 4
    cx.set_printoptions(profile="default")
    assert repr(cx.tensor([1.123456])) == "tensor([1.1235])"
    if torch is not None:
        import inspect
        assert inspect.signature(cx.set_printoptions) == inspect.signature(torch.set_printoptions)


def test_subclass_prints_its_name():
    class Named(cx.Tensor):
        pass
    t = Named(cx.arange(12.).reshape(3, 4) / 3)
    expected = ("Named([[0.0000, 0.3333, 0.6667, 1.0000],\n"
                "       [1.3333, 1.6667, 2.0000, 2.3333],\n"
                "       [2.6667, 3.0000, 3.3333, 3.6667]])")
    assert repr(t) == expected
    if torch is not None:
        class Named(torch.Tensor):  # noqa: F811  (torch's twin, for its repr)
            pass
        assert repr((torch.arange(12.).reshape(3, 4) / 3).as_subclass(Named)) == expected


@pytest.mark.parametrize("lib", [cx] + ([torch] if torch is not None else []), ids=lambda m: m.__name__)
def test_view_with_unrebuildable_history_still_prints(lib):
    base = lib.ones(3, requires_grad=True).clone()
    with lib.no_grad():
        view = base[:2]
        view.mul_(2)
    assert repr(view) == "tensor([2., 2.], grad_fn=<Invalid>)"


# -- huge tensors: only the shown corners are read -------------------------------------
class _Untouchable(np.ndarray):
    """An array that fails if anything reads it whole (tolist, ravel, arithmetic)."""
    def tolist(self):
        raise AssertionError("the whole tensor was listed")

    def __array_ufunc__(self, *args, **kwargs):
        raise AssertionError("the whole tensor went through a ufunc")


def test_summarised_tensor_reads_only_its_corners():
    array = np.arange(4 * 10 ** 6, dtype=np.float32).reshape(2000, 2000)
    ours = cx.tensor([0.])
    ours._data = array.view(_Untouchable)
    text = repr(ours)
    assert text.startswith("tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,")
    assert text.endswith("4.0000e+06,\n         4.0000e+06]])")
    if torch is not None:
        assert text == repr(torch.arange(4 * 10 ** 6, dtype=torch.float32).reshape(2000, 2000))


# -- device tensors (through the host-emulated runtime) --------------------------------
@pytest.fixture
def emulated_device():
    from host_device import HostRuntime
    previous = _device.use_runtime(HostRuntime())
    yield
    _device.use_runtime(previous)


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (1001,), (40, 40)])
def test_device_tensor_prints_its_host_values_and_device(emulated_device, shape):
    host = cx.from_numpy(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    on_device = host.cuda()
    body = repr(host)[:-1]
    if host.numel() > 1000:
        # Summarised: the shown corners are read one by one, never the whole buffer.
        runtime = _device.runtime()
        runtime.download = lambda *args: pytest.fail("a summarised device tensor was downloaded whole")
    text = repr(on_device)
    assert text.startswith(body)
    # The suffix follows on the last line, or on its own when that is full.
    assert text[len(body):] in (", device='cuda:0')", ",\n       device='cuda:0')")


def test_device_suffix_comes_first(emulated_device):
    t = cx.tensor([1., 2.], dtype=cx.float64).cuda().requires_grad_()
    assert repr(t) == "tensor([1., 2.], device='cuda:0', dtype=cextend.float64, requires_grad=True)"
    assert repr(cx.zeros(0, 2, dtype=cx.int64).cuda()) == (
        "tensor([], device='cuda:0', size=(0, 2), dtype=cextend.int64)")


# -- format, tolist, Size, Parameter, Module --------------------------------------------
def test_format_of_0d_tensor_uses_its_number():
    assert f"{cx.tensor(2.5):.3f}" == "2.500"
    assert f"{cx.tensor(7):>4}" == "   7"
    assert format(cx.tensor(1.), "") == "1.0"
    assert f"{cx.tensor(1.5, requires_grad=True) * 2:.1f}" == "3.0"
    assert format(cx.tensor([1., 2.]), "") == "tensor([1., 2.])"
    with pytest.raises(TypeError):
        format(cx.tensor([1., 2.]), ".2f")
    if torch is not None:
        for spec in ["", ".3f", "e", ">10", "+.2%"]:
            assert format(cx.tensor(0.1234), spec) == format(torch.tensor(0.1234), spec)
        assert format(nn.Parameter(cx.tensor(1.5)), "") == as_torch_text(
            format(torch.nn.Parameter(torch.tensor(1.5)), ""))


@needs_torch
def test_tolist_size_and_parameter_match_torch():
    rng = np.random.default_rng(5)
    for dtype in DTYPES:
        for shape in [(), (0,), (3,), (2, 0), (2, 3, 1)]:
            ours, theirs = _pair(_random_array(rng, shape, dtype, _kinds(dtype)[0]))
            assert ours.tolist() == theirs.tolist()
            assert type(ours.tolist()) is type(theirs.tolist())
    for dims in [[], [0], [3], [2, 3, 4]]:
        assert as_torch_text(repr(torch.Size(dims))) == repr(cx.Size(dims))
        assert as_torch_text(str(torch.Size(dims))) == str(cx.Size(dims))
    assert repr(cx.ones(2, 3).shape) == "cextend.Size([2, 3])"
    weights = rng.standard_normal((3, 4)).astype(np.float32)
    assert repr(nn.Parameter(cx.from_numpy(weights))) == as_torch_text(
        repr(torch.nn.Parameter(torch.from_numpy(weights))))
    assert repr(nn.Parameter(cx.ones(2), requires_grad=False)) == as_torch_text(
        repr(torch.nn.Parameter(torch.ones(2), requires_grad=False)))


def test_parameter_and_size_written():
    parameter = nn.Parameter(cx.tensor([1., 2.]))
    assert repr(parameter) == str(parameter) == (
        "Parameter containing:\ntensor([1., 2.], requires_grad=True)")
    assert str(cx.Size([2, 3])) == "cextend.Size([2, 3])"


def _model(lib):
    mods = lib.nn
    return mods.Sequential(
        mods.Linear(3, 2),
        mods.ReLU(),
        mods.Sequential(mods.Linear(2, 2, bias=False), mods.Tanh()),
        mods.Sequential(),
    )


def test_module_repr_written():
    assert repr(cx.nn.Linear(3, 2)) == "Linear(in_features=3, out_features=2, bias=True)"
    assert repr(_model(cx)) == (
        "Sequential(\n"
        "  (0): Linear(in_features=3, out_features=2, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Linear(in_features=2, out_features=2, bias=False)\n"
        "    (1): Tanh()\n"
        "  )\n"
        "  (3): Sequential()\n"
        ")")


@needs_torch
def test_module_repr_matches_torch():
    assert repr(_model(cx)) == repr(_model(torch))
    assert str(_model(cx)) == str(_model(torch))
