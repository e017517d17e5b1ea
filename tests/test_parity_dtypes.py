"""Torch parity of dtypes: type promotion, bool and integer operands (what
torch refuses or does not implement), Python numbers converted to a
tensor's dtype, and integer tensors written with a value that requires grad.
"""
import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`

from parity_helpers import each_lib, inf, nan, real_torch


@pytest.mark.parametrize("program,dtype", [
    (lambda lib: lib.tensor([1, 2]) / 16, "float32"),
    (lambda lib: lib.tensor([1, 2]) * 0.5, "float32"),
    (lambda lib: lib.ones(2) + lib.tensor(1.0, dtype=lib.float64), "float32"),
    (lambda lib: lib.ones(2) ** lib.tensor([1, 2]), "float32"),
    (lambda lib: lib.tensor([1, 2]) + lib.tensor(1.0, dtype=lib.float64), "float64"),
    (lambda lib: lib.ones(2, dtype=lib.uint8) + 5, "uint8"),
    (lambda lib: lib.tensor([True, False]) + 5, "int64"),
    (lambda lib: lib.tensor(5, dtype=lib.int32) + 5.0, "float32"),
    (lambda lib: lib.tensor(1.0) + lib.tensor(1.0, dtype=lib.float64), "float64"),
    (lambda lib: lib.tensor([1, 2]) // 2, "int64"),
    (lambda lib: lib.tensor([1, 2]) ** 2.0, "float32"),
    (lambda lib: 2.0 ** lib.tensor([1, 2]), "float32"),
    (lambda lib: lib.tensor([1, 2]).sqrt(), "float32"),
    (lambda lib: lib.tensor([1, 2], dtype=lib.int32).sum(), "int64"),
])
def test_type_promotion_follows_torchs_result_type(program, dtype):
    assert program(cx).dtype.name == dtype
    if real_torch is not None:
        assert str(program(real_torch).dtype) == "torch." + dtype


def test_integer_pixels_divided_by_a_number_are_float32_for_linear():
    layer = cx.nn.Linear(4, 2)
    pixels = cx.tensor([[0, 4, 8, 16]])
    out = layer(pixels / 16.)
    assert out.dtype == cx.float32


def test_in_place_op_that_would_change_the_dtype_raises():
    i = cx.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.add_(1.5)
    f = cx.ones(2)
    f.add_(cx.tensor([1, 2]))
    assert f.dtype == cx.float32


def test_integers_to_a_negative_integer_power_raise():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        cx.tensor([1, 2]) ** -1


def test_tensor_from_python_floats_with_float64_keeps_full_precision():
    value = 0.9186588104776062
    assert cx.tensor([value], dtype=cx.float64).item() == value
    assert cx.tensor(value, dtype=cx.double).item() == value


def test_tensor_from_a_numpy_scalar_keeps_its_dtype():
    assert cx.tensor(np.float64(1.5)).dtype == cx.float64
    assert cx.tensor(np.int32(3)).dtype == cx.int32
    assert cx.tensor(1.5).dtype == cx.float32


@pytest.mark.disagreement("D45")
@each_lib
def test_subtraction_with_a_python_bool_or_a_bool_alpha_is_refused(lib):
    x = lib.tensor([1.0, 2.0])
    for call in (lambda: True - x, lambda: x - True, lambda: x.sub(True), lambda: x.sub_(True, alpha=-1)):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
            call()
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        x.sub(1, alpha=True)
    assert lib.zeros(0, dtype=lib.bool).add_(True, alpha=2).dtype == lib.bool


@pytest.mark.disagreement("D45")
@each_lib
def test_powers_of_bool_tensors_follow_torchs_dtypes_and_c_integer_rules(lib):
    b = lib.tensor([True, False])
    assert (b ** True).dtype == lib.bool and (b ** True).tolist() == [True, False]
    assert (b ** False).tolist() == [True, True]
    assert (b ** 2).dtype == lib.int64
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        b ** b
    # a negative integer exponent tensor: 1 ** -k is 1, 2 ** -k is 0 (C's integer rules)
    assert (True ** lib.tensor([-4, 6])).tolist() == [1, 1]
    assert (lib.tensor([2, -1, 1]) ** lib.tensor([-1, -1, -3])).tolist() == [0, -1, 1]


@pytest.mark.disagreement("D45")
@each_lib
@pytest.mark.parametrize("call,kernel", [
    (lambda lib, b: lib.mm(b.view(1, 2), b.view(2, 1)), "addmm_impl_cpu_"),
    (lambda lib, b: lib.matmul(b, b), "dot"),
    (lambda lib, b: lib.mv(b.view(1, 2), b), "addmv_impl_cpu"),
    (lambda lib, b: lib.bmm(b.view(1, 1, 2), b.view(1, 2, 1)), "bmm"),
    (lambda lib, b: b.clone().cumsum_(0), "cumsum_out_cpu"),
], ids=["mm", "dot", "mv", "bmm", "cumsum_"])
def test_matrix_products_and_cumsum_of_bool_tensors_are_not_implemented(lib, call, kernel):
    with pytest.raises(NotImplementedError, match=kernel):
        call(lib, lib.tensor([True, False]))


@pytest.mark.disagreement("D45")
@each_lib
def test_requires_grad_is_refused_on_integer_tensors_and_fixed_on_non_leaves(lib):
    y = lib.ones(2, requires_grad=True) * 2
    assert y.requires_grad_(True) is y          # a no-op on a non-leaf
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = True                  # the attribute refuses any change
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        lib.tensor([1, 2]).requires_grad_()


@pytest.mark.disagreement("D84")
@each_lib
@pytest.mark.parametrize("dtype,value,expected", [
    ("int64", 2 ** 63, "int64_t"), ("int64", inf, "int64_t"), ("int64", 9.3e18, "int64_t"),
    ("int32", 2 ** 31, "int"), ("uint8", 256, "uint8_t"), ("uint8", -256, "uint8_t"),
    ("uint8", 255.9, "uint8_t"), ("uint8", -1.5, "uint8_t"), ("float32", 1e300, "float"),
])
def test_python_numbers_that_overflow_the_dtype_are_refused(lib, dtype, value, expected):
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
def test_python_numbers_that_fit_the_dtype_are_converted_as_c_casts(lib):
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


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 1e30])
def test_addcmul_of_integers_refuses_a_value_that_has_no_integer(value):
    a = torch.ones(3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t without overflow"):
        torch.addcmul(a, a, a, value=value)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        torch.addcdiv(a, a, a, value=value)


@pytest.mark.parametrize("dtype, value, want", [
    ("int64", 2.5, [3, 3, 3]), ("int64", -3.0, [-2, -2, -2]), ("int32", 300.0, [301, 301, 301]),
    ("uint8", 2.9, [3, 3, 3])])
def test_addcmul_of_integers_truncates_a_float_value_first(dtype, value, want):
    a = torch.ones(3, dtype=getattr(torch, dtype))
    assert torch.addcmul(a, a, a, value=value).tolist() == want


def test_addcmul_of_uint8_refuses_a_value_out_of_its_range():
    a = torch.ones(3, dtype=torch.uint8)
    for value in (-3.0, 300.0):
        with pytest.raises(RuntimeError, match="uint8_t without overflow"):
            torch.addcmul(a, a, a, value=value)


def test_logit_in_place_refuses_an_integer_tensor():
    for t in (torch.tensor([True, False]), torch.tensor([1, 0])):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            t.logit_()
    x = torch.tensor([0.25, 0.5], requires_grad=True).clone()
    x.logit_().sum().backward()


@pytest.mark.disagreement("D48")
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


@pytest.mark.disagreement("D48")
def test_views_of_an_int_tensor_with_history_raise():
    ints = torch.tensor([6, -4, 4, 0])
    ints.fill_(torch.tensor(-2.0, requires_grad=True))
    for split in (lambda t: t.chunk(2, 0), lambda t: t.split(1), lambda t: t.unbind(0)):
        with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
            split(ints)
    x = torch.randn(3, 4, requires_grad=True)
    values, indices = torch.max(x, 1)
    assert values.requires_grad and not indices.requires_grad


@pytest.mark.disagreement("D48")
def test_index_fill_of_an_int_view_with_a_value_requiring_grad_records_copy_slices():
    base = torch.tensor([[-2, -4], [0, 2]])
    view = base.t()
    view.index_fill_(0, torch.tensor([0]), torch.tensor(0.75, requires_grad=True))
    np.testing.assert_array_equal(base.detach().numpy(), [[0, -4], [0, 2]])
    assert view.requires_grad and base.requires_grad and type(base.grad_fn).__name__ == "CopySlices"
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
        base[0]


@pytest.mark.disagreement("D48")
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


@pytest.mark.disagreement("D48")
def test_copy_into_a_no_grad_bool_view_records_nothing():
    flags = torch.tensor([True, False])
    with torch.no_grad():
        first = flags.unbind(-1)[0]
    first.copy_(torch.tensor(0.0, requires_grad=True))
    np.testing.assert_array_equal(flags.numpy(), [False, False])
    assert not first.requires_grad


def test_integer_floor_divide_with_history_records_nothing():
    ints = torch.tensor([4, 5])
    ints.fill_(torch.tensor(3.0, requires_grad=True))
    assert not (ints // 2).requires_grad and not (7 % ints).requires_grad
    with pytest.raises(RuntimeError, match="Autograd not support dtype"):
        ints % 2
    assert (ints / 2).requires_grad
