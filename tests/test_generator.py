"""cextend.Generator, the global generator's state API, and the samplers'
generator= argument.

References: numpy's default_rng(seed) for the global stream (cextend's
values under manual_seed are pinned to it), torch 2.13 for bounds, argument
checks and exception types, and the distributions' moments for the values
(fixed seeds; bounds of about 5 standard errors).
"""
import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend.nn import init
from cextend.utils.data import DataLoader, RandomSampler, SubsetRandomSampler, random_split
from rng_isolation import keep_global_rng

pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out

TORCH_DEFAULT_SEED = 67280421310721
SHAPES = [(0,), (1,), (3, 0, 2), (7,), (3, 5), (2, 3, 5)]


def state_bytes(state):
    return state.numpy().tobytes()


def raised(fn):
    """The exception fn raises, or None."""
    try:
        fn()
    except Exception as error:      # noqa: BLE001  (every kind is compared)
        return error
    return None


def same_outcome_as_torch(torch, case):
    """case(lib) in cextend and in torch: both succeed, or cextend raises an
    instance of torch's exception class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, ours = raised(lambda: case(torch)), raised(lambda: case(cx))
    if theirs is None:
        assert ours is None, "torch succeeds, cextend raised %r" % ours
    else:
        assert isinstance(ours, type(theirs)), "torch raised %r, cextend %r" % (theirs, ours)


# -- the Generator object -------------------------------------------------

def test_a_new_generator_starts_at_torchs_default_seed_on_the_cpu():
    g = cx.Generator()
    assert g.initial_seed() == TORCH_DEFAULT_SEED
    assert g.device == cx.device("cpu") and cx.Generator(device="cpu").device.type == "cpu"
    assert cx.Generator(cx.device("cpu")).initial_seed() == TORCH_DEFAULT_SEED
    # a fresh generator and a fresh global stream are the same stream, as in torch
    np.testing.assert_array_equal(cx.rand(5, generator=g).numpy(),
                                  np.random.default_rng(TORCH_DEFAULT_SEED).random(5).astype(np.float32))


def test_manual_seed_returns_the_generator_and_repeats_its_stream():
    g = cx.Generator()
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    a = cx.randn(4, 3, generator=g)
    g.manual_seed(3)
    np.testing.assert_array_equal(cx.randn(4, 3, generator=g).numpy(), a.numpy())
    assert not np.array_equal(cx.randn(4, 3, generator=g).numpy(), a.numpy())


def test_seeds_wrap_and_are_checked_as_torchs():
    torch = pytest.importorskip("torch")
    for seed in (0, 1, -1, -2 ** 63, 2 ** 64 - 1, 2 ** 63):
        assert cx.Generator().manual_seed(seed).initial_seed() == torch.Generator().manual_seed(seed).initial_seed()
        assert cx.manual_seed(seed).initial_seed() == torch.manual_seed(seed).initial_seed()
    for seed in (2 ** 64, -2 ** 63 - 1, 1.5, "3", None):
        same_outcome_as_torch(torch, lambda L: L.Generator().manual_seed(seed))
    with pytest.raises(TypeError, match="seed"):
        cx.Generator().manual_seed(1.5)
    with pytest.raises(ValueError, match=r"\[-2\*\*63, 2\*\*64\)"):
        cx.Generator().manual_seed(2 ** 64)
    # torch.manual_seed (the function) takes int(seed), as its Python code does
    assert cx.manual_seed(1.7).initial_seed() == torch.manual_seed(1.7).initial_seed() == 1


def test_generators_are_independent_streams():
    g1, g2 = cx.Generator().manual_seed(5), cx.Generator().manual_seed(5)
    alone = [cx.rand(6, generator=g1).numpy() for _ in range(3)]
    g1.manual_seed(5)
    interleaved = []
    for _ in range(3):
        cx.randn(9, generator=g2)            # draws from another generator do not move g1
        cx.rand(4)                           # nor do draws from the global one
        interleaved.append(cx.rand(6, generator=g1).numpy())
    for a, b in zip(alone, interleaved):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(cx.rand(6, generator=cx.Generator().manual_seed(6)).numpy(), alone[0])


def test_seed_draws_a_fresh_seed_and_reports_it():
    g = cx.Generator()
    s = g.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 64 and g.initial_seed() == s
    a = cx.rand(3, generator=g).numpy()
    np.testing.assert_array_equal(cx.rand(3, generator=cx.Generator().manual_seed(s)).numpy(), a)
    assert g.seed() != s                     # 64 bits of entropy: equal with probability 2**-64
    t = cx.seed()
    assert cx.initial_seed() == t == cx.default_generator.initial_seed() and 0 <= t < 2 ** 64


def test_a_device_generator_is_refused_naming_the_device():
    with pytest.raises(RuntimeError, match="cuda"):
        cx.Generator("cuda")
    with pytest.raises(RuntimeError, match="cuda:1"):
        cx.Generator(device="cuda:1")
    with pytest.raises(RuntimeError):
        cx.Generator("tpu")


# -- state ----------------------------------------------------------------

def test_get_state_round_trips_exactly_and_carries_the_seed():
    torch = pytest.importorskip("torch")
    g = cx.Generator().manual_seed(7)
    cx.rand(5, generator=g)
    state = g.get_state()
    assert state.dtype == cx.uint8 and state.dim() == 1 and not state.requires_grad
    ahead = cx.randn(11, generator=g).numpy()
    g.manual_seed(9)
    assert g.set_state(state) is g
    assert g.initial_seed() == 7 == torch.Generator().manual_seed(7).initial_seed()
    np.testing.assert_array_equal(cx.randn(11, generator=g).numpy(), ahead)
    assert state_bytes(g.get_state()) != state_bytes(state)
    # the state moves between generators, and get_state hands out a copy
    other = cx.Generator().set_state(state)
    np.testing.assert_array_equal(cx.randn(11, generator=other).numpy(), ahead)
    state.zero_()
    np.testing.assert_array_equal(cx.randn(3, generator=cx.Generator().manual_seed(4)).numpy(),
                                  cx.randn(3, generator=cx.Generator().manual_seed(4)).numpy())


def test_a_state_with_a_buffered_half_draw_round_trips():
    # numpy keeps the second half of a 64-bit draw for the next 32-bit one:
    # that half is part of the state, or a restored stream would skip it.
    from cextend._random import numpy_rng
    g = cx.Generator().manual_seed(1)
    numpy_rng(g, "test").random(1, dtype=np.float32)
    state = g.get_state()
    expected = numpy_rng(g, "test").random(3, dtype=np.float32)
    restored = cx.Generator().set_state(state)
    np.testing.assert_array_equal(numpy_rng(restored, "test").random(3, dtype=np.float32), expected)
    assert state_bytes(cx.Generator().set_state(state).get_state()) == state_bytes(state)


def test_a_malformed_state_raises_a_clear_error():
    g = cx.Generator()
    good = g.get_state()
    with pytest.raises(TypeError, match="uint8 Tensor"):
        g.set_state([1, 2, 3])
    with pytest.raises(TypeError, match="uint8 Tensor"):
        g.set_state(good.float())
    with pytest.raises(RuntimeError, match="expected a state of %d bytes" % good.numel()):
        g.set_state(good[:-1])
    with pytest.raises(RuntimeError, match="expected a state of"):
        g.set_state(cx.zeros(5056, dtype=cx.uint8))          # torch's layout is not ours
    bad = good.clone()
    bad[0] = 0
    with pytest.raises(RuntimeError, match="not a cextend generator state"):
        g.set_state(bad)
    even_increment = good.clone()
    even_increment[28] = int(even_increment[28]) & 0xFE     # the increment's low byte (magic 4, seed 8, state 16)
    with pytest.raises(RuntimeError, match="corrupted"):
        g.set_state(even_increment)
    # a failed set_state leaves the generator as it was
    assert state_bytes(g.get_state()) == state_bytes(good)


def test_pickle_and_deepcopy_keep_the_stream_position():
    g = cx.Generator().manual_seed(12)
    cx.rand(3, generator=g)
    for twin in (copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        assert twin is not g and twin.initial_seed() == 12
        np.testing.assert_array_equal(cx.rand(4, generator=twin).numpy(), cx.rand(4, generator=copy.deepcopy(g)).numpy())
    twin = copy.deepcopy(g)
    np.testing.assert_array_equal(cx.rand(4, generator=twin).numpy(), cx.rand(4, generator=g).numpy())


# -- the global generator -------------------------------------------------

def test_manual_seed_returns_the_default_generator():
    assert cx.manual_seed(4) is cx.default_generator is cx.random.default_generator
    assert cx.initial_seed() == cx.random.initial_seed() == cx.default_generator.initial_seed() == 4
    a = cx.rand(3).numpy()
    cx.default_generator.manual_seed(4)
    np.testing.assert_array_equal(cx.rand(3).numpy(), a)
    # generator=default_generator continues the global stream
    np.testing.assert_array_equal(cx.rand(3, generator=cx.default_generator).numpy(),
                                  np.random.default_rng(4).random(6)[3:].astype(np.float32))


def test_the_global_stream_under_manual_seed_is_numpys_default_rng():
    # cextend's values under manual_seed(s) are pinned: the calls below draw
    # exactly what they drew before Generator existed (existing tests and
    # users' saved results depend on them).
    cx.manual_seed(5)
    ref = np.random.default_rng(5)
    np.testing.assert_array_equal(cx.rand(3, 4).numpy(), ref.random((3, 4)).astype(np.float32))
    np.testing.assert_array_equal(cx.randn(5, dtype=cx.float64).numpy(), ref.standard_normal(5))
    np.testing.assert_array_equal(cx.randint(0, 10, (6,)).numpy(), ref.integers(0, 10, (6,)))
    np.testing.assert_array_equal(cx.randperm(7).numpy(), ref.permutation(7))
    np.testing.assert_array_equal(cx.empty(4).uniform_(-1, 2).numpy(), ref.uniform(-1, 2, (4,)).astype(np.float32))
    np.testing.assert_array_equal(cx.empty(4).normal_(1, 3).numpy(), ref.normal(1, 3, (4,)).astype(np.float32))
    np.testing.assert_array_equal(cx.normal(0.5, 2.0, (3,)).numpy(), ref.normal(0.5, 2.0, (3,)).astype(np.float32))
    # and a Generator with the same seed gives the same stream
    g = cx.Generator().manual_seed(5)
    np.testing.assert_array_equal(cx.rand(3, 4, generator=g).numpy(),
                                  np.random.default_rng(5).random((3, 4)).astype(np.float32))


def test_get_and_set_rng_state_and_the_random_module():
    cx.manual_seed(21)
    state = cx.get_rng_state()
    assert state_bytes(state) == state_bytes(cx.random.get_rng_state()) == state_bytes(cx.default_generator.get_state())
    a = cx.randn(6).numpy()
    cx.manual_seed(99)
    cx.set_rng_state(state)
    assert cx.initial_seed() == 21
    np.testing.assert_array_equal(cx.randn(6).numpy(), a)
    cx.random.set_rng_state(state)
    np.testing.assert_array_equal(cx.randn(6).numpy(), a)
    assert cx.random.manual_seed(8) is cx.default_generator and cx.initial_seed() == 8
    s = cx.random.seed()
    assert cx.random.initial_seed() == s


def test_fork_rng_puts_the_global_state_back():
    cx.manual_seed(3)
    before = state_bytes(cx.get_rng_state())
    with cx.random.fork_rng():
        cx.rand(10)
        cx.manual_seed(77)
        cx.randn(4)
    assert state_bytes(cx.get_rng_state()) == before and cx.initial_seed() == 3
    with pytest.raises(KeyError):
        with cx.random.fork_rng(devices=[]):
            cx.rand(2)
            raise KeyError("inside")
    assert state_bytes(cx.get_rng_state()) == before           # restored on an exception too

    @cx.random.fork_rng()
    def draws():
        return cx.rand(2)
    draws()
    assert state_bytes(cx.get_rng_state()) == before
    with cx.random.fork_rng(enabled=False):
        cx.rand(1)
    assert state_bytes(cx.get_rng_state()) != before
    with pytest.raises(RuntimeError, match="devices"):
        with cx.random.fork_rng(devices=[0]):
            pass


# -- generator= everywhere torch takes it ---------------------------------

def _factory_and_sampler_calls():
    """(name, call(generator)) for every cextend API torch gives generator=."""
    p2 = cx.tensor([[0.1, 0.5, 0.4], [1.0, 0.0, 3.0]])
    return [
        ("rand", lambda g: cx.rand(2, 3, generator=g)),
        ("randn", lambda g: cx.randn(4, generator=g)),
        ("randint", lambda g: cx.randint(-3, 9, (5,), generator=g)),
        ("randperm", lambda g: cx.randperm(9, generator=g)),
        ("normal scalars", lambda g: cx.normal(1.0, 2.0, (4,), generator=g)),
        ("normal tensors", lambda g: cx.normal(cx.zeros(3), cx.ones(3), generator=g)),
        ("rand_like", lambda g: cx.rand_like(cx.zeros(2, 2), generator=g)),
        ("randn_like", lambda g: cx.randn_like(cx.zeros(3), generator=g)),
        ("randint_like", lambda g: cx.randint_like(cx.zeros(3), 5, generator=g)),
        ("bernoulli", lambda g: cx.bernoulli(cx.full((6,), 0.5), generator=g)),
        ("bernoulli p", lambda g: cx.bernoulli(cx.zeros(6), 0.5, generator=g)),
        ("Tensor.bernoulli", lambda g: cx.full((6,), 0.5).bernoulli(generator=g)),
        ("multinomial", lambda g: cx.multinomial(p2, 2, generator=g)),
        ("multinomial replacement", lambda g: p2.multinomial(5, True, generator=g)),
        ("poisson", lambda g: cx.poisson(cx.full((5,), 3.0), g)),
        ("uniform_", lambda g: cx.empty(5).uniform_(generator=g)),
        ("normal_", lambda g: cx.empty(5).normal_(generator=g)),
        ("random_", lambda g: cx.empty(5).random_(generator=g)),
        ("bernoulli_", lambda g: cx.empty(5).bernoulli_(0.3, generator=g)),
        ("exponential_", lambda g: cx.empty(5).exponential_(generator=g)),
        ("geometric_", lambda g: cx.empty(5).geometric_(0.3, generator=g)),
        ("cauchy_", lambda g: cx.empty(5).cauchy_(generator=g)),
        ("log_normal_", lambda g: cx.empty(5).log_normal_(generator=g)),
        ("init.uniform_", lambda g: init.uniform_(cx.empty(3, 4), generator=g)),
        ("init.normal_", lambda g: init.normal_(cx.empty(3, 4), generator=g)),
        ("init.trunc_normal_", lambda g: init.trunc_normal_(cx.empty(3, 4), generator=g)),
        ("init.xavier_uniform_", lambda g: init.xavier_uniform_(cx.empty(3, 4), generator=g)),
        ("init.xavier_normal_", lambda g: init.xavier_normal_(cx.empty(3, 4), generator=g)),
        ("init.kaiming_uniform_", lambda g: init.kaiming_uniform_(cx.empty(3, 4), generator=g)),
        ("init.kaiming_normal_", lambda g: init.kaiming_normal_(cx.empty(3, 4), generator=g)),
        ("init.orthogonal_", lambda g: init.orthogonal_(cx.empty(3, 4), generator=g)),
        ("init.sparse_", lambda g: init.sparse_(cx.empty(5, 4), 0.4, generator=g)),
        ("random_split", lambda g: [s.indices for s in random_split(range(10), [3, 7], generator=g)]),
        ("RandomSampler", lambda g: list(RandomSampler(range(8), generator=g))),
        ("RandomSampler replacement", lambda g: list(RandomSampler(range(8), True, 12, generator=g))),
        ("SubsetRandomSampler", lambda g: list(SubsetRandomSampler([2, 4, 6, 8], generator=g))),
        ("DataLoader", lambda g: [b.tolist() for b in DataLoader(cx.arange(9), batch_size=4, shuffle=True,
                                                                    generator=g)]),
    ]


def _values(result):
    return result.numpy().tolist() if isinstance(result, cx.Tensor) else result


@pytest.mark.parametrize("name,call", _factory_and_sampler_calls(), ids=lambda v: v if isinstance(v, str) else "")
def test_generator_argument_repeats_and_leaves_the_global_stream_alone(name, call):
    cx.manual_seed(0)
    global_state = state_bytes(cx.get_rng_state())
    first = _values(call(cx.Generator().manual_seed(11)))
    assert state_bytes(cx.get_rng_state()) == global_state, "%s advanced the global stream" % name
    assert _values(call(cx.Generator().manual_seed(11))) == first
    # the generator advances: the next call continues its stream
    g = cx.Generator().manual_seed(11)
    call(g)
    assert state_bytes(g.get_state()) != state_bytes(cx.Generator().manual_seed(11).get_state())
    # the older spelling, a numpy Generator, still works
    np_first = _values(call(np.random.default_rng(11)))
    assert np_first == _values(call(np.random.default_rng(11)))
    # and without a generator the global stream moves
    call(None)
    assert state_bytes(cx.get_rng_state()) != global_state


@pytest.mark.parametrize("name,call", [c for c in _factory_and_sampler_calls() if not c[0][0].isupper()
                                       and c[0] != "random_split"], ids=lambda v: v if isinstance(v, str) else "")
def test_a_wrong_generator_is_a_type_error(name, call):
    with pytest.raises(TypeError, match="generator"):
        call(3)
    with pytest.raises(TypeError, match="generator"):
        call("seed")


def test_a_wrong_generator_is_a_type_error_in_torch_too():
    torch = pytest.importorskip("torch")
    for case in (lambda L: L.rand(3, generator=3), lambda L: L.empty(3).random_(generator=3),
                 lambda L: L.empty(3).uniform_(generator="g"), lambda L: L.randperm(3, generator=1.5),
                 lambda L: L.bernoulli(L.zeros(3), generator=3)):
        same_outcome_as_torch(torch, case)
        assert isinstance(raised(lambda: case(cx)), TypeError)


def test_data_samplers_draw_each_epoch_from_the_generator():
    g = cx.Generator().manual_seed(4)
    sampler = RandomSampler(range(20), generator=g)
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == list(range(20)) and first != second
    g.manual_seed(4)                           # reseeding the generator repeats the epochs
    assert list(sampler) == first and list(sampler) == second
    loader = DataLoader(cx.arange(20), batch_size=20, shuffle=True, generator=g.manual_seed(4))
    assert [b.tolist() for b in loader] == [first]


def test_random_split_with_torchs_generator_idiom():
    a = [s.indices for s in random_split(range(30), [0.5, 0.5], generator=cx.Generator().manual_seed(42))]
    b = [s.indices for s in random_split(range(30), [0.5, 0.5], generator=cx.Generator().manual_seed(42))]
    assert a == b and sorted(a[0] + a[1]) == list(range(30)) and len(a[0]) == 15


# -- random_ ---------------------------------------------------------------

RANDOM_DTYPES = ["float16", "float32", "float64", "uint8", "int32", "int64", "bool"]
FULL_RANGE = {"float16": (0, 2 ** 11), "float32": (0, 2 ** 24), "float64": (0, 2 ** 53), "uint8": (0, 255),
              "int32": (0, 2 ** 31 - 1), "int64": (0, 2 ** 63 - 1), "bool": (0, 1)}


@pytest.mark.parametrize("dtype", RANDOM_DTYPES)
def test_random_without_bounds_covers_the_dtypes_integers(dtype):
    low, high = FULL_RANGE[dtype]
    t = cx.empty(20000, dtype=getattr(cx, dtype)).random_(generator=cx.Generator().manual_seed(1))
    values = t.numpy().astype(np.float64) if dtype != "int64" else t.numpy()
    assert values.min() >= low and values.max() <= high
    assert np.all(values == np.round(values))
    # uniform over [low, high]: the sample spans nearly all of it
    span = high - low
    assert values.min() <= low + span * 0.01 and values.max() >= high - span * 0.01
    if dtype in ("uint8", "bool"):
        assert set(np.unique(values)) == set(range(low, high + 1))


def test_random_bounds_match_torchs():
    torch = pytest.importorskip("torch")
    for dtype in RANDOM_DTYPES:
        for args in [(), (10,), (3, 10), (-5, None), (0, 2), (1,), (-3, 4)]:
            def case(L):
                return L.empty(4000, dtype=getattr(L, dtype)).random_(*args)
            same_outcome_as_torch(torch, case)
            if raised(lambda: case(torch)) is None:
                theirs, ours = case(torch).double().numpy(), case(cx).double().numpy()
                if args and args[-1] is not None and (len(args) == 2 or args[0] <= 16):
                    # a small range: both hit every value in it
                    np.testing.assert_array_equal(np.unique(ours), np.unique(theirs))
                else:
                    assert ours.min() >= min(theirs.min(), 0 if not args else args[0])
                    assert ours.max() <= FULL_RANGE[dtype][1]


@pytest.mark.parametrize("case", [
    lambda L: L.empty(3).random_(5, 5), lambda L: L.empty(3).random_(6, 5),
    lambda L: L.empty(3, dtype=L.uint8).random_(0, 300), lambda L: L.empty(3, dtype=L.uint8).random_(-1, 3),
    lambda L: L.empty(3, dtype=L.uint8).random_(0, 256), lambda L: L.empty(3, dtype=L.uint8).random_(-5),
    lambda L: L.empty(3, dtype=L.uint8).random_(-5, None), lambda L: L.empty(3, dtype=L.int32).random_(-2 ** 40, 3),
    lambda L: L.empty(3, dtype=L.int32).random_(0, 2 ** 40), lambda L: L.empty(3, dtype=L.int32).random_(2 ** 40, None),
    lambda L: L.empty(3, dtype=L.int64).random_(-2 ** 63, None), lambda L: L.empty(3, dtype=L.int64).random_(0, 2 ** 63),
    lambda L: L.empty(3, dtype=L.int64).random_(2 ** 62, None), lambda L: L.empty(3, dtype=L.float16).random_(0, 70000),
    lambda L: L.empty(3, dtype=L.float16).random_(-2 ** 40, 3), lambda L: L.empty(3, dtype=L.float16).random_(2 ** 40, None),
    lambda L: L.empty(3).random_(2 ** 24, None), lambda L: L.empty(3).random_(2 ** 24 - 1, None),
    lambda L: L.empty(3, dtype=L.float64).random_(2 ** 40, None), lambda L: L.empty(3, dtype=L.bool).random_(0, 3),
    lambda L: L.empty(3, dtype=L.uint8).random_(255, None), lambda L: L.empty(3, dtype=L.uint8).random_(256, None),
    lambda L: L.empty(3, dtype=L.float16).random_(2 ** 11, None), lambda L: L.empty(3, dtype=L.float16).random_(2047, None),
    lambda L: L.empty(3).random_(-2 ** 63, None), lambda L: L.empty(3, dtype=L.float16).random_(-2 ** 63, None),
    lambda L: L.empty(3, dtype=L.int32).random_(-2 ** 63, None), lambda L: L.empty(3, dtype=L.bool).random_(-2 ** 63, None),
    lambda L: L.empty(3, dtype=L.int32).random_(-2 ** 63 + 1, None), lambda L: L.empty(3, dtype=L.int32).random_(2 ** 31 - 1, None),
    lambda L: L.empty(3, dtype=L.bool).random_(0, 2), lambda L: L.empty(3, dtype=L.bool).random_(-1, 2),
    lambda L: L.empty(3, dtype=L.bool).random_(1, None), lambda L: L.empty(3).random_(2.5),
    lambda L: L.empty(3).random_(True), lambda L: L.empty(3).random_(None), lambda L: L.empty(3).random_(3, None),
    lambda L: L.empty(3).random_(L.tensor(4)), lambda L: L.empty(3).random_(1, 2, 3),
    lambda L: L.empty(3).random_(to=5), lambda L: L.empty(3).random_(**{"from": 3}),
    lambda L: L.empty(3).random_(**{"from": 3, "to": 5}), lambda L: L.empty(3).random_(frm=3),
    lambda L: L.empty(0).random_(), lambda L: L.empty(3, requires_grad=True).random_(),
], ids=lambda case: "")
def test_random_checks_its_arguments_as_torch(case):
    same_outcome_as_torch(pytest.importorskip("torch"), case)


def test_random_error_messages_name_the_problem():
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to', but got from=5 >= to=5"):
        cx.empty(3).random_(5, 5)
    with pytest.raises(RuntimeError, match="from is out of bounds for uint8"):
        cx.empty(3, dtype=cx.uint8).random_(-1, 3)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        cx.empty(3, dtype=cx.bool).random_(3)
    with pytest.raises(TypeError, match="'to' must be int, not float"):
        cx.empty(3).random_(2.5)
    with pytest.raises(ValueError, match="int64"):
        cx.empty(3, dtype=cx.int64).random_(0, 2 ** 63)


def test_random_warns_where_a_float_dtype_loses_integers_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, cx):
        with pytest.warns(UserWarning, match="out of bounds"):
            lib.empty(3).random_(0, 2 ** 24 + 2)
        with pytest.warns(UserWarning, match="out of bounds"):
            lib.empty(3, dtype=lib.float16).random_(-2 ** 11 - 1, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.empty(3).random_(-2 ** 24, 2 ** 24 + 1)


def test_random_ranges_reach_int64s_extremes():
    g = cx.Generator().manual_seed(2)
    t = cx.empty(4000, dtype=cx.int64).random_(-2 ** 63, None, generator=g).numpy()
    assert (t < -2 ** 62).any() and (t > 2 ** 62).any()
    t = cx.empty(50, dtype=cx.int64).random_(2 ** 63 - 2, None, generator=g).numpy()
    assert set(t.tolist()) == {2 ** 63 - 2, 2 ** 63 - 1}
    t = cx.empty(50, dtype=cx.uint8).random_(255, None, generator=g).numpy()
    assert set(t.tolist()) == {255}


# -- the in-place samplers ------------------------------------------------

SAMPLERS = {
    "uniform_": ((-2.0, 3.0), lambda v: np.all((v >= -2) & (v <= 3))),
    "normal_": ((1.0, 2.0), lambda v: np.all(np.isfinite(v))),
    "random_": ((2, 9), lambda v: np.all((v >= 2) & (v < 9) & (v == np.round(v)))),
    "bernoulli_": ((0.3,), lambda v: np.all((v == 0) | (v == 1))),
    "exponential_": ((2.0,), lambda v: np.all(v >= 0)),
    "geometric_": ((0.4,), lambda v: np.all((v >= 1) & (v == np.round(v)))),
    "cauchy_": ((0.0, 1.0), lambda v: not np.any(np.isnan(v))),
    "log_normal_": ((0.0, 0.5), lambda v: np.all(v >= 0)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_samplers_fill_any_shape_in_place(name, shape):
    args, in_support = SAMPLERS[name]
    for dtype in (cx.float32, cx.float64, cx.float16):
        t = cx.zeros(shape, dtype=dtype)
        out = getattr(t, name)(*args, generator=cx.Generator().manual_seed(3))
        assert out is t and tuple(t.shape) == shape and t.dtype == dtype
        assert in_support(t.numpy().astype(np.float64))
    if shape and len(shape) == 2:
        # a transposed view: the samples land in the base's memory
        base = cx.zeros(shape[::-1])
        getattr(base.t(), name)(*args, generator=cx.Generator().manual_seed(3))
        assert in_support(base.numpy())
        if name in ("uniform_", "normal_", "exponential_", "log_normal_", "cauchy_"):
            assert np.count_nonzero(base.numpy()) == base.numel()


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_samplers_on_a_leaf_that_requires_grad_raise_as_torch(name):
    torch = pytest.importorskip("torch")
    args = SAMPLERS[name][0]
    same_outcome_as_torch(torch, lambda L: getattr(L.zeros(3, requires_grad=True), name)(*args))
    w = cx.zeros(3, requires_grad=True)
    with cx.no_grad():
        getattr(w, name)(*args)
    # on a non-leaf the values are replaced, so no gradient reaches what they replaced
    x = cx.ones(3, requires_grad=True)
    y = x * 2
    getattr(y, name)(*args)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


@pytest.mark.parametrize("case", [
    lambda L: L.empty(3, dtype=L.int64).uniform_(), lambda L: L.empty(3).uniform_(2, 1),
    lambda L: L.empty(3).uniform_(1, 1), lambda L: L.empty(3).uniform_(-3e38, 3e38),
    lambda L: L.empty(3).uniform_(float("nan"), 1), lambda L: L.empty(3).uniform_(0, float("inf")),
    lambda L: L.empty(3).uniform_(**{"from": 1, "to": 2}), lambda L: L.empty(3).uniform_(0, 1, None),
    lambda L: L.empty(3).uniform_(to=2), lambda L: L.empty(3).uniform_("a"),
    lambda L: L.empty(3, dtype=L.float16).uniform_(-7e4, 0),
    lambda L: L.empty(3, dtype=L.int64).normal_(), lambda L: L.empty(3).normal_(0, -1),
    lambda L: L.empty(3).normal_(0, 0), lambda L: L.empty(3).normal_(0, float("nan")),
    lambda L: L.empty(3).normal_(mean=1, std=2), lambda L: L.empty(3).normal_(1, 2, 3),
    lambda L: L.empty(3, dtype=L.int64).bernoulli_(0.3), lambda L: L.empty(3, dtype=L.bool).bernoulli_(0.3),
    lambda L: L.empty(3).bernoulli_(1.5), lambda L: L.empty(3).bernoulli_(-0.1),
    lambda L: L.empty(3).bernoulli_(float("nan")), lambda L: L.empty(3).bernoulli_(L.tensor([0.1, 1.5, 0.2])),
    lambda L: L.empty(3).bernoulli_(L.tensor([0.0, 1.0, 1.0])), lambda L: L.empty(3).bernoulli_(L.tensor([0, 1, 1])),
    lambda L: L.empty(3).bernoulli_(L.tensor([[0.0, 1.0, 1.0]])), lambda L: L.empty(3).bernoulli_(L.tensor(1.0)),
    lambda L: L.empty(2, 3).bernoulli_(L.tensor([0.0, 1.0, 1.0])), lambda L: L.empty(3).bernoulli_(L.tensor([0.5, 1.0])),
    lambda L: L.empty(3).bernoulli_(p=0.2), lambda L: L.empty(3).bernoulli_(),
    lambda L: L.empty(3, dtype=L.int64).exponential_(), lambda L: L.empty(3).exponential_(0),
    lambda L: L.empty(3).exponential_(-1), lambda L: L.empty(3).exponential_(float("inf")),
    lambda L: L.empty(3).exponential_(lambd=2),
    lambda L: L.empty(3, dtype=L.int64).geometric_(0.5), lambda L: L.empty(3, dtype=L.int64).geometric_(1.0),
    lambda L: L.empty(3).geometric_(0), lambda L: L.empty(3).geometric_(1.5), lambda L: L.empty(3).geometric_(),
    lambda L: L.empty(3, dtype=L.bool).geometric_(0.5), lambda L: L.empty(3, dtype=L.uint8).geometric_(0.5),
    lambda L: L.empty(3, dtype=L.int64).cauchy_(), lambda L: L.empty(3).cauchy_(0, 0),
    lambda L: L.empty(3).cauchy_(0, -1), lambda L: L.empty(3).cauchy_(median=1, sigma=2),
    lambda L: L.empty(3, dtype=L.int64).log_normal_(), lambda L: L.empty(3).log_normal_(0, 0),
    lambda L: L.empty(3).log_normal_(0, -1), lambda L: L.empty(3).log_normal_(mean=1, std=2),
], ids=lambda case: "")
def test_sampler_arguments_are_checked_as_torchs(case):
    same_outcome_as_torch(pytest.importorskip("torch"), case)


def test_sampler_error_messages_name_the_argument():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"):
        cx.empty(3).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        cx.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        cx.empty(3).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0, but found lambda=0"):
        cx.empty(3).exponential_(0)
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\), but got p=1"):
        cx.empty(3).geometric_(1)
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0, but found sigma=0"):
        cx.empty(3).cauchy_(0, 0)
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0, but found std=0"):
        cx.empty(3).log_normal_(1, 0)
    with pytest.raises(NotImplementedError, match="int64"):
        cx.empty(3, dtype=cx.int64).normal_()
    with pytest.raises(TypeError, match="'mean' must be float, not str"):
        cx.empty(3).normal_("0")


def _within(sample_mean, mean, sd, n, k=5.0):
    return abs(sample_mean - mean) <= k * sd / math.sqrt(n)


def test_sampler_distributions_have_their_moments():
    n = 200000
    g = cx.Generator().manual_seed(2024)

    def draw(name, *args, dtype=cx.float64):
        return getattr(cx.empty(n, dtype=dtype), name)(*args, generator=g).numpy().astype(np.float64)

    v = draw("uniform_", -1.0, 3.0)
    assert _within(v.mean(), 1.0, 4 / math.sqrt(12), n) and v.min() >= -1 and v.max() < 3
    assert abs(v.var() - 16 / 12) < 0.02
    v = draw("normal_", 2.0, 3.0)
    assert _within(v.mean(), 2.0, 3.0, n) and abs(v.std() - 3.0) < 0.03
    v = draw("exponential_", 4.0)
    assert _within(v.mean(), 0.25, 0.25, n) and abs(v.std() - 0.25) < 0.005
    v = draw("geometric_", 0.2)
    assert _within(v.mean(), 5.0, math.sqrt(0.8) / 0.2, n) and v.min() == 1
    v = draw("geometric_", 0.2, dtype=cx.int64)
    assert _within(v.mean(), 5.0, math.sqrt(0.8) / 0.2, n)
    v = draw("cauchy_", 1.5, 2.0)
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    assert abs(med - 1.5) < 0.05 and abs((q3 - q1) - 4.0) < 0.1    # Cauchy's IQR is 2 sigma
    v = draw("log_normal_", 0.5, 0.25)
    assert _within(np.log(v).mean(), 0.5, 0.25, n) and abs(np.log(v).std() - 0.25) < 0.003
    v = draw("bernoulli_", 0.3)
    assert _within(v.mean(), 0.3, math.sqrt(0.21), n)
    v = draw("random_", -4, 6)
    counts = np.bincount((v + 4).astype(int), minlength=10)
    assert counts.size == 10 and np.all(np.abs(counts - n / 10) < 5 * math.sqrt(n * 0.09))
    v = draw("random_", dtype=cx.float32)
    assert _within(v.mean(), 2 ** 23, 2 ** 24 / math.sqrt(12), n)


def test_bernoulli_with_a_probability_tensor():
    g = cx.Generator().manual_seed(8)
    p = cx.tensor([0.0, 0.25, 0.5, 1.0], dtype=cx.float64)
    draws = cx.empty(50000, 4).bernoulli_(p, generator=g).numpy()
    assert np.all(draws[:, 0] == 0) and np.all(draws[:, 3] == 1)
    for j, q in ((1, 0.25), (2, 0.5)):
        assert _within(draws[:, j].mean(), q, math.sqrt(q * (1 - q)), 50000)
    probabilities = cx.rand(3, 5, generator=g)
    out = cx.bernoulli(probabilities, generator=g)
    assert out.dtype == cx.float32 and tuple(out.shape) == (3, 5)
    assert set(np.unique(out.numpy())) <= {0.0, 1.0}
    assert cx.bernoulli(cx.ones(0, 3)).shape == (0, 3)
    assert cx.bernoulli(cx.tensor([1.0, 0.0], dtype=cx.float64)).tolist() == [1.0, 0.0]
    buffer = cx.empty(2)
    assert cx.bernoulli(cx.tensor([1.0, 0.0]), out=buffer) is buffer and buffer.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("case", [
    lambda L: L.multinomial(L.tensor([0.2, 0.8]), 3), lambda L: L.multinomial(L.tensor([0.2, 0.8]), 3, True),
    lambda L: L.multinomial(L.tensor([0.2, -0.8]), 1), lambda L: L.multinomial(L.tensor([0.0, 0.0]), 1),
    lambda L: L.multinomial(L.tensor([0.0, 1.0, 0.0]), 2), lambda L: L.multinomial(L.tensor([0.0, float("inf")]), 1),
    lambda L: L.multinomial(L.tensor([0.0, float("nan")]), 1),
    lambda L: L.multinomial(L.tensor([0, 1]), 1), lambda L: L.multinomial(L.ones(2, 2, 2), 1),
    lambda L: L.multinomial(L.ones(2, 0), 1), lambda L: L.multinomial(L.ones(0, 3), 1),
    lambda L: L.multinomial(L.ones(3), 0), lambda L: L.multinomial(L.ones(3), -1),
    lambda L: L.multinomial(L.ones(3), 2.0), lambda L: L.multinomial(L.ones(1), 1),
    lambda L: L.poisson(L.tensor([1.0, -1.0])), lambda L: L.poisson(L.tensor([1, 2])),
    lambda L: L.poisson(L.zeros(0)), lambda L: L.bernoulli(L.tensor([0.2, 1.5])),
    lambda L: L.bernoulli(L.tensor([0, 1])), lambda L: L.bernoulli(L.zeros(2), 1.5),
    lambda L: L.bernoulli(L.zeros(2), 0.5), lambda L: L.bernoulli([0.5]),
], ids=lambda case: "")
def test_sampling_functions_check_their_arguments_as_torchs(case):
    same_outcome_as_torch(pytest.importorskip("torch"), case)


def test_multinomial_frequencies_and_shapes():
    torch = pytest.importorskip("torch")
    g = cx.Generator().manual_seed(5)
    p = cx.tensor([[1.0, 2.0, 0.0, 7.0], [0.0, 0.0, 3.0, 0.0]], dtype=cx.float64)
    draws = cx.multinomial(p, 50000, True, generator=g)
    assert draws.dtype == cx.int64 and tuple(draws.shape) == (2, 50000)
    assert tuple(cx.multinomial(p[0], 3, generator=g).shape) == tuple(torch.multinomial(torch.tensor([1.0, 2, 0, 7]), 3).shape)
    counts = np.bincount(draws.numpy()[0], minlength=4) / 50000
    for j, q in enumerate((0.1, 0.2, 0.0, 0.7)):
        assert _within(counts[j], q, math.sqrt(q * (1 - q)), 50000)
    assert np.all(draws.numpy()[1] == 2)
    # without replacement: distinct categories, the first drawn with probability p
    first = []
    for _ in range(4000):
        row = cx.multinomial(p[0], 3, generator=g).numpy()
        assert len(set(row.tolist())) == 3
        first.append(row[0])
        assert 2 not in row                  # three categories with mass: the zero-mass one is never drawn
    first = np.bincount(first, minlength=4) / 4000
    for j, q in enumerate((0.1, 0.2, 0.0, 0.7)):
        assert _within(first[j], q, math.sqrt(q * (1 - q)), 4000)
    assert cx.multinomial(cx.ones(0, 3), 2).shape == (0, 2)
    # more samples than categories with mass: those come first, then zero-mass ones, as in torch
    for _ in range(20):
        row = cx.multinomial(cx.tensor([0.0, 1.0, 0.0, 0.0]), 3, generator=g).tolist()
        assert row[0] == 1 and sorted(row) == sorted(set(row)) and len(row) == 3


def test_poisson_moments():
    g = cx.Generator().manual_seed(6)
    rates = cx.tensor([0.0, 0.5, 4.0, 30.0])
    draws = np.stack([cx.poisson(rates, g).numpy() for _ in range(20000)])
    assert draws.dtype == np.float32 and np.all(draws[:, 0] == 0)
    for j, lam in enumerate((0.5, 4.0, 30.0), start=1):
        assert _within(draws[:, j].mean(), lam, math.sqrt(lam), 20000)
        assert abs(draws[:, j].var() / lam - 1) < 0.05
