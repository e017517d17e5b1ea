"""A tensor's version counter (cextend._engine.VersionCounter, src/python/version.c).

One C integer per storage, shared by a tensor and its views, as torch's VariableVersion: in-place
changes bump it, saved tensors compare against it.  It reads like the one-item list it replaced,
and a bump allocates nothing (past 256 the list made a new int object at every bump).
"""
import copy
import gc
import pickle
import tracemalloc

import numpy as np
import pytest

import cextend as cx
from cextend import _engine

try:
    import torch
except ImportError:     # the comparisons with torch are left out
    torch = None


def test_views_and_detach_share_one_counter():
    x = cx.randn(6)
    view, detached = x[1:4], x.detach()
    assert type(x._version_counter) is _engine.VersionCounter
    assert view._version_counter is x._version_counter
    assert detached._version_counter is x._version_counter
    view.mul_(2.0)
    detached.add_(1.0)
    assert x._version == view._version == detached._version == 2
    fresh = cx.randn(6)
    assert fresh._version_counter is not x._version_counter and fresh._version == 0


def test_it_reads_and_writes_like_a_one_item_list():
    counter = _engine.VersionCounter()
    assert counter[0] == counter[-1] == 0 and len(counter) == 1 and list(counter) == [0]
    counter.bump()
    counter[0] += 1
    assert counter[0] == 2 and repr(counter) == "VersionCounter(2)"
    counter[0] = 2 ** 40                                 # no 32-bit limit
    counter.bump()
    assert counter[0] == 2 ** 40 + 1
    assert _engine.VersionCounter(7)[0] == 7
    for copied in (copy.copy(counter), copy.deepcopy(counter), pickle.loads(pickle.dumps(counter))):
        assert type(copied) is _engine.VersionCounter and copied is not counter and copied[0] == counter[0]


def test_it_refuses_to_count_past_the_top_of_its_range():
    counter = _engine.VersionCounter(2 ** 63 - 1)
    with pytest.raises(OverflowError, match="cannot count past"):
        counter.bump()
    assert counter[0] == 2 ** 63 - 1                     # not wrapped to a negative count
    t = cx.zeros(2)
    t._version_counter[0] = 2 ** 63 - 1
    with pytest.raises(OverflowError):
        t.add_(1)


@pytest.mark.parametrize("bad, error, words", [
    (lambda c: c[1], IndexError, "out of range"),
    (lambda c: c[-2], IndexError, "out of range"),
    (lambda c: c.__setitem__(0, 1.5), TypeError, "must be an int, got float"),
    (lambda c: c.__setitem__(0, "3"), TypeError, "must be an int, got str"),
    (lambda c: c.__setitem__(0, -1), ValueError, ">= 0, got -1"),
    (lambda c: c.__setitem__(0, 2 ** 70), OverflowError, None),
    (lambda c: c.__delitem__(0), TypeError, "cannot be deleted"),
    (lambda c: _engine.VersionCounter(-3), ValueError, ">= 0, got -3"),
    (lambda c: _engine.VersionCounter("1"), TypeError, None),
])
def test_bad_values_are_refused_with_a_clear_error(bad, error, words):
    counter = _engine.VersionCounter(5)
    with pytest.raises(error, match=words):
        bad(counter)
    assert counter[0] == 5                              # left as it was


def _blocks_left_by(fn, files):
    """Blocks allocated by fn() in the given source files and still alive after it."""
    fn()
    gc.collect()                # a cycle freed late would count as left behind
    tracemalloc.start(1)
    try:
        before = tracemalloc.take_snapshot()
        fn()
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    keep = [tracemalloc.Filter(True, "*" + name) for name in files]
    stats = after.filter_traces(keep).compare_to(before.filter_traces(keep), "lineno")
    return sum(s.count_diff for s in stats if s.count_diff > 0)


def test_bumps_past_256_leave_no_object_behind():
    x = cx.zeros(3)
    x._version_counter[0] = 1000                         # past the small ints Python keeps

    def bump_many():
        for _ in range(100):
            x._bump_version()
    assert _blocks_left_by(bump_many, ["tensor.py"]) == 0
    assert x._version == 1200


def test_accumulating_into_grad_in_c_bumps_the_counter_without_allocating_one():
    w = cx.randn(4, 3, requires_grad=True)
    x = cx.randn(2, 3)
    (x @ w.t()).sum().backward()
    grad = w.grad
    grad._version_counter[0] = 1000

    def step():
        (x @ w.t()).sum().backward()                     # adds into the existing .grad in C
    before = grad._version
    step()
    assert w.grad is grad and grad._version == before + 1
    assert _blocks_left_by(step, ["engine.py", "graph.py", "tensor.py"]) == 0
    np.testing.assert_allclose(w.grad.numpy(), 4 * np.broadcast_to(x.numpy().sum(0), (4, 3)), rtol=1e-6)


def test_a_saved_tensor_still_sees_a_change_past_2_to_the_32():
    x = cx.randn(5, requires_grad=True)
    y = x * 1.0
    y._version_counter[0] = 2 ** 32 - 1
    z = y * y                                            # saves y at version 2**32 - 1
    y.add_(1.0)                                          # 2**32: a 32-bit counter would wrap to 0
    assert y._version == 2 ** 32
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_an_optimizer_step_bumps_each_parameter_once():
    model = cx.nn.Linear(3, 2)
    opt = cx.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for p in model.parameters():
        p._version_counter[0] = 500
    model(cx.randn(4, 3)).sum().backward()
    opt.step()
    assert [p._version for p in model.parameters()] == [501, 501]


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_versions_follow_torchs_through_views_detach_and_setitem():
    def program(lib):
        x = lib.zeros(4)
        seen = []
        x.add_(1)
        seen.append(x._version)
        x[1:3].mul_(2)
        seen.append(x._version)
        x.detach().zero_()
        seen.append(x._version)
        x[0] = 5
        seen.append(x._version)
        x.data.add_(1)                                   # .data: a counter of its own
        seen.append(x._version)
        y = x.view(2, 2)
        y.t_()                                           # an in-place view op
        seen.append(x._version)
        return seen
    assert program(cx) == program(torch)
