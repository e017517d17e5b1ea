"""Containers: ModuleList, ModuleDict, ParameterList, ParameterDict run the
same sequence of operations as torch 2.13's and end with the same names,
order, reprs and errors."""
import re
from collections import OrderedDict

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out


def normalise(text):
    return re.sub(r"(torch|cextend)\.", "LIB.", text)


def outcome(fn):
    """fn()'s result summary, or its error (type and normalised message)."""
    try:
        return "ok", fn()
    except Exception as e:                      # noqa: BLE001  (the comparison is the point)
        return type(e).__name__, normalise(str(e))


def summary(module):
    return ([n for n, _ in module.named_parameters()], [n for n, _ in module.named_modules()],
            list(module.state_dict()), normalise(repr(module)))


def sizes(module):
    return [tuple(p.shape) for p in module.parameters()]


# -- ModuleList -----------------------------------------------------------------------------------

def module_list_program(nn_mod):
    log = []
    ml = nn_mod.ModuleList([nn_mod.Linear(1, 2), nn_mod.Linear(2, 3)])
    ml.append(nn_mod.ReLU())
    ml.extend([nn_mod.Linear(3, 4), nn_mod.Linear(4, 5)])
    ml += [nn_mod.Tanh()]
    ml.insert(1, nn_mod.Linear(9, 9))
    log.append(summary(ml))
    log.append(type(ml[-1]).__name__)
    log.append([type(m).__name__ for m in ml[1:5:2]])
    log.append(type(ml[2:]).__name__)
    log.append(outcome(lambda: ml[10]))
    log.append(outcome(lambda: ml[-11]))
    del ml[0]
    del ml[1:3]
    log.append(summary(ml))
    popped = ml.pop(-1)
    log.append(type(popped).__name__)
    ml[0] = nn_mod.Sigmoid()
    log.append(summary(ml))
    combined = ml + nn_mod.ModuleList([nn_mod.Linear(5, 6)])
    log.append(summary(combined))
    log.append(outcome(lambda: ml.extend(3)))
    log.append(outcome(lambda: ml.__setitem__(7, nn_mod.ReLU())))
    log.append((len(ml), [type(m).__name__ for m in ml]))
    log.append(normalise(repr(nn_mod.ModuleList())))
    same = nn_mod.ModuleList([nn_mod.Linear(2, 2) for _ in range(3)] + [nn_mod.ReLU(), nn_mod.ReLU(),
                                                                           nn_mod.Linear(2, 2)])
    log.append(normalise(repr(same)))
    log.append(sizes(same))
    return log


@needs_torch
def test_module_list_equals_torch():
    ours, theirs = module_list_program(nn), module_list_program(torch.nn)
    assert len(ours) == len(theirs)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, step


def test_module_list_registers_its_modules():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 1)])
    net = nn.Sequential()
    net.layers = layers
    assert len(list(net.parameters())) == 4
    x = cx.ones(3, 2)
    for layer in net.layers:
        x = layer(x)
    assert x.shape == (3, 1)
    with pytest.raises(NotImplementedError, match="missing the required \"forward\" function"):
        layers(x)


# -- ModuleDict -----------------------------------------------------------------------------------

def module_dict_program(nn_mod):
    log = []
    md = nn_mod.ModuleDict({"b": nn_mod.Linear(1, 1), "a": nn_mod.ReLU()})
    md.update([("z", nn_mod.Linear(2, 2)), ["c", nn_mod.Tanh()]])
    md.update(OrderedDict([("y", nn_mod.Sigmoid()), ("b", nn_mod.Linear(3, 3))]))
    md["new"] = nn_mod.Linear(4, 4)
    log.append(summary(md))
    log.append((list(md.keys()), [type(v).__name__ for v in md.values()], [k for k, _ in md.items()]))
    log.append(("a" in md, "q" in md, len(md), list(iter(md))))
    log.append(type(md.pop("z")).__name__)
    del md["a"]
    log.append(summary(md))
    log.append(outcome(lambda: md["missing"]))
    log.append(outcome(lambda: md.update(3)))
    log.append(outcome(lambda: md.update([3])))
    log.append(outcome(lambda: md.update([("x", nn_mod.ReLU(), 1)])))
    log.append(outcome(lambda: md.__setitem__("bad.key", nn_mod.ReLU())))
    log.append(outcome(lambda: md.__setitem__("update", nn_mod.ReLU())))
    md.clear()
    log.append(summary(md))
    return log


@needs_torch
def test_module_dict_equals_torch():
    ours, theirs = module_dict_program(nn), module_dict_program(torch.nn)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, step


# -- ParameterList --------------------------------------------------------------------------------

def parameter_list_program(lib, nn_mod):
    log = []
    pl = nn_mod.ParameterList([nn_mod.Parameter(lib.ones(2, 3)), lib.zeros(4)])
    pl.append(lib.ones(1, dtype=lib.float64))
    pl.append("not a tensor")
    pl.extend([lib.ones(2), nn_mod.Parameter(lib.ones(5), requires_grad=False)])
    log.append(summary(pl))
    log.append([type(p).__name__ for p in pl])
    log.append([isinstance(p, nn_mod.Parameter) and p.requires_grad for p in pl if not isinstance(p, str)])
    log.append(len(pl[1:4]))
    log.append(summary(pl[::2]))
    pl[0] = lib.ones(7)
    log.append(tuple(pl[0].shape))
    log.append(outcome(lambda: pl[9]))
    log.append(outcome(lambda: pl.extend(lib.ones(2))))
    log.append(outcome(lambda: pl(lib.ones(1))))
    log.append(len(pl))
    return log


@needs_torch
def test_parameter_list_equals_torch():
    ours, theirs = parameter_list_program(cx, nn), parameter_list_program(torch, torch.nn)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, step


def test_parameter_list_parameters_share_the_given_storage_and_train():
    t = cx.ones(3)
    pl = nn.ParameterList([t])
    assert isinstance(pl[0], nn.Parameter)
    with cx.no_grad():
        pl[0].fill_(2.0)
    assert t.numpy()[0] == 2.0
    opt = cx.optim.SGD(pl.parameters(), lr=0.5)
    (pl[0] * pl[0]).sum().backward()
    opt.step()
    np.testing.assert_allclose(pl[0].detach().numpy(), [0.0, 0.0, 0.0])


# -- ParameterDict --------------------------------------------------------------------------------

def parameter_dict_program(lib, nn_mod):
    log = []
    pd = nn_mod.ParameterDict({"w": lib.ones(2), "b": nn_mod.Parameter(lib.zeros(3)), "a": "text"})
    pd.update(OrderedDict([("z", lib.ones(1)), ("c", lib.ones(2, 2))]))
    pd.update([("y", lib.ones(4))])
    pd["d"] = nn_mod.Parameter(lib.ones(1, dtype=lib.float64))
    log.append(summary(pd))
    log.append((list(pd.keys()), list(reversed(pd)), len(pd), "w" in pd, "q" in pd))
    log.append([type(v).__name__ for v in pd.values()])
    log.append(pd.get("missing", 5))
    log.append(type(pd.setdefault("e", lib.ones(3))).__name__)
    log.append(pd.popitem()[0])
    log.append(tuple(pd.pop("w").shape))
    del pd["z"]
    log.append(summary(pd))
    log.append(summary(pd.copy()))
    log.append(summary(pd | nn_mod.ParameterDict({"k": lib.ones(1)})))
    log.append(list(pd.fromkeys(["p", "q"]).keys()))
    log.append(outcome(lambda: pd[3]))
    log.append(outcome(lambda: pd["nope"]))
    log.append(outcome(lambda: pd.update(5)))
    log.append(outcome(lambda: pd.update([("x",)])))
    log.append(outcome(lambda: pd(lib.ones(1))))
    pd.clear()
    log.append(summary(pd))
    return log


@needs_torch
def test_parameter_dict_equals_torch():
    ours, theirs = parameter_dict_program(cx, nn), parameter_dict_program(torch, torch.nn)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, step


def test_containers_are_exported():
    for name in ("ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity"):
        assert hasattr(nn, name)
