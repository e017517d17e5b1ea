"""Torch parity of indexing: where an int among index tensors puts its dim,
how advanced-indexing results are laid out, 0-d tensor indices, take's
gradient, and the order in which indexing errors are raised.
"""
import numpy as np
import pytest

import cextend as torch
from parity_helpers import each_lib


@pytest.mark.parametrize("key, numpy_reference", [
    ((0, slice(None), [0, 2]), lambda a: a[0][:, [0, 2]]),
    ((1, slice(1, None), [[3], [0]]), lambda a: a[1][1:, [[3], [0]]]),
    ((None, 1, slice(None), [1, 3]), lambda a: a[None, 1][:, :, [1, 3]]),
    (([1, 0], slice(None), 2), lambda a: a[:, :, 2][[1, 0]]),
    ((0, [2, 1], 3), lambda a: a[0, [2, 1], 3]),
    (([[1], [0]], 2, [0, 3]), lambda a: a[:, 2][[[1], [0]], [0, 3]]),
])
def test_an_int_among_index_tensors_selects_its_dim_first(key, numpy_reference):
    # torch selects the integer's dim before indexing (numpy treats it as
    # one more advanced index): x[0, :, idx] has shape (3, len(idx))
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 3, 4))
    x = torch.tensor(a, requires_grad=True)
    parts = tuple(torch.tensor(p) if isinstance(p, list) else p for p in key)
    y = x[parts]
    want = numpy_reference(a)
    assert tuple(y.shape) == want.shape
    np.testing.assert_array_equal(y.detach().numpy(), want)
    w = rng.standard_normal(want.shape)
    (y * torch.tensor(w)).sum().backward()
    # each result element's source, in torch's order, from the reference
    sources = numpy_reference(np.arange(a.size).reshape(a.shape))
    expected = np.zeros(a.size)
    np.add.at(expected, sources.ravel(), w.ravel())
    np.testing.assert_allclose(x.grad.numpy(), expected.reshape(a.shape))
    # setitem lines the value up with torch's result
    buf = torch.zeros(2, 3, 4, dtype=torch.float64)
    buf[parts] = torch.tensor(w)
    np.testing.assert_array_equal(buf[parts].numpy(), w)


def test_advanced_indexing_results_are_laid_out_as_torch():
    # torch's TensorIterator orders the result's dims by the indexed
    # tensor's strides: a transposed source gives a transposed result,
    # and a later view() works or fails accordingly
    column = torch.tensor([[-1.75, -1.75, -1.75]]).t()
    picked = column[:, torch.tensor([0, 0])]
    assert picked.stride() == (2, 1) and picked.view(6).shape == (6,)
    t = torch.zeros(3, 4).t()
    assert t[:, torch.tensor([0, 1])].stride() == (2, 1)
    p = torch.zeros(2, 3, 4).permute(2, 0, 1)
    assert p[:, torch.tensor([0, 1])].stride() == (1, 4, 8)
    assert p[torch.tensor([0, 1])].stride() == (6, 3, 1)
    assert p[:, :, torch.tensor([0, 1])].stride() == (2, 8, 1)
    np.testing.assert_array_equal(p[:, :, torch.tensor([2, 0])].numpy(), p.numpy()[:, :, [2, 0]])


def test_zero_dim_tensor_indices_are_numbers():
    x = torch.arange(6.0).reshape(2, 3)
    picked = x[torch.tensor(1)]
    assert picked._base is not None and tuple(picked.shape) == (3,)
    assert tuple(x[torch.tensor(True)].shape) == (1, 2, 3)
    flag = torch.tensor(False)
    leaf = torch.tensor(-0.5, requires_grad=True)
    none = leaf.clone()[flag]
    with torch.no_grad():
        flag.zero_()                # nothing of the 0-d index is kept: backward still runs
    none.sum().backward()
    assert leaf.grad.item() == 0.0


@pytest.mark.parametrize("shape", [(1,), (5,), (3, 7), (2, 0, 3)])
def test_take_gradient_scatters_back_with_repeats(shape):
    rng = np.random.default_rng(sum(shape) + len(shape))
    a = rng.standard_normal(shape)
    n = a.size
    index = rng.integers(-n, n, size=(4,)) if n else np.zeros((0,), np.int64)
    x = torch.tensor(a, requires_grad=True)
    go = rng.standard_normal(index.shape)
    (x.take(torch.tensor(index)) * torch.tensor(go)).sum().backward()
    want = np.zeros(n)
    np.add.at(want, index % max(n, 1), go)
    np.testing.assert_array_equal(x.grad.numpy(), want.reshape(shape))


@pytest.mark.parametrize("shape, key, error, message", [
    ((0, 3), (0, slice(None, None, -1)), IndexError, "index 0 is out of bounds for dimension 0 with size 0"),
    ((0, 3), (slice(None, None, -1), 5), ValueError, "step must be greater than zero"),
    ((0, 3), (None, 0, slice(None, None, -1)), IndexError, "index 0 is out of bounds for dimension 1 with size 0"),
    ((2, 3), (None, None, 0, 5), IndexError, "index 5 is out of bounds for dimension 3 with size 3"),
    ((2, 3), (0, slice(None, None, -1), 9), IndexError, "too many indices for tensor of dimension 2"),
    ((2, 3), (-3,), IndexError, "index -3 is out of bounds for dimension 0 with size 2"),
])
def test_indexing_errors_are_raised_in_torchs_order(shape, key, error, message):
    with pytest.raises(error, match=message):
        torch.zeros(*shape)[key]


def test_indexing_in_bounds_still_works_at_the_edges():
    a = np.arange(6.0).reshape(2, 3)
    x = torch.tensor(a)
    assert x[-2, -3].item() == a[-2, -3] and x[1, 2].item() == a[1, 2]
    assert tuple(x[None, 1, None, 2].shape) == (1, 1)
    np.testing.assert_array_equal(x[..., 2].numpy(), a[..., 2])


# -- negative indices: refused where torch refuses them, wrapped where it wraps ----------------

_REFUSING = {
    "index_select": lambda lib, x, i: lib.index_select(x, 1, i),
    "gather": lambda lib, x, i: lib.gather(x, 1, i.expand(2, -1)),
    "scatter": lambda lib, x, i: x.clone().scatter_(1, i.expand(2, -1), lib.ones(2, 1, dtype=x.dtype)),
    "scatter of a number": lambda lib, x, i: x.clone().scatter_(1, i.expand(2, -1), 2.0),
    "scatter_add": lambda lib, x, i: x.clone().scatter_add_(1, i.expand(2, -1), lib.ones(2, 1, dtype=x.dtype)),
    "index_add": lambda lib, x, i: x.clone().index_add_(1, i.reshape(-1), lib.ones(2, 1, dtype=x.dtype)),
    "index_copy": lambda lib, x, i: x.clone().index_copy_(1, i.reshape(-1), lib.ones(2, 1, dtype=x.dtype)),
}


@each_lib
@pytest.mark.parametrize("op", list(_REFUSING))
@pytest.mark.parametrize("bad", [-1, -3, 3, 7])
def test_index_ops_refuse_a_negative_or_too_large_index(lib, op, bad):
    """torch counts no negative index from the end in these ops (index_select(arange(5.), 0,
    tensor([-1])) is refused, not [4.]); its error is an IndexError from some kernels and a
    RuntimeError from others, so cextend's is both."""
    x = lib.tensor(np.arange(6.0).reshape(2, 3))
    index = lib.tensor([[bad]]) if op in ("gather", "scatter", "scatter of a number", "scatter_add") else \
        lib.tensor([bad])
    with pytest.raises((IndexError, RuntimeError)) as raised:
        _REFUSING[op](lib, x, index)
    if lib is torch:
        assert isinstance(raised.value, IndexError) and isinstance(raised.value, RuntimeError)
        assert "index %d is out of bounds for dimension 1 with size 3" % bad in str(raised.value)


@each_lib
def test_index_fill_take_put_and_getitem_keep_counting_negative_indices_from_the_end(lib):
    x = lib.tensor([0.0, 1.0, 2.0, 3.0, 4.0])
    minus_one = lib.tensor([-1])
    assert x.clone().index_fill_(0, minus_one, 9.0).tolist() == [0.0, 1.0, 2.0, 3.0, 9.0]
    assert x.take(minus_one).tolist() == [4.0]
    assert x[minus_one].tolist() == [4.0]
    assert x.clone().put_(minus_one, lib.tensor([9.0])).tolist() == [0.0, 1.0, 2.0, 3.0, 9.0]
    with pytest.raises(IndexError):
        x.clone().index_fill_(0, lib.tensor([-6]), 9.0)
    value = lib.tensor(2.0, requires_grad=True)
    lib.arange(5.0).index_fill(0, lib.tensor([1, 0]), value).sum().backward()
    assert value.grad.item() == 2.0
    # the value's gradient is torch's index_select, which does not wrap
    with pytest.raises(IndexError):
        lib.arange(5.0).index_fill(0, lib.tensor([-1, 0]), value).sum().backward()
