"""Torch-parity fixes found by the fuzz runs of seeds 10801 to 11101: each
checked against an independent reference (numpy in float64, the derivative
written out) or against torch 2.13's documented behaviour, without torch."""
import numpy as np
import pytest

import cextend as torch

F = torch.nn.functional


# -- batch_norm's double backward gives the input no gradient where torch's does not ----------

@pytest.mark.parametrize("target", ["input", "bias"])
def test_batch_norm_evaluation_double_backward_leaves_input_grad_none(target):
    # torch's double-backward node reads the input (so the gradient requires
    # grad), but in evaluation its formula gives the input no gradient: None
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [3.0, 1.0, 0.0]], requires_grad=True)
    bias = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    y = F.batch_norm(x, torch.zeros(3), torch.ones(3), torch.tensor([1.0, 2.0, -1.0]), bias, training=False)
    g, = torch.autograd.grad((y * torch.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, -1.0], [2.0, 2.0, 1.0]])).sum(),
                             [x if target == "input" else bias], create_graph=True)
    assert g.requires_grad
    g.sum().backward()
    assert x.grad is None and bias.grad is None


def test_batch_norm_training_double_backward_still_reaches_the_input():
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    w = torch.tensor([1.0, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: F.batch_norm(a, None, None, b, None, training=True),
                                        (x, w))


# -- logsigmoid keeps torch's buffer --------------------------------------------------------------

def test_logsigmoid_backward_reads_the_buffer_saved_by_forward():
    # torch saves exp(-|x|) at forward and its backward reads that buffer with
    # the input's current value: after x.data changes, x < 0 picks the branch
    # and the old buffer gives the slope
    a = np.array([1.0, -2.0, 3.0])
    x = torch.tensor(a, requires_grad=True)
    y = F.logsigmoid(x)
    x.data.mul_(-1)
    y.sum().backward()
    z = np.exp(-np.abs(a))
    negative = -a < 0
    want = np.where(negative, 1.0, 0.0) - np.where(negative, 1.0, -1.0) * (z / (1 + z))
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsigmoid_gradients_against_the_formula(dtype):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(37) * 8).astype(dtype)
    a[:4] = [0.0, -0.0, np.inf, -np.inf]
    x = torch.tensor(a, requires_grad=True)
    go = rng.standard_normal(37).astype(dtype)
    g, = torch.autograd.grad((F.logsigmoid(x) * torch.tensor(go)).sum(), [x], create_graph=True)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(g.detach().numpy(), go / (1 + np.exp(a64)), rtol=1e-6 if dtype == np.float32 else 1e-14)
    (g * g).sum().backward()
    s = 1 / (1 + np.exp(-a64))
    with np.errstate(invalid="ignore"):
        want = 2 * (go / (1 + np.exp(a64))) * go * (s - 1) * s
    # float32: torch's formula takes s - 1 in float32, which cancels for large x
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-30)


def test_logsigmoid_double_backward_gradgradcheck():
    x = torch.tensor([-3.5, -0.25, 0.0, 0.75, 4.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(F.logsigmoid, (x,))


# -- what div and pow save for a view made under no_grad -------------------------------------------

def _no_grad_view():
    w = torch.tensor([3.0, 1.0], requires_grad=True)
    y = torch.tensor([[1.0, 2.0]]).mv(w)
    with torch.no_grad():
        v = y.view(1, 1)
    assert v.requires_grad and v.grad_fn is None
    return v


@pytest.mark.parametrize("program", ["v / v", "v.pow(v)", "v / 2"])
def test_div_and_pow_save_unguarded_operands_without_an_edge(program):
    # torch's generated code saves div's `other` and pow's operands whatever
    # the edges (both formulas read them): a second backward finds them freed
    v = _no_grad_view()
    z = eval(program)
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.sum().backward()


@pytest.mark.parametrize("program", ["v * v", "v * 2"])
def test_mul_guards_what_it_saves(program):
    v = _no_grad_view()
    z = eval(program)
    z.sum().backward()
    z.sum().backward()          # nothing saved: a product reads each operand for the other's gradient


@pytest.mark.parametrize("program", ["v / v", "v.pow(v)", "v / torch.tensor([[2.0]], requires_grad=True)"])
def test_a_saved_no_grad_view_changed_in_place_is_refused_as_torch(program):
    v = _no_grad_view()
    z = eval(program)
    with torch.no_grad():
        v.add_(1)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base or another view"):
        z.sum().backward()


def test_div_by_a_number_keeps_no_copy_of_a_no_grad_view():
    v = _no_grad_view()
    z = v / 2
    with torch.no_grad():
        v.add_(1)               # self is not saved (only other's gradient would read it)
    z.sum().backward()


# -- layouts ----------------------------------------------------------------------------------------

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


def test_gelu_of_a_contiguous_pow_result_is_atens_formula_at_infinity():
    # the contiguous result may send torch's float32 gelu to oneDNN, whose
    # answer at +inf depends on the CPU; cextend's is ATen's formula (inf)
    t = torch.tensor([[1.0, -2.75], [-np.inf, 1.0]]).mT
    out = F.gelu(0 ** t).numpy()        # 0 ** -inf = 0 ** -2.75 = inf
    np.testing.assert_array_equal(out, [[0.0, np.inf], [np.inf, 0.0]])


# -- saved tensors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_class_weight_changed_in_place_before_backward_raises(loss, reduction):
    x = torch.tensor([[0.1, -0.3, 0.5], [2.25, 1.25, 0.75]], requires_grad=True)
    w = torch.tensor([0.5, 0.6, 0.9])
    out = getattr(F, loss)(x, torch.tensor([2, 0]), weight=w, reduction=reduction)
    w[0] = 2.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_nll_loss_double_backward_saves_the_weight_too():
    x = torch.tensor([[0.1, -0.3, 0.5], [2.25, 1.25, 0.75]], requires_grad=True)
    w = torch.tensor([0.5, 0.6, 0.9])
    g, = torch.autograd.grad(F.nll_loss(x, torch.tensor([2, 0]), weight=w).sum(), [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [[0, 0, -0.9 / 1.4], [-0.5 / 1.4, 0, 0]], rtol=1e-6)
    w[1] = 3.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (g * 2).sum().backward()


# -- floor_divide's not-implemented node written into a view ---------------------------------------

@pytest.mark.parametrize("form", ["out", "inplace"])
def test_floor_divide_into_a_view_has_edges_only_to_inputs_requiring_grad(form):
    # torch's NotImplemented node has an edge to the divisor only; the base's
    # CopySlices drops its fn's first edge as self's, so the divisor is not
    # reachable: backward(inputs=[divisor]) computes nothing and raises nothing
    divisor = torch.tensor(1.4375, requires_grad=True)
    base = torch.tensor([[-2.5, 1.25], [-2.25, 0.25], [3.0, -1.0]])
    view = base.T
    if form == "out":
        torch.floor_divide(torch.tensor([[1.4375, -0.25, -1.375], [-0.875, -0.25, -1.1875]]), divisor, out=view)
    else:
        view.floor_divide_(divisor)
    assert view.requires_grad
    (view * 2).sum().backward(inputs=[divisor])
    assert divisor.grad is None
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide"):
        (view * 2).sum().backward()


def test_sgn_saves_its_input_as_torch():
    # torch's SgnBackward saves self and the result: changing the input in
    # place before backward raises, though the real gradient is zero
    x = torch.tensor([[1.0, -2.0], [0.0, 3.0]], requires_grad=True)
    v = x.transpose(0, 1) * 1
    r = torch.sgn(v)
    with torch.no_grad():
        v.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        r.sum().backward()
    y = x * 1
    y.sgn().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 2)))


# -- clamp's (Number, Number) overload ----------------------------------------------------------

@pytest.mark.parametrize("bounds", [("t", -1), (-1, "t")])
def test_clamp_reads_a_zero_dim_bound_beside_a_number_as_a_number(bounds):
    # torch matches clamp_(Scalar, Scalar): nothing is saved, so changing the
    # 0-d bound before backward does not raise
    m = torch.tensor(-1.75)
    low, high = (m if b == "t" else b for b in bounds)
    x = torch.tensor([[1.25], [0.5], [-3.0]], requires_grad=True)
    y = x.clone().clamp_(low, high)
    m.fill_(5.0)
    y.sum().backward()
    a = np.array([[1.25], [0.5], [-3.0]])
    lo, hi = (-1.75, -1) if bounds[0] == "t" else (-1, -1.75)
    inside = (a >= lo) & (a <= hi)
    np.testing.assert_array_equal(x.grad.numpy(), inside.astype(np.float32))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        x.clamp(torch.tensor([[0.0], [1.0], [2.0]]), 2)


# -- 1-d convolutions save their input, not a contiguous copy ---------------------------------------

@pytest.mark.parametrize("fn", ["conv1d", "conv_transpose1d"])
@pytest.mark.parametrize("layout", ["expanded", "transposed"])
def test_one_dim_convolution_checks_its_input_version(fn, layout):
    base = torch.tensor([[[1.125], [-0.25]], [[0.0], [-0.1875]]], dtype=torch.float64)
    if layout == "expanded":
        x, written = base.expand(2, 2, 5), base
    else:
        x = torch.arange(20.0, dtype=torch.float64).reshape(2, 5, 2).transpose(1, 2)
        written = x
    w = torch.ones(2, 2, 3, dtype=torch.float64)
    b = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    y = getattr(F, fn)(x, w, b, padding=1)
    with torch.no_grad():
        written.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# -- result layouts of one-input ops and size-1 dims ------------------------------------------------

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


def test_nan_to_num_in_place():
    x = torch.tensor([[1.0, np.nan, np.inf], [-np.inf, 2.0, 3.0]], requires_grad=True)
    y = x * 2
    z = y.nan_to_num_(nan=1.0, posinf=5.0)
    assert z is y
    np.testing.assert_array_equal(z.detach().numpy(), [[2, 1, 5], [np.finfo(np.float32).min, 4, 6]])
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 0, 0], [0, 2, 2]])


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


def test_writing_a_tensor_into_a_differently_strided_alias_raises():
    # row[-1, None] and row hold the same elements with other strides: torch's
    # overlap check calls that partial overlap
    row = torch.tensor([[2.0], [2.0], [2.5]]).T
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        row[-1, None] = row
    row[-1] = row[0]                # the same strides: a full overlap, allowed


def test_layer_norm_output_is_contiguous_for_any_input_layout():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4))
    x = torch.tensor(a).t()
    y = F.layer_norm(x, (3,))
    assert y.is_contiguous() and y.stride() == (3, 1)
    y.view(-1)                      # torch's kernel writes a contiguous output: view() works
    rows = a.T
    want = (rows - rows.mean(1, keepdims=True)) / np.sqrt(rows.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["erfc", "erf", "lgamma", "digamma", "erfinv", "tanh"])
def test_one_input_ops_keep_a_transposed_layout_even_from_a_c_kernel(op):
    # torch's result of a dense input takes its strides: a later view() fails
    # exactly where torch's fails
    x = torch.arange(12.0, dtype=torch.float64).reshape(4, 3).transpose(0, 1) / 13
    r = getattr(x, op)()
    assert r.stride() == (1, 3)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        r.view(12)


def test_nan_to_num_in_place_on_an_expanded_integer_tensor_writes_nothing():
    t = torch.tensor([[4], [3]]).expand(2, 3)
    before = t._version
    assert t.nan_to_num_() is t
    assert t._version == before + 1
    np.testing.assert_array_equal(t.numpy(), [[4, 4, 4], [3, 3, 3]])
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.tensor([[1.0, np.nan]]).expand(3, 2).nan_to_num_()


@pytest.mark.parametrize("accumulate", [True, False])
def test_put_saves_source_only_for_its_own_gradient(accumulate):
    def run(needs):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=needs == "self")
        s = torch.tensor([5.0, 6.0], requires_grad=needs == "source")
        y = torch.put(x, torch.tensor([1, 2]), s, accumulate)
        with torch.no_grad():
            s.add_(1)
        y.sum().backward()
        return x, s
    x, _ = run("self")
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1], [1, 1]] if accumulate else [[1, 0], [0, 1]])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run("source")


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


def test_gather_saves_its_input():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.gather(1, torch.tensor([[0], [1]]))
    with torch.no_grad():
        x.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_logit_gradient_under_create_graph_divides_as_it_is():
    # torch's differentiable formula: g / (x * (1 - x)), so -0.0 gives -inf;
    # its first-order kernel treats -0.0 as +0.0
    def grad(create_graph):
        x = torch.tensor([0.5, -0.0, 0.0, 1.5], requires_grad=True)
        g, = torch.autograd.grad(x.logit().sum(), [x], create_graph=create_graph)
        return g.detach().numpy()
    np.testing.assert_array_equal(grad(True), [4.0, -np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(grad(False), [4.0, np.inf, np.inf, np.nan])


def test_out_resized_to_zero_dims_is_writable():
    out = torch.zeros((0,), dtype=torch.bool)
    torch.logical_not(torch.tensor(-0.125), out=out)
    out.fill_(torch.tensor(-0.75))
    assert out.shape == () and out.item() is True


@pytest.mark.parametrize("shape", [(4,), (2, 3, 4)])
def test_linear_with_a_strided_bias_is_no_view(shape):
    # torch 2.13 takes its fused flatten path only with a contiguous bias;
    # otherwise matmul then add_(bias): the result is no view, and a later
    # in-place change does not go through CopySlices
    x = torch.ones(*shape, dtype=torch.float64)
    w = torch.ones(3, 4, dtype=torch.float64)
    b = torch.tensor([1.4375], dtype=torch.float64, requires_grad=True)
    y = F.linear(x, w, b.expand(3))
    first = y[..., 0]
    y.add_(torch.tensor([-6, 2, -2]))
    first.sum().backward()
    y.sum().backward()          # no saved tensor on the way: a second pass works, as torch's
    n = int(np.prod(shape[:-1]))
    assert b.grad.item() == n + 3 * n
    assert F.linear(x, w, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))._base is not None


def test_a_product_with_a_number_orders_size_one_dims_as_tensor_iterator():
    row = torch.tensor([[1.25], [-1.5], [-1.25]]).T       # (1, 3), strides (1, 1)
    r = row * 1
    assert r.stride() == (1, 1)
    np.testing.assert_array_equal(r.numpy(), [[1.25, -1.5, -1.25]])
    flat = r.reshape(3)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        flat[None] = r


def test_floor_divide_refuses_a_view_of_a_leaf_requiring_grad_as_out():
    leaf = torch.tensor([[1.5, 2.0, -0.25, 2.5]], requires_grad=True)
    view = leaf[:, ::2]
    with pytest.raises(RuntimeError, match="functions with out=... arguments don't support automatic"):
        torch.floor_divide(view, 1.75, out=view)
    out = torch.zeros(1, 2)
    torch.floor_divide(view, 1.75, out=out)        # a fresh out takes the not-implemented history
    assert out.requires_grad
    np.testing.assert_array_equal(out.detach().numpy(), np.floor_divide([[1.5, -0.25]], 1.75))


def test_unreduced_pointwise_loss_is_laid_out_as_tensor_iterator():
    # mse_loss(reduction='none') of a transposed input keeps its layout: a
    # later reshape(-1) copies, so writing into the loss does not reach it
    x = torch.arange(12.0).reshape(4, 3).T
    t = torch.ones(3, 4)
    loss = F.mse_loss(x, t, reduction="none")
    assert loss.stride() == (1, 3)
    flat = loss.reshape(-1)
    loss.data.div_(loss.data + 1)
    np.testing.assert_array_equal(flat.numpy(), ((np.arange(12.0).reshape(4, 3).T - 1) ** 2).reshape(-1))


def test_index_add_saves_source_for_its_own_gradient():
    def run(source_requires_grad):
        a = torch.tensor([1.0, 2.0], requires_grad=source_requires_grad)
        b = torch.zeros(3, requires_grad=True)
        y = b.index_add(0, torch.tensor([0, 1]), a)
        with torch.no_grad():
            a.zero_()
        y.sum().backward()
        return b
    np.testing.assert_array_equal(run(False).grad.numpy(), [1, 1, 1])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(True)


@pytest.mark.parametrize("loss,kw,bound", [("huber_loss", {"delta": 1.0}, 1.0), ("huber_loss", {"delta": 0.5}, 0.5),
                                           ("smooth_l1_loss", {"beta": 1.0}, 1.0)])
def test_huber_and_smooth_l1_double_backward_is_zero_at_the_kink(loss, kw, bound):
    # torch's double backward is grad * (|d| < bound): strictly inside only,
    # while the first derivative at |d| == bound is still +-bound's slope
    a = np.array([-2.0, 0.5, 1.0, -1.0, 0.0, 3.0, 0.25])
    b = np.array([-1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.75])
    x = torch.tensor(a, requires_grad=True)
    t = torch.tensor(b)
    gx, = torch.autograd.grad(getattr(F, loss)(x, t, reduction="none", **kw).sum(), [x], create_graph=True)
    d = a - b
    scale = 1.0 / bound if loss == "smooth_l1_loss" else 1.0
    np.testing.assert_array_equal(gx.detach().numpy(), np.clip(d, -bound, bound) * scale)
    (gx * torch.tensor(np.arange(7.0))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(np.abs(d) < bound, np.arange(7.0) * scale, 0.0))
