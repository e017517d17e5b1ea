"""The Tensor surface: construction, dtype rules, views, conversions, and
the gradients of its spellings that are not op-table entries (indexing,
setitem, T, contiguous, expand_as, reflected operators)."""
import numpy as np
import pytest

import cextend as cx
from helpers import assert_gradients, over_layouts


def test_default_dtype_is_float32_like_torch():
    assert cx.Tensor(2, 3).dtype == cx.float32
    assert cx.randn(2).dtype is cx.float32
    assert cx.zeros(2).dtype is cx.float32 and cx.ones(2).dtype is cx.float
    assert cx.tensor([1.0, 2.0]).dtype is cx.float32
    assert cx.tensor([1, 2]).dtype is cx.int64 and cx.tensor([True]).dtype is cx.bool
    assert cx.tensor(np.zeros(2)).dtype is cx.float64          # ndarray keeps its dtype
    assert cx.from_numpy(np.zeros(2, np.int32)).dtype is cx.int32
    assert cx.randn(2, dtype=cx.double).dtype is cx.float64
    assert cx.Tensor([1, 2]).dtype is cx.float32


def test_sizes_as_ints_or_a_tuple():
    assert cx.randn(2, 3).shape == (2, 3) == cx.randn((2, 3)).shape
    assert cx.zeros([4]).size() == cx.Size([4])
    assert cx.Tensor(3, 4).size(1) == 4 and cx.Tensor(3, 4).size(-2) == 3
    assert repr(cx.Size([2, 3])) == "cextend.Size([2, 3])"


def test_integer_tensors_never_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        cx.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        cx.zeros(2, dtype=cx.long).requires_grad_()


def test_unsupported_data_is_rejected():
    with pytest.raises(TypeError):
        cx.tensor(np.zeros(2, complex))
    with pytest.raises(TypeError):
        cx.tensor(["a", "b"])
    with pytest.raises(TypeError):
        cx.from_numpy([1.0])


def test_from_numpy_shares_memory_and_tensor_copies():
    a = np.zeros(3)
    shared, copied = cx.from_numpy(a), cx.tensor(a)
    a[0] = 5
    assert shared[0].item() == 5 and copied[0].item() == 0


def test_numpy_raises_for_tensors_that_require_grad():
    x = cx.randn(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\)"):
        x.numpy()
    assert isinstance(x.detach().numpy(), np.ndarray)


def test_data_shares_storage_outside_the_graph():
    w = cx.Tensor(3, 4)
    w.data.uniform_(-0.1, 0.1)
    assert np.all(np.abs(w.numpy()) <= 0.1)
    p = cx.randn(3, requires_grad=True)
    d = p.data
    assert not d.requires_grad and d.grad_fn is None
    d.zero_()
    assert not p.detach().numpy().any()


def test_detach_shares_the_version_counter():
    x = cx.randn(3, dtype=cx.float64, requires_grad=True)
    y = x * 1
    z = y * y
    y.detach().add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        z.sum().backward()


def test_views_share_storage_and_copies_do_not():
    x = cx.zeros(2, 3)
    x.t()[0, 1] = 7
    assert x[1, 0].item() == 7
    x.view(6)[0] = 1
    x.unsqueeze(0)[0, 0, 1] = 2
    x[0][2] = 3
    np.testing.assert_array_equal(x.numpy()[0], [1, 2, 3])
    r = x.t().reshape(6)            # not expressible as a view: a copy
    r[0] = 99
    assert x[0, 0].item() == 1


def test_view_refuses_non_contiguous_input():
    with pytest.raises(RuntimeError, match=r"Use \.reshape"):
        cx.zeros(2, 3).t().view(6)
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        cx.zeros(2, 3).view(4)


def test_squeeze_on_a_non_singleton_dim_is_a_no_op():
    x = cx.zeros(2, 1, 3)
    assert x.squeeze(0).shape == (2, 1, 3)
    assert x.squeeze(1).shape == (2, 3) and x.squeeze().shape == (2, 3)
    assert x.unsqueeze(-1).shape == (2, 1, 3, 1)


def test_expand_and_dim_errors():
    assert cx.zeros(3, 1).expand(2, 3, 4).shape == (2, 3, 4)
    assert cx.zeros(3, 1).expand(-1, 5).shape == (3, 5)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        cx.zeros(3, 2).expand(3, 4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        cx.zeros(3).sum(2)


def test_arithmetic_with_scalars_numpy_and_type_promotion():
    x = cx.ones(3)
    assert (x * 2.5).dtype is cx.float32                  # Python scalars are weak
    assert (x * np.float64(2.5)).dtype is cx.float32
    assert (x + cx.ones(3, dtype=cx.double)).dtype is cx.float64
    np.testing.assert_array_equal((2 - x).numpy(), [1, 1, 1])
    np.testing.assert_array_equal((np.arange(3.0) + x.double()).numpy(), [1, 2, 3])
    assert ((x > 0.5) == cx.tensor([True, True, True])).numpy().all()


def test_item_and_scalar_conversions():
    assert cx.tensor([2.5]).item() == 2.5
    assert float(cx.tensor(3.0)) == 3.0
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        cx.zeros(2).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(cx.zeros(2))


def test_sum_and_mean_with_dims():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = cx.tensor(a)
    np.testing.assert_array_equal(x.sum(1).numpy(), a.sum(1))
    np.testing.assert_array_equal(x.sum((0, 2), keepdim=True).numpy(), a.sum((0, 2), keepdims=True))
    np.testing.assert_allclose(x.mean(-1).numpy(), a.mean(-1))
    assert x.sum().shape == ()
    with pytest.raises(RuntimeError, match="floating point"):
        cx.tensor([1, 2]).mean()


def test_repr_matches_torch_style():
    assert repr(cx.tensor([2.0])) == "tensor([2.])"
    assert repr(cx.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(cx.tensor([0.5], dtype=cx.double)) == "tensor([0.5000], dtype=cextend.float64)"
    assert repr(cx.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(cx.float64) == "cextend.float64"


def test_to_and_casts():
    x = cx.ones(2)
    assert x.to(cx.float32) is x
    assert x.double().dtype is cx.float64 and x.long().dtype is cx.int64
    assert x.to(np.float64).dtype is cx.float64 and x.to("cpu") is x
    if not cx.cuda.is_available():
        with pytest.raises(RuntimeError, match="device cuda is not available: "):
            x.to("cuda")


def test_manual_seed_reproduces():
    cx.manual_seed(3)
    a = cx.randn(4)
    cx.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), cx.randn(4).numpy())


def test_uniform_bounds_and_factories():
    x = cx.empty(1000).uniform_(-0.25, 0.5)
    assert x.numpy().min() >= -0.25 and x.numpy().max() <= 0.5
    assert cx.arange(5).dtype is cx.int64 and cx.arange(0.0, 1.0, 0.5).shape == (2,)
    assert cx.full((2, 2), 7).dtype is cx.int64 and cx.eye(3).numpy().trace() == 3
    assert cx.zeros_like(cx.ones(2, dtype=cx.double)).dtype is cx.float64


def test_cat_stack_errors():
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1"):
        cx.cat([cx.zeros(2, 3), cx.zeros(3, 2)], 1)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        cx.stack([cx.zeros(2), cx.zeros(3)])
    assert cx.cat([cx.zeros(2, 3), cx.zeros(2, 1)], 1).shape == (2, 4)


def test_matmul_shape_errors():
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        cx.zeros(2, 3).mm(cx.zeros(2, 3))
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        cx.zeros(3).mm(cx.zeros(3, 2))


def test_torch_style_module_functions():
    x = cx.tensor([[1.0, -2.0]])
    np.testing.assert_array_equal(cx.relu(x).numpy(), [[1, 0]])
    assert cx.sum(x).item() == -1 and cx.t(x).shape == (2, 1)


def _setitem(a, b):
    out = a * 1
    out[1] = b
    return out


_ROWS = np.array([0, 2, 2])

# Tensor spellings that are not entries of the op table (indexing, the T
# property, contiguous, expand_as, the reflected Python-number operators):
# name -> (function of the inputs, input shapes).  The table's ops are
# gradchecked from their own samples in tests/test_op_table.py.
SPELLINGS = {
    "index_int": (lambda a: a[1], [(3, 4)]),
    "index_slice": (lambda a: a[:, 1:3], [(3, 4)]),
    "index_rows_repeated": (lambda a: a[cx.from_numpy(_ROWS)], [(3, 4)]),
    "index_ellipsis_none": (lambda a: a[..., None, 1], [(3, 4)]),
    "setitem": (_setitem, [(3, 4), (4,)]),
    "T": (lambda a: a.T * 1, [(2, 3, 4)]),
    "contiguous": (lambda a: a.contiguous() * 1, [(3, 4)]),
    "expand_as": (lambda a, b: a.expand_as(b) * b, [(1, 4), (3, 4)]),
    "radd_scalar": (lambda a: 2.5 + a + 1, [(3, 4)]),
    "rtruediv_scalar": (lambda a: 2.0 / (a * a + 1), [(3, 2)]),
}


@over_layouts(SPELLINGS)
def test_indexing_and_spellings_outside_the_op_table_gradcheck(name, layout):
    assert_gradients(*SPELLINGS[name], layout)
