"""Module API that torch's own tests use (test_nn.py): get_extra_state /
set_extra_state in state_dict and load_state_dict, call_super_init,
Sequential's list operations (+, *, item assignment and deletion, insert,
extend, pop, dir), and Module.to's argument forms and errors.

Each program runs with cextend and, where torch 2.13 is installed, with
torch; the two must agree (keys, orders, error types and messages, the
library's name aside), and each test also states the answer it expects.
"""
import copy
import pickle
import re
from collections import OrderedDict

import pytest

import cextend as cx
from parity_helpers import each_lib, real_torch
from rng_isolation import keep_global_rng

pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # nn.Linear's init draws from the global RNG


def _normalise(message):
    """A message with the library's name taken out: class paths ('torch.nn.modules.container.Sequential',
    'cextend.nn.container.Sequential') keep their last part, and torch.X / cextend.X read lib.X."""
    message = re.sub(r"<class '(?:\w+\.)+(\w+)'>", r"<class '\1'>", message)
    return re.sub(r"\b(?:torch|cextend)\.", "lib.", message)


def _error(fn):
    """(exception type name, normalised message) of what fn raises, or None."""
    try:
        fn()
    except Exception as e:          # the type and message are what is compared
        return type(e).__name__, _normalise(str(e))
    return None


def _agree(program, expected=None):
    """program(cextend) equals program(torch) where torch is installed, and `expected` if given."""
    ours = program(cx)
    if expected is not None:
        assert ours == expected
    if real_torch is not None:
        assert ours == program(real_torch)
    return ours


# -- get_extra_state / set_extra_state ----------------------------------------------------------

def _extra_state_classes(lib):
    nn = lib.nn

    class Both(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 1)
            self.counter = 3
            self.received = []

        def get_extra_state(self):
            return {"counter": self.counter}

        def set_extra_state(self, state):
            self.received.append(state)
            self.counter = state["counter"]

    class GetOnly(nn.Module):
        def get_extra_state(self):
            return "saved"

    class SetOnly(nn.Module):
        def __init__(self):
            super().__init__()
            self.received = []

        def set_extra_state(self, state):
            self.received.append(state)

    return Both, GetOnly, SetOnly


def _extra_state_program(lib):
    nn = lib.nn
    Both, GetOnly, SetOnly = _extra_state_classes(lib)
    out = {}
    net = nn.Sequential(Both(), nn.ReLU())
    sd = net.state_dict()
    out["keys"] = list(sd)
    out["value"] = sd["0._extra_state"]
    net[0].counter = 99
    other = nn.Sequential(Both(), nn.ReLU())
    other[0].counter = 7
    net.load_state_dict(other.state_dict())
    out["loaded"] = (net[0].counter, net[0].received)
    missing = {k: v for k, v in sd.items() if k != "0._extra_state"}
    out["strict missing"] = _error(lambda: net.load_state_dict(missing))
    result = net.load_state_dict(missing, strict=False)
    out["non-strict missing"] = (list(result.missing_keys), list(result.unexpected_keys))
    # get_extra_state alone: saved, and refused by a strict load (nothing takes it)
    g = GetOnly()
    out["get only keys"] = list(g.state_dict())
    out["get only strict load"] = _error(lambda: g.load_state_dict(g.state_dict()))
    out["get only non-strict"] = tuple(list(k) for k in g.load_state_dict(g.state_dict(), strict=False))
    # set_extra_state alone: nothing saved, and a strict load misses the key
    s = SetOnly()
    out["set only keys"] = list(s.state_dict())
    out["set only strict load"] = _error(lambda: s.load_state_dict({}))
    s.load_state_dict({"_extra_state": [1, 2]})
    out["set only received"] = s.received
    # a plain module with an unexpected _extra_state key
    out["plain unexpected"] = _error(lambda: nn.ReLU().load_state_dict({"_extra_state": 1}))
    out["default get"] = _error(lambda: nn.Module().get_extra_state())[0]
    return out


def test_extra_state_in_state_dict_and_load_state_dict():
    _agree(_extra_state_program, {
        "keys": ["0._extra_state", "0.fc.weight", "0.fc.bias"],       # a module's own entries, then its children's
        "value": {"counter": 3},
        "loaded": (7, [{"counter": 7}]),
        "strict missing": ("RuntimeError", 'Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in '
                                           'state_dict: "0._extra_state". '),
        "non-strict missing": (["0._extra_state"], []),              # reported, not raised
        "get only keys": ["_extra_state"],
        "get only strict load": ("RuntimeError", 'Error(s) in loading state_dict for GetOnly:\n\tUnexpected key(s) '
                                                 'in state_dict: "_extra_state". '),
        "get only non-strict": ([], ["_extra_state"]),
        "set only keys": [],
        "set only strict load": ("RuntimeError", 'Error(s) in loading state_dict for SetOnly:\n\tMissing key(s) in '
                                                 'state_dict: "_extra_state". '),
        "set only received": [[1, 2]],
        "plain unexpected": ("RuntimeError", 'Error(s) in loading state_dict for ReLU:\n\tUnexpected key(s) in '
                                             'state_dict: "_extra_state". '),
        "default get": "RuntimeError",
    })


def test_extra_state_survives_save_and_load(tmp_path):
    Both, _, _ = _extra_state_classes(cx)
    m = Both()
    m.counter = 42
    path = tmp_path / "m.pt"
    cx.save(m.state_dict(), path)
    fresh = Both()
    fresh.load_state_dict(cx.load(path, weights_only=False))
    assert fresh.counter == 42


# -- call_super_init ------------------------------------------------------------------------------

def _super_init_program(lib):
    nn = lib.nn

    class Mixin:
        def __init__(self, *args, **kwargs):
            self.got = (args, kwargs)

    class Passes(nn.Module, Mixin):
        call_super_init = True

    class Refuses(nn.Module, Mixin):
        pass

    p = Passes(1, 2, key="v")
    return (nn.Module.call_super_init, p.got, p.training, list(p.state_dict()),
            _error(lambda: Refuses(key="v")), _error(lambda: Refuses(1, 2)), hasattr(Refuses(), "got"))


def test_call_super_init_passes_arguments_on():
    _agree(_super_init_program, (
        False, ((1, 2), {"key": "v"}), True, [],
        ("TypeError", "Refuses.__init__() got an unexpected keyword argument 'key'"),
        ("TypeError", "Refuses.__init__() takes 1 positional argument but 3 were given"),
        False))


# -- Sequential ------------------------------------------------------------------------------------

def _layout(seq, pool):
    """seq's keys and which of pool each entry is (by identity)."""
    return [(k, next(i for i, p in enumerate(pool) if p is m)) for k, m in seq._modules.items()]


def _sequential_program(lib):
    nn = lib.nn
    pool = [nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.Identity(), nn.ReLU()]
    a, b, c, d, e = pool
    out = {}
    s = nn.Sequential(a, b)
    t = nn.Sequential(c)
    out["add"] = _layout(s + t, pool)
    out["add is new"] = (s + t) is not s and len(s) == 2
    out["mul"] = _layout(s * 2, pool)
    out["rmul"] = _layout(3 * t, pool)
    u = nn.Sequential(a, b)
    before = u
    u *= 2
    out["imul"] = (_layout(u, pool), u is before)
    v = nn.Sequential(a)
    v += nn.Sequential(b, c)
    out["iadd"] = _layout(v, pool)
    out["mul errors"] = [_error(lambda: s * 1.5), _error(lambda: s * 0), _error(lambda: s * -1),
                         _error(lambda: nn.Sequential(a).__imul__(0)), _error(lambda: 2.0 * s)]
    out["add errors"] = [_error(lambda: s + nn.ModuleList([a])), _error(lambda: s.__iadd__([a]))]
    w = nn.Sequential(a, b, c, d)
    w[1] = e
    w[-1] = a
    out["setitem"] = _layout(w, pool)
    out["setitem errors"] = [_error(lambda: w.__setitem__(4, b)), _error(lambda: w.__setitem__(-5, b))]
    out["getitem"] = [pool.index(w[-2]), _error(lambda: w[7]), _layout(w[1:3], pool), type(w[1:3]).__name__]
    x = nn.Sequential(a, b, c, d, e)
    del x[1]
    out["del one"] = _layout(x, pool)
    del x[-1]
    out["del last"] = _layout(x, pool)
    y = nn.Sequential(a, b, c, d, e)
    del y[1:4]
    out["del slice"] = _layout(y, pool)
    z = nn.Sequential(a, b, c, d, e)
    del z[::2]
    out["del step"] = _layout(z, pool)
    named = nn.Sequential(OrderedDict([("first", a), ("second", b), ("third", c)]))
    out["named slice"] = _layout(named[1:], pool)
    del named[0]
    out["named renumbered"] = _layout(named, pool)
    ins = nn.Sequential(a, b)
    ins.insert(0, c)
    ins.insert(-1, d)
    ins.insert(len(ins), e)
    out["insert"] = _layout(ins, pool)
    out["insert errors"] = [_error(lambda: ins.insert(9, a)), _error(lambda: ins.insert(-9, a)),
                            _error(lambda: ins.insert(0, "x"))[0]]
    ext = nn.Sequential(a)
    returned = ext.extend(nn.Sequential(b, c)).extend([d])
    out["extend"] = (_layout(ext, pool), returned is ext)
    app = nn.Sequential()
    out["append"] = (app.append(a) is app, _layout(app, pool))
    p = nn.Sequential(a, b, c)
    out["pop"] = (pool.index(p.pop(1)), _layout(p, pool))
    keys = dir(nn.Sequential(a, b))
    out["dir"] = (any(k.isdigit() for k in keys), "append" in keys, "forward" in keys)
    return out


def test_sequential_list_operations_as_torch():
    seq_class = "<class 'Sequential'>"
    _agree(_sequential_program, {
        "add": [("0", 0), ("1", 1), ("2", 2)],
        "add is new": True,
        "mul": [("0", 0), ("1", 1), ("2", 0), ("3", 1)],
        "rmul": [("0", 2), ("1", 2), ("2", 2)],
        "imul": ([("0", 0), ("1", 1), ("2", 0), ("3", 1)], True),
        "iadd": [("0", 0), ("1", 1), ("2", 2)],
        "mul errors": [
            ("TypeError", "unsupported operand type(s) for *: %s and <class 'float'>" % seq_class),
            ("ValueError", "Non-positive multiplication factor 0 for %s" % seq_class),
            ("ValueError", "Non-positive multiplication factor -1 for %s" % seq_class),
            ("ValueError", "Non-positive multiplication factor 0 for %s" % seq_class),
            ("TypeError", "unsupported operand type(s) for *: %s and <class 'float'>" % seq_class)],
        "add errors": [
            ("ValueError", "add operator supports only objects of Sequential class, but <class 'ModuleList'> is "
                           "given."),
            ("ValueError", "add operator supports only objects of Sequential class, but <class 'list'> is given.")],
        "setitem": [("0", 0), ("1", 4), ("2", 2), ("3", 0)],
        "setitem errors": [("IndexError", "index 4 is out of range"), ("IndexError", "index -5 is out of range")],
        "getitem": [2, ("IndexError", "index 7 is out of range"), [("1", 4), ("2", 2)], "Sequential"],
        "del one": [("0", 0), ("1", 2), ("2", 3), ("3", 4)],
        "del last": [("0", 0), ("1", 2), ("2", 3)],
        "del slice": [("0", 0), ("1", 4)],
        "del step": [("0", 1), ("1", 3)],
        "named slice": [("second", 1), ("third", 2)],
        "named renumbered": [("0", 1), ("1", 2)],
        "insert": [("0", 2), ("1", 0), ("2", 3), ("3", 1), ("4", 4)],
        "insert errors": [("IndexError", "Index out of range: 9"), ("IndexError", "Index out of range: -9"),
                          "AssertionError"],
        "extend": ([("0", 0), ("1", 1), ("2", 2), ("3", 3)], True),
        "append": (True, [("0", 0)]),
        "pop": (1, [("0", 0), ("1", 2)]),
        "dir": (False, True, True),
    })


@each_lib
def test_sequential_still_runs_after_edits(lib):
    nn = lib.nn
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    seq = seq + nn.Sequential(nn.Linear(2, 1))
    seq.insert(1, nn.Identity())
    del seq[2]
    seq[-1] = nn.Linear(2, 3)
    assert tuple(seq(lib.ones(4, 2)).shape) == (4, 3)
    assert [name for name, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_sequential_old_import_path():
    from cextend.nn.layers import Sequential as from_layers
    from cextend.nn.modules import Sequential as from_modules
    assert from_layers is from_modules is cx.nn.Sequential is cx.nn.container.Sequential


# -- Module.to ---------------------------------------------------------------------------------

_TO_SIGNATURES = (
    "but expected one of:\n"
    " * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
    " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, torch.memory_format memory_format = "
    "None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, torch.memory_format memory_format = None)\n")


def _invalid(got):
    return ("TypeError", _normalise("to() received an invalid combination of arguments - got (%s), " % got
                                    + _TO_SIGNATURES))


def _to_program(lib):
    nn = lib.nn
    cases = [
        ((1, 2, 3), {}), ((lib.int64,), {}), ((), {"dtype": lib.int64}), (("cpu", lib.int32), {}),
        ((lib.bool,), {}), ((lib.uint8,), {}), ((int,), {}),
        ((), {"foo": 1}), ((lib.float64, 1), {}), (("cpu", "cpu"), {}), ((lib.float64, lib.float32), {}),
        ((None, lib.float64, None), {}), ((), {"memory_format": 3}), ((lib.float64,), {"non_blocking": 1}),
        (("cpu", lib.float64, False, 4), {}), (([1],), {}), ((lib.zeros(1),), {"dtype": lib.float64}),
        ((lib.float64,), {"dtype": lib.float64}), (("cpu",), {"device": "cpu"}), ((lib.float64,), {"device": "cpu"}),
        ((lib.channels_last,), {}),
        ((lib.float64,), {"copy": False}), ((lib.zeros(1), False, True), {}),
    ]
    results = []
    for args, kwargs in cases:
        m = nn.Linear(2, 2)
        results.append(_error(lambda: m.to(*args, **kwargs)))
    kind, message = _error(lambda: nn.Linear(2, 2).to("bogus"))     # torch lists more device types
    return results + [(kind, message.startswith("Expected one of cpu, cuda"), message.endswith(": bogus"))]


def test_module_to_errors_as_torch():
    _agree(_to_program, [
        _invalid("int, int, int"),
        ("TypeError", "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=lib.int64"),
        ("TypeError", "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=lib.int64"),
        ("TypeError", "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=lib.int32"),
        ("TypeError", "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=lib.bool"),
        ("TypeError", "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=lib.uint8"),
        ("TypeError", "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=lib.int64"),
        _invalid("foo=int, "), _invalid("torch.dtype, int"), _invalid("str, str"),
        _invalid("torch.dtype, torch.dtype"), _invalid("NoneType, torch.dtype, NoneType"),
        _invalid("memory_format=int, "), _invalid("torch.dtype, non_blocking=int"),
        _invalid("str, torch.dtype, bool, int"), _invalid("list"), _invalid("Tensor, dtype=torch.dtype"),
        _invalid("torch.dtype, dtype=torch.dtype"), _invalid("str, device=str"), _invalid("torch.dtype, device=str"),
        _invalid("torch.memory_format"),
        ("RuntimeError", ".to() does not accept copy argument"), ("RuntimeError", ".to() does not accept copy argument"),
        ("RuntimeError", True, True),
    ])


def _to_forms_program(lib):
    nn = lib.nn
    out = []
    for args, kwargs in [((lib.float64,), {}), ((), {"dtype": lib.float64}), (("cpu", lib.float64), {}),
                         ((lib.float64, True), {}), (("cpu",), {"non_blocking": True}), ((None, None), {}),
                         ((lib.zeros(1, dtype=lib.float64),), {}), ((lib.zeros(1, dtype=lib.float64), False), {}),
                         ((lib.device("cpu"),), {}), ((), {"device": "cpu", "dtype": lib.float16, "non_blocking": False}),
                         ((float,), {}), ((), {}), ((), {"memory_format": None})]:
        m = nn.Linear(2, 2)
        m.register_buffer("count", lib.zeros(2, dtype=lib.int64))
        weight = m.weight
        returned = m.to(*args, **kwargs)
        out.append((returned is m, m.weight is weight, str(m.weight.dtype).split(".")[-1],
                    str(m.count.dtype).split(".")[-1]))
    return out


def test_module_to_argument_forms_return_self_and_keep_integer_buffers():
    f64 = (True, True, "float64", "int64")
    f32 = (True, True, "float32", "int64")
    _agree(_to_forms_program, [f64, f64, f64, f64, f32, f32, f64, f64, f32, (True, True, "float16", "int64"),
                               f64, f32, f32])


def _memory_format_program(lib):
    nn = lib.nn
    conv = nn.Conv2d(3, 4, 2)
    lin = nn.Linear(3, 2)
    seq = nn.Sequential(conv, lin)
    weight = conv.weight
    seq.to(memory_format=lib.channels_last)
    first = (conv.weight is weight, conv.weight.is_contiguous(memory_format=lib.channels_last),
             conv.weight.is_contiguous(), lin.weight.is_contiguous())
    seq.to(lib.float64, memory_format=lib.contiguous_format)
    second = (conv.weight.is_contiguous(), str(conv.weight.dtype).split(".")[-1])
    seq.to(memory_format=lib.preserve_format)
    return first, second, conv.weight.is_contiguous()


def test_module_to_memory_format():
    _agree(_memory_format_program, ((True, True, False, True), (True, "float64"), True))


# -- smaller pieces ----------------------------------------------------------------------------

def _dir_and_pre_hook_program(lib):
    nn = lib.nn
    m = nn.Module()
    m.add_module("0", nn.ReLU())
    m.register_buffer("buf", lib.zeros(1))
    keys = dir(m)
    calls = []
    handle = m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append((prefix, keep_vars)))
    outer = nn.Sequential(m)
    outer.state_dict(keep_vars=True)
    handle.remove()
    outer.state_dict()
    return "0" in keys, "buf" in keys, calls


def test_dir_leaves_out_numbered_children_and_state_dict_pre_hook():
    _agree(_dir_and_pre_hook_program, (False, True, [("0.", True)]))


def test_a_module_pickled_without_the_new_hook_dicts_gets_them_back():
    m = cx.nn.Linear(2, 2)
    for name in ("_backward_hooks", "_backward_pre_hooks", "_state_dict_pre_hooks", "_is_full_backward_hook"):
        del m.__dict__[name]
    for revived in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert revived._backward_hooks == {} and revived._backward_pre_hooks == {}
        assert revived._is_full_backward_hook is None
        revived.register_full_backward_hook(lambda mod, gi, go: None)
        assert tuple(revived(cx.ones(1, 2, requires_grad=True)).shape) == (1, 2)
