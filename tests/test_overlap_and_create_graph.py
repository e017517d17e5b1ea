"""Memory-overlap checks drawn where torch draws them, gradients that
depend on what torch's backward formulas read under create_graph, a lone
root's hooks, addcdiv's integer divisor, and rules a 100,000-program
differential run found (D41, D69, D75, D76 in DISAGREEMENTS.md).

Each test states torch 2.13's answer and, when torch is installed, runs the
same program in torch too.
"""
import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as CF

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

LIBS = [(cx, CF)] + ([(torch, TF)] if torch is not None else [])
each_lib = pytest.mark.parametrize("lib,F", LIBS, ids=lambda x: getattr(x, "__name__", ""))
PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory location"
INTERNAL = "more than one element of the written-to tensor refers to a single memory location"


def _expanded(lib):
    base = lib.tensor([[0.5, -0.25, 0.75, 2.0]])
    return base, base.expand(3, 4)


@each_lib
@pytest.mark.parametrize("op", ["zero_", "fill_", "tril_", "triu_", "masked_fill_", "index_fill_", "setitem_mask"])
def test_fills_write_through_an_expanded_tensor(lib, F, op):
    base, x = _expanded(lib)
    calls = {"zero_": lambda: x.zero_(), "fill_": lambda: x.fill_(3.0), "tril_": lambda: x.tril_(),
             "triu_": lambda: x.triu_(1), "masked_fill_": lambda: x.masked_fill_(lib.tensor([True, False] * 2), 1.0),
             "index_fill_": lambda: x.index_fill_(1, lib.tensor([2]), -1.0),
             "setitem_mask": lambda: x.__setitem__(lib.tensor([True, False, True]), 7.0)}
    calls[op]()
    expected = {"zero_": [0.0] * 4, "fill_": [3.0] * 4, "tril_": [0.5, 0.0, 0.0, 0.0],
                "triu_": [0.0, 0.0, 0.0, 2.0], "masked_fill_": [1.0, -0.25, 1.0, 2.0],
                "index_fill_": [0.5, -0.25, -1.0, 2.0], "setitem_mask": [7.0] * 4}[op]
    # tril_ of rows sharing one memory row: row 0 zeroes columns 1.., as torch's in-place loop
    assert base.tolist() == [expected]


@each_lib
@pytest.mark.parametrize("op", ["add_", "copy_", "neg_other", "clamp_", "index_copy_"])
def test_other_writes_refuse_an_expanded_tensor(lib, F, op):
    _, x = _expanded(lib)
    calls = {"add_": lambda: x.add_(1), "copy_": lambda: x.copy_(lib.ones(3, 4)),
             "neg_other": lambda: x.neg_(), "clamp_": lambda: x.clamp_(0, 1),
             "index_copy_": lambda: x.index_copy_(0, lib.tensor([0]), lib.ones(1, 4))}
    with pytest.raises(RuntimeError, match=INTERNAL):
        calls[op]()


@each_lib
def test_fill_with_a_tensor_refuses_an_expanded_tensor(lib, F):
    _, x = _expanded(lib)
    with pytest.raises(RuntimeError, match=INTERNAL):
        x.fill_(lib.tensor(2.0))


@each_lib
def test_copy_onto_the_same_elements_is_a_no_op(lib, F):
    base, x = _expanded(lib)
    x.copy_(x)
    assert base.tolist() == [[0.5, -0.25, 0.75, 2.0]]


@each_lib
@pytest.mark.parametrize("op", ["add_", "mul_", "sub_", "div_", "pow_", "atan2_", "copy_", "lt_", "logical_and_",
                                "clamp_min_", "lerp_", "addcmul_"])
def test_partial_overlap_of_dense_operands_raises(lib, F, op):
    flat = lib.tensor([0.5, 0.25, 0.75, 0.125, 2.0])
    a, b = flat[0:4], flat[1:5]
    args = {"lerp_": (b, 0.5), "addcmul_": (b, b)}.get(op, (b,))
    with pytest.raises(RuntimeError, match=PARTIAL):
        getattr(a, op)(*args)
    assert flat.tolist() == [0.5, 0.25, 0.75, 0.125, 2.0]


@each_lib
def test_overlaps_torch_accepts(lib, F):
    x = lib.tensor([[0.5, 1.0, 2.0], [1.0, 1.5, 0.25]])
    x.add_(x)                                       # full overlap: fine
    cols = x.unbind(1)
    cols[2][[0, 1]] = cols[0]                       # strided, distinct elements
    x[:, 0].add_(x[:, 1])                           # strided, distinct elements
    assert x.tolist() == [[3.0, 2.0, 1.0], [5.0, 3.0, 2.0]]
    v = lib.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=PARTIAL):
        v.detach().add_(v[0])                       # a 0-d operand inside the written tensor
    w = lib.tensor([[1.0]])
    with pytest.raises(RuntimeError, match=PARTIAL):
        w[0] = w                                    # same bytes, other strides: partial to torch


def test_overlap_torch_cannot_check_raises_here():
    # torch runs x.T.mul_(x.T[0]) and its answer depends on its loop order
    x = cx.tensor([[-0.25, 1.5], [0.0, -1.25], [1.25, -1.75]])
    with pytest.raises(RuntimeError, match="depend on the order elements are written"):
        x.T.mul_(x.T[0])
    assert x.tolist() == [[-0.25, 1.5], [0.0, -1.25], [1.25, -1.75]]


@each_lib
@pytest.mark.parametrize("name", ["relu", "leaky_relu", "hardtanh", "relu6", "max_pool2d", "avg_pool2d"])
def test_create_graph_gradient_reads_the_input(lib, F, name):
    """torch records threshold_backward(grad, result) etc.: the gradient
    requires grad through the input, with a zero derivative."""
    data = np.random.default_rng(3).standard_normal((1, 1, 4, 4))
    x = lib.tensor(data, requires_grad=True)
    y = getattr(F, name)(x, 2) if "pool" in name else getattr(F, name)(x)
    g, = lib.autograd.grad((y * 3).sum(), [x], create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    g.sum().backward()
    assert x.grad is not None and x.grad.abs().sum().item() == 0


@each_lib
@pytest.mark.parametrize("op", ["conv2d", "conv_transpose2d"])
@pytest.mark.parametrize("wants", [(True, False), (False, True), (True, True)])
def test_create_graph_convolution_gradients(lib, F, op, wants):
    rng = np.random.default_rng(4)
    x = lib.tensor(rng.standard_normal((1, 2, 5, 5)), requires_grad=wants[0])
    w = lib.tensor(rng.standard_normal((3, 2, 2, 2) if op == "conv2d" else (2, 3, 2, 2)), requires_grad=wants[1])
    y = getattr(F, op)(x, w)
    inputs = [t for t in (x, w) if t.requires_grad]
    grads = lib.autograd.grad(y.sum(), inputs, create_graph=True)
    assert all(g.requires_grad for g in grads)
    sum(g.sum() for g in grads).backward()
    if wants == (True, False):
        assert x.grad is None                   # convolution_backward has no such derivative
    if wants == (False, True):
        assert w.grad is None


@each_lib
def test_lone_root_runs_its_hooks_when_no_input_needs_it(lib, F):
    seen = []
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0], requires_grad=True)
    y = (a * 2).sum()
    y.retain_grad()
    y.register_hook(lambda g: seen.append(g.item()))
    y.backward(inputs=[b])
    assert seen == [1.0] and y.grad.item() == 1.0 and b.grad is None
    z = (a * 3).sum()
    z.retain_grad()
    lib.autograd.backward([z, (b * 1).sum()], inputs=[b])       # two roots: no shortcut
    assert z.grad is None and b.grad.tolist() == [1.0]


@each_lib
def test_addcdiv_backward_with_an_integer_divisor_raises(lib, F):
    t1 = lib.tensor([0.5, -1.0], requires_grad=True)
    for y in (lib.tensor([1.0, 2.0]).addcdiv(t1, lib.tensor([2, 4])),
              lib.tensor([1.0, 2.0]).addcdiv_(t1, lib.tensor([2, 4]), value=0.5)):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            y.sum().backward()
    s = lib.tensor([1.0, 2.0], requires_grad=True)
    s.addcdiv(lib.tensor([1.0, 3.0]), lib.tensor([2, 4])).sum().backward()      # self's gradient only
    assert s.grad.tolist() == [1.0, 1.0]


# -- found by a 60,000-program fuzz run (seed 9301) -----------------------------------------

@each_lib
def test_setitem_everything_with_itself_and_scaled_overlaps(lib, F):
    x = lib.tensor([[1.75, 0.25, 2.75]]).relu()
    with lib.no_grad():
        x[...] = x                                  # the same elements: a no-op, as copy_
    assert x.tolist() == [[1.75, 0.25, 2.75]]
    y = lib.tensor([-1.0]) * 2
    with pytest.raises(RuntimeError, match=PARTIAL):
        y.add_(y[0], alpha=0.5)                     # alpha does not hide the operand's overlap


@each_lib
def test_index_fill_through_an_expanded_tensor_writes_every_sharing_row(lib, F):
    base = lib.tensor([[0.1875, 0.4375, -0.125, -0.625]])
    base.expand(3, 4).index_fill_(0, lib.tensor([1]), lib.tensor(-float("inf")))
    assert base.tolist() == [[-float("inf")] * 4]


@each_lib
def test_backward_to_a_non_leaf_input_frees_its_grad_fn(lib, F):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    c = b.exp()
    (c.exp() * 1).sum().backward(inputs=[c])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        c.sum().backward()
    b.sum().backward()                              # one node further down is untouched
    assert np.allclose(a.grad.numpy(), np.exp([1.0, 2.0]))


@each_lib
def test_addmm_saves_only_what_the_wanted_gradients_read(lib, F):
    x = lib.tensor([[1.0, 2.0]], requires_grad=True)
    m1, m2 = lib.ones(1, 3), lib.ones(3, 2)
    y = x.addmm(m1, m2)
    m2.mul_(m2)                                     # no gradient reads m2: no error
    y.sum().backward()
    y.sum().backward()                              # nothing saved, nothing freed
    assert x.grad.tolist() == [[2.0, 2.0]]
    w = lib.ones(1, 3, requires_grad=True)
    z = x.detach().addmm(w, m2)
    m2.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@each_lib
def test_zero_signs_of_pow_cumsum_and_bce(lib, F):
    base = lib.tensor([-0.0, -0.0, -0.0, 0.0, -0.0])
    signs = np.signbit(base.pow(lib.tensor([1.0, 3.0, 2.0, 1.0, 0.5])).numpy())
    assert signs.tolist() == [True, True, False, False, False]         # C's pow at zero
    assert np.signbit(lib.tensor(-0.0).cumsum(0).numpy())              # a 0-d input is copied
    assert not np.signbit(lib.tensor([-0.0, 1.0]).cumsum(0).numpy()[0])
    loss = F.binary_cross_entropy(lib.tensor([-0.0, 0.5]), lib.tensor([0.0, 0.5]), reduction="none")
    assert not np.signbit(loss.numpy()[0])
    assert lib.tensor(False).cumsum_(0).item() is False                # 0-d bool: no kernel needed


@each_lib
def test_matmul_with_a_vector_returns_no_view(lib, F):
    a, v, w = lib.ones(3, 4), lib.ones(4), lib.ones(3)
    for r in (a.mv(v), a @ v, w @ a, lib.ones(2, 3, 4) @ v, w @ lib.ones(2, 3, 4)):
        assert r._base is None
        r.detach_()


@each_lib
def test_out_rules_of_var_sum_and_logical_not(lib, F):
    x = lib.tensor([0.5, -0.0, 2.5])
    for op in (lib.var, lib.std):
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            op(x, False, out=lib.tensor(0.0))
    ints = lib.tensor([[1, 2], [0, 0]])
    for op in (lib.sum, lib.nansum):
        out = lib.zeros(2, dtype=lib.bool)
        op(ints, 1, out=out)
        assert out.tolist() == [True, False]
    out = lib.zeros(0, dtype=lib.bool)
    lib.logical_not(lib.ones(2, requires_grad=True), out=out)          # not differentiable: allowed
    assert out.tolist() == [False, False]


@each_lib
def test_linear_has_no_bool_kernel(lib, F):
    a, w = lib.ones(2, 3, dtype=lib.bool), lib.ones(4, 3, dtype=lib.bool)
    for call in (lambda: F.linear(a, w), lambda: F.linear(a, w, lib.ones(4, dtype=lib.bool))):
        with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented for 'Bool'"):
            call()


# -- a second 60,000-program run (same seed, after the fixes above) ------------------------

@each_lib
def test_setitem_of_a_number_refuses_an_expanded_target(lib, F):
    for key in (Ellipsis, slice(None)):
        x = lib.tensor([1.75]).expand(4)
        with pytest.raises(RuntimeError, match=INTERNAL):
            x[key] = True
    x = lib.tensor([1.75]).expand(4)
    x[0] = 1.0                                      # one element: no overlap
    assert x.tolist() == [1.0] * 4


@each_lib
def test_setitem_of_a_0d_tensor_inside_the_target_fills(lib, F):
    v = lib.tensor([2.75, 2.0])
    strided = v[::2]
    strided[:] = strided.unbind(0)[0]
    assert v.tolist() == [2.75, 2.0]


@each_lib
def test_products_save_only_the_factor_the_other_gradient_reads(lib, F):
    m = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = lib.tensor([1.0, -1.0], requires_grad=True)
    y = lib.mv(m, v)
    m.mul_(2)                                       # v's gradient reads m: raises
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    m = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = m @ v
    v.data.mul_(2)                                  # no gradient reads v (m does not require grad)
    y.sum().backward()
    assert v.grad.tolist() == [4.0, 6.0]


@each_lib
def test_backward_to_a_non_leaf_runs_its_grad_fn_but_grad_does_not(lib, F):
    v0 = lib.tensor([[-0.5]], requires_grad=True)
    v1 = v0 * 2
    lib.autograd.grad((v1 * lib.tensor([[-0.75]])).sum(), [v1])
    v1.mean().backward()                            # autograd.grad left v1's grad_fn alone
    assert v0.grad.tolist() == [[2.0]]


@each_lib
@pytest.mark.parametrize("name", ["relu", "hardtanh", "max_pool2d", "conv2d", "avg_pool2d"])
def test_create_graph_gradient_nodes_free_what_they_saved(lib, F, name):
    x = lib.tensor(np.random.default_rng(5).standard_normal((1, 1, 4, 4)), requires_grad=True)
    w = lib.ones(1, 1, 2, 2, dtype=lib.float64)
    y = {"max_pool2d": lambda: F.max_pool2d(x, 2), "avg_pool2d": lambda: F.avg_pool2d(x, 2),
         "conv2d": lambda: F.conv2d(x, w)}.get(name, lambda: getattr(F, name)(x))()
    g, = lib.autograd.grad((y * 3).sum(), [x], create_graph=True)
    g.mean().backward()
    if name == "avg_pool2d":                        # its formula saves shapes only
        (g * 2).sum().backward()
    else:
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            (g * 2).sum().backward()


@each_lib
def test_conv1d_result_is_no_view_and_bool_edge_cases(lib, F):
    x, w = lib.ones(1, 2, 5, dtype=lib.float64), lib.ones(3, 2, 2, dtype=lib.float64)
    y = F.conv1d(x, w)
    assert y._base is None
    y.detach_()
    assert F.conv1d(x[0], w)._base is not None      # unbatched: a squeeze(0) view, as torch's
    b = lib.tensor([True, False])
    with pytest.raises(NotImplementedError, match="\"addcmul_cpu_out\" not implemented for 'Bool'"):
        lib.addcmul(b, b, b)
    assert lib.zeros(0, 3, dtype=lib.bool).cumprod_(1).shape == (0, 3)


# -- a third run (seed 9401) ------------------------------------------------------------------

@each_lib
def test_lerp_weight_and_out_dtype_rules(lib, F):
    a, b = lib.ones(2), lib.zeros(2)
    for w in (lib.tensor(5), lib.tensor(0.5, dtype=lib.float64), lib.tensor(True)):
        lib.lerp(a, b, w)                                   # a 0-d weight may be any dtype
        a.clone().lerp_(b, w)
    with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype long int"):
        lib.lerp(a, b, lib.tensor([5]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        lib.lerp(a, b, a, out=lib.zeros(2, dtype=lib.float64))
    out = lib.zeros(2, dtype=lib.float64)
    lib.lerp(a, b, 0.25, out=out)                           # a number weight: out casts
    assert out.tolist() == [0.75, 0.75]


@each_lib
def test_saved_indices_cumprod_result_and_detached_inputs(lib, F):
    i, w = lib.tensor([0, 2]), lib.ones(3, 2, requires_grad=True)
    y = F.embedding(i, w)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()                                  # the indices were saved and freed
    x = lib.tensor(1.3125, requires_grad=True)
    c = x.clone()
    c.cumprod_(0)
    c.fill_(0.25)                                           # cumprod_ saved its result: c
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()
    v0 = lib.tensor([-0.5, 1.5], requires_grad=True)
    v1 = v0.clone()
    v4 = lib.tensor(False) ** v1
    v1.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been detached in-place"):
        v4.sum().backward()


@each_lib
def test_more_gradient_rules(lib, F):
    x = lib.tensor([[-1.0625, float("nan")], [1.6875, -1.8125]], requires_grad=True)
    x.norm(float("inf")).backward()                         # a NaN is among the extremes
    assert np.array_equal(x.grad.numpy(), np.zeros((2, 2), np.float32))
    w = lib.ones(3, 4, dtype=lib.float64, requires_grad=True)
    y = F.layer_norm(lib.ones(2, 3, 4, dtype=lib.float64).cumsum(-1), (3, 4), w, None)
    gw, = lib.autograd.grad(y.sum(), [w], create_graph=True)
    assert gw.requires_grad
    gw.sum().backward()
    assert w.grad is None
    v = lib.tensor([1.5], requires_grad=True)
    buf = lib.tensor([0.5, -1.5]).clone()
    buf.add_(v.expand(2), alpha=2)                          # alpha stays a number: nothing freed
    buf.tanh().sum().backward()
    buf.sum().backward()
    o = lib.zeros(2)
    lib.floor_divide(lib.tensor([1.5, -2.0], requires_grad=True), 2.0, out=o)
    assert o.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        o.sum().backward()


@each_lib
def test_empty_bool_products_and_scans(lib, F):
    b = lib.bool
    assert (lib.ones(0, 4, dtype=b) @ lib.ones(4, 3, dtype=b)).shape == (0, 3)
    assert (lib.ones(2, 0, dtype=b) @ lib.ones(0, 3, dtype=b)).tolist() == [[False] * 3] * 2
    with pytest.raises(NotImplementedError, match="\"dot\" not implemented for 'Bool'"):
        lib.ones(0, dtype=b) @ lib.ones(0, dtype=b)
    assert lib.cumsum(lib.tensor(0.5), -1, out=lib.tensor(False)).item() is True
    v = (lib.tensor([[-0.5, 2.75, -1.75]]) * 1).relu()
    v[None, -1] = v                                         # the same elements (a size-1 dim's stride aside)
    assert v.tolist() == [[0.0, 2.75, 0.0]]


# -- a 100,000-program run (seed 9501) ---------------------------------------------------------

@each_lib
def test_adding_a_number_scaled_by_alpha_to_an_int_tensor_records_nothing(lib, F):
    ints = lib.tensor([[0], [-3], [2]])
    ints.add_(-1, alpha=2)
    assert ints.flatten().tolist() == [-2, -5, 0]


@each_lib
def test_pow_of_two_tensors_saves_its_result(lib, F):
    a = lib.tensor([1.25, 3.0], requires_grad=True)
    y = a ** lib.tensor(2.75)
    y.fill_(0.5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@each_lib
def test_lerp_in_place_with_itself_as_end_saves_nothing_of_it(lib, F):
    v = lib.tensor([[0.6875, -2.0625], [2.125, -0.5]], dtype=lib.float64, requires_grad=True)
    c = v.clone()
    c.lerp_(c, lib.tensor([[0.25, 0.5], [0.75, 1.0]], dtype=lib.float64))
    c.exp().sum().backward()


@each_lib
def test_floor_divide_refuses_an_out_requiring_grad(lib, F):
    with pytest.raises(RuntimeError, match="aten::floor_divide\\(\\): functions with out="):
        lib.floor_divide(lib.ones(2), 1.5, out=lib.zeros(2, requires_grad=True))


@each_lib
def test_backward_with_inputs_at_a_result_runs_its_node_computing_nothing(lib, F):
    r = lib.tensor(2.1875, requires_grad=True).clone().acosh_()
    r.backward(inputs=[r])              # acosh_'s derivative is never asked: no "not implemented"
    assert r.grad.item() == 1.0


@each_lib
def test_bool_setitem_from_a_differently_strided_alias_is_a_partial_overlap(lib, F):
    flags = lib.tensor([False])
    with pytest.raises(RuntimeError, match=PARTIAL):
        flags[0::2] = flags                                 # stride 2 against stride 1


@each_lib
def test_clamp_of_bool_tensors_by_tensors_works_and_by_numbers_is_not_implemented(lib, F):
    b, f = lib.tensor([True, False]), lib.tensor([False, True])
    assert b.clamp(min=f).tolist() == [True, True]
    for call, kernel in ((lambda: b.clamp(f, f), "clamp_cpu"), (lambda: b.clamp(False, True), "clamp_scalar_cpu"),
                         (lambda: b.clamp_max(True), "clamp_max_scalar_cpu")):
        with pytest.raises(NotImplementedError, match=kernel):
            call()


@each_lib
def test_nansum_over_an_empty_dim_writes_an_int_out(lib, F):
    assert lib.nansum(lib.zeros(0, 3), 1, out=lib.zeros(0, dtype=lib.int64)).shape == (0,)


def test_custom_function_saved_input_detached_in_place_is_allowed():
    class OnceSin(cx.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.cos()
    v = cx.tensor([1.25, -1.75], requires_grad=True)
    w = v * 1
    y = OnceSin.apply(w)
    w.detach_()                       # torch's ctx.saved_tensors does not refuse this
    y.sum().backward()
    assert np.allclose(v.grad.numpy(), np.cos([1.25, -1.75]))


@each_lib
def test_1d_results_that_are_views_in_torch(lib, F):
    x3, x2, w = lib.ones(2, 3, 8), lib.ones(3, 8), lib.ones(3, 2, 3)
    assert F.max_pool1d(x3, 2)._base is None and F.max_pool1d(x2, 2)._base is None
    assert F.avg_pool1d(x3, 2)._base is not None            # torch's avg_pool1d squeezes a view
    assert F.conv_transpose1d(x3, w)._base is None and F.conv_transpose1d(x2, w)._base is not None


# -- result layouts (D56): whether a later reshape()/contiguous() aliases -----------------------

def _element_strides(lib, t):
    return tuple(s // t._data.itemsize for s in t._data.strides) if lib is cx else tuple(t.stride())


@each_lib
def test_result_layouts_follow_torch(lib, F):
    a = lib.tensor([[2.875, -0.8125, -1.125], [1.1875, -1.1875, -0.0]])
    assert _element_strides(lib, lib.tensor([[[1.0, 2.0, 3.0]]]).expand(2, 1, 3).clone()) == (3, 3, 1)
    assert _element_strides(lib, a.T.clone()) == (1, 3)                 # dense: strides kept
    assert _element_strides(lib, a.T.flip(1)) == (1, 3)
    assert _element_strides(lib, a[:, ::2].flip(0)) == (2, 1)           # not dense: C order
    assert _element_strides(lib, a.T.rot90(3)) == (3, 1)
    assert _element_strides(lib, a.t().clamp_max(lib.ones(3, 2))) == (1, 3)   # first input decides
    flipped = a.T.flip(1)
    flat = flipped.reshape(6)                                           # a copy, as in torch
    flipped.zero_()
    assert flat.abs().sum().item() > 0
    clone = lib.tensor([[[1.25, -2.25, -2.0]]]).expand(2, 1, 3).clone()
    view = clone.view(-1)                                               # contiguous: view() works
    clone.zero_()
    assert view.tolist() == [0.0] * 6


@each_lib
@pytest.mark.parametrize("name", ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "nll_loss", "cross_entropy"])
def test_create_graph_of_adaptive_pools_and_nll(lib, F, name):
    x = lib.tensor(np.random.default_rng(9).standard_normal((2, 3, 7)), requires_grad=True)
    y = {"adaptive_avg_pool1d": lambda: F.adaptive_avg_pool1d(x, 3),
         "adaptive_avg_pool2d": lambda: F.adaptive_avg_pool2d(x[None], (2, 3)),
         "nll_loss": lambda: F.nll_loss(x[:, :, 0], lib.tensor([0, 2])),
         "cross_entropy": lambda: F.cross_entropy(x[:, :, 0], lib.tensor([0, 2]))}[name]()
    g, = lib.autograd.grad((y * 1.5).sum(), [x], create_graph=True)
    assert g.requires_grad
    g.sum().backward()
    assert x.grad is not None
    if name.startswith("adaptive"):                 # torch's formula saves shapes only
        (g * 2).sum().backward()
    else:                                           # it saves the target: freed
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            (g * 2).sum().backward()
