"""Storage, pickling and deepcopy of tensors and modules (issue 24, item 3).

torch's view tests identify views through untyped_storage(): every view of
one allocation reports its data_ptr() and nbytes(); storage_offset() is in
elements.  deepcopy keeps memory shared between the tensors it copies
together; pickle copies each tensor's values (neither library keeps
sharing there), and a non-leaf comes back a leaf.  Each program runs on
cextend and, where installed, torch 2.13.
"""
import copy
import pickle

import numpy as np
import pytest

from parity_helpers import each_lib


@each_lib
def test_views_report_their_allocation(lib):
    a = lib.arange(24.0).reshape(4, 6)
    for view, offset in ((a[1], 6), (a[:, 2], 2), (a.t(), 0), (a[2:, 3:].t(), 15), (a.view(-1)[5:], 5)):
        assert view.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
        assert view.untyped_storage().nbytes() == 24 * 4
        assert view.storage_offset() == offset
        assert view.data_ptr() == a.data_ptr() + 4 * offset
    copy_ = a.clone()
    assert copy_.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
    assert lib.ones(3, dtype=lib.float64)[1:].untyped_storage().nbytes() == 24


@each_lib
def test_deepcopy_keeps_memory_shared_between_the_tensors_it_copies(lib):
    a = lib.arange(6.0)
    view = a[2:4]
    b, c = copy.deepcopy([a, view])
    b[2] = 100.0
    assert c.tolist() == [100.0, 3.0] and a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert c.storage_offset() == 2 and c.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    x = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(x * 2)
    x.grad = lib.full((2,), 3.0)
    assert copy.deepcopy(x).grad.tolist() == [3.0, 3.0]
    p = lib.nn.Parameter(lib.ones(2))
    p.grad = lib.ones(2)
    q = copy.deepcopy(p)
    assert type(q) is type(p) and q.grad is None and q.requires_grad


@each_lib
def test_pickle_round_trips_values_layout_and_flags(lib):
    rng = np.random.default_rng(0)
    t = lib.tensor(rng.standard_normal((3, 5)))
    for original in (t, t.t(), t[:, 1::2], t.to(lib.float32), lib.tensor(7), lib.zeros(0, 4)):
        loaded = pickle.loads(pickle.dumps(original))
        assert loaded.dtype == original.dtype and loaded.shape == original.shape
        np.testing.assert_array_equal(loaded.numpy(), original.numpy())
    x = lib.ones(2, requires_grad=True)
    y = pickle.loads(pickle.dumps(x * 2))
    assert y.requires_grad and y.is_leaf and y.grad_fn is None and y.tolist() == [2.0, 2.0]
    a = lib.arange(6.0)
    b, c = pickle.loads(pickle.dumps([a, a[2:4]]))
    b[2] = 100.0
    assert c.tolist() == [2.0, 3.0]              # not shared after pickle, as torch's


@each_lib
def test_modules_pickle_and_deepcopy(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2)).double()
    x = lib.tensor(np.random.default_rng(1).standard_normal((5, 3)))
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert type(clone) is type(model) and clone is not model
        assert all(type(p).__name__ == "Parameter" for p in clone.parameters())
        np.testing.assert_array_equal(clone(x).detach().numpy(), model(x).detach().numpy())
        first = next(clone.parameters())
        with lib.no_grad():
            first.add_(1.0)
        assert not np.array_equal(clone(x).detach().numpy(), model(x).detach().numpy())
