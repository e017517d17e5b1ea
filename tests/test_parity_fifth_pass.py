"""Torch-parity fixes found by the fuzz runs of seeds 12101 and up: each
checked against an independent reference (numpy, the derivative written
out) or against torch 2.13's documented behaviour, without torch."""
import numpy as np
import pytest

import cextend as torch

FREED = "backward through the graph a second time"
MODIFIED = "modified by an inplace operation"
OVERLAP = "some elements of the input tensor and the written-to tensor"


# -- take saves its input ------------------------------------------------------------------------

def test_take_backward_refuses_an_input_changed_in_place():
    # torch's take_backward(grad, self, index) reads self: it is saved, and
    # an in-place change before backward raises (seed 12101, program 9842)
    x = torch.tensor([-1.625, 0.8125, -0.0, 0.5, -0.625], requires_grad=True)
    y = x.take(torch.tensor([-1, 2]))
    with torch.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


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


# -- an in-place op made from a copy behaves as torch's one node ---------------------------------

@pytest.mark.parametrize("op", ["logit_", "erfinv_", "sigmoid_"])
def test_backward_with_inputs_frees_the_in_place_ops_saved_tensors(op):
    # backward(inputs=[x]) runs x's grad_fn (torch's LogitBackward0 for
    # x.logit_()), which frees what it saved: a second backward through it
    # raises (seed 12101, program 17690)
    x0 = torch.tensor([[0.25, 0.5], [0.75, 0.125]], requires_grad=True)
    x = x0 * 1
    getattr(x, op)()
    x.sum().backward(inputs=[x])
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 2)))
    with pytest.raises(RuntimeError, match=FREED):
        x.sum().backward()


def test_backward_with_inputs_frees_an_in_place_op_on_a_view():
    x0 = torch.tensor([[0.25, 0.5], [0.75, 0.125]], requires_grad=True)
    x = x0 * 1
    x[0].logit_()
    x.sum().backward(inputs=[x])
    with pytest.raises(RuntimeError, match=FREED):
        x.sum().backward()


def test_backward_with_inputs_and_retain_graph_keeps_them():
    a = np.array([[0.25, 0.5], [0.75, 0.125]])
    x0 = torch.tensor(a, requires_grad=True)
    x = x0 * 1
    x.logit_()
    x.sum().backward(inputs=[x], retain_graph=True)
    x.sum().backward()
    np.testing.assert_allclose(x0.grad.numpy(), 1 / (a * (1 - a)), rtol=1e-6)


@pytest.mark.parametrize("create_graph", [False, True])
def test_in_place_op_passes_a_negative_zero_gradient_through(create_graph):
    # torch's ScatterAddBackward0 hands the gradient to self as it is: a -0.0
    # stays -0.0 (an extra zero from the overwritten value made it +0.0;
    # seed 12201, program 9214)
    x = torch.tensor([[0.25, -1.75], [-0.75, -0.0]], requires_grad=True)
    y = x.clone()
    y.scatter_add_(1, torch.tensor([[0], [1]]), torch.tensor([[0.5], [0.375]]))
    go = np.array([[-0.0, 1.0], [-0.0, -1.5]], np.float32)
    g, = torch.autograd.grad((y * torch.tensor(go)).sum(), [x], create_graph=create_graph)
    np.testing.assert_array_equal(np.signbit(g.numpy()), np.signbit(go))
    np.testing.assert_array_equal(g.numpy(), go)


def test_logit_in_place_gradient_keeps_the_sign_of_a_negative_zero():
    a = np.array([0.25, 0.5, 0.75], np.float32)
    x0 = torch.tensor(a, requires_grad=True)
    x = x0 * 1
    x.logit_()
    go = np.array([-0.0, 1.0, -2.0], np.float32)
    (x * torch.tensor(go)).sum().backward()
    want = go / (a * (1 - a))
    np.testing.assert_array_equal(np.signbit(x0.grad.numpy()), np.signbit(want))
    np.testing.assert_allclose(x0.grad.numpy(), want, rtol=1e-6)


def test_in_place_op_whose_input_needs_no_grad_still_sends_the_source_its_gradient():
    x = torch.zeros(2, 3)
    src = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    x.scatter_add_(0, torch.tensor([[1, 0, 1]]), src)
    (x * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [[4.0, 2.0, 6.0]])


# -- expand's strides and the copy onto the same memory ------------------------------------------

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


# -- errors torch raises as RuntimeError are caught by `except RuntimeError` here too --------------

F = torch.nn.functional


@pytest.mark.parametrize("call, python_class", [
    (lambda: F.conv2d(torch.zeros(1, 4, 5, 4), torch.zeros(2, 2, 3, 2)), ValueError),
    (lambda: F.conv2d(torch.zeros(1, 4, 5, 4), torch.zeros(2, 2, 3, 2), groups=3), ValueError),
    (lambda: F.conv_transpose2d(torch.zeros(1, 2, 4, 4), torch.zeros(2, 2, 3, 3), stride=1, padding=1,
                                output_padding=1), ValueError),
    (lambda: F.max_pool2d(torch.zeros(1, 1, 4, 4), 2, stride=0), ValueError),
    (lambda: F.avg_pool2d(torch.zeros(1, 1, 6, 6), 3, stride=2, padding=2), ValueError),
    (lambda: F.batch_norm(torch.zeros(3, 2, dtype=torch.int64), torch.zeros(2), torch.ones(2)), TypeError),
    (lambda: F.batch_norm(torch.zeros(3, 2), torch.zeros(2, dtype=torch.float64), torch.ones(2)), TypeError),
    (lambda: F.batch_norm(torch.zeros(3, 2), None, None, torch.ones(2, dtype=torch.int64), training=True),
     TypeError),
])
def test_kernel_argument_errors_are_runtime_errors_as_in_torch(call, python_class):
    with pytest.raises(RuntimeError) as caught:
        call()
    assert isinstance(caught.value, python_class)     # and what Python's convention names them


def test_kernel_api_argument_errors_stay_value_and_type_errors():
    from cextend import ops
    with pytest.raises(ValueError, match="x must be 4-D"):
        ops.conv2d_forward(np.zeros((2, 3)), np.zeros((1, 1, 1, 1)))
    with pytest.raises(TypeError, match="float32 or float64"):
        ops.conv2d_forward(np.zeros((1, 1, 2, 2), np.int64), np.zeros((1, 1, 1, 1), np.int64))


BROADCAST = r"The size of tensor a \(4\) must match the size of tensor b \(7\) at non-singleton dimension 0"


@pytest.mark.parametrize("call", [
    lambda a, b: a % b, lambda a, b: a // b, lambda a, b: torch.fmod(a, b),
    lambda a, b: torch.lerp(a.float(), b.float(), 0.5), lambda a, b: torch.addcmul(a, a, b),
    lambda a, b: torch.addcdiv(a.float(), a, b.float()), lambda a, b: a.remainder_(b)])
def test_integer_ops_that_do_not_broadcast_say_so_as_torch(call):
    # torch's message names the sizes and the dim (numpy's "shape mismatch" did not)
    a = torch.ones(4, dtype=torch.int64)
    b = torch.ones(7, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=BROADCAST):
        call(a, b)


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


# -- grad_fn names are torch's, overload digit included ------------------------------------------

def _named_forms():
    x = torch.ones(2, 3, requires_grad=True)
    y = torch.ones(2, 3, requires_grad=True)
    w = torch.ones(4, 3, requires_grad=True)
    b = torch.ones(4, requires_grad=True)
    F = torch.nn.functional

    def written(z):
        z[0] = 5
        return z

    def logit_in_place():
        z = x * 0.5
        z.logit_()
        return z
    # read from torch 2.13 (name() of each result's grad_fn)
    return [
        (lambda: x + y, "AddBackward0"), (lambda: 1 + x, "AddBackward0"), (lambda: x - 1, "SubBackward0"),
        (lambda: 1 - x, "RsubBackward1"), (lambda: x * 2, "MulBackward0"), (lambda: x / y, "DivBackward0"),
        (lambda: x ** 2, "PowBackward0"), (lambda: x ** y, "PowBackward1"), (lambda: 2 ** x, "PowBackward2"),
        (lambda: -x, "NegBackward0"), (lambda: x.sum(), "SumBackward0"), (lambda: x.sum(0), "SumBackward1"),
        (lambda: x.sum((0, 1)), "SumBackward1"), (lambda: x.mean(), "MeanBackward0"),
        (lambda: x.mean(0), "MeanBackward1"), (lambda: x.max(), "MaxBackward1"),
        (lambda: x.max(0)[0], "MaxBackward0"), (lambda: x.min(), "MinBackward1"),
        (lambda: x.prod(), "ProdBackward0"), (lambda: x.prod(0), "ProdBackward1"),
        (lambda: x.norm(), "LinalgVectorNormBackward0"), (lambda: x.squeeze(), "SqueezeBackward0"),
        (lambda: x.squeeze(0), "SqueezeBackward1"), (lambda: x[:1].squeeze((0,)), "SqueezeBackward2"),
        (lambda: x[:1].squeeze(), "SqueezeBackward0"), (lambda: x.unsqueeze(0), "UnsqueezeBackward0"),
        (lambda: x.view(6), "ViewBackward0"), (lambda: x.reshape(6), "ViewBackward0"),
        (lambda: (x * 1).reshape(2, 3), "ViewBackward0"), (lambda: x.t().reshape(6), "UnsafeViewBackward0"),
        (lambda: x.flatten(), "ViewBackward0"), (lambda: x.t(), "TBackward0"), (lambda: x[0].t(), "TBackward0"),
        (lambda: x.transpose(0, 1), "TransposeBackward0"), (lambda: x.permute(1, 0), "PermuteBackward0"),
        (lambda: x[0], "SelectBackward0"), (lambda: x[:1], "SliceBackward0"), (lambda: x[[0]], "IndexBackward0"),
        (lambda: x[:1].expand(4, 3), "ExpandBackward0"), (lambda: x.clamp(min=0), "ClampBackward1"),
        (lambda: x.clamp(0, 1), "ClampBackward1"), (lambda: x.clamp(min=y), "ClampBackward0"),
        (lambda: x.clamp_min(0), "ClampMinBackward0"), (lambda: x.clamp_min(y), "ClampMinBackward1"),
        (lambda: x.clamp_max(1), "ClampMaxBackward0"), (lambda: x.log1p(), "Log1PBackward0"),
        (lambda: x.square(), "PowBackward0"), (lambda: x % 2, "RemainderBackward0"),
        (lambda: x % y, "RemainderBackward1"), (lambda: torch.fmod(x, y), "FmodBackward1"),
        (lambda: x.exp(), "ExpBackward0"), (lambda: x.clone(), "CloneBackward0"),
        (lambda: x.to(torch.float64), "ToCopyBackward0"), (lambda: torch.cat([x, y]), "CatBackward0"),
        (lambda: x.softmax(1), "SoftmaxBackward0"), (lambda: F.relu(x), "ReluBackward0"),
        (lambda: F.linear(x, w), "MmBackward0"), (lambda: F.linear(x, w, b), "AddmmBackward0"),
        (lambda: F.linear(x[None], w, b), "ViewBackward0"), (lambda: F.linear(x[None], w), "UnsafeViewBackward0"),
        (lambda: F.linear(x[0], w), "SqueezeBackward4"), (lambda: (x * 1).add_(1), "AddBackward0"),
        (logit_in_place, "LogitBackward0"), (lambda: written(x * 1), "torch::autograd::CopySlices"),
        (lambda: torch.zeros(2, 3).copy_(x), "torch::autograd::CopyBackwards"),
        (lambda: F.cross_entropy(x, torch.tensor([0, 1])), "NllLossBackward0"),
        (lambda: F.conv2d(torch.ones(1, 1, 3, 3, requires_grad=True), torch.ones(1, 1, 2, 2)),
         "ConvolutionBackward0"),
        (lambda: F.max_pool2d(torch.ones(1, 1, 4, 4, requires_grad=True), 2), "MaxPool2DWithIndicesBackward0"),
        (lambda: F.avg_pool2d(torch.ones(1, 1, 4, 4, requires_grad=True), 2), "AvgPool2DBackward0"),
        (lambda: F.batch_norm(torch.ones(3, 2, requires_grad=True), None, None, training=True),
         "NativeBatchNormBackward0"),
    ]


def test_grad_fn_names_are_torchs():
    got = [(want, f().grad_fn.name()) for f, want in _named_forms()]
    assert [g for w, g in got if w != g] == [], [(w, g) for w, g in got if w != g]


def test_grad_fn_repr_uses_the_class_name_as_torch():
    x = torch.ones(2, requires_grad=True)
    y = x * 1
    y[0] = 5
    assert repr(y) == "tensor([5., 1.], grad_fn=<CopySlices>)"
    assert type(y.grad_fn).__name__ == "CopySlices"
    acc = (x * 1).grad_fn.next_functions[0][0]
    assert acc.name() == "torch::autograd::AccumulateGrad" and type(acc).__name__ == "AccumulateGrad"
    assert repr((x * 2).sum(0)) == "tensor(4., grad_fn=<SumBackward1>)"
    assert repr(torch.zeros(2).copy_(x)) == "tensor([1., 1.], grad_fn=<CopyBackwards>)"


# ops cextend composes from others: their grad_fn is the last op's (README, deviations)
COMPOSED = {"conv1d", "conv_transpose1d", "floor_divide", "matmul", "nanmedian", "rot90", "rsub"}


def test_grad_fn_names_match_torch_across_the_op_table():
    real_torch = pytest.importorskip("torch")
    from cextend._ops import registry
    rng = np.random.default_rng(0)
    compared, differ = 0, []
    for name, info in sorted(registry.OPS.items()):
        if not info.samples:
            continue
        sample = next(iter(info.samples(rng)))
        names = []
        for lib in (real_torch, torch):
            def convert(a):
                if isinstance(a, registry.Const):
                    return lib.tensor(a.array)
                if isinstance(a, np.ndarray):
                    return lib.tensor(a, requires_grad=a.dtype.kind == "f")
                return a
            args = [convert(a) for a in sample.args]
            kwargs = {k: convert(v) for k, v in sample.kwargs.items()}
            try:
                out = info.call(lib, *args, **kwargs) if info.call else getattr(lib, name)(*args, **kwargs)
            except Exception:       # noqa: BLE001 - an op torch reaches another way: not compared here
                names.append(Exception)
                continue
            out = out[0] if isinstance(out, (tuple, list)) else out
            names.append(out.grad_fn.name() if getattr(out, "grad_fn", None) is not None else None)
        if Exception in names:
            continue
        compared += 1
        if names[0] != names[1] and name not in COMPOSED:
            differ.append((name, names[0], names[1]))
    assert compared > 150
    assert differ == []


# -- where several checks fail, the one torch makes first is the one raised ----------------------

@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
def test_scan_in_place_checks_in_torchs_order(name):
    leaf = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(TypeError, match=r"%s\(\): argument 'dim' \(position 1\) must be int, not float" % name):
        getattr(leaf, name)(1.5)            # the argument parser first
    with pytest.raises(TypeError, match="must be int, not bool"):
        getattr(leaf.detach(), name)(True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(leaf, name)(2)              # autograd's check, before the dim's range
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(torch.ones(2, dtype=torch.bool), name)(5)      # the dim, before the bool kernel
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        getattr(torch.ones(2, dtype=torch.bool), name)(0)
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    want = np.cumsum if name == "cumsum_" else np.cumprod
    np.testing.assert_array_equal(getattr(x, name)(1).numpy(), want([[1, 2, 3], [4, 5, 6]], axis=1))


@pytest.mark.parametrize("shape, key, error, message", [
    ((0, 3), (0, slice(None, None, -1)), IndexError, "index 0 is out of bounds for dimension 0 with size 0"),
    ((0, 3), (slice(None, None, -1), 5), ValueError, "step must be greater than zero"),
    ((0, 3), (None, 0, slice(None, None, -1)), IndexError, "index 0 is out of bounds for dimension 1 with size 0"),
    ((2, 3), (None, None, 0, 5), IndexError, "index 5 is out of bounds for dimension 3 with size 3"),
    ((2, 3), (0, slice(None, None, -1), 9), IndexError, "too many indices for tensor of dimension 2"),
    ((2, 3), (-3,), IndexError, "index -3 is out of bounds for dimension 0 with size 2"),
])
def test_indexing_errors_in_torchs_order(shape, key, error, message):
    with pytest.raises(error, match=message):
        torch.zeros(*shape)[key]


def test_indexing_in_bounds_still_works_at_the_edges():
    a = np.arange(6.0).reshape(2, 3)
    x = torch.tensor(a)
    assert x[-2, -3].item() == a[-2, -3] and x[1, 2].item() == a[1, 2]
    assert tuple(x[None, 1, None, 2].shape) == (1, 1)
    np.testing.assert_array_equal(x[..., 2].numpy(), a[..., 2])


# -- a tensor of another dtype with a number: laid out as its .to() copy -------------------------

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


# -- a CopySlices none of whose outputs is wanted copies nothing --------------------------------

def test_backward_with_inputs_at_a_base_written_through_an_expanded_view():
    # torch runs the base's CopySlices with no output wanted: fn is called,
    # nothing is copied into the expanded region, so nothing raises (seed
    # 13301, program 11297); a full backward does copy and raises
    v2 = torch.tensor([1.0, -1.25, 0.75], requires_grad=True)
    v3 = v2 * 2
    v5 = v3.expand(2, -1)
    v5.zero_()
    v5.sum().backward(inputs=[v3], retain_graph=True)
    np.testing.assert_array_equal(v3.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        v5.sum().backward()
    assert v2.grad is None


def test_backward_with_inputs_at_a_base_still_frees_its_copy_slices():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[:2].mul_(3)
    y.sum().backward(inputs=[y])
    with pytest.raises(RuntimeError, match=FREED):
        y.sum().backward()


# -- matmul of a matrix and a vector is torch's one MvBackward0 node ----------------------------

@pytest.mark.parametrize("make", [lambda a, v: a @ v, lambda a, v: torch.mv(a, v), lambda a, v: v @ v])
def test_backward_with_inputs_frees_mv_and_dot(make):
    # torch's MvBackward0 / DotBackward0 save both operands: running it with
    # nothing wanted (backward(inputs=[y])) frees them (seed 13501, program 13476)
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    v = torch.tensor([1.0, -1.0, 0.5], requires_grad=True)
    y = make(a, v)
    assert y.grad_fn.name() in ("MvBackward0", "DotBackward0")
    y.sum().backward(inputs=[y])
    with pytest.raises(RuntimeError, match=FREED):
        y.sum().backward()


def test_mv_gradients_against_numpy():
    rng = np.random.default_rng(7)
    A, x, go = rng.standard_normal((5, 3)), rng.standard_normal(3), rng.standard_normal(5)
    a, v = torch.tensor(A, requires_grad=True), torch.tensor(x, requires_grad=True)
    (torch.mv(a, v) * torch.tensor(go)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.outer(go, x), rtol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), A.T @ go, rtol=1e-12)
    assert (torch.tensor(x, requires_grad=True) @ a.t()).grad_fn.name() == "SqueezeBackward4"


# -- found by tutorial programs run in both libraries ---------------------------------------------

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


def test_from_numpy_refuses_negative_strides_as_torch():
    with pytest.raises(ValueError, match="At least one stride in the given numpy array is negative"):
        torch.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(ValueError, match="negative"):
        torch.as_tensor(np.arange(6.0).reshape(2, 3)[:, ::-1])
    a = np.arange(6.0).reshape(2, 3)[:, ::2]
    t = torch.from_numpy(a)
    a[0, 0] = 7.0
    assert t.stride() == (3, 2) and t[0, 0].item() == 7.0        # positive strides: shared memory


def test_python_number_conversions_of_many_elements_raise_value_error():
    for convert in (float, int, complex):
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            convert(torch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        torch.tensor([1.0, 2.0]).item()
    assert float(torch.tensor([2.5])) == 2.5 and int(torch.tensor(3.7)) == 3


def test_a_conv_of_an_input_of_the_wrong_rank_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="3D \\(unbatched\\) or 4D \\(batched\\) input"):
        torch.nn.Conv2d(1, 1, 3)(torch.ones(5, 5))
    with pytest.raises(ValueError):
        torch.nn.Conv2d(1, 1, 3)(torch.ones(5, 5))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_bce_with_logits_gradient_of_a_float64_input_keeps_float64_precision(reduction):
    # torch: sigmoid(x).sub_(target).mul_(grad).div_(numel), all in the
    # input's float64; the float32 target and loss do not round it
    a = np.array([0.0, 0.0, 1.0, -2.5, 0.3])
    y = np.array([0.0, 1.0, 1.0, 0.25, 0.5], np.float32)
    x = torch.tensor(a, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, torch.tensor(y), reduction=reduction)
    assert loss.dtype == torch.float32
    loss.backward()
    want = 1 / (1 + np.exp(-a)) - y.astype(np.float64)
    if reduction == "mean":
        want = want / a.size
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-15, atol=1e-17)


def test_an_old_batch_norm_checkpoint_without_the_counter_loads():
    # a plain dict carries no version: torch treats it as a checkpoint from
    # before num_batches_tracked and keeps the module's own counter
    bn = torch.nn.BatchNorm1d(2)
    bn.num_batches_tracked += 3
    old = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    assert str(bn.load_state_dict(old)) == "<All keys matched successfully>"
    assert bn.num_batches_tracked.item() == 3
    current = bn.state_dict()                   # version 2: the counter is required
    assert current._metadata[""] == {"version": 2}
    del current["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        bn.load_state_dict(current)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    assert list(model.state_dict()._metadata.items()) == [("", {"version": 1}), ("0", {"version": 1}),
                                                          ("1", {"version": 2})]
