"""Torch-parity fixes found by the long fuzz runs (DISAGREEMENTS.md D48,
D51, D58, D78): each checked against an independent reference (numpy in
float64) or against torch 2.13's documented behaviour, without torch."""
import numpy as np
import pytest

import cextend as torch


@pytest.mark.parametrize("scale", [1.0, 5.0, 12.0])
def test_float32_tanh_is_correctly_rounded(scale):
    # numpy's float32 tanh is up to 1 ulp off (tanh(9.5) = 0.99999994, the
    # correctly rounded value is 1.0); atanh turns that ulp into 8.66 vs inf
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(4099) * scale).astype(np.float32)
    x[:3] = [9.5, -9.5, 0.0]
    got = torch.tensor(x).tanh().numpy()
    assert np.array_equal(got, np.tanh(x.astype(np.float64)).astype(np.float32))
    assert got[0] == 1.0 and got[1] == -1.0
    assert torch.tensor([9.5]).tanh().atanh().item() == float("inf")


def test_float32_tanh_of_a_strided_view_and_in_place():
    x = np.linspace(-10, 10, 30, dtype=np.float32).reshape(5, 6)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    t = torch.tensor(x)
    assert np.array_equal(t.t().tanh().numpy(), want.T)
    t[:, ::2].tanh_()
    assert np.array_equal(t.numpy()[:, ::2], want[:, ::2])
    assert np.array_equal(t.numpy()[:, 1::2], x[:, 1::2])


def test_einsum_contracts_left_to_right_as_torch():
    # ((A B) C): the product A B is finite, times C's -inf column gives -inf
    # in row 1; A (B C) meets inf - inf first and gives NaN
    a = np.array([[1.75, 0.25, -2.75], [2.75, -1.75, -0.5]])
    b = np.array([[1.25, -1.125, 1.25, -0.125], [-0.8125, -0.4375, -0.5, -0.3125],
                  [-1.375, -1.625, 1.25, 0.1875]])
    c = np.array([[0.5, -np.inf], [0.875, 0.6875], [-1.3125, -np.inf], [1.5, -0.0625]])
    with np.errstate(invalid="ignore"):
        want = (a @ b) @ c
    got = torch.einsum("ij,jk,kl->il", torch.tensor(a), torch.tensor(b), torch.tensor(c)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[1, 1] == -np.inf and np.isnan(got[0, 1])


@pytest.mark.parametrize("shapes", [((3, 5), (5, 7), (7, 2), (2, 4)), ((1, 6), (6, 1), (1, 9)),
                                    ((4, 13), (13, 13), (13, 0))])
def test_einsum_chain_values_and_gradients(shapes):
    rng = np.random.default_rng(len(shapes))
    arrays = [rng.standard_normal(s) for s in shapes]
    letters = "abcdefgh"
    subs = [letters[i] + letters[i + 1] for i in range(len(shapes))]
    equation = ",".join(subs) + "->a" + letters[len(shapes)]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = torch.einsum(equation, *ts)
    np.testing.assert_allclose(out.detach().numpy(), np.linalg.multi_dot(arrays), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    for i, t in enumerate(ts):
        left = np.linalg.multi_dot([np.ones((1, shapes[0][0]))] + arrays[:i]) if i else np.ones((1, shapes[0][0]))
        right = (np.linalg.multi_dot(arrays[i + 1:] + [np.ones((shapes[-1][1], 1))])
                 if i + 1 < len(arrays) else np.ones((shapes[-1][1], 1)))
        np.testing.assert_allclose(t.grad.numpy(), left.T @ right.T, rtol=1e-10, atol=1e-12)


def test_view_keeps_a_grad_fn_after_its_base_is_detached_in_place():
    # torch regenerates the view's AsStridedBackward with the base's (absent)
    # gradient edge: grad_fn is not None, and no gradient reaches x
    x = torch.tensor([[1.0, 2.0]], requires_grad=True)
    y = x.clone()
    v = y.t()
    y.detach_()
    y.mul_(2)
    assert v.grad_fn is not None and v.requires_grad and not v.is_leaf
    (v * 3).sum().backward()
    assert x.grad is None
    np.testing.assert_array_equal(v.detach().numpy(), [[2.0], [4.0]])


def test_filling_an_int_tensor_with_a_value_requiring_grad_records_history():
    w = torch.tensor(-1.25, requires_grad=True)
    ints = torch.tensor([0, 1])
    ints.fill_(w)
    assert ints.requires_grad and ints.grad_fn is not None
    np.testing.assert_array_equal(ints.detach().numpy(), [-1, -1])
    # no view or op of an integer tensor can carry history
    for make in (lambda: ints.select(-1, 0), lambda: ints.t(), lambda: ints.reshape(2), lambda: ints[0],
                 lambda: ints.clone(), lambda: ints.sum()):
        with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
            make()
    assert ints.float().requires_grad and not (ints == -1).requires_grad


def test_index_fill_of_an_int_view_with_a_value_requiring_grad():
    base = torch.tensor([[-2, -4], [0, 2]])
    view = base.t()
    view.index_fill_(0, torch.tensor([0]), torch.tensor(0.75, requires_grad=True))
    np.testing.assert_array_equal(base.detach().numpy(), [[0, -4], [0, 2]])
    assert view.requires_grad and base.requires_grad and type(base.grad_fn).__name__ == "CopySlices"
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
        base[0]


@pytest.mark.parametrize("split", [lambda t: t.split(1, 0), lambda t: t.chunk(2, 0), lambda t: t.unbind(0)])
def test_copy_into_an_int_multi_output_view_records_nothing(split):
    # torch's copy_ into an integer tensor records nothing, so the views'
    # rules for in-place ops with grad do not apply (fill_ would raise)
    base = torch.tensor([[-2, -4], [0, 2]])
    part = split(base)[0]
    part.copy_(torch.tensor([1.25, -2.75], requires_grad=True).reshape(part.shape))
    np.testing.assert_array_equal(base.numpy(), [[1, -2], [0, 2]])
    assert not part.requires_grad and not base.requires_grad
    with pytest.raises(RuntimeError, match="returns multiple views"):
        split(base)[0].fill_(torch.tensor(1.0, requires_grad=True))


def test_copy_into_a_no_grad_bool_view_records_nothing():
    flags = torch.tensor([True, False])
    with torch.no_grad():
        first = flags.unbind(-1)[0]
    first.copy_(torch.tensor(0.0, requires_grad=True))
    np.testing.assert_array_equal(flags.numpy(), [False, False])
    assert not first.requires_grad


# -- found by the fuzz run of seed 9701 -----------------------------------------------------

def test_lerp_in_place_with_only_the_weight_requiring_grad():
    rng = np.random.default_rng(3)
    a, b, w = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3))
    start, end = torch.tensor(a), torch.tensor(b[:, ::1])
    weight = torch.tensor(w, requires_grad=True)
    start.lerp_(end, weight)
    g = rng.standard_normal((3, 4)).astype(np.float32)
    start.backward(torch.tensor(g))
    np.testing.assert_allclose(weight.grad.numpy(), g * (b - a), rtol=1e-6)


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


def test_index_ops_write_into_self_as_out():
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


@pytest.mark.parametrize("key, numpy_reference", [
    ((0, slice(None), [0, 2]), lambda a: a[0][:, [0, 2]]),
    ((1, slice(1, None), [[3], [0]]), lambda a: a[1][1:, [[3], [0]]]),
    ((None, 1, slice(None), [1, 3]), lambda a: a[None, 1][:, :, [1, 3]]),
    (([1, 0], slice(None), 2), lambda a: a[:, :, 2][[1, 0]]),
    ((0, [2, 1], 3), lambda a: a[0, [2, 1], 3]),
    (([[1], [0]], 2, [0, 3]), lambda a: a[:, 2][[[1], [0]], [0, 3]]),
])
def test_an_int_among_index_tensors_selects_first(key, numpy_reference):
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


def test_list_indices_are_saved_like_tensors():
    # torch turns [0, 1] into a tensor and saves it: freed by a backward,
    # so a second backward through the same node raises
    x = torch.tensor([[3.0, 1.0], [-2.5, 1.25]], requires_grad=True)
    picked = x[[0, -2, 1, -1]]
    picked.abs().sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        picked.unbind(-2)[2].sum().backward()
    y = x[[1, 0]]
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[4.0, 4.0], [0.0, 4.0]])      # abs: sign (+2, -2), then 2 x 1


def test_index_copy_checks_its_source_for_in_place_changes():
    w = torch.ones(3, 2, requires_grad=True)
    source = w * 1
    y = torch.zeros(3, 4).index_copy(1, torch.tensor([0, 2]), source)
    source.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x = torch.zeros(3, 4, requires_grad=True)
    plain = torch.ones(3, 2)
    y = x.index_copy(1, torch.tensor([0, 2]), plain)
    plain.add_(1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.tile([0., 1., 0., 1.], (3, 1)))


def test_max_pool1d_result_is_a_view_when_its_input_needs_grad():
    # torch runs max_pool1d_with_indices then, whose result is a squeeze
    x = torch.tensor(np.random.default_rng(2).standard_normal((2, 3, 7)), requires_grad=True)
    y = torch.nn.functional.max_pool1d(x, 3, stride=2, padding=1, ceil_mode=True)
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        y.detach_()
    plain = torch.nn.functional.max_pool1d(x.detach(), 3, stride=2, padding=1, ceil_mode=True)
    plain.detach_()
    np.testing.assert_array_equal(plain.numpy(), y.detach().numpy())


def test_mse_loss_target_gradient_zero_is_positive():
    # torch differentiates the target as 2 (target - input): +0.0 where equal
    x = torch.tensor([2.25, 1.0, -3.0], requires_grad=True)
    loss = torch.nn.functional.mse_loss(x.detach(), x, reduction="sum")
    grad, = torch.autograd.grad(loss, [x])
    assert np.all(grad.numpy() == 0) and not np.any(np.signbit(grad.numpy()))


def test_number_divided_by_a_tensor_is_reciprocal_times_the_number():
    # torch's __rtruediv__ is self.reciprocal() * other: its rounding, and a
    # backward that reads the reciprocal (so zeroing x's data after does not
    # change the gradient)
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(1000) * 7).astype(np.float32)
    got = (3.0 / torch.tensor(a)).numpy()
    np.testing.assert_array_equal(got, np.reciprocal(a) * np.float32(3.0))
    x = torch.tensor(-2.25, requires_grad=True)
    y = 0.5 / x
    x.unsqueeze(-1).data.zero_()
    y.backward()
    np.testing.assert_allclose(x.grad.item(), -0.5 / 2.25 ** 2, rtol=1e-6)


# -- found by the fuzz run of seed 9801 -----------------------------------------------------

@pytest.mark.parametrize("make", [lambda x: torch.nn.functional.elu(x, 0.5), torch.nn.functional.selu,
                                  lambda x: torch.nn.functional.celu(x, 0.7),
                                  lambda x: torch.nn.functional.elu(x.clone(), 0.5, inplace=True)])
def test_elu_second_derivative_is_zero_at_zero(make):
    # torch's first derivative takes the negative branch at 0 (x <= 0), its
    # second derivative masks with x < 0; finite differences agree away from 0
    x = torch.tensor([-0.0, 0.0, -1.0, 0.5, -2.5], dtype=torch.float64, requires_grad=True)
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64)
    g, = torch.autograd.grad((make(x) * weights).sum(), [x], create_graph=True)
    g.sum().backward()
    assert x.grad[0].item() == 0.0 and x.grad[1].item() == 0.0 and x.grad[3].item() == 0.0
    h = 1e-6
    for i in (2, 4):
        def first(v):
            t = torch.tensor([v], dtype=torch.float64, requires_grad=True)
            d, = torch.autograd.grad(make(t).sum(), [t])
            return d.item() * weights[i].item()
        fd = (first(x[i].item() + h) - first(x[i].item() - h)) / (2 * h)
        np.testing.assert_allclose(x.grad[i].item(), fd, rtol=1e-5)


def test_views_of_an_int_tensor_with_history_raise():
    ints = torch.tensor([6, -4, 4, 0])
    ints.fill_(torch.tensor(-2.0, requires_grad=True))
    for split in (lambda t: t.chunk(2, 0), lambda t: t.split(1), lambda t: t.unbind(0)):
        with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
            split(ints)
    x = torch.randn(3, 4, requires_grad=True)
    values, indices = torch.max(x, 1)
    assert values.requires_grad and not indices.requires_grad


def test_batch_norm_saves_its_running_stats():
    # torch's kernel updates them without a version bump (one module can run
    # twice before a backward) and its node saves them (a change after raises)
    bn = torch.nn.BatchNorm1d(3)
    x1 = torch.randn(4, 3, requires_grad=True)
    y1, y2 = bn(x1), bn(torch.randn(4, 3))
    (y1.sum() + y2.sum()).backward()
    for training in (True, False):
        bn.train(training)
        y = bn(x1)
        bn.running_var.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


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


def test_float32_scans_accumulate_in_double():
    x = torch.tensor([[-0.0, 1e8, 1.0, -1e8]])
    np.testing.assert_array_equal(x.cumsum(1).numpy(), [[0.0, 1e8, 1e8, 1.0]])
    assert not np.signbit(x.cumsum(1).numpy()[0, 0])
    with np.errstate(over="ignore"):
        want = np.cumprod(np.array([1e30, 1e30, 1e-30], np.float32).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(torch.tensor([1e30, 1e30, 1e-30]).cumprod(0).numpy(), want)
    assert np.isfinite(want[2])


def _cumprod_grad_reference(a, g):
    """d/da_k of sum_j g_j prod_{i<=j} a_i, exactly (float64, no division)."""
    grad = np.zeros_like(a)
    for k in range(a.size):
        for j in range(k, a.size):
            grad[k] += g[j] * np.prod(np.delete(a[:j + 1], k))
    return grad


def test_cumprod_gradient_with_zeros_matches_the_product_rule():
    rng = np.random.default_rng(4)
    for _ in range(50):
        a = rng.choice([0.0, 1.5, -2.0, 0.5, -1.25, 3.0], size=(3, 6))
        g = rng.standard_normal((3, 6))
        x = torch.tensor(a, requires_grad=True)
        grad, = torch.autograd.grad(torch.cumprod(x, 1), [x], torch.tensor(g))
        want = np.stack([_cumprod_grad_reference(a[r], g[r]) for r in range(3)])
        np.testing.assert_allclose(grad.numpy(), want, rtol=1e-10, atol=1e-12)
        # past a row's first zero the gradient is exactly +0.0, as torch's
        past = np.cumsum(a == 0, 1) - (a == 0) > 0
        assert not np.any(np.signbit(grad.numpy()[past]))


def test_cumprod_gradient_past_a_zero_ignores_an_infinite_incoming_gradient():
    x = torch.tensor([[2.0, 0.0, 3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    g = torch.tensor([[1.0, 1.0, float("inf"), 1.0]], dtype=torch.float64)
    grad, = torch.autograd.grad(torch.cumprod(x, 1), [x], g)
    # d/dx3 = 0 exactly (x1 = 0 is a factor); torch's formula never forms 0 * inf there
    assert grad[0, 3].item() == 0.0 and grad[0, 2].item() == 0.0
    assert grad[0, 1].item() == float("inf")


@pytest.mark.parametrize("shapes, modified", [(((1, 3, 4), (3, 4, 2)), "b"), (((2, 1, 3, 4), (3, 4, 2)), "b"),
                                              (((3, 4), (2, 4, 2)), "b")])
def test_matmul_saves_copies_where_torch_copies(shapes, modified):
    # torch's matmul expands and reshapes (or folds) its operands; where that
    # copies, an in-place change to the original afterwards does not matter
    sa, sb = shapes
    a = torch.ones(*sa, requires_grad=modified == "b") * 1.5
    b = torch.ones(*sb, requires_grad=modified == "a") * 0.5
    y = torch.matmul(a, b)
    (b if modified == "b" else a).add_(1)
    y.sum().backward()


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 2))])
def test_matmul_saves_a_view_where_torch_does(shapes):
    # (2, 3, 4) @ (1, 4, 2): torch squeezes b (it requires grad) and folds a,
    # a view of it
    a = torch.ones(*shapes[0]) * 1.0
    b = torch.ones(*shapes[1], requires_grad=True) * 0.5
    y = torch.matmul(a, b)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_cumprod_gradient_at_the_first_zero_reads_the_saved_result():
    # torch reads the product before the first zero from the saved output:
    # a change to it through .data (no version bump) shows in the gradient
    x = torch.tensor([[1.6875, -0.0]], dtype=torch.float64, requires_grad=True).t()
    y = x.cumprod(0)
    y.data.mul_(2.0)
    y.sum().backward()
    assert x.grad is None
    leaf = torch.tensor([1.6875, 0.0], dtype=torch.float64, requires_grad=True)
    out = leaf.cumprod(0)
    out.data.mul_(2.0)
    out.backward(torch.tensor([1.0, 1.0], dtype=torch.float64))
    np.testing.assert_allclose(leaf.grad.numpy(), [2.0 * 1.6875 / 1.6875, 2.0 * 1.6875])


@pytest.mark.parametrize("layout", ["sliced", "transposed", "expanded"])
def test_batch_norm_of_strided_operands_computes_unfolded(layout):
    # torch folds y = x * alpha + beta only when every operand is contiguous;
    # otherwise ((x - mean) * invstd) * w + b, which differs at infinities
    rng = np.random.default_rng(6)
    a = rng.choice([1.5, -2.0, 0.0, 0.25], size=(4, 3, 2))
    rm, rv = np.array([0.5, np.inf, -1.0]), np.array([1.0, 0.5, 2.0])
    w, b = np.array([1.0, np.inf, 2.0]), np.array([0.0, 1.0, np.inf])
    x = torch.tensor(a)
    mean = torch.tensor(rm)
    if layout == "sliced":
        x = torch.tensor(np.repeat(a, 2, axis=2))[:, :, ::2]
    elif layout == "transposed":
        x = torch.tensor(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
    else:
        mean = torch.tensor([0.5], dtype=torch.float64).expand(3)
        rm = np.full(3, 0.5)
    y = torch.nn.functional.batch_norm(x, mean, torch.tensor(rv), torch.tensor(w), torch.tensor(b), training=False)
    shape = (1, 3, 1)
    with np.errstate(all="ignore"):
        want = ((a - rm.reshape(shape)) * (1 / np.sqrt(rv + 1e-5)).reshape(shape)) * w.reshape(shape) + b.reshape(shape)
    np.testing.assert_array_equal(y.numpy(), want)


def test_batch_norm_of_contiguous_operands_folds():
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64)
    y = torch.nn.functional.batch_norm(x, torch.tensor([0.0, 0.0], dtype=torch.float64),
                                       torch.tensor([1.0, 1.0], dtype=torch.float64),
                                       torch.tensor([np.inf, 1.0], dtype=torch.float64), None, training=False)
    # alpha = inf, beta = 0 - 0 * inf = NaN: every element of channel 0 is NaN
    assert np.isnan(y.numpy()[:, 0]).all()


def _strides(t):
    return tuple(t.stride())


def test_results_laid_out_as_torchs_empty_like():
    # preserve_format keeps a strided tensor's dim order (dense strides in it)
    sliced_t = torch.zeros(5, 3).t()[:, ::2]
    permuted = torch.zeros(2, 4, 3).permute(2, 0, 1)[:, :, ::2]
    expanded_t = torch.zeros(2, 1, 3).expand(2, 4, 3).transpose(0, 2)
    for source, want in ((sliced_t, (1, 3)), (permuted, (1, 6, 3)), (expanded_t, (1, 3, 12))):
        assert _strides(source.clone()) == want
        assert _strides(torch.flip(source, [0])) == want
        assert _strides(source.sort(0).values) == want and _strides(source.sort(0).indices) == want
        assert _strides(source.argsort(1)) == want
        assert _strides(torch.zeros_like(source)) == want
        assert _strides(torch.full_like(source, 2.0)) == want
        np.testing.assert_array_equal(source.sort(0).values.numpy(), np.sort(source.numpy(), 0))
    transposed = torch.zeros(5, 3).t()
    for make in (torch.zeros_like, torch.ones_like, torch.empty_like, torch.rand_like, torch.randn_like):
        assert _strides(make(transposed)) == (1, 3)
    assert _strides(torch.zeros_like(transposed, memory_format=torch.contiguous_format)) == (5, 1)


def test_roll_result_is_contiguous():
    x = torch.tensor([[-0.1875, -0.4375, -0.0625, 0.0]]).expand(3, 4)
    rolled = x.roll((2, -1), (1, 0))
    assert rolled.is_contiguous()
    np.testing.assert_array_equal(rolled.numpy(), np.roll(x.numpy(), (2, -1), (1, 0)))
    flat = rolled.reshape(-1)
    rolled.data.zero_()
    assert (flat.numpy() == 0).all()        # a view, as torch's


def test_linear_result_is_a_view_where_torch_flattens():
    rng = np.random.default_rng(8)
    w, b = torch.tensor(rng.standard_normal((5, 4))), torch.tensor(rng.standard_normal(5))
    for shape in ((4,), (2, 3, 4), (2, 1, 3, 4)):
        a = rng.standard_normal(shape)
        y = torch.nn.functional.linear(torch.tensor(a), w, b)
        np.testing.assert_allclose(y.numpy(), a @ w.numpy().T + b.numpy(), rtol=1e-12)
        with pytest.raises(RuntimeError, match="Can't detach views in-place"):
            y.detach_()
    assert torch.nn.functional.linear(torch.tensor(rng.standard_normal((2, 4))), w, b)._base is None
    assert torch.nn.functional.linear(torch.tensor(rng.standard_normal((3, 4))), w)._base is None
    x = torch.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    torch.nn.functional.linear(x.t().contiguous().t().unsqueeze(0), w, b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(w.numpy().sum(0), (3, 1)), rtol=1e-12)


def test_matmul_of_a_vector_and_a_matrix_resizes_out_as_torch():
    # torch runs mm_out(out, a.unsqueeze(0), b).squeeze_(0): out becomes a
    # contiguous block where it starts, with the resize warning
    buf = torch.zeros(6)
    window = buf[::2]
    with pytest.warns(UserWarning, match="resized"):
        result = torch.matmul(torch.ones(2), torch.ones(2, 3), out=window)
    assert result is window and window.stride() == (1,) and tuple(window.shape) == (3,)
    np.testing.assert_array_equal(buf.numpy(), [2, 2, 2, 0, 0, 0])


def test_in_place_view_ops():
    leaf = torch.randn(1, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.squeeze_(0)
    y = leaf * 2
    assert y.squeeze_(0) is y and tuple(y.shape) == (3,) and y._version == 1
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [[2.0, 2.0, 2.0]])
    base = torch.randn(2, 3, requires_grad=True)
    part = (base * 2)[0:1]
    part.squeeze_(0)
    assert part._base is not None and tuple(part.shape) == (3,)
    part.sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), [[2.0] * 3, [0.0] * 3])
    z = torch.zeros(2, 3)
    z.t_()
    assert tuple(z.shape) == (3, 2) and z.stride() == (1, 3)
    z.transpose_(0, 1)
    z.unsqueeze_(0)
    assert tuple(z.shape) == (1, 2, 3)


def test_linear_saves_each_factor_only_for_the_others_gradient():
    # as torch's addmm: with only the bias requiring grad nothing is saved,
    # so a second backward runs and changing the operands does not matter
    x, w = torch.tensor([1.875, 0.0, 0.375, -0.125]), torch.ones(3, 4)
    b = torch.tensor([-0.8125, -0.0, 0.3125], requires_grad=True)
    y = torch.nn.functional.linear(x, w, b)
    w.add_(1)
    y.sum().backward()
    y.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 2.0, 2.0])
    x = torch.randn(3, 4, requires_grad=True)
    weight = torch.randn(5, 4)
    out = torch.nn.functional.linear(x, weight)
    weight.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_convolutions_write_channels_last_where_torch_does():
    rng = np.random.default_rng(9)
    for dt in (torch.float32, torch.float64):
        x = torch.tensor(rng.standard_normal((2, 3, 5, 6)), dtype=dt)
        w = torch.tensor(rng.standard_normal((4, 3, 3, 3)), dtype=dt)
        plain = torch.nn.functional.conv2d(x, w)
        assert plain.stride() == (48, 12, 4, 1)
        for a, b in ((x.contiguous(memory_format=torch.channels_last), w),
                     (x, w.contiguous(memory_format=torch.channels_last))):
            y = torch.nn.functional.conv2d(a, b)
            assert y.stride() == (48, 1, 16, 4)
            np.testing.assert_allclose(y.numpy(), plain.numpy(), rtol=1e-5, atol=1e-5)
        t = torch.nn.functional.conv_transpose2d(x.contiguous(memory_format=torch.channels_last),
                                                 torch.tensor(rng.standard_normal((3, 4, 3, 3)), dtype=dt))
        assert t.stride() == (224, 1, 32, 4)
        # conv1d: a transposed weight decides, a permuted input does not (torch
        # makes the 3-D input contiguous first)
        w1 = torch.tensor(rng.standard_normal((4, 2, 3)), dtype=dt).transpose(1, 2)
        assert torch.nn.functional.conv1d(torch.tensor(rng.standard_normal((2, 3, 7)), dtype=dt), w1).stride() \
            == (24, 1, 4)
        permuted = torch.tensor(rng.standard_normal((2, 7, 3)), dtype=dt).transpose(1, 2)
        assert torch.nn.functional.conv1d(permuted, torch.tensor(rng.standard_normal((4, 3, 2)), dtype=dt)).stride() \
            == (24, 6, 1)


# -- found by the fuzz run of seed 9901 -----------------------------------------------------

def test_layer_norm_input_gradient_follows_torchs_kernel():
    # ds = sum(g w x), db = sum(g w): an infinite weight makes the whole row NaN
    x = torch.tensor([[2.0, -0.25, -0.625, -0.75], [1.625, 0.625, -0.3125, 1.125]], requires_grad=True)
    w = torch.tensor([-float("inf"), 0.75, 0.75, -0.6875])
    torch.nn.functional.layer_norm(x, [4], w, w).sum().backward()
    assert np.isnan(x.grad.numpy()).all()
    # finite: the usual formula, against float64 numpy
    rng = np.random.default_rng(12)
    a, wa, g = rng.standard_normal((5, 7)), rng.standard_normal(7), rng.standard_normal((5, 7))
    t = torch.tensor(a, requires_grad=True)
    torch.nn.functional.layer_norm(t, [7], torch.tensor(wa), None).backward(torch.tensor(g))
    mean, var = a.mean(1, keepdims=True), a.var(1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5)
    xhat, gw = (a - mean) * rstd, g * wa
    want = rstd * (gw - gw.mean(1, keepdims=True) - xhat * (gw * xhat).mean(1, keepdims=True))
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-9, atol=1e-12)


def test_lerp_rounds_once_as_torchs_fused_kernel():
    a, b = torch.tensor([1.75, -2.5]), torch.tensor([0.625, -0.4375])
    got = a.lerp(b, 0.8).numpy()
    w = np.float32(0.8)
    want = (np.float64(w - np.float32(1)) * np.float64(b.numpy() - a.numpy()) + b.numpy().astype(np.float64))
    np.testing.assert_array_equal(got, want.astype(np.float32))
    assert got[0] == np.float32(0.84999996)


def test_einsum_results_are_views_where_torchs_are():
    a, b, m = torch.randn(3), torch.randn(4), torch.randn(3, 4)
    assert torch.einsum("i,j->ij", a, b)._base is None          # a product, nothing summed
    assert torch.einsum("ij,jk->ki", m, torch.randn(4, 5)).stride() == (3, 1)
    assert torch.einsum("ij", m)._base is not None and torch.einsum("ij->", m)._base is None
    x = torch.randn(3, 4, requires_grad=True)
    torch.einsum("ij,jk->ki", x, torch.ones(4, 2)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0))


def test_pooling_keeps_a_channels_last_input_channels_last():
    rng = np.random.default_rng(13)
    a = rng.standard_normal((2, 3, 6, 8))
    x = torch.tensor(a).contiguous(memory_format=torch.channels_last)
    F = torch.nn.functional
    for y in (F.max_pool2d(x, 2), F.avg_pool2d(x, 2), F.max_pool2d(x, 2, return_indices=True)[1]):
        assert y.stride() == (36, 1, 12, 3)
    np.testing.assert_array_equal(F.max_pool2d(x, 2).numpy(), F.max_pool2d(torch.tensor(a), 2).numpy())
    assert F.adaptive_avg_pool2d(x, 3).stride() == (27, 1, 9, 3)
    assert F.max_pool2d(x[0], 2).stride() == (12, 4, 1)         # unbatched: contiguous
    permuted = torch.tensor(rng.standard_normal((2, 8, 3))).transpose(1, 2)
    assert F.avg_pool1d(permuted, 2).stride() == (12, 1, 3)
    assert F.max_pool1d(permuted, 2).stride() == (12, 4, 1)     # its own kernel


def test_grad_obeys_the_layout_contract():
    x = torch.randn(2, 3, 6, 8).contiguous(memory_format=torch.channels_last).requires_grad_()
    (x * 2).sum().backward()
    assert x.grad.stride() == x.stride()
    s = torch.randn(3, 8)[:, ::2].detach().requires_grad_()
    (s * 2).sum().backward()
    assert s.grad.stride() == (4, 1)


def test_norm_zero_leaves_grad_none_and_a_leaf_moved_into_the_graph_raises():
    x = torch.randn(3, 4, requires_grad=True)
    x.norm(0).backward()
    assert x.grad is None
    leaf = torch.zeros(2, requires_grad=True)
    copy = leaf.clone()
    leaf.detach_()
    leaf.add_(copy)
    with pytest.raises(RuntimeError, match="leaf variable has been moved into the graph interior"):
        leaf.sum().backward()


def test_integer_floor_divide_with_history_records_nothing():
    ints = torch.tensor([4, 5])
    ints.fill_(torch.tensor(3.0, requires_grad=True))
    assert not (ints // 2).requires_grad and not (7 % ints).requires_grad
    with pytest.raises(RuntimeError, match="Autograd not support dtype"):
        ints % 2
    assert (ints / 2).requires_grad


def test_cumprod_double_backward_through_zeros_is_torchs_sum_of_omitted_products():
    # under create_graph torch sums the products that omit each element; with
    # an infinity among them that is NaN where a recurrence would give inf
    x = torch.tensor([0.0, float("inf"), 0.75, -0.0, 2.0], requires_grad=True)
    x.clone().cumprod_(-1).mean().backward(create_graph=True)
    assert np.isnan(x.grad.detach().numpy()[0]) and x.grad.detach().numpy()[1] == 0.0
    y = torch.tensor([[0.0, 1.5, -2.0, 0.0, 0.5], [1.0, 2.0, 0.0, 3.0, -1.0]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: t.cumprod(1), (y,))


def test_elu_second_derivative_is_torchs_elu_double_backward():
    # masked with x < 0 and multiplied in: 0 (not NaN) at NaN, -0.0 where the
    # incoming weight is negative
    x = torch.tensor([[-1.0, 2.0, -0.25, 2.5], [float("nan"), 1.5, -1.5, -2.0]], requires_grad=True)
    g, = torch.autograd.grad(torch.nn.functional.elu(x, alpha=2.0).sum(), [x], create_graph=True)
    (g * torch.tensor([[2.0, 0.5, 1.0, -0.75], [-1.25, 2.5, -1.5, 1.25]])).sum().backward()
    got = x.grad.numpy()
    assert got[1, 0] == 0.0 and np.signbit(got[0, 3]) and got[0, 1] == 0.0
    np.testing.assert_allclose(got[0, 0], 2.0 * 2.0 * np.exp(-1.0), rtol=1e-6)
    z = torch.tensor([-0.7, 0.3, -1.9], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: torch.nn.functional.celu(t, 0.7), (z,))


def test_batch_norm_evaluation_gradient_requires_grad_under_create_graph():
    x = torch.tensor([[0.5625], [1.1875], [-0.6875]], requires_grad=True)
    y = torch.nn.functional.batch_norm(x.expand(3, 2), torch.tensor([-1.1, 1.48]), torch.tensor([1.44, 1.57]),
                                       torch.tensor([0.5, -1.0]), None, training=False)
    y.sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None


# -- found by the fuzz run of seed 10001 ----------------------------------------------------

def test_backward_with_the_root_among_inputs_runs_and_frees_its_node():
    x = torch.tensor(0.6875, requires_grad=True)
    y = x.abs()
    y.backward(inputs=[y])
    assert y.grad.item() == 1.0 and x.grad is None
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    r = torch.tensor(2.1875, requires_grad=True).clone().acosh_()
    r.backward(inputs=[r])          # no derivative is computed: acosh_'s missing one does not raise
    assert r.grad.item() == 1.0


def test_unbatched_pools_are_not_views():
    x3 = torch.randn(3, 6, 8)
    F = torch.nn.functional
    for y in (F.max_pool2d(x3, 2), F.avg_pool2d(x3, 2), F.adaptive_avg_pool2d(x3, 3), F.adaptive_max_pool2d(x3, 3)):
        assert y._base is None
    with torch.no_grad():
        values, indices = F.adaptive_max_pool2d(x3, 3, return_indices=True)
    values.add_(torch.ones(1, requires_grad=True))      # not a view made under no_grad


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


def test_sort_saves_the_indices_it_returns():
    v = torch.tensor(-0.9375, requires_grad=True)
    values, indices = torch.sort(v)
    indices.mul_(indices)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (values * 1.75).sum().backward()


def test_floor_divide_out_refuses_only_a_leaf_requiring_grad():
    leaf = torch.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.floor_divide(torch.ones(2), 1.5, out=leaf)
    out = torch.zeros(2, requires_grad=True) * 1
    result = torch.floor_divide(torch.tensor([3.0, -3.0], requires_grad=True), 1.75, out=out)
    assert result is out and out.grad_fn is not None
    np.testing.assert_array_equal(out.detach().numpy(), [1.0, -2.0])


def test_clamp_with_equal_bounds_gives_neither_bound_a_gradient():
    x = torch.tensor([0.125, 3.0, 1.0])
    low = torch.tensor([2.0, 2.0, 0.0], requires_grad=True)
    high = torch.tensor([2.0, 2.0, 5.0], requires_grad=True)
    x.clip(low, high).sum().backward()
    np.testing.assert_array_equal(low.grad.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(high.grad.numpy(), [0.0, 1.0, 0.0])


def test_setitem_of_a_tensor_into_its_own_expand():
    base = torch.tensor([2.25])
    spread = base.expand(3)
    spread[:] = base                # the very same elements: nothing to write, as torch
    with pytest.raises(RuntimeError, match="single memory location"):
        spread.copy_(torch.tensor([1.0, 2.0, 3.0]))
    one = torch.tensor([[1.0]])
    with pytest.raises(RuntimeError, match="single memory location"):
        one[0] = one


def test_outer_products_keep_the_sign_of_zero():
    a = torch.tensor([[-0.5625, 1.9375], [1.0, 1.625]], requires_grad=True)
    v = torch.tensor([-0.3125, 0.0])
    grad, = torch.autograd.grad((a.mv(v) * torch.tensor([1.25, -1.0])).sum(), [a])
    assert np.signbit(grad.numpy()[1, 1]) and not np.signbit(grad.numpy()[0, 1])


def test_binary_cross_entropy_target_gradient_is_minus_logit():
    x = torch.tensor([0.5, 0.875, 0.125], dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0.25, 0.5, 1.0], dtype=torch.float64, requires_grad=True)
    _, grad_t = torch.autograd.grad(torch.nn.functional.binary_cross_entropy(x, t, reduction="sum"), [x, t])
    a = x.detach().numpy()
    np.testing.assert_allclose(grad_t.numpy(), -np.log(a / (1 - a)))
    assert np.signbit(grad_t.numpy()[0])


def test_cat_stack_addcmul_where_lay_out_as_torch():
    t = torch.randn(2, 3).t()
    assert torch.stack([t, t]).stride() == (6, 2, 1) and torch.cat([t, t], 1).stride() == (4, 1)
    cl = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert torch.cat([cl, cl]).stride() == (60, 1, 15, 3)
    assert torch.cat([cl, cl.contiguous()]).stride() == (60, 20, 5, 1)
    assert torch.stack([cl, cl]).stride() == (120, 60, 1, 15, 3)
    a = torch.randn(4, 3).t()
    assert a.addcmul(torch.randn(4), torch.randn(3, 1)).stride() == (1, 3)
    assert torch.lerp(a, torch.randn(3, 4), 0.5).stride() == (1, 3)
    assert torch.where(a > 0, torch.randn(3, 4), a).stride() == (1, 3)


def test_logcumsumexp_gradient_ignores_a_nan_incoming_gradient_elsewhere():
    x = torch.tensor([-2.0, 1.25, -2.5, -2.25, -3.0], requires_grad=True)
    torch.logcumsumexp(x, -1).sqrt().sum().backward()
    grad = x.grad.numpy()
    assert np.isfinite(grad).all()
    a = np.array([-2.0, 1.25, -2.5, -2.25, -3.0])
    r = np.logaddexp.accumulate(a)
    with np.errstate(invalid="ignore"):
        g = 0.5 / np.sqrt(r)
    g = np.where(np.isnan(g), 0.0, g)       # torch's log-space split drops the NaN
    want = np.array([np.sum(g[k:] * np.exp(a[k] - r[k:])) for k in range(5)])
    np.testing.assert_allclose(grad, want, rtol=1e-5)
    big = torch.tensor([300.0, -1000.0, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: s.logcumsumexp(0), (big,))


# -- found by the fuzz run of seed 10101 ----------------------------------------------------

def test_cummax_saves_its_input():
    x = torch.randn(4, 3, requires_grad=True)
    part = x[::2]
    values, _ = part.cummax(0)
    with torch.no_grad():
        part.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        values.sum().backward()


def test_reductions_are_contiguous_whatever_the_input_layout():
    x = torch.randn(2, 4, 3).transpose(-1, -2)
    for y in (torch.amax(x, 0, keepdim=True), x.sum(0, keepdim=True), x.prod(0, keepdim=True),
              x.std(0, keepdim=True), x.logsumexp(0, keepdim=True), x.norm(dim=0, keepdim=True),
              torch.var_mean(x, 0, keepdim=True)[1], x.nansum(0, keepdim=True)):
        assert y.stride() == (12, 4, 1)
    assert x.count_nonzero(0).stride() == (4, 1)
    np.testing.assert_allclose(x.sum(0, keepdim=True).numpy(), x.numpy().sum(0, keepdims=True), rtol=1e-6)


def test_a_not_implemented_derivative_node_raises_when_run_as_a_captured_root():
    v = torch.tensor([1.625, 1.75, 1.4375], requires_grad=True).clone()
    v.floor_divide_(-1)
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide_? is not implemented"):
        v.mean().backward(inputs=[v])


def test_losses_differentiate_the_target_with_swapped_operands():
    # as torch: the target's zero gradient takes the incoming gradient's sign
    x = torch.tensor([2.0, -0.0, 0.0, 1.5], requires_grad=True)
    for loss in (torch.nn.functional.smooth_l1_loss, torch.nn.functional.huber_loss,
                 torch.nn.functional.mse_loss):
        g, = torch.autograd.grad((loss(x, x) * -2.5).sum(), [x])
        assert np.all(g.numpy() == 0) and np.all(np.signbit(g.numpy()))


def test_a_double_backward_through_one_convolution_gradient_frees_the_others():
    # torch's convolution_backward is one node for the input's and the
    # weight's gradient: a backward through either frees both
    x = torch.randn(1, 2, 5, 5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 2, 2, 3, dtype=torch.float64, requires_grad=True)
    gw, gx = torch.autograd.grad(torch.nn.functional.conv2d(x, w).mean(), [w, x], create_graph=True)
    gw.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        (gx.clone() * 2).sum().backward()


# -- found by the fuzz runs of seeds 10201 and 10301 ----------------------------------------

def test_returned_pool_indices_are_the_saved_ones():
    x = torch.randn(3, 5, requires_grad=True)
    values, indices = torch.nn.functional.adaptive_max_pool1d(x, 4, return_indices=True)
    indices.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        values.sum().backward()


def test_copy_slices_into_an_expanded_base_raises_at_backward():
    spread = torch.tensor([[[1.0, 2.75, 2.5]]]).expand(2, 1, 3).data
    spread[1, :] = torch.tensor(-0.25, requires_grad=True)
    with pytest.raises(RuntimeError, match="single memory location"):
        spread.sum().backward()


def test_batch_norm_bias_gradient_requires_grad_under_create_graph():
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    bias = torch.tensor([-0.5, 2.5, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.batch_norm(x, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64),
                                       None, bias, training=False)
    gb, = torch.autograd.grad(y.sum(), [bias], create_graph=True)
    assert gb.requires_grad and gb.grad_fn is not None
    np.testing.assert_array_equal(gb.detach().numpy(), [5.0, 5.0, 5.0])


def test_an_operand_requiring_grad_without_an_edge_is_still_saved():
    # a view made under no_grad of a tensor requiring grad: torch saves it
    # for pow's backward, which then frees it
    y = torch.tensor([[1.0, 2.0]]).mv(torch.tensor([3.0, 1.0], requires_grad=True))
    with torch.no_grad():
        v = y.view(1, 1)
    z = v.pow(2)
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.mean().backward()


# -- found by the fuzz runs of seeds 10401 and 10501 ----------------------------------------

def test_addcdiv_always_saves_tensor2():
    # read by two of torch's formulas, so saved whatever gradient is wanted
    x = torch.randn(3, requires_grad=True).clone()
    t1, t2 = torch.randn(3), torch.rand(3) + 1
    y = x.addcdiv(t1, t2)
    with torch.no_grad():
        t2.mul_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x = torch.randn(3, requires_grad=True).clone()
    t1, t2 = torch.randn(3), torch.rand(3) + 1
    y = x.addcmul(t1, t2)
    with torch.no_grad():
        t2.mul_(1)
    y.sum().backward()                  # addcmul keeps neither


def test_logit_and_its_gradient():
    x = torch.tensor([0.3, 0.6, 0.0, -0.0, 1.0, -0.5], dtype=torch.float64, requires_grad=True)
    y = x.logit()
    a = x.detach().numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(y.detach().numpy(), np.log(a / (1 - a)))
    g, = torch.autograd.grad(y, [x], torch.tensor([1.0, 1.0, -0.5, -0.5, 2.0, 1.0], dtype=torch.float64))
    got = g.numpy()
    np.testing.assert_allclose(got[:2], 1 / (a[:2] * (1 - a[:2])))
    assert got[2] == -np.inf and got[3] == -np.inf and got[4] == np.inf and np.isnan(got[5])
    clipped = torch.logit(x, eps=0.1)
    assert clipped.detach().numpy()[2] == pytest.approx(np.log(0.1 / 0.9))
    z = torch.tensor([0.3, 0.6, 0.45], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(torch.logit, (z,)) and torch.autograd.gradgradcheck(torch.logit, (z,))


def test_layer_norm_gradient_of_a_sum_is_zero_under_create_graph_too():
    x = torch.tensor(np.random.default_rng(14).standard_normal((3, 5)), requires_grad=True)
    g, = torch.autograd.grad(torch.nn.functional.layer_norm(x, (5,)).sum(), [x], create_graph=True)
    assert np.abs(g.detach().numpy()).max() < 1e-12
    w = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: torch.nn.functional.layer_norm(a, (5,), b), (x, w))


# -- found by the fuzz runs of seeds 10601 and 10701 ----------------------------------------

def test_activations_lay_their_results_out_as_the_input():
    F = torch.nn.functional
    t = torch.randn(4, 3).t()
    for f in (F.gelu, F.elu, F.silu, F.softplus, F.leaky_relu, F.relu6, F.mish, F.celu):
        y = f(t)
        assert y.stride() == (1, 3)
        np.testing.assert_allclose(y.numpy(), f(t.contiguous()).numpy(), rtol=1e-6)
    assert F.logsigmoid(t).stride() == (4, 1)           # its kernel writes a contiguous buffer


def test_logit_in_place_refuses_an_integer_tensor():
    for t in (torch.tensor([True, False]), torch.tensor([1, 0])):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            t.logit_()
    x = torch.tensor([0.25, 0.5], requires_grad=True).clone()
    x.logit_().sum().backward()
