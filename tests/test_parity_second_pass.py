"""Second pass of parity fixes found by the differential tester (D45-D87 in
DISAGREEMENTS.md): bool operands, checked scalar conversion, var_mean's
single node, prod's gradient shortcut, einsum's dtype rule, and others.

Each test states torch 2.13's answer and, when torch is installed, runs the
same program in torch too.
"""
import numpy as np
import pytest

import cextend as cx

try:
    import torch
except ImportError:
    torch = None

LIBS = [cx] + ([torch] if torch is not None else [])
each_lib = pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
inf, nan = float("inf"), float("nan")


@each_lib
def test_subtraction_refuses_python_bools_too(lib):
    x = lib.tensor([1.0, 2.0])
    for call in (lambda: True - x, lambda: x - True, lambda: x.sub(True), lambda: x.sub_(True, alpha=-1)):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
            call()
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        x.sub(1, alpha=True)
    assert lib.zeros(0, dtype=lib.bool).add_(True, alpha=2).dtype == lib.bool


@each_lib
def test_bool_powers(lib):
    b = lib.tensor([True, False])
    assert (b ** True).dtype == lib.bool and (b ** True).tolist() == [True, False]
    assert (b ** False).tolist() == [True, True]
    assert (b ** 2).dtype == lib.int64
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        b ** b
    # a negative integer exponent tensor: 1 ** -k is 1, 2 ** -k is 0 (C's integer rules)
    assert (True ** lib.tensor([-4, 6])).tolist() == [1, 1]
    assert (lib.tensor([2, -1, 1]) ** lib.tensor([-1, -1, -3])).tolist() == [0, -1, 1]


@each_lib
@pytest.mark.parametrize("call,kernel", [
    (lambda lib, b: lib.mm(b.view(1, 2), b.view(2, 1)), "addmm_impl_cpu_"),
    (lambda lib, b: lib.matmul(b, b), "dot"),
    (lambda lib, b: lib.mv(b.view(1, 2), b), "addmv_impl_cpu"),
    (lambda lib, b: lib.bmm(b.view(1, 1, 2), b.view(1, 2, 1)), "bmm"),
    (lambda lib, b: b.clone().cumsum_(0), "cumsum_out_cpu"),
], ids=["mm", "dot", "mv", "bmm", "cumsum_"])
def test_bool_products_are_not_implemented(lib, call, kernel):
    with pytest.raises(NotImplementedError, match=kernel):
        call(lib, lib.tensor([True, False]))


@each_lib
def test_requires_grad_on_integer_and_non_leaf_tensors(lib):
    y = lib.ones(2, requires_grad=True) * 2
    assert y.requires_grad_(True) is y          # a no-op on a non-leaf
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = True                  # the attribute refuses any change
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        lib.tensor([1, 2]).requires_grad_()


@each_lib
@pytest.mark.parametrize("dtype,value,expected", [
    ("int64", 2 ** 63, "int64_t"), ("int64", inf, "int64_t"), ("int64", 9.3e18, "int64_t"),
    ("int32", 2 ** 31, "int"), ("uint8", 256, "uint8_t"), ("uint8", -256, "uint8_t"),
    ("uint8", 255.9, "uint8_t"), ("uint8", -1.5, "uint8_t"), ("float32", 1e300, "float"),
])
def test_numbers_that_do_not_fit_are_refused(lib, dtype, value, expected):
    message = "value cannot be converted to type %s without overflow" % expected
    if value == 2 ** 63:
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            lib.zeros(2, dtype=getattr(lib, dtype))[0] = value
    for call in (lambda: lib.zeros(2, dtype=getattr(lib, dtype)).fill_(value),
                 lambda: lib.full((2,), value, dtype=getattr(lib, dtype)),
                 lambda: lib.zeros(2, dtype=getattr(lib, dtype)).__setitem__(0, value if value != 2 ** 63 else inf),
                 lambda: lib.zeros(2, dtype=getattr(lib, dtype)).masked_fill(lib.tensor([True, False]), value),
                 lambda: lib.zeros(2, dtype=getattr(lib, dtype)).index_fill(0, lib.tensor([1]), value)):
        with pytest.raises(RuntimeError, match=message):
            call()


@each_lib
def test_numbers_that_fit_are_converted_as_c_does(lib):
    assert lib.zeros(1, dtype=lib.uint8).fill_(-255).tolist() == [1]     # wraps, as C's cast
    assert lib.zeros(1, dtype=lib.int32).fill_(-2.5).tolist() == [-2]    # truncates
    assert lib.zeros(1, dtype=lib.float16).fill_(1e5).tolist() == [inf]  # half rounds to inf
    assert lib.zeros(1, dtype=lib.int64).fill_(-2 ** 63).tolist() == [-2 ** 63]
    assert lib.tensor([True]).fill_(nan).tolist() == [True]
    u = lib.zeros(3, dtype=lib.uint8)
    u[lib.tensor([0, 1])] = -1
    assert u.tolist() == [255, 255, 0]
    with pytest.raises(OverflowError):
        lib.full((1,), 2 ** 64)


@each_lib
def test_var_mean_is_one_node_with_welfords_mean(lib):
    x = lib.tensor([[-3.0, -1.0, inf], [1.0, inf, 2.0], [1.0, 2.0, 4.0]], requires_grad=True)
    v, m = lib.var_mean(x, 1)
    # Welford: an infinity last gives inf, one followed by a finite value NaN
    assert np.isinf(m.detach().numpy()[0]) and np.isnan(m.detach().numpy()[1])
    assert m.detach().numpy()[2] == pytest.approx(7 / 3)
    assert type(v.grad_fn) is type(m.grad_fn) and v.grad_fn is m.grad_fn
    m.sum().backward()          # the mean's gradient is 1/n whatever the values
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 3), 1 / 3))
    seen = []
    x2 = lib.tensor([1.0, -3.0], requires_grad=True)
    v2, m2 = lib.var_mean(x2)
    m2.register_hook(lambda g: seen.append(g))
    v2.backward()
    assert seen == [None]       # torch calls the unused output's hook with None


@each_lib
def test_prod_gradient_shortcut_with_two_zeros(lib):
    x = lib.tensor([nan, 0.0, 2.0, 0.0], requires_grad=True)
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0]
    y = lib.tensor([nan, 0.0, 2.0, 0.0], requires_grad=True)
    y.prod(0).backward()        # the dim form has no shortcut
    assert np.isnan(y.grad.numpy()[1:]).all()
    z = lib.tensor([3.0, 0.0, 2.0, 5.0], requires_grad=True)
    z.prod().backward()
    assert z.grad.tolist() == [0.0, 30.0, 0.0, 0.0]


@each_lib
def test_einsum_promotes_only_where_it_multiplies(lib):
    f, d = lib.tensor([1.0, 2.0]), lib.tensor([1.0, 3.0], dtype=lib.float64)
    outer = lib.einsum("i,j->ij", f, d)
    assert outer.dtype == lib.float64 and outer.tolist() == [[1.0, 3.0], [2.0, 6.0]]
    assert lib.einsum("i,i->i", f, d).tolist() == [1.0, 6.0]
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        lib.einsum("i,i->", f, d)
    assert np.signbit(lib.einsum("i,j->ij", lib.tensor([0.5]), lib.tensor([-0.0])).numpy()).all()


@each_lib
def test_integer_addmm_family_truncates_beta_and_alpha(lib):
    v = lib.tensor([[[2, 4]]]).baddbmm(lib.tensor([[[6, 3]]]), lib.tensor([[[2, 2], [2, 2]]]),
                                       beta=0.5, alpha=-1.5)
    assert v.tolist() == [[[-18, -18]]]     # 0 * input + (-1) * 18


@each_lib
def test_polygamma_at_infinities(lib):
    got = lib.polygamma(2, lib.tensor([inf, -inf, 1.0])).numpy()
    assert np.isnan(got[0]) and got[1] == -inf and got[2] == pytest.approx(-2.4041138063191885)
    assert lib.polygamma(1, lib.tensor([inf])).tolist() == [0.0]


@each_lib
def test_repeat_interleave_by_an_int_is_a_view(lib):
    x = lib.tensor([[2.0, 1.25], [0.0, 0.75]], requires_grad=True)
    y = x.repeat_interleave(2, 1)
    assert y._base is not None and y.tolist() == [[2.0, 2.0, 1.25, 1.25], [0.0, 0.0, 0.75, 0.75]]
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        y.detach_()
    (y * lib.arange(8.0).view(2, 4)).sum().backward()
    assert x.grad.tolist() == [[1.0, 5.0], [9.0, 13.0]]


@each_lib
def test_overwritten_region_gets_an_exact_zero_gradient(lib):
    v0 = lib.zeros(2, dtype=lib.float64)
    v1 = lib.tensor([2.5], requires_grad=True)
    v0[0] = v1.sum()
    v0[lib.tensor([0])] = lib.tensor([0.25], dtype=lib.float64)
    (lib.tensor([-2.25, 1.5]) ** v0).sum().backward()     # NaN gradient at the overwritten element
    assert v1.grad.tolist() == [0.0]


@each_lib
def test_backward_inputs_listed_twice_accumulate_once(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.sum().backward(inputs=[x, x])
    assert x.grad.tolist() == [1.0, 1.0]


@each_lib
def test_lerp_inplace_checks_the_weights_shape(lib):
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        lib.tensor(0.25).lerp_(lib.tensor(-0.0), lib.tensor([1.0]))


@each_lib
def test_mark_dirty_resets_the_retained_grad(lib):
    class MulDirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.mark_dirty(x)
            ctx.k = k
            return x.mul_(k)

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    a = lib.tensor([[1.0, 2.0]], requires_grad=True)
    b = a * 1
    b.retain_grad()
    b.sum().backward()
    assert b.grad is not None
    c = MulDirty.apply(b, 0.5)
    assert b.grad is None and c.grad is None
