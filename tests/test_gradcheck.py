"""gradcheck's own behaviour: passing, failing with a useful report, modes."""
import numpy as np
import pytest

import cextend as cx
from cextend.autograd import Function, GradcheckError, gradcheck, gradgradcheck


class WrongScale(Function):
    @staticmethod
    def forward(ctx, a):
        return a * 3.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def x64(*shape):
    return cx.randn(*shape, dtype=cx.float64, requires_grad=True)


def test_defaults_match_torch():
    import inspect
    params = inspect.signature(gradcheck).parameters
    assert params["eps"].default == 1e-6 and params["atol"].default == 1e-5
    assert params["rtol"].default == 1e-3 and params["raise_exception"].default is True
    assert params["nondet_tol"].default == 0.0 and params["fast_mode"].default is False
    assert all(params[p].kind is inspect.Parameter.KEYWORD_ONLY for p in ("eps", "atol", "fast_mode"))


def test_report_names_the_pair_and_lists_worst_elements():
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongScale.apply, (x64(3, 2),))
    message = str(info.value)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0")
    assert "6 of 36 Jacobian elements differ" in message
    listed = [l for l in message.splitlines() if l.startswith("  (")]
    assert len(listed) == 5                                   # the worst few, not all 6
    for line in listed:
        source, target = line.split(":")[0].strip().split(" -> ")
        assert source == target                               # d out_i / d x_i: the diagonal
        numerical, analytical, error, _ = (float(v) for v in line.split(":")[1].split(","))
        assert (numerical, analytical, error) == pytest.approx((3, 2, 1), rel=1e-6)
    assert gradcheck(WrongScale.apply, (x64(3, 2),), raise_exception=False) is False


def test_report_points_at_the_right_input():
    def f(a, b):
        return a * 2 + WrongScale.apply(b)
    with pytest.raises(GradcheckError, match="with respect to input 1"):
        gradcheck(f, (x64(2), x64(2)))


def test_float32_inputs_warn_and_the_report_hints():
    x = cx.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision"):
        with pytest.raises(GradcheckError, match="Hint: input 0 is float32"):
            gradcheck(WrongScale.apply, (x,))


def test_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda t: t * 2, (cx.randn(2, dtype=cx.float64),))


def test_fast_mode_passes_and_falls_back_to_the_full_report():
    assert gradcheck(lambda a, b: (a @ b).tanh(), (x64(3, 4), x64(4, 2)), fast_mode=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(WrongScale.apply, (x64(4),), fast_mode=True)


def test_nondeterministic_backward_is_flagged():
    rng = np.random.default_rng(0)

    class Noisy(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * (2 + 1e-9 * rng.standard_normal())

    with pytest.raises(GradcheckError, match="not reentrant"):
        gradcheck(Noisy.apply, (x64(3),))
    assert gradcheck(Noisy.apply, (x64(3),), nondet_tol=1e-6)


def test_backward_that_ignores_undefined_grads_is_flagged():
    class OnesWhenUndefined(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(False)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            # Wrong: an undefined gradient means zero, not ones.  The Jacobian
            # check never passes None here; only the undefined-grad check can tell.
            return (g if g is not None else cx.ones(2, dtype=cx.float64)) * 2

    with pytest.raises(GradcheckError, match="undefined output grads"):
        gradcheck(OnesWhenUndefined.apply, (x64(2),))
    assert gradcheck(OnesWhenUndefined.apply, (x64(2),), check_undefined_grad=False)


def test_multiple_outputs_and_non_tensor_inputs():
    def f(a, scale, b):
        return a * scale, (a * b).sum()
    assert gradcheck(f, (x64(3), 2.0, x64(3)))


def test_gradgradcheck_catches_a_wrong_second_derivative():
    class Cube(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * 3 * a.detach() ** 2      # detach: the second derivative is lost

    x = x64(3)
    assert gradcheck(Cube.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(Cube.apply, (x,))


def test_gradgradcheck_with_explicit_grad_outputs():
    x = x64(2, 3)
    g = cx.randn(2, 3, dtype=cx.float64, requires_grad=True)
    assert gradgradcheck(lambda t: t.tanh(), (x,), (g,))
    assert gradgradcheck(lambda t: t.exp(), (x,), gen_non_contig_grad_outputs=True)
