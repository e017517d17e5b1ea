"""Torch parity of memory overlap: writes whose source, index or out= shares
memory with the written tensor (full overlaps torch skips or allows,
partial overlaps it refuses, self-overlapping expanded targets), and the
layouts where the answer would depend on the order elements are written.
"""
import numpy as np
import pytest

import cextend as torch
from parity_helpers import real_torch


def _pairs():
    x = torch.tensor([[1., 2.], [3., 4.]])
    idx = torch.tensor([[1, 0], [0, 0]])
    rows = torch.tensor([1, 0])
    mask = torch.tensor([[True, False], [True, True]])
    return x, idx, rows, mask


@pytest.mark.parametrize("call", [
    lambda x, idx, rows, mask: torch.gather(x, 0, idx, out=x),
    lambda x, idx, rows, mask: torch.gather(x, 0, idx, out=x.t()),
    lambda x, idx, rows, mask: torch.index_select(x, 0, rows, out=x),
    lambda x, idx, rows, mask: torch.masked_select(x, mask, out=x),
    lambda x, idx, rows, mask: torch.take(x, idx, out=x),
    lambda x, idx, rows, mask: torch.scatter(torch.zeros(2, 2), 0, idx, x, out=x),
    lambda x, idx, rows, mask: torch.index_add(torch.zeros(2, 2), 0, rows, x, out=x),
    lambda x, idx, rows, mask: x.scatter_(0, idx, x),
    lambda x, idx, rows, mask: x.scatter_add_(0, idx, x.t()),
    lambda x, idx, rows, mask: x.index_add_(0, rows, x),
    lambda x, idx, rows, mask: x.index_copy_(0, rows, x),
    lambda x, idx, rows, mask: x.put_(idx, x),
])
def test_index_ops_refuse_an_output_that_is_their_input(call):
    x, idx, rows, mask = _pairs()
    before = x.numpy().copy()
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        call(x, idx, rows, mask)
    np.testing.assert_array_equal(x.numpy(), before)


def test_index_ops_accept_their_own_self_as_out():
    x, idx, rows, mask = _pairs()
    src = torch.tensor([[5., 6.], [7., 8.]])
    torch.scatter(x, 0, idx, src, out=x)
    np.testing.assert_array_equal(x.numpy(), [[7., 8.], [5., 4.]])
    x, idx, rows, mask = _pairs()
    torch.index_add(x, 0, rows, src, out=x)
    np.testing.assert_array_equal(x.numpy(), [[8., 10.], [8., 10.]])


def test_masked_scatter_from_its_own_memory_raises():
    x, idx, rows, mask = _pairs()
    with pytest.raises(RuntimeError, match="depend on the order elements are written"):
        x.masked_scatter_(mask, x)
    y = torch.tensor([[1., 2.], [3., 4.]])
    y.masked_scatter_(mask, x.clone())
    np.testing.assert_array_equal(y.numpy(), [[1., 2.], [2., 3.]])


@pytest.mark.parametrize("call", [
    lambda x: torch.sum(x, 1, keepdim=True, out=x[:, :1]),
    lambda x: torch.nansum(x[0, 0], out=x[0, 0]),
    lambda x: torch.mean(x, 1, keepdim=True, out=x[:, :1]),
    lambda x: torch.prod(x, 1, keepdim=True, out=x[:, :1]),
    lambda x: torch.amax(x[0, 0], out=x[0, 0]),
    lambda x: torch.amin(x, 1, keepdim=True, out=x[:, 1:2]),
    lambda x: torch.mm(x[:, :2], x[:2, :2].clone(), out=x[:, :2]),
    lambda x: torch.matmul(x[:, :2].clone(), x[:2, :2], out=x[:2, 1:]),
])
def test_reductions_and_products_refuse_an_out_they_read(call):
    # torch fills out (zeros, or the reduction's identity) before reading its
    # input: through shared memory its answer is the overwritten input's
    x = torch.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    before = x.numpy().copy()
    with pytest.raises(RuntimeError, match="depend on the order elements are written"):
        call(x)
    np.testing.assert_array_equal(x.numpy(), before)


def test_reductions_that_read_first_accept_an_out_they_read():
    x = torch.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    want = np.cumsum(x.numpy(), 1)
    torch.cumsum(x, 1, out=x)
    np.testing.assert_allclose(x.numpy(), want)
    y = torch.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    torch.sort(y, 1, out=(y, torch.empty(2, 3, dtype=torch.int64)))
    np.testing.assert_array_equal(y.numpy(), [[-2.0, 1.5, 3.0], [-1.0, 0.5, 4.0]])


def test_a_tensor_sharing_memory_is_not_the_same_tensor_for_overlap_checks():
    # torch compares TensorImpls: x.data is another tensor, so a strided
    # (non-dense) overlap is "too hard" there and runs in loop order; cextend
    # refuses that case with its documented message
    base = torch.tensor([[0.3125, -0.9375, -0.4375], [-1.75, -0.0, -1.125], [0.75, 1.0, 1.8125]])
    diagonal = torch.diagonal(base.t())
    with pytest.raises(RuntimeError, match="depend on the order elements are written"):
        diagonal.data[torch.tensor([2, 1, 0])] = diagonal
    dense = torch.tensor([1.0, 2.0, 3.0])
    dense.data.copy_(dense)         # a full overlap of dense tensors is fine
    assert dense.detach()._data is not dense._data
    np.testing.assert_array_equal(dense.numpy(), [1.0, 2.0, 3.0])


def test_setitem_of_a_tensor_into_its_own_expand_is_skipped_and_other_writes_raise():
    base = torch.tensor([2.25])
    spread = base.expand(3)
    spread[:] = base                # the very same elements: nothing to write, as torch
    with pytest.raises(RuntimeError, match="single memory location"):
        spread.copy_(torch.tensor([1.0, 2.0, 3.0]))
    one = torch.tensor([[1.0]])
    with pytest.raises(RuntimeError, match="single memory location"):
        one[0] = one


def test_writing_a_tensor_into_a_differently_strided_alias_raises():
    # row[-1, None] and row hold the same elements with other strides: torch's
    # overlap check calls that partial overlap
    row = torch.tensor([[2.0], [2.0], [2.5]]).T
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        row[-1, None] = row
    row[-1] = row[0]                # the same strides: a full overlap, allowed


OVERLAP = "some elements of the input tensor and the written-to tensor"


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("write", ["stepped", "range", "copy_"])
def test_copy_onto_the_same_memory_in_another_layout_is_a_partial_overlap(write, requires_grad):
    # the expanded target's size-1 dim has stride 0, the value's (expanded
    # from (3,)) stride 3: torch compares the strides, finds them different
    # and refuses (seed 12201, program 35110)
    v = torch.tensor([[2.75, -2.5, -1.25]], requires_grad=requires_grad) + 0
    e = v.expand(2, 1, -1)
    with pytest.raises(RuntimeError, match=OVERLAP):
        if write == "stepped":
            e[:2:2] = v
        elif write == "range":
            e[0:1] = v
        else:
            e[:2:2].copy_(v)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_copy_onto_the_same_memory_in_the_same_layout_is_skipped(requires_grad):
    v = torch.tensor([[2.75, -2.5, -1.25]], requires_grad=requires_grad) + 0
    e = v.expand(2, 1, -1)
    e[0] = v        # same sizes and strides: torch's copy_ returns at once
    np.testing.assert_array_equal(v.detach().numpy(), [[2.75, -2.5, -1.25]])
    x = torch.arange(6.0).reshape(2, 3)
    x[...] = x
    x.copy_(x)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))


def test_nan_to_num_in_place_on_an_expanded_integer_tensor_writes_nothing():
    t = torch.tensor([[4], [3]]).expand(2, 3)
    before = t._version
    assert t.nan_to_num_() is t
    assert t._version == before + 1
    np.testing.assert_array_equal(t.numpy(), [[4, 4, 4], [3, 3, 3]])
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.tensor([[1.0, np.nan]]).expand(3, 2).nan_to_num_()


def test_copy_slices_into_an_expanded_base_raises_at_backward():
    spread = torch.tensor([[[1.0, 2.75, 2.5]]]).expand(2, 1, 3).data
    spread[1, :] = torch.tensor(-0.25, requires_grad=True)
    with pytest.raises(RuntimeError, match="single memory location"):
        spread.sum().backward()


# -- updates of parameters and gradients whose elements share memory ---------------------------

SELF_OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


def _expanded_parameter(lib):
    p = lib.nn.Parameter(lib.zeros(1).expand(3))
    p.grad = lib.ones(3)
    return p


def _expanded_grad(lib):
    p = lib.nn.Parameter(lib.zeros(3))
    p.grad = lib.tensor([5.0]).expand(3)
    return p


_REFUSED_UPDATES = {
    "SGD": lambda lib: lib.optim.SGD([_expanded_parameter(lib)], lr=0.1).step(),
    "SGD with momentum": lambda lib: lib.optim.SGD([_expanded_parameter(lib)], lr=0.1, momentum=0.9).step(),
    "Adam": lambda lib: lib.optim.Adam([_expanded_parameter(lib)], lr=0.1).step(),
    "AdamW": lambda lib: lib.optim.AdamW([_expanded_parameter(lib)], lr=0.1).step(),
    "RMSprop": lambda lib: lib.optim.RMSprop([_expanded_parameter(lib)], lr=0.1).step(),
    "Adagrad": lambda lib: lib.optim.Adagrad([_expanded_parameter(lib)], lr=0.1).step(),
    "Adadelta": lambda lib: lib.optim.Adadelta([_expanded_parameter(lib)], lr=0.1).step(),
    "clip_grad_norm_": lambda lib: lib.nn.utils.clip_grad_norm_([_expanded_grad(lib)], 1.0),
    "clip_grad_value_": lambda lib: lib.nn.utils.clip_grad_value_([_expanded_grad(lib)], 1.0),
    "accumulation into .grad": lambda lib: _accumulate(lib, _expanded_grad(lib)),
}


def _accumulate(lib, p):
    (p * lib.tensor([1.0, 2.0, 3.0])).sum().backward()


@pytest.mark.parametrize("name", list(_REFUSED_UPDATES))
def test_in_place_updates_refuse_a_self_overlapping_parameter_or_gradient(name):
    """An expanded parameter or .grad: every element is one memory location,
    so an in-place update would write them all into one (cextend used to
    give [8, 8, 8] for the accumulation below, torch raises)."""
    libs = [torch] + ([real_torch] if real_torch is not None else [])
    for lib in libs:
        with pytest.raises(RuntimeError, match=SELF_OVERLAP):
            _REFUSED_UPDATES[name](lib)


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_an_expanded_gradient_is_only_read_by_the_optimizers(optimizer):
    results = []
    for lib in [torch] + ([real_torch] if real_torch is not None else []):
        p = _expanded_grad(lib)
        getattr(lib.optim, optimizer)([p], lr=0.1).step()
        results.append(p.tolist())
        p.grad = lib.tensor([5.0]).expand(3)
        lib.optim.SGD([p], lr=0.1).zero_grad(set_to_none=False)        # zero_ writes through an expand
        assert p.grad.tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(results[0], results[-1], rtol=1e-6)      # (Adam's sqrt may differ by an ulp)
    assert results[0][0] < 0 and len(set(results[0])) == 1


def test_an_empty_tensor_is_never_self_overlapping():
    # numpy gives an empty array zero strides: nothing is written, nothing to refuse
    empty = torch.zeros((0, 3))
    assert empty.add_(1).shape == (0, 3)
    p = torch.nn.Parameter(torch.zeros(0, 3))
    p.grad = torch.zeros(0, 3)
    torch.optim.SGD([p], lr=0.1).step()
    torch.nn.utils.clip_grad_value_([p], 1.0)
