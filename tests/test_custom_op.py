"""custom_op: schema inference, calling, autograd recording, mutation and aliasing (torch.library's rules).

The ops here are plain cextend arithmetic, so these tests need no compiler;
test_opcheck.py covers ops around C kernels.  Where torch 2.13 is importable,
its infer_schema and custom_op give the reference answers.
"""
import typing
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pytest

import cextend
from cextend import Tensor
from cextend.autograd import grad
from cextend.library import custom_op, infer_schema, register_autograd, register_fake

try:
    import torch
except ImportError:         # torch is a test-only extra
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 gives the reference answers; not installed")


def f_basic(x: Tensor, alpha: float = 1.0, *, n: int = 3, flag: bool = False) -> Tensor: ...
def f_optional(x: Tensor, w: Optional[Tensor], ts: List[Tensor], sizes: Sequence[int]) -> Tuple[Tensor, Tensor]: ...
def f_mutates(x: Tensor, out: Tensor) -> None: ...
def f_list_return(xs: list[Tensor], name: str = "a") -> List[Tensor]: ...
def f_single_tuple(x: Tensor, scale: Optional[float] = None) -> Tuple[Tensor]: ...


SCHEMAS = [
    (f_basic, (), "(Tensor x, float alpha=1.0, *, SymInt n=3, bool flag=False) -> Tensor"),
    (f_optional, (), "(Tensor x, Tensor? w, Tensor[] ts, SymInt[] sizes) -> (Tensor, Tensor)"),
    (f_mutates, ("out",), "(Tensor x, Tensor(a1!) out) -> ()"),
    (f_mutates, "unknown", "(Tensor(a0!) x, Tensor(a1!) out) -> ()"),
    (f_list_return, (), '(Tensor[] xs, str name="a") -> Tensor[]'),
    (f_single_tuple, (), "(Tensor x, float? scale=None) -> ((Tensor))"),
]


@pytest.mark.parametrize("fn, mutates, expected", SCHEMAS)
def test_infer_schema(fn, mutates, expected):
    assert infer_schema(fn, mutates_args=mutates) == expected
    assert infer_schema(fn, mutates_args=mutates, op_name="mylib::f") == "mylib::f" + expected


def _as_torch(fn):
    """fn with its annotations spelled in torch's types."""
    def convert(annotation):
        if annotation is Tensor:
            return torch.Tensor
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is None:
            return annotation
        converted = tuple(convert(a) for a in args)
        if origin is typing.Union:
            return typing.Union[converted]
        alias = {list: List, tuple: Tuple}.get(origin) or getattr(typing, origin.__name__.capitalize(), None)
        return alias[converted if len(converted) > 1 else converted[0]] if alias else annotation
    twin = lambda: None  # noqa: E731
    twin.__annotations__ = {k: convert(v) for k, v in fn.__annotations__.items()}
    import inspect
    signature = inspect.signature(fn)
    twin.__signature__ = signature.replace(
        parameters=[p.replace(annotation=convert(p.annotation)) for p in signature.parameters.values()],
        return_annotation=convert(signature.return_annotation))
    return twin


@needs_torch
@pytest.mark.parametrize("fn, mutates, expected", SCHEMAS)
def test_infer_schema_matches_torch(fn, mutates, expected):
    assert torch.library.infer_schema(_as_torch(fn), mutates_args=mutates) == expected


def test_schema_errors_are_torchs():
    def unannotated(x) -> Tensor: ...
    with pytest.raises(ValueError, match=r"infer_schema\(func\): Parameter x must have a type annotation"):
        infer_schema(unannotated, mutates_args=())
    with pytest.raises(ValueError, match=r"\{'y'\} in mutates_args were not found in the custom op's signature"):
        infer_schema(f_mutates, mutates_args=("y",))
    with pytest.raises(ValueError, match="only Tensors or collections of Tensors can be mutated"):
        infer_schema(f_basic, mutates_args=("alpha",))
    with pytest.raises(ValueError, match="mutates_args must either be a sequence"):
        infer_schema(f_basic, mutates_args="everything")

    def no_return(x: Tensor): ...
    with pytest.raises(ValueError, match="No return type annotation was provided"):
        infer_schema(no_return, mutates_args=())
    with pytest.raises(ValueError, match='name must look like "namespace::name"'):
        custom_op("no_namespace", f_basic, mutates_args=())


def scaled_cube():
    """x * x * x * alpha, with a hand-written backward that counts its calls."""
    seen = {"grad_enabled": [], "backward": 0}

    @custom_op("test::scaled_cube", mutates_args=())
    def op(x: Tensor, alpha: float = 2.0) -> Tensor:
        seen["grad_enabled"].append(cextend.is_grad_enabled())
        return x * x * x * alpha

    def setup_context(ctx, inputs, output):
        x, alpha = inputs
        ctx.save_for_backward(x)
        ctx.alpha = alpha

    def backward(ctx, g):
        seen["backward"] += 1
        x, = ctx.saved_tensors
        return 3 * x * x * ctx.alpha * g, None

    op.register_autograd(backward, setup_context=setup_context)
    return op, seen


def test_calling_records_autograd_with_grad_mode_off_inside():
    op, seen = scaled_cube()
    x = cextend.randn(3, 4, dtype=cextend.float64, requires_grad=True)
    y = op(x, alpha=0.5)
    assert seen["grad_enabled"] == [False]
    assert y.requires_grad and type(y.grad_fn).__name__ == "GeneratedBackwardFor_test_scaled_cube_defaultBackward"
    g, = grad(y.sum(), [x])
    np.testing.assert_allclose(g.numpy(), 1.5 * x.detach().numpy() ** 2, rtol=1e-15)
    assert seen["backward"] == 1
    with cextend.no_grad():
        z = op(x)
    assert not z.requires_grad and z.grad_fn is None and seen["grad_enabled"] == [False, False]
    assert repr(op) == "<CustomOpDef(test::scaled_cube)>" and op.__name__ == "op"


def test_keyword_only_arguments_reach_setup_context_and_list_inputs_get_gradients():
    @custom_op("test::weighted_sum", mutates_args=())
    def weighted_sum(xs: List[Tensor], weights: List[float], *, bias: float = 0.0) -> Tensor:
        total = xs[0] * weights[0]
        for x, w in zip(xs[1:], weights[1:]):
            total = total + x * w
        return total + bias

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        ctx.weights = inputs[1]
        ctx.bias = keyword_only_inputs["bias"]

    def backward(ctx, g):
        return [g * w for w in ctx.weights], None

    weighted_sum.register_autograd(backward, setup_context=setup_context)
    xs = [cextend.randn(4, dtype=cextend.float64, requires_grad=True) for _ in range(3)]
    y = weighted_sum(xs, [1.0, -2.0, 0.5], bias=3.0)
    np.testing.assert_allclose(y.detach().numpy(), xs[0].detach().numpy() - 2 * xs[1].detach().numpy()
                               + 0.5 * xs[2].detach().numpy() + 3.0, rtol=1e-15)
    grads = grad(y.sum(), xs)
    for g, w in zip(grads, [1.0, -2.0, 0.5]):
        np.testing.assert_array_equal(g.numpy(), np.full(4, w))


def test_tuple_outputs_and_a_wrong_number_of_gradients():
    @custom_op("test::split_halves", mutates_args=())
    def split_halves(x: Tensor) -> Tuple[Tensor, Tensor]:
        return x * 1.0, x * 2.0

    split_halves.register_autograd(lambda ctx, a, b: (a + 2 * b, None))
    x = cextend.randn(3, dtype=cextend.float64, requires_grad=True)
    a, b = split_halves(x)
    with pytest.raises(RuntimeError, match=r"returned 2 gradient\(s\), but the op has 1 input\(s\) \(x\)"):
        (a + b).sum().backward()


def test_backward_without_a_formula_raises_torchs_message_at_backward():
    @custom_op("test::no_formula", mutates_args=())
    def no_formula(x: Tensor) -> Tensor:
        return x * 2
    y = no_formula(cextend.randn(2, requires_grad=True))
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="Trying to backward through test.no_formula.default but no autograd "
                                           "formula was registered"):
        y.sum().backward()


def test_mutation_bumps_version_counters_so_autograd_notices():
    @custom_op("test::add_into", mutates_args={"out"})
    def add_into(x: Tensor, out: Tensor) -> None:
        out.numpy()[...] += x.numpy()

    x, out = cextend.ones(3), cextend.zeros(3)
    before = (x._version, out._version)
    add_into(x, out)
    assert out._version > before[1] and x._version == before[0]
    np.testing.assert_array_equal(out.numpy(), np.ones(3))
    # A tensor saved for backward and then mutated through the op: backward refuses.
    w = cextend.randn(3, dtype=cextend.float64, requires_grad=True)
    saved = cextend.randn(3, dtype=cextend.float64)
    y = (w * saved).sum()
    add_into(cextend.ones(3, dtype=cextend.float64), saved)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional operator"):
        add_into.register_autograd(lambda ctx, g: None)


def test_outputs_may_not_alias_inputs():
    @custom_op("test::identity", mutates_args=())
    def identity(x: Tensor) -> Tensor:
        return x

    @custom_op("test::view_of_input", mutates_args=())
    def view_of_input(x: Tensor) -> Tensor:
        return x[1:]
    x = cextend.randn(4)
    for op in (identity, view_of_input):
        with pytest.raises(RuntimeError, match="must not also be an input to this custom operator"):
            op(x)
        with pytest.raises(RuntimeError, match="must not also be an input"):
            op(cextend.randn(4, requires_grad=True))


def test_an_explicit_schema_needs_no_annotations():
    op = custom_op("test::explicit_schema", lambda x, y: x * y, mutates_args=(),
                   schema="(Tensor x, Tensor y) -> Tensor")
    op.register_autograd(lambda ctx, g: (g * ctx.y, g * ctx.x),
                         setup_context=lambda ctx, inputs, output: ctx.__dict__.update(x=inputs[0], y=inputs[1]))
    x, y = cextend.randn(3, requires_grad=True), cextend.randn(3, requires_grad=True)
    op(x, y).sum().backward()
    assert op._schema == "(Tensor x, Tensor y) -> Tensor"
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


def test_kernels_per_device_and_module_level_registration():
    @custom_op("test::which", mutates_args=(), device_types="cpu")
    def which(x: Tensor) -> Tensor:
        return x + 1

    assert which(cextend.zeros(1)).item() == 1

    @which.register_kernel("cpu")
    def _(x):
        return x + 2
    assert which(cextend.zeros(1)).item() == 2
    register_fake("test::which", lambda x: cextend.empty_like(x))
    assert which._run_fake(cextend.zeros(5)).shape == (5,)
    register_autograd(which, lambda ctx, g: g)
    x = cextend.zeros(2, requires_grad=True)
    which(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(2))
    with pytest.raises(TypeError, match="test::which"):
        which(cextend.zeros(1), cextend.zeros(1))


@needs_torch
def test_same_op_same_gradients_as_torch():
    rng = np.random.default_rng(5)
    data = rng.standard_normal((4, 3))

    def make(lib, T):
        @lib.custom_op("parity::softplus_scaled", mutates_args=())
        def softplus_scaled(x: T, beta: float) -> T:
            return (1 + (x * beta).exp()).log() / beta

        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.beta = inputs[1]

        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * (x * ctx.beta).sigmoid(), None
        softplus_scaled.register_autograd(backward, setup_context=setup_context)
        return softplus_scaled

    ours, theirs = make(cextend.library, Tensor), make(torch.library, torch.Tensor)
    x = cextend.tensor(data, requires_grad=True)
    t = torch.tensor(data, requires_grad=True)
    y, ty = ours(x, 1.5), theirs(t, 1.5)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-14)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-14)
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
