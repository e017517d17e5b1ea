"""Sample inputs for the op table: one generator per kind of op.

Each factory returns `samples(rng)`, which yields Sample objects whose
float arrays are float64 and small (gradcheck perturbs every element).
Values keep away from the points where an op is not differentiable (ties
for max, jumps for remainder, the edges of a domain), because finite
differences are meaningless there; the differential tester adds zeros,
infinities and NaN on its own.
"""
import numpy as np

from cextend._ops.registry import Const, Sample

# Shapes that cover scalars, empty tensors, odd sizes and broadcasting.
UNARY_SHAPES = ((3, 4), (), (5,), (2, 3, 2), (0, 3))
BINARY_SHAPES = (((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((5,), ()),
                 ((0, 3), (3,)))


def _values(rng, shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape)


def _away_from_zero(rng, shape, low=0.5, high=2.0):
    return rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)


def unary(low=-2.0, high=2.0, shapes=UNARY_SHAPES):
    """Elementwise ops of one tensor, on values in [low, high]."""
    def samples(rng):
        for shape in shapes:
            yield Sample(_values(rng, shape, low, high))
    return samples


def binary(positive_other=False, distinct=False, smooth_mod=False, tensor_other=False):
    """Elementwise ops of two operands: broadcasting pairs, a 0-d tensor and a
    Python number.  positive_other keeps the second operand away from zero
    (division); smooth_mod keeps a/b away from integers (remainder's jumps);
    distinct adds some exactly equal pairs for comparisons (not for gradients);
    tensor_other leaves out the Python-number operand (ops that need tensors)."""
    def samples(rng):
        for sa, sb in BINARY_SHAPES:
            b = _away_from_zero(rng, sb) if positive_other else _values(rng, sb)
            if smooth_mod:
                if np.broadcast_shapes(sa, sb) != sa:
                    continue
                q = rng.integers(-3, 4, sa) + rng.uniform(0.2, 0.8, sa)
                a = q * np.abs(np.broadcast_to(b, sa))
            else:
                a = _values(rng, sa)
            yield Sample(a, b)
        if distinct:
            a = _values(rng, (4,))
            yield Sample(a, np.where(rng.random(4) > 0.5, a, -a), note="equal elements")
        scalar = 1.75 if positive_other else -1.25
        if not tensor_other:
            yield Sample(_values(rng, (3, 2)), scalar, note="Python number")
        other = _away_from_zero(rng, ()) if positive_other else _values(rng, ())
        yield Sample(_values(rng, (2, 3)), np.array(other), note="0-d other")
    return samples


def pow_samples():
    def samples(rng):
        for exponent in (2, 3, 0.5, -1.5, 0, 1):
            yield Sample(rng.uniform(0.5, 2.0, (3, 4)), exponent)
        yield Sample(rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(-2, 2, (3, 4)))
        yield Sample(rng.uniform(0.5, 2.0, (3, 1)), rng.uniform(-2, 2, (4,)))
        yield Sample(rng.uniform(0.5, 2.0, ()), rng.uniform(-2, 2, (2, 3)))
        yield Sample(rng.uniform(-2.0, 2.0, (3, 4)), 3, note="negative base, integer exponent")
        yield Sample(2.0, rng.uniform(-2, 2, (3, 4)), note="Python-number base (2.0 ** x)")
    return samples


def where_samples():
    def samples(rng):
        mask = rng.random((3, 4)) > 0.5
        yield Sample(Const(mask), _values(rng, (3, 4)), _values(rng, (3, 4)))
        yield Sample(Const(mask), _values(rng, (4,)), _values(rng, (3, 1)))
        yield Sample(Const(mask), _values(rng, (3, 4)), 0.5)
        yield Sample(Const(rng.random((2,)) > 0.5), -1.5, _values(rng, (2,)))
    return samples


def masked_fill_samples():
    def samples(rng):
        mask = rng.random((3, 4)) > 0.5
        yield Sample(_values(rng, (3, 4)), Const(mask), 2.5)
        yield Sample(_values(rng, (3, 4)), Const(rng.random((4,)) > 0.5), -1.0)
        yield Sample(_values(rng, (3, 4)), Const(mask), _values(rng, ()), note="0-d value")
    return samples


def reduction(dims=True, positive=False, keepdim=True, multi_dim=True):
    """Reductions: all elements, one dim, several dims, keepdim."""
    def samples(rng):
        low, high = (0.5, 2.0) if positive else (-2.0, 2.0)
        yield Sample(rng.uniform(low, high, (3, 4)))
        yield Sample(rng.uniform(low, high, ()))
        if dims:
            yield Sample(rng.uniform(low, high, (3, 4)), 1)
            yield Sample(rng.uniform(low, high, (2, 3, 4)), -1)
            if keepdim:
                yield Sample(rng.uniform(low, high, (2, 3, 4)), 0, keepdim=True)
            if multi_dim:
                yield Sample(rng.uniform(low, high, (2, 3, 4)), (0, 2))
            yield Sample(rng.uniform(low, high, (0, 3)), 1, note="empty")
            if keepdim and multi_dim:
                yield Sample(rng.uniform(low, high, (2, 3, 4)), (0, 2), keepdim=True)
    return samples


def no_samples():
    def samples(rng):
        return iter(())
    return samples
