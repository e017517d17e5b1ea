"""Sample inputs for the nn family of the op table (see samples.py).

Values keep a gap from each op's kinks (0 for leaky_relu and elu, the
bounds of hardtanh, |input - target| = beta for smooth_l1, the threshold
of softplus), because finite differences are meaningless there.  Class
targets and weights are Const (they never require grad, as in torch).
"""
import numpy as np

from cextend._ops.registry import Const, Sample

SHAPES = ((3, 4), (), (5,), (2, 3, 2), (0, 3))


def _away(rng, shape, points, low=-3.0, high=3.0, gap=0.15):
    """Uniform values in [low, high] moved at least `gap` off every point."""
    values = rng.uniform(low, high, shape)
    for p in points:
        close = np.abs(values - p) < gap
        values = np.where(close, p + np.where(values >= p, gap, -gap) * 2, values)
    return values


def activation(points, low=-3.0, high=3.0, shapes=SHAPES):
    def samples(rng):
        for shape in shapes:
            yield Sample(_away(rng, shape, points, low, high))
    return samples


def softmax_samples():
    def samples(rng):
        yield Sample(rng.standard_normal((3, 4)), 1)
        yield Sample(rng.standard_normal((2, 3, 4)), 0)
        yield Sample(rng.standard_normal((5,)), -1)
        yield Sample(rng.standard_normal(()), 0)
        yield Sample(rng.standard_normal((0, 3)), 1, note="empty")
        yield Sample(rng.standard_normal((2, 5)) * 30, 1, note="large logits")
    return samples


def leaky_relu_samples():
    def samples(rng):
        for shape in SHAPES:
            yield Sample(_away(rng, shape, [0.0]))
        yield Sample(_away(rng, (3, 4), [0.0]), 0.2)
        yield Sample(_away(rng, (3, 4), [0.0]), negative_slope=-0.5)
    return samples


def elu_samples():
    def samples(rng):
        for shape in SHAPES:
            yield Sample(_away(rng, shape, [0.0]))
        yield Sample(_away(rng, (3, 4), [0.0]), 0.5)
        yield Sample(_away(rng, (3, 4), [0.0]), alpha=2.0)
    return samples


def celu_samples():
    def samples(rng):
        yield Sample(_away(rng, (3, 4), [0.0]))
        yield Sample(_away(rng, (3, 4), [0.0]), 0.5)
        yield Sample(_away(rng, (), [0.0]), alpha=2.0)
    return samples


def softplus_samples():
    def samples(rng):
        for shape in SHAPES:
            yield Sample(rng.uniform(-3, 3, shape))
        yield Sample(rng.uniform(-3, 3, (3, 4)), 2.0)
        # beta * x crosses the threshold: the linear branch, away from the switch.
        yield Sample(_away(rng, (3, 4), [1.0], -3, 3), beta=2.0, threshold=2.0)
    return samples


def hardtanh_samples():
    def samples(rng):
        for shape in SHAPES:
            yield Sample(_away(rng, shape, [-1.0, 1.0]))
        yield Sample(_away(rng, (3, 4), [-0.5, 2.0]), -0.5, 2.0)
        yield Sample(_away(rng, (3, 4), [0.0, 0.5]), min_val=0.0, max_val=0.5)
    return samples


# -- losses ----------------------------------------------------------------------------------

def regression_loss(kink=None, extra=()):
    """input/target pairs for l1/mse/smooth_l1/huber, every reduction.

    kink(k): |input - target| is kept at least 0.15 from k (and from 0)."""
    def pair(rng, shape, kinks):
        target = rng.uniform(-2, 2, shape)
        diff = _away(rng, shape, [k for k in kinks for k in (k, -k)], -3, 3)
        return np.asarray(target + diff), target

    def samples(rng):
        kinks = [0.0] + ([kink] if kink else [])
        for shape in ((3, 4), (), (7,), (2, 3, 2)):
            for reduction in ("mean", "sum", "none"):
                yield Sample(*pair(rng, shape, kinks), reduction=reduction)
        yield Sample(*pair(rng, (0, 3), kinks), reduction="sum", note="empty")
        for kwargs in extra:
            ks = kinks + [v for v in kwargs.values() if isinstance(v, float)]
            yield Sample(*pair(rng, (3, 4), ks), **kwargs)
    return samples


def bce_samples():
    def samples(rng):
        for shape in ((3, 4), (), (6,)):
            for reduction in ("mean", "sum", "none"):
                yield Sample(rng.uniform(0.05, 0.95, shape), rng.uniform(0, 1, shape),
                             reduction=reduction)
        yield Sample(rng.uniform(0.05, 0.95, (3, 4)), rng.uniform(0, 1, (3, 4)),
                     weight=Const(rng.uniform(0.5, 2, (4,))), note="broadcast weight")
        yield Sample(rng.uniform(0.05, 0.95, (3, 4)), Const((rng.random((3, 4)) > 0.5).astype(np.float64)),
                     reduction="sum", note="hard labels")
    return samples


def bce_logits_samples():
    def samples(rng):
        for shape in ((3, 4), (), (6,)):
            for reduction in ("mean", "sum", "none"):
                yield Sample(rng.uniform(-4, 4, shape), rng.uniform(0, 1, shape), reduction=reduction)
        yield Sample(rng.uniform(-4, 4, (3, 4)), rng.uniform(0, 1, (3, 4)),
                     weight=Const(rng.uniform(0.5, 2, (3, 4))), pos_weight=Const(rng.uniform(0.5, 3, (4,))))
        yield Sample(rng.uniform(-30, 30, (2, 5)), rng.uniform(0, 1, (2, 5)), reduction="sum",
                     note="large logits")
    return samples


def kl_div_samples():
    """No 'mean': it works but warns (torch's deprecation of it), tested directly instead."""
    def samples(rng):
        for reduction in ("batchmean", "sum", "none"):
            yield Sample(np.log(rng.uniform(0.1, 1, (3, 4))), rng.uniform(0.1, 1, (3, 4)),
                         reduction=reduction)
        yield Sample(rng.uniform(-2, 0, (3, 4)), rng.uniform(-2, 0, (3, 4)), reduction="batchmean",
                     log_target=True)
        yield Sample(rng.uniform(-2, 0, ()), rng.uniform(0.1, 1, ()), reduction="sum")
    return samples


def _classes(rng, shape, n_classes, ignore=None):
    """Random class indices; with `ignore`, the first is ignore and the others are not
    (all ignored would make 'mean' 0/0)."""
    target = rng.integers(0, n_classes, shape)
    if ignore is not None and target.size:
        others = [c for c in range(n_classes) if c != ignore]
        target = np.asarray(others)[rng.integers(0, len(others), shape)]
        target.flat[0] = ignore
    return Const(target.astype(np.int64))


def nll_samples():
    def samples(rng):
        for reduction in ("mean", "sum", "none"):
            yield Sample(rng.standard_normal((4, 3)), _classes(rng, (4,), 3), reduction=reduction)
        yield Sample(rng.standard_normal((4, 3)), _classes(rng, (4,), 3),
                     weight=Const(rng.uniform(0.5, 2, (3,))), note="class weights")
        yield Sample(rng.standard_normal((5, 3)), _classes(rng, (5,), 3, ignore=-100),
                     weight=Const(rng.uniform(0.5, 2, (3,))), reduction="mean", note="ignored")
        yield Sample(rng.standard_normal((4, 3)), _classes(rng, (4,), 3, ignore=1), ignore_index=1)
        yield Sample(rng.standard_normal((3,)), _classes(rng, (), 3), note="no batch dim")
        yield Sample(rng.standard_normal((2, 3, 4)), _classes(rng, (2, 4), 3), note="(N, C, d1)")
        yield Sample(rng.standard_normal((2, 3, 2, 2)), _classes(rng, (2, 2, 2), 3), reduction="none",
                     note="(N, C, d1, d2)")
    return samples


def cross_entropy_samples():
    def samples(rng):
        for args in nll_samples()(rng):
            yield args
        yield Sample(rng.standard_normal((4, 5)), _classes(rng, (4,), 5), label_smoothing=0.2)
        yield Sample(rng.standard_normal((4, 5)), _classes(rng, (4,), 5, ignore=-100),
                     weight=Const(rng.uniform(0.5, 2, (5,))), label_smoothing=0.1, note="all options")
        probs = rng.uniform(0.1, 1, (4, 5))
        yield Sample(rng.standard_normal((4, 5)), Const(probs / probs.sum(1, keepdims=True)),
                     note="probabilities")
        yield Sample(rng.standard_normal((2, 3, 4)), rng.uniform(0, 1, (2, 3, 4)),
                     weight=Const(rng.uniform(0.5, 2, (3,))), label_smoothing=0.3, reduction="sum",
                     note="soft target that requires grad")
    return samples


# -- layers ----------------------------------------------------------------------------------

def layer_norm_samples():
    def samples(rng):
        yield Sample(rng.standard_normal((3, 4)), (4,))
        yield Sample(rng.standard_normal((3, 4)), [4], rng.standard_normal((4,)), rng.standard_normal((4,)))
        yield Sample(rng.standard_normal((2, 3, 4)), (3, 4), rng.standard_normal((3, 4)), None, eps=1e-3)
        yield Sample(rng.standard_normal((2, 5)), (5,), None, rng.standard_normal((5,)))
        yield Sample(rng.standard_normal((5,)), (5,), note="no batch dims")
        yield Sample(rng.standard_normal((0, 4)), (4,), rng.standard_normal((4,)), rng.standard_normal((4,)),
                     note="empty batch")
    return samples


def embedding_samples():
    """padding_idx and scale_grad_by_freq change the gradient on purpose (it is no longer
    the derivative), so gradcheck cannot see them; the direct tests compare them with torch."""
    def samples(rng):
        yield Sample(Const(rng.integers(0, 5, (2, 3))), rng.standard_normal((5, 4)))
        yield Sample(Const(np.array([0, 2, 2, 4, 0])), rng.standard_normal((5, 3)), padding_idx=3,
                     note="padding index never looked up")
        yield Sample(Const(np.array(2)), rng.standard_normal((3, 2)), note="0-d index")
        yield Sample(Const(np.zeros((0,), np.int64)), rng.standard_normal((3, 2)), note="no indices")
    return samples


def normalize_samples():
    def samples(rng):
        yield Sample(rng.standard_normal((3, 4)))
        yield Sample(rng.standard_normal((3, 4)), 1.0, 0)
        yield Sample(rng.standard_normal((2, 3, 4)), p=3.0, dim=-1)
        yield Sample(rng.standard_normal((5,)), dim=0)
        yield Sample(rng.standard_normal((3, 4)) * 1e-7, eps=1e-3, note="clamped at eps")
    return samples


def one_hot_samples():
    def samples(rng):
        yield Sample(Const(rng.integers(0, 4, (3,))), 4)
        yield Sample(Const(np.array([[0, 2], [1, 0]])))
        yield Sample(Const(np.zeros((0,), np.int64)), 3)
    return samples


def dropout_samples(shape=(3, 4)):
    """Only the deterministic cases: eval mode, p == 0 and p == 1 (masks differ from torch's)."""
    def samples(rng):
        yield Sample(rng.standard_normal(shape), 0.5, False)
        yield Sample(rng.standard_normal(shape), 0.0)
        yield Sample(rng.standard_normal(shape), p=0.3, training=False)
        yield Sample(rng.standard_normal(shape), 1.0, note="p = 1: zeros")
    return samples
