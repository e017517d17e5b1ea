"""Errors for bad sizes and arguments: torch's exception type, in cextend's own words.

Each case is called in cextend and, where torch 2.13 is installed, in
torch: cextend's exception must be an instance of the class torch raises
(cextend's are often two classes at once: ArgumentError is a ValueError
and a RuntimeError, OutOfMemoryError a MemoryError and a RuntimeError), and
the stated class is checked without torch too.  The message must name the
argument (or what was wrong) and carry none of numpy's or cffi's words
("array is too big", "Maximum allowed dimension exceeded", "does not fit
'32-bit int'", ...), which name neither the op nor the argument.

Sizes that could be allocated are past what any address space holds
(2**48 elements and more), so a case fails at once and never allocates.
"""
import math
import re
import warnings
from typing import List, Optional

import numpy as np
import pytest

import cextend as cx
from cextend import Tensor, ops
from cextend._errors import ArgumentError, ArgumentTypeError, OutOfMemoryError
from parity_helpers import real_torch
from rng_isolation import keep_global_rng  # noqa: F401  (a fixture: manual_seed and randn cases)

pytestmark = pytest.mark.usefixtures("keep_global_rng")

nan, inf = math.nan, math.inf
HUGE = 2 ** 48          # elements: more than a 47-bit address space holds, in any dtype

# numpy's and cffi's words: a message with any of these leaked an internal error
LEAKS = ("numpy", "cffi", "ndarray", "array is too big", "maximum allowed dimension", "maximum allowed size",
         "maximum supported dimension", "does not fit", "negative dimensions are not allowed",
         "operands could not be broadcast", "cannot reshape array", "unable to allocate", "zero-size array",
         "python int too large", "int too big to convert")


def F(lib):
    return lib.nn.functional


# name: (program(lib), torch's exception class, a regex the message must match: the argument it names)
CASES = {
    # factories: negative, unaddressable, past int64, not ints, out of memory
    "zeros(-1)": (lambda lib: lib.zeros(-1), RuntimeError, r"negative dimension \(-1\)"),
    "ones(2, -3)": (lambda lib: lib.ones(2, -3), RuntimeError, r"negative dimension \(-3\)"),
    "empty(2**32, 2**32)": (lambda lib: lib.empty(2 ** 32, 2 ** 32), RuntimeError, r"size \[4294967296, 4294967296\]"),
    "empty(2**40, 2**40, 0)": (lambda lib: lib.empty(2 ** 40, 2 ** 40, 0), RuntimeError, r"non-zero sizes"),
    "ones(2**62)": (lambda lib: lib.ones(2 ** 62), RuntimeError, r"more than memory can address"),
    "zeros(2**63)": (lambda lib: lib.zeros(2 ** 63), TypeError, r"size must be a tuple of ints within int64"),
    "zeros(2.5)": (lambda lib: lib.zeros(2.5), TypeError, r"size must be a tuple of ints"),
    "zeros(HUGE)": (lambda lib: lib.zeros(HUGE), RuntimeError, r"zeros\(\): out of memory"),
    "empty(HUGE)": (lambda lib: lib.empty(HUGE), RuntimeError, r"empty\(\): out of memory"),
    "full((HUGE,), 1.0)": (lambda lib: lib.full((HUGE,), 1.0), RuntimeError, r"full\(\): out of memory"),
    "full((-1,), 1.0)": (lambda lib: lib.full((-1,), 1.0), RuntimeError, r"negative dimension"),
    "randn(HUGE)": (lambda lib: lib.randn(HUGE), RuntimeError, r"randn\(\): out of memory"),
    "randn(-2)": (lambda lib: lib.randn(-2), RuntimeError, r"negative dimension \(-2\)"),
    "randint(0, 5, (-1,))": (lambda lib: lib.randint(0, 5, (-1,)), RuntimeError, r"negative dimension"),
    "randperm(-1)": (lambda lib: lib.randperm(-1), RuntimeError, r"\bn must be non-negative"),
    "randperm(2.5)": (lambda lib: lib.randperm(2.5), TypeError, r"argument 'n'"),
    "randperm(HUGE)": (lambda lib: lib.randperm(HUGE), RuntimeError, r"randperm\(\): out of memory"),
    "new_zeros(-1)": (lambda lib: lib.ones(1).new_zeros(-1), RuntimeError, r"negative dimension"),
    "new_empty(HUGE)": (lambda lib: lib.ones(1).new_empty(HUGE), RuntimeError, r"new_empty\(\): out of memory"),
    "Tensor(-1)": (lambda lib: lib.Tensor(-1), RuntimeError, r"negative dimension"),
    "zeros_like(expanded HUGE)": (lambda lib: lib.zeros_like(lib.zeros(1).expand(HUGE)), RuntimeError,
                                  r"out of memory"),
    "tensor([2**63])": (lambda lib: lib.tensor([2 ** 63]), ValueError, r"9223372036854775808 is outside int64"),
    "tensor(2**64)": (lambda lib: lib.tensor(2 ** 64), ValueError, r"outside int64"),
    # ranges
    "arange(0, nan)": (lambda lib: lib.arange(0, nan), RuntimeError, r"argument 'end' must be finite"),
    "arange(0, inf)": (lambda lib: lib.arange(0, inf), RuntimeError, r"argument 'end' must be finite"),
    "arange(0, 2**62)": (lambda lib: lib.arange(0, 2 ** 62), RuntimeError, r"more than memory can address"),
    "arange(0, 1e20)": (lambda lib: lib.arange(0, 1e20), RuntimeError, r"more than memory can address"),
    "arange(0, 1, 1e-20)": (lambda lib: lib.arange(0, 1, 1e-20), RuntimeError, r"step 1e-20"),
    "arange(0, 2**63)": (lambda lib: lib.arange(0, 2 ** 63), RuntimeError, r"argument 'end' must fit in int64"),
    "arange(0, 10, 0)": (lambda lib: lib.arange(0, 10, 0), RuntimeError, r"argument 'step' must be nonzero"),
    "arange('a')": (lambda lib: lib.arange("a"), TypeError, r"argument 'end'"),
    "range(0, nan)": (lambda lib: lib.range(0, nan), RuntimeError, r"argument 'end' must be finite"),
    "range(0, 10, 0)": (lambda lib: lib.range(0, 10, 0), RuntimeError, r"argument 'step'"),
    "linspace(0, 1, -1)": (lambda lib: lib.linspace(0, 1, -1), RuntimeError, r"number of steps"),
    "linspace(0, 1, 2.5)": (lambda lib: lib.linspace(0, 1, 2.5), TypeError, r"argument 'steps'"),
    "linspace(0, 1, 2**63)": (lambda lib: lib.linspace(0, 1, 2 ** 63), ValueError, r"argument 'steps'"),
    "linspace(0, 1, HUGE)": (lambda lib: lib.linspace(0, 1, HUGE), RuntimeError, r"linspace\(\): out of memory"),
    "logspace(0, 1, -1)": (lambda lib: lib.logspace(0, 1, -1), RuntimeError, r"number of steps"),
    "eye(-1)": (lambda lib: lib.eye(-1), RuntimeError, r"\bn must be non-negative, got -1"),
    "eye(3, -1)": (lambda lib: lib.eye(3, -1), RuntimeError, r"\bm must be non-negative, got -1"),
    "eye(2**40)": (lambda lib: lib.eye(2 ** 40), RuntimeError, r"more than memory can address"),
    "eye(2.5)": (lambda lib: lib.eye(2.5), TypeError, r"argument 'n'"),
    "eye(2**63)": (lambda lib: lib.eye(2 ** 63), ValueError, r"argument 'n'"),
    # views and copies with new sizes
    "view(2**63)": (lambda lib: lib.zeros(4).view(2 ** 63), TypeError, r"shape must be a tuple of ints within int64"),
    "view(2**32, 2**32, 0)": (lambda lib: lib.zeros(0).view(2 ** 32, 2 ** 32, 0), RuntimeError, r"shape \[4294967296"),
    "reshape(2**40, 2**40, 0)": (lambda lib: lib.zeros(0).reshape(2 ** 40, 2 ** 40, 0), RuntimeError,
                                 r"shape \[1099511627776"),
    "expand(-2)": (lambda lib: lib.ones(1).expand(-2), RuntimeError, r"size -2"),
    "expand(2**63)": (lambda lib: lib.ones(1).expand(2 ** 63), TypeError, r"size must be a tuple of ints within int64"),
    "expand(2**40, 2**40)": (lambda lib: lib.ones(1).expand(2 ** 40, 2 ** 40), RuntimeError,
                             r"expand\(\).*more than memory can address"),
    "broadcast_to(2**63)": (lambda lib: lib.broadcast_to(lib.ones(1), (2 ** 63,)), TypeError, r"within int64"),
    "repeat(-1)": (lambda lib: lib.ones(2).repeat(-1), RuntimeError, r"repeat\(\).*negative dimension"),
    "repeat(2**62, 2**62)": (lambda lib: lib.ones(2).repeat(2 ** 62, 2 ** 62), RuntimeError,
                             r"repeat\(\).*more than memory can address"),
    "repeat(2**63)": (lambda lib: lib.ones(2).repeat(2 ** 63), TypeError, r"repeats must be a tuple of ints"),
    "repeat(HUGE)": (lambda lib: lib.ones(2).repeat(HUGE), RuntimeError, r"repeat\(\): out of memory"),
    "tile(-1)": (lambda lib: lib.ones(2).tile(-1), RuntimeError, r"negative dimension"),
    "repeat_interleave(HUGE)": (lambda lib: lib.ones(2).repeat_interleave(HUGE), RuntimeError,
                                r"repeat_interleave\(\): out of memory"),
    "broadcast too big": (lambda lib: lib.zeros(1).expand(2 ** 40, 1) * lib.zeros(1).expand(2 ** 40), RuntimeError,
                          r"more than memory can address"),
    # single int arguments past int64: torch's ValueError
    "sum(2**63)": (lambda lib: lib.zeros(4).sum(2 ** 63), ValueError, r"argument 'dim'"),
    "narrow(0, 0, 2**63)": (lambda lib: lib.zeros(4).narrow(0, 0, 2 ** 63), ValueError, r"argument 'length'"),
    "split(2**63)": (lambda lib: lib.zeros(4).split(2 ** 63), ValueError, r"argument 'split_size'"),
    "chunk(2**63)": (lambda lib: lib.zeros(4).chunk(2 ** 63), ValueError, r"argument 'chunks'"),
    "diagonal(2**63)": (lambda lib: lib.zeros(4, 4).diagonal(2 ** 63), ValueError, r"argument 'offset'"),
    "tril(2**63)": (lambda lib: lib.zeros(4, 4).tril(2 ** 63), ValueError, r"argument 'diagonal'"),
    "triu(-2**63 - 1)": (lambda lib: lib.zeros(4, 4).triu(-2 ** 63 - 1), ValueError, r"argument 'diagonal'"),
    "roll(2**63)": (lambda lib: lib.zeros(4).roll(2 ** 63), ValueError, r"argument 'shifts'"),
    "select(0, 2**63)": (lambda lib: lib.zeros(4).select(0, 2 ** 63), ValueError, r"argument 'index'"),
    "x[2**63]": (lambda lib: lib.zeros(4)[2 ** 63], ValueError, r"argument 'index'"),
    "topk(2**63)": (lambda lib: lib.zeros(4).topk(2 ** 63), ValueError, r"argument 'k'"),
    "manual_seed(2**70)": (lambda lib: lib.manual_seed(2 ** 70), ValueError, r"seed"),
    # nn: sizes reaching C through cffi, and output sizes numpy cannot lay out
    "conv2d stride 2**63": (lambda lib: F(lib).conv2d(lib.zeros(1, 1, 4, 4), lib.zeros(1, 1, 2, 2), stride=2 ** 63),
                            ValueError, r"argument 'stride'"),
    "conv2d padding 2**40": (lambda lib: F(lib).conv2d(lib.zeros(1, 1, 4, 4), lib.zeros(1, 1, 2, 2), padding=2 ** 40),
                             RuntimeError, r"conv2d\(\).*output size"),
    "conv2d padding 2**63": (lambda lib: F(lib).conv2d(lib.zeros(1, 1, 4, 4), lib.zeros(1, 1, 2, 2), padding=2 ** 63),
                             ValueError, r"argument 'padding'"),
    "conv2d groups 2**63": (lambda lib: F(lib).conv2d(lib.zeros(1, 1, 4, 4), lib.zeros(1, 1, 2, 2), groups=2 ** 63),
                            ValueError, r"groups"),
    "conv1d padding HUGE": (lambda lib: F(lib).conv1d(lib.zeros(1, 1, 4), lib.zeros(1, 1, 2), padding=HUGE),
                            RuntimeError, r"conv2d\(\): out of memory"),
    "conv_transpose2d stride 2**40": (lambda lib: F(lib).conv_transpose2d(lib.zeros(1, 1, 4, 4), lib.zeros(1, 1, 2, 2),
                                                                        stride=2 ** 40),
                                      RuntimeError, r"conv_transpose2d\(\).*output size"),
    "max_pool2d stride 2**63": (lambda lib: F(lib).max_pool2d(lib.zeros(1, 1, 4, 4), 2, stride=2 ** 63), ValueError,
                                r"argument 'stride'"),
    "max_pool1d kernel 2**63": (lambda lib: F(lib).max_pool1d(lib.zeros(1, 1, 4), 2 ** 63), ValueError,
                                r"argument 'kernel_size'"),
    "avg_pool2d divisor 2**63": (lambda lib: F(lib).avg_pool2d(lib.zeros(1, 1, 4, 4), 2, divisor_override=2 ** 63),
                                 ValueError, r"argument 'divisor_override'"),
    "adaptive_avg_pool2d 2**40": (lambda lib: F(lib).adaptive_avg_pool2d(lib.zeros(1, 1, 4, 4), 2 ** 40), RuntimeError,
                                  r"output size"),
    "adaptive_avg_pool2d 2**63": (lambda lib: F(lib).adaptive_avg_pool2d(lib.zeros(1, 1, 4, 4), 2 ** 63), ValueError,
                                  r"argument 'output_size'"),
    "adaptive_max_pool2d 2**63": (lambda lib: F(lib).adaptive_max_pool2d(lib.zeros(1, 1, 4, 4), 2 ** 63), ValueError,
                                  r"argument 'output_size'"),
    "adaptive_avg_pool1d HUGE": (lambda lib: F(lib).adaptive_avg_pool1d(lib.zeros(1, 1, 4), HUGE), RuntimeError,
                                 r"out of memory"),
    "one_hot 2**63": (lambda lib: F(lib).one_hot(lib.tensor([1]), 2 ** 63), ValueError, r"argument 'num_classes'"),
    "one_hot HUGE": (lambda lib: F(lib).one_hot(lib.tensor([1]), HUGE), RuntimeError, r"one_hot\(\): out of memory"),
    "dropout p=nan": (lambda lib: F(lib).dropout(lib.zeros(4), nan), RuntimeError, r"dropout probability"),
    "linear bias mismatch": (lambda lib: F(lib).linear(lib.zeros(2, 3), lib.zeros(4, 3), lib.zeros(5)), RuntimeError,
                             r"bias"),
    "addmm input mismatch": (lambda lib: lib.addmm(lib.zeros(5), lib.zeros(2, 3), lib.zeros(3, 4)), RuntimeError,
                             r"input of shape \[5\]"),
    "layer_norm normalized_shape 2**63": (lambda lib: F(lib).layer_norm(lib.zeros(4), (2 ** 63,)), TypeError,
                                          r"normalized_shape"),
    "Linear(-1, 2)": (lambda lib: lib.nn.Linear(-1, 2), RuntimeError, r"negative dimension"),
    "Conv2d reflect padding": (lambda lib: lib.nn.Conv2d(1, 1, 3, padding=5, padding_mode="reflect")(
        lib.zeros(1, 1, 2, 2)), RuntimeError, r"Padding size should be less than"),
    # thread count: a C int through cffi
    "set_num_threads(0)": (lambda lib: lib.set_num_threads(0), RuntimeError, r"\bn must be >= 1"),
    "set_num_threads(2**40)": (lambda lib: lib.set_num_threads(2 ** 40), ValueError, r"\bn must be at most"),
    "set_num_threads(2**63)": (lambda lib: lib.set_num_threads(2 ** 63), ValueError, r"\bn must be at most"),
    "set_num_threads(2.5)": (lambda lib: lib.set_num_threads(2.5), RuntimeError, r"\bn must be an int"),
}


def _raised(program, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (range is deprecated, in both)
        try:
            program(lib)
        except Exception as error:      # the class and the message are what is checked
            return error
    return None


def _assert_own_words(error, pattern):
    message = str(error)
    assert re.search(pattern, message), (pattern, message)
    lowered = message.lower()
    leaked = [leak for leak in LEAKS if leak in lowered]
    assert not leaked, (leaked, message)


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_argument_raises_torchs_class_in_cextends_words(name):
    program, torch_class, pattern = CASES[name]
    ours = _raised(program, cx)
    assert ours is not None, "%s did not raise" % name
    assert isinstance(ours, torch_class), (type(ours).__mro__, torch_class)
    _assert_own_words(ours, pattern)
    if real_torch is not None:
        theirs = _raised(program, real_torch)
        assert theirs is not None, "torch accepts %s" % name
        assert type(theirs) is torch_class, (type(theirs), torch_class, str(theirs)[:200])
        assert isinstance(ours, type(theirs))


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[1] is ValueError])
def test_a_size_error_is_also_a_runtime_error(name):
    """torch raises ValueError for an int past int64 and RuntimeError for a
    bad size; ArgumentError is both, so code written for either catches it."""
    error = _raised(CASES[name][0], cx)
    assert isinstance(error, (ArgumentError, TypeError)), type(error).__mro__


def test_out_of_memory_is_a_memory_error_and_a_runtime_error():
    with pytest.raises(OutOfMemoryError) as raised:
        cx.zeros(HUGE, dtype=cx.float64)
    assert isinstance(raised.value, MemoryError) and isinstance(raised.value, RuntimeError)
    assert "2.00 PiB" in str(raised.value) and "[281474976710656]" in str(raised.value)


def test_a_huge_size_never_reaches_numpy_or_c():
    # checked before anything is allocated: each fails at once
    for call in (lambda: cx.empty(2 ** 31, 2 ** 31, 8), lambda: cx.ones(1).expand(2 ** 62, 4),
                 lambda: cx.zeros(2).repeat(2 ** 62, 2), lambda: cx.arange(0, 2 ** 62)):
        with pytest.raises(ArgumentError, match="more than memory can address"):
            call()


def test_more_dimensions_than_numpy_holds_is_cextends_error():
    """torch has no limit on the number of dimensions; numpy (and so cextend)
    holds 64, and says so in its own words."""
    for call in (lambda: cx.zeros([1] * 65), lambda: cx.zeros(1).view([1] * 65), lambda: cx.zeros(1).expand([1] * 65)):
        with pytest.raises(ArgumentError, match="65 dimensions, but a cextend tensor has at most 64"):
            call()
    assert cx.zeros([1] * 64).dim() == 64


def test_valid_edge_sizes_still_work():
    assert cx.zeros(0, 2 ** 40).shape == (0, 2 ** 40)
    assert cx.ones(1).expand(2 ** 40).shape == (2 ** 40,)
    assert cx.zeros(4, 4).tril(2 ** 62).sum().item() == 0
    assert cx.zeros(4, 4).triu(-2 ** 63).shape == (4, 4)
    assert cx.arange(-2 ** 63, 2 ** 63 - 1, 2 ** 62).tolist() == [-2 ** 63, -2 ** 62, 0, 2 ** 62]
    assert cx.tensor([2 ** 63], dtype=cx.float64).item() == 2.0 ** 63
    assert cx.ones(2).tile(2).shape == (4,) and cx.ones(2).tile((2, 2)).shape == (2, 4)
    cx.manual_seed(-1)
    assert cx.initial_seed() == 2 ** 64 - 1


# -- the kernel layer (numpy arrays): a bad shape is a ValueError and a RuntimeError --------------

OPS_CASES = {
    "linear K mismatch": (lambda: ops.linear_forward(np.ones((2, 3)), np.ones((4, 5))), r"^w must have shape \(M, K\)"),
    "linear bias length": (lambda: ops.linear_forward(np.ones((2, 3)), np.ones((4, 3)), np.ones(5)), r"^b must have"),
    "linear 1-D weight": (lambda: ops.linear_forward(np.ones((2, 3)), np.ones(3)), r"^w must be 2-D"),
    "linear_backward grad_out": (lambda: ops.linear_backward(np.ones((2, 5)), np.ones((2, 3)), np.ones((4, 3))),
                                 r"^grad_out must have shape"),
    "add shapes": (lambda: ops.add_forward(np.ones(3), np.ones(4)), r"^a and b must have the same shape"),
    "global_max_pool x_shape negative": (lambda: ops.global_max_pool_backward(np.ones(1), np.zeros(1, np.int64),
                                                                              (1, -2, 2)), r"^x_shape"),
    "global_max_pool x_shape huge": (lambda: ops.global_max_pool_backward(np.ones(1), np.zeros(1, np.int64),
                                                                          (1, 2 ** 40, 2 ** 40)), r"x_shape"),
    "max_pool2d_backward x_shape": (lambda: ops.max_pool2d_backward(np.ones((1, 1, 1, 1)), np.zeros((1, 1, 1, 1), np.int64),
                                                                    (1, 1, -4, 4)), r"^x_shape"),
    "conv2d padding 2**40": (lambda: ops.conv2d_forward(np.ones((1, 1, 4, 4)), np.ones((1, 1, 2, 2)), padding=2 ** 40),
                             r"conv2d\(\).*output size"),
    "conv2d stride 2**63": (lambda: ops.conv2d_forward(np.ones((1, 1, 4, 4)), np.ones((1, 1, 2, 2)), stride=2 ** 63),
                            r"argument 'stride'"),
}


@pytest.mark.parametrize("name", list(OPS_CASES))
def test_kernel_layer_shape_errors_are_value_and_runtime_errors(name):
    call, pattern = OPS_CASES[name]
    with pytest.raises(RuntimeError) as raised:
        call()
    assert isinstance(raised.value, ValueError)
    _assert_own_words(raised.value, pattern)


def test_kernel_layer_type_errors_stay_type_errors():
    with pytest.raises(TypeError, match="^x must be a numpy.ndarray"):
        ops.linear_forward([[1.0]], np.ones((1, 1)))
    with pytest.raises(TypeError, match="x_shape must be a tuple of ints"):
        ops.global_max_pool_backward(np.ones(1), np.zeros(1, np.int64), (1, 2.5, 2))


# -- custom_op: each argument against its schema type, as torch's dispatcher --------------------------

def _make_op(lib, T, name):
    @lib.library.custom_op("test_errors::" + name, mutates_args=())
    def op(x: T, alpha: float, n: int, flag: bool, label: str, w: Optional[T], ts: List[T], sizes: List[int],
           scale: Optional[float], counts: Optional[List[int]]) -> T:
        return x * alpha
    return op


_OPS = {}


def _op(lib):
    if lib not in _OPS:
        _OPS[lib] = _make_op(lib, Tensor if lib is cx else lib.Tensor, "every_type")
    return _OPS[lib]


def _good(lib):
    x = lib.ones(2)
    return dict(x=x, alpha=2.0, n=1, flag=True, label="a", w=None, ts=[x], sizes=[1, 2], scale=None, counts=None)


# argument: (value, its schema type as the message names it)
BAD_ARGUMENTS = {
    "x float": ("x", lambda lib: 1.0, "Tensor"),
    "x list": ("x", lambda lib: [lib.ones(2)], "Tensor"),
    "x ndarray": ("x", lambda lib: np.ones(2), "Tensor"),
    "alpha str": ("alpha", lambda lib: "2.0", "float"),
    "alpha None": ("alpha", lambda lib: None, "float"),
    "alpha complex": ("alpha", lambda lib: 1 + 2j, "float"),
    "alpha 2-element tensor": ("alpha", lambda lib: lib.ones(2), "float"),
    "n float": ("n", lambda lib: 1.5, "SymInt"),
    "n str": ("n", lambda lib: "1", "SymInt"),
    "n 2**63": ("n", lambda lib: 2 ** 63, "SymInt"),
    "flag str": ("flag", lambda lib: "yes", "bool"),
    "flag list": ("flag", lambda lib: [True], "bool"),
    "label int": ("label", lambda lib: 1, "str"),
    "label None": ("label", lambda lib: None, "str"),
    "w float": ("w", lambda lib: 1.0, "Tensor?"),
    "ts a tensor": ("ts", lambda lib: lib.ones(2), "Tensor[]"),
    "ts holding a float": ("ts", lambda lib: [1.0], "Tensor[]"),
    "ts holding None": ("ts", lambda lib: [lib.ones(2), None], "Tensor[]"),
    "sizes an int": ("sizes", lambda lib: 3, "SymInt[]"),
    "sizes holding a float": ("sizes", lambda lib: [1.5], "SymInt[]"),
    "scale str": ("scale", lambda lib: "s", "float?"),
    "counts holding a float": ("counts", lambda lib: [1.5], "SymInt[]?"),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_custom_op_checks_each_argument_against_its_schema(case):
    name, make, schema_type = BAD_ARGUMENTS[case]
    args = _good(cx)
    args[name] = make(cx)
    with pytest.raises(RuntimeError) as raised:
        _op(cx)(**args)
    error = raised.value
    assert isinstance(error, ArgumentTypeError if case != "n 2**63" else ArgumentError)
    message = str(error)
    assert message.startswith("test_errors::every_type(): argument '%s' (position " % name), message
    assert "(schema type '%s')" % schema_type in message, message
    # (the value shown is the caller's: "but got ndarray array([1., 1.])" is no leak)
    _assert_own_words(re.sub(r"but got .*?; schema:", "; schema:", message), re.escape(name))
    if real_torch is not None:
        args = _good(real_torch)
        args[name] = make(real_torch)
        theirs = _raised(lambda lib: _op(lib)(**args), real_torch)
        assert theirs is not None
        assert isinstance(error, type(theirs)), (type(theirs), str(theirs)[:200])


def test_custom_op_takes_what_torchs_dispatcher_converts():
    op = _op(cx)
    x = cx.ones(2)
    accepted = [dict(alpha=2), dict(alpha=True), dict(alpha=np.float32(2)), dict(alpha=cx.tensor(2.0)),
                dict(n=np.int64(3)), dict(n=True), dict(n=cx.tensor(3)), dict(flag=1), dict(w=x),
                dict(ts=(x, x)), dict(ts=[]), dict(sizes=(1, 2)), dict(sizes=[]), dict(scale=1),
                dict(counts=[1, 2]), dict(n=-2 ** 63)]
    for change in accepted:
        args = _good(cx)
        args.update(change)
        op(**args)
        if real_torch is not None:
            theirs = _good(real_torch)
            theirs.update({k: _in_torch(k, v) for k, v in change.items()})
            _op(real_torch)(**theirs)


def _in_torch(name, value):
    if name == "ts":
        return [real_torch.ones(2)] * len(value)
    if name == "w":
        return real_torch.ones(2)
    return real_torch.tensor(value.item()) if isinstance(value, Tensor) else value


def test_custom_op_checks_keyword_only_arguments_and_fake_calls():
    @cx.library.custom_op("test_errors::keyword_only", mutates_args=())
    def scaled(x: Tensor, *, factor: float = 1.0) -> Tensor:
        return x * factor
    scaled.register_fake(lambda x, *, factor=1.0: cx.empty_like(x))
    assert scaled(cx.ones(2), factor=3).tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match=r"argument 'factor' \(position 1\) must be a float"):
        scaled(cx.ones(2), factor="3")
    with pytest.raises(TypeError, match=r"argument 'x' \(position 0\) must be a Tensor"):
        scaled._run_fake([1.0])


def test_custom_op_with_an_explicit_schema_checks_its_types():
    op = cx.library.custom_op("test_errors::explicit", lambda x, k: x * k, mutates_args=(),
                              schema="(Tensor x, SymInt k) -> Tensor")
    assert op(cx.ones(1), 2).item() == 2
    with pytest.raises(RuntimeError, match=r"argument 'k' \(position 1\) must be an int \(schema type 'SymInt'\)"):
        op(cx.ones(1), 2.5)
