"""Torch parity of result layouts: the strides torch's TensorIterator,
empty_like(preserve_format), expand and its kernels give a result, and the
memory formats is_contiguous reads; a later view() works or fails exactly
where torch's does.
"""
import numpy as np
import pytest

import cextend as torch


@pytest.mark.parametrize("shape, size, strides", [
    ((), (1,), (0,)), ((), (1, 3), (0, 0)), ((3,), (1, 3), (3, 1)), ((3,), (1, 1, 3), (3, 3, 1)),
    ((3,), (2, 1, 3), (0, 3, 1)), ((3,), (1, 2, 3), (0, 0, 1)), ((2, 1), (1, 2, 4), (2, 1, 0)),
    ((2, 1), (2, 1, 2, 1), (0, 2, 1, 1)), ((1, 4), (1, 1, 4), (4, 4, 1))])
def test_expand_gives_torchs_strides(shape, size, strides):
    # torch's inferExpandGeometry: a new leading dim of size 1 sits just above
    # the next one (its stride is that dim's size * stride), a broadcast one is 0
    assert torch.zeros(shape).expand(*size).stride() == strides


def test_expand_of_a_strided_tensor_keeps_its_strides():
    x = torch.zeros(3, 1)[::2]
    assert x.stride() == (2, 1)
    assert x.expand(1, 2, 4).stride() == (4, 2, 0)
    assert x.expand(2, 1, 2, 1).stride() == (0, 4, 2, 1)


def test_size_one_dims_carry_torch_strides():
    col = torch.tensor([[2.0], [2.0], [2.5]])
    row = col.T                                     # (1, 3), strides (1, 1)
    assert row.stride() == (1, 1)
    assert row[-1, None].stride() == (3, 1)          # None unsqueezes before a dim of size 3
    assert row[None].stride() == (1, 1, 1)
    assert row.unsqueeze(1).stride() == (1, 3, 1)
    assert col[:, :, None].stride() == (1, 1, 1)
    assert row.reshape(1, -1).stride() == (3, 1)     # computeStride, though the shape is the same
    assert row.clone().stride() == (1, 1)            # preserve_format keeps dense strides exactly
    p = torch.arange(8.0).reshape(2, 1, 4).permute(2, 1, 0)
    assert p.sum(0, keepdim=True).stride() == (2, 2, 1)


def test_is_contiguous_reads_its_memory_format():
    x = torch.zeros(2, 3, 4, 4)
    y = x.contiguous(memory_format=torch.channels_last)
    assert y.stride() == (48, 1, 12, 3)
    assert x.is_contiguous(memory_format=torch.contiguous_format) and not x.is_contiguous(
        memory_format=torch.channels_last)
    assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()
    assert torch.zeros(1, 3, 1, 1).is_contiguous(memory_format=torch.channels_last)     # size-1 strides free
    assert not torch.zeros(2, 3).is_contiguous(memory_format=torch.channels_last)
    assert not x.permute(0, 2, 3, 1).is_contiguous(memory_format=torch.channels_last)
    z = torch.zeros(2, 3, 4, 4, 5).contiguous(memory_format=torch.channels_last_3d)
    assert z.is_contiguous(memory_format=torch.channels_last_3d) and not z.is_contiguous(
        memory_format=torch.channels_last)
    assert x.is_contiguous(memory_format=torch.preserve_format) and not y.is_contiguous(
        memory_format=torch.preserve_format)
    with pytest.raises(TypeError, match="must be torch.memory_format, not int"):
        x.is_contiguous(memory_format=3)


def _strides(t):
    return tuple(t.stride())


def test_results_are_laid_out_as_torchs_empty_like():
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


def _permuted_expanded():
    return torch.arange(6.0).reshape(2, 3).t()[:, None].expand(3, 4, 2)


@pytest.mark.parametrize("op", ["neg", "exp", "abs", "sign", "sqrt", "nan_to_num", "isnan", "logit", "sigmoid"])
def test_one_input_ops_lay_out_an_expanded_input_as_tensor_iterator(op):
    # torch orders the output's dims by the input's strides, leaving the
    # stride-0 dim where it is: (3, 4, 2) with strides (1, 0, 3) -> (1, 3, 12)
    x = _permuted_expanded()
    r = getattr(x, op)()
    assert r.stride() == (1, 3, 12)
    with np.errstate(all="ignore"):
        want = {"neg": np.negative, "exp": np.exp, "abs": np.abs, "sign": np.sign, "sqrt": np.sqrt,
                "nan_to_num": np.nan_to_num, "isnan": np.isnan,
                "logit": lambda a: np.log(a / (1 - a)), "sigmoid": lambda a: 1 / (1 + np.exp(-a))}[op](x.numpy())
    np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("op", ["erfc", "erf", "lgamma", "digamma", "erfinv", "tanh"])
def test_one_input_ops_keep_a_transposed_layout_even_from_a_c_kernel(op):
    # torch's result of a dense input takes its strides: a later view() fails
    # exactly where torch's fails
    x = torch.arange(12.0, dtype=torch.float64).reshape(4, 3).transpose(0, 1) / 13
    r = getattr(x, op)()
    assert r.stride() == (1, 3)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        r.view(12)


def test_a_product_with_a_number_orders_size_one_dims_as_tensor_iterator():
    row = torch.tensor([[1.25], [-1.5], [-1.25]]).T       # (1, 3), strides (1, 1)
    r = row * 1
    assert r.stride() == (1, 1)
    np.testing.assert_array_equal(r.numpy(), [[1.25, -1.5, -1.25]])
    flat = r.reshape(3)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        flat[None] = r


@pytest.mark.parametrize("base", [2.0, 0, 3, True])
def test_pow_of_a_number_is_contiguous(base):
    # torch's pow(number, Tensor) gives a contiguous output whatever the
    # exponent's layout (a later view() works; float32 gelu then takes oneDNN's path)
    e = np.array([[2.5, -3.0, 1.0], [1.25, 2.75, 0.5]], dtype=np.float32)
    t = torch.tensor(e).transpose(0, 1)
    r = base ** t
    assert r.is_contiguous()
    with np.errstate(divide="ignore"):
        want = np.power(np.float32(base), e.T).reshape(6)
    np.testing.assert_array_equal(r.view(6).numpy(), want)
    assert not (t * base).is_contiguous()                       # a product follows the tensor
    assert not torch.pow(torch.tensor(2.0), t).is_contiguous()  # so does a 0-d tensor base


_CAST_PROGRAMS = {
    # program: (result strides, the same in numpy)
    "e / f64": ((3, 1), lambda e, ie, f: e / f),
    "f64 / e": ((1, 4), lambda e, ie, f: f / e),
    "e.double() + f64": ((3, 1), lambda e, ie, f: e + f),
    "ie / f64": ((3, 1), lambda e, ie, f: ie / f),
    "e * 2": ((3, 1), lambda e, ie, f: e * 2),
}


@pytest.mark.parametrize("program", sorted(_CAST_PROGRAMS))
def test_an_operand_cast_to_the_common_dtype_is_laid_out_as_its_copy(program):
    # torch casts an operand of another dtype with .to() (an expanded one
    # becomes dense, so it has an opinion on the dim order) before ordering dims
    e = torch.tensor([[1.0, 2.0, 3.0]]).expand(4, 3)
    ie = torch.tensor([[1], [2], [3], [4]]).expand(4, 3)
    f64 = torch.arange(12.0, dtype=torch.float64).reshape(3, 4).t()
    strides, reference = _CAST_PROGRAMS[program]
    r = eval(program)
    assert r.stride() == strides
    with np.errstate(divide="ignore"):
        want = reference(e.numpy().astype(np.float64), ie.numpy(), f64.numpy())
    np.testing.assert_array_equal(r.numpy(), want)


@pytest.mark.parametrize("base", [[[True, True]], [[1, 2]]])
@pytest.mark.parametrize("op", [lambda t: t.add(-1.25), lambda t: t * 2.5, lambda t: 1.5 + t, lambda t: t / 2,
                                lambda t: t.add(1)])
def test_an_expanded_tensor_cast_by_a_number_gives_a_contiguous_result(base, op):
    # torch casts the operand with .to() first (an expanded tensor becomes
    # dense), so view(-1) works on the result (seed 13201, program 26076)
    t = torch.tensor(base).expand(3, 2)
    result = op(t)
    assert result.stride() == (2, 1) and result.is_contiguous()
    want = op(torch.tensor(np.broadcast_to(np.array(base), (3, 2)).copy()))
    np.testing.assert_array_equal(result.view(-1).numpy(), want.view(-1).numpy())


def test_a_column_expanded_then_cast_keeps_torchs_order():
    column = torch.tensor([[True], [False]]).expand(2, 3)
    assert column.add(-1.25).stride() == (3, 1)
    assert column.t().add(1.5).stride() == (2, 1)


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


def test_reductions_are_contiguous_whatever_the_input_layout():
    x = torch.randn(2, 4, 3).transpose(-1, -2)
    for y in (torch.amax(x, 0, keepdim=True), x.sum(0, keepdim=True), x.prod(0, keepdim=True),
              x.std(0, keepdim=True), x.logsumexp(0, keepdim=True), x.norm(dim=0, keepdim=True),
              torch.var_mean(x, 0, keepdim=True)[1], x.nansum(0, keepdim=True)):
        assert y.stride() == (12, 4, 1)
    assert x.count_nonzero(0).stride() == (4, 1)
    np.testing.assert_allclose(x.sum(0, keepdim=True).numpy(), x.numpy().sum(0, keepdims=True), rtol=1e-6)


def test_accumulated_grad_obeys_the_layout_contract():
    x = torch.randn(2, 3, 6, 8).contiguous(memory_format=torch.channels_last).requires_grad_()
    (x * 2).sum().backward()
    assert x.grad.stride() == x.stride()
    s = torch.randn(3, 8)[:, ::2].detach().requires_grad_()
    (s * 2).sum().backward()
    assert s.grad.stride() == (4, 1)
