"""Captured training steps (cextend.capture): a replay is the eager step to the bit.

Each test trains two copies of a model from the same initial parameters, one
calling the step function eagerly and one through cextend.capture, and
requires the same bits in every loss, parameter, gradient and optimizer
state, over many steps and random configurations.  What cannot be replayed
must run eagerly (still the same bits) and say why, once.
"""
import os
import sys
import threading
import warnings

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
import cextend.nn.functional as F
from cextend import CaptureWarning


def _mlp(sizes, dtype, seed):
    cx.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b, dtype=dtype))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _optimizer(kind, params):
    if kind == "sgd":
        return cx.optim.SGD(params, lr=0.05)
    if kind == "momentum":
        return cx.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3)
    if kind == "nesterov":
        return cx.optim.SGD(params, lr=0.02, momentum=0.8, nesterov=True, dampening=0.0)
    if kind == "adam":
        return cx.optim.Adam(params, lr=1e-3)
    if kind == "adamw":
        return cx.optim.AdamW(params, lr=1e-3, weight_decay=0.05)
    raise ValueError(kind)


def _data(rng, n, features, classes, dtype):
    x = rng.standard_normal((n, features)).astype(dtype)
    y = rng.integers(0, classes, n)
    return x, y


def _train(step_fn_factory, capture, x, y, batch, epochs):
    model, opt, step = step_fn_factory()
    run = cx.capture(step) if capture else step
    losses = []
    for _ in range(epochs):
        for start in range(0, len(x), batch):
            loss = run(cx.from_numpy(x[start:start + batch]), cx.from_numpy(y[start:start + batch]))
            losses.append(loss.detach().numpy().copy())
    return model, opt, run, losses


def _standard_step(sizes, dtype, optimizer, seed, reduction="mean"):
    def factory():
        model = _mlp(sizes, dtype, seed)
        opt = _optimizer(optimizer, model.parameters())
        loss_fn = nn.CrossEntropyLoss(reduction=reduction)

        def step(xb, yb):
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            return loss
        return model, opt, step
    return factory


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _assert_same_training(eager, captured):
    (m0, o0, _, l0), (m1, o1, _, l1) = eager, captured
    assert len(l0) == len(l1)
    for a, b in zip(l0, l1):
        np.testing.assert_array_equal(_bits(a), _bits(b))
    for p, q in zip(m0.parameters(), m1.parameters()):
        np.testing.assert_array_equal(_bits(p.detach().numpy()), _bits(q.detach().numpy()))
        np.testing.assert_array_equal(_bits(p.grad.numpy()), _bits(q.grad.numpy()))
    for (name, a), (_, b) in zip(m0.named_buffers(), m1.named_buffers()):     # running stats, batch counts
        assert a.numpy().tobytes() == b.numpy().tobytes(), name
    for s0, s1 in zip(o0.state.values(), o1.state.values()):
        assert s0.keys() == s1.keys()
        for k in s0:
            v0, v1 = s0[k], s1[k]
            if isinstance(v0, cx.Tensor):
                np.testing.assert_array_equal(v0.numpy(), v1.numpy())
            else:
                assert v0 == v1


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "nesterov", "adam", "adamw"])
@pytest.mark.parametrize("dtype", [cx.float32, cx.float64])
def test_a_hundred_captured_steps_give_the_eager_bits(optimizer, dtype):
    rng = np.random.default_rng(1)
    x, y = _data(rng, 362, 12, 5, dtype.numpy)       # 11 batches of 32 and a ragged one of 10
    factory = _standard_step((12, 24, 16, 5), dtype, optimizer, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)       # every step here is capturable
        eager = _train(factory, False, x, y, 32, 9)
        captured = _train(factory, True, x, y, 32, 9)
    assert len(captured[3]) == 108
    assert captured[2].reason is None
    _assert_same_training(eager, captured)


def test_generated_training_loops_both_ways():
    """The differential tester's training-loop mode (python -m difftest --training-loops):
    random models, optimizers, losses, schedules and batch sizes, eager and captured."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from difftest.training import report, run_training_loops
    summary = run_training_loops(cx, seed=2024, programs=40)
    assert not summary["disagreements"], report(summary)
    assert summary["captured"] >= 20, report(summary)       # most configurations replay
    assert summary["eager"], report(summary)                 # and some exercise the fallback


def _same_training_both_ways(train):
    """train(capture) -> (model, the step it called): trained eagerly and through capture, the
    parameters end with the same bits, and the captured step was replayed, not run eagerly."""
    results = []
    for capture in (False, True):
        model, run = train(capture)
        results.append([p.detach().numpy().copy() for p in model.parameters()])
        if capture:
            assert run.reason is None
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_class_weights_replaced_between_steps_record_again():
    rng = np.random.default_rng(3)
    x, y = _data(rng, 64, 5, 4, np.float64)

    def train(capture):
        model = _mlp((5, 4), cx.float64, 0)
        opt = cx.optim.SGD(model.parameters(), lr=0.1)
        loss_fn = nn.CrossEntropyLoss(weight=cx.from_numpy(np.array([1.0, 2.0, 0.5, 1.0])))

        def step(xb, yb):
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            return loss
        run = cx.capture(step) if capture else step
        for k in range(4):
            if k == 2:
                loss_fn.weight = cx.from_numpy(np.array([0.1, 1.0, 3.0, 1.0]))
            run(cx.from_numpy(x[:32]), cx.from_numpy(y[:32]))
        return model, run
    _same_training_both_ways(train)


def test_replays_return_fresh_detached_tensors_and_fresh_gradients():
    rng = np.random.default_rng(0)
    x, y = _data(rng, 64, 6, 3, np.float32)
    model, opt, step = _standard_step((6, 8, 3), cx.float32, "sgd", seed=0)()
    run = cx.capture(step)
    first = run(cx.from_numpy(x[:32]), cx.from_numpy(y[:32]))
    kept = first.item()
    grad_before = model[0].weight.grad
    grad_values = grad_before.numpy().copy()
    second = run(cx.from_numpy(x[32:]), cx.from_numpy(y[32:]))
    third = run(cx.from_numpy(x[:32]), cx.from_numpy(y[:32]))
    assert first.item() == kept                       # earlier results are not buffers replays reuse
    assert second is not third and second.item() != third.item()
    assert first.grad_fn is None and not first.requires_grad
    np.testing.assert_array_equal(grad_before.numpy(), grad_values)
    assert model[0].weight.grad is not grad_before


def test_the_callers_arguments_are_never_written():
    rng = np.random.default_rng(0)
    x, y = _data(rng, 32, 6, 3, np.float64)
    model, opt, step = _standard_step((6, 3), cx.float64, "sgd", seed=0)()
    run = cx.capture(step)
    xs = [cx.from_numpy(x.copy()) for _ in range(3)]
    for t in xs:
        run(t, cx.from_numpy(y))
    for t in xs:
        np.testing.assert_array_equal(t.numpy(), x)


def test_a_learning_rate_schedule_is_honoured():
    rng = np.random.default_rng(5)
    x, y = _data(rng, 96, 5, 4, np.float32)

    def train(capture):
        model, opt, step = _standard_step((5, 7, 4), cx.float32, "momentum", seed=1)()
        scheduler = cx.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        run = cx.capture(step) if capture else step
        for epoch in range(6):
            for start in range(0, 96, 32):
                run(cx.from_numpy(x[start:start + 32]), cx.from_numpy(y[start:start + 32]))
            scheduler.step()
        return model, run
    _same_training_both_ways(train)


def test_an_out_of_range_target_raises_in_a_replay_as_eagerly():
    rng = np.random.default_rng(0)
    x, y = _data(rng, 32, 6, 3, np.float32)
    model, opt, step = _standard_step((6, 3), cx.float32, "sgd", seed=0)()
    run = cx.capture(step)
    run(cx.from_numpy(x), cx.from_numpy(y))
    run(cx.from_numpy(x), cx.from_numpy(y))
    weights = model[0].weight.detach().numpy().copy()
    bad = y.copy()
    bad[5] = 3
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        run(cx.from_numpy(x), cx.from_numpy(bad))
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), weights)     # nothing stepped


# -- what cannot be replayed runs eagerly, and says why ------------------------------------------

def _refused(step_body, match, steps=4, dtype=cx.float64, model_fn=None):
    """The step runs eagerly with a CaptureWarning matching `match`, and trains as the eager one."""
    rng = np.random.default_rng(9)
    x, y = _data(rng, 32 * steps, 6, 3, dtype.numpy)
    outcomes = []
    for capture in (False, True):
        cx.manual_seed(4)
        model = model_fn() if model_fn else _mlp((6, 8, 3), dtype, 4)
        opt = cx.optim.SGD(model.parameters(), lr=0.1)

        def step(xb, yb):
            return step_body(model, opt, xb, yb)
        run = cx.capture(step) if capture else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for start in range(0, len(x), 32):
                cx.manual_seed(start)
                run(cx.from_numpy(x[start:start + 32]), cx.from_numpy(y[start:start + 32]))
        outcomes.append([p.detach().numpy().copy() for p in model.parameters()])
        if capture:
            notes = [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]
            assert len(notes) == 1 and match in notes[0], notes
            assert match in run.reason
    for a, b in zip(*outcomes):
        np.testing.assert_array_equal(a, b)


def _sgd_step(model, capture, lr=0.1):
    """A plain step (cross entropy, backward, SGD) of model, through cextend.capture or not."""
    opt = cx.optim.SGD(model.parameters(), lr=lr)

    def step(xb, yb):
        return _plain(model, opt, xb, yb)
    return cx.capture(step) if capture else step


def _plain(model, opt, xb, yb):
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
    return loss


def test_item_in_the_step_is_refused():
    def body(model, opt, xb, yb):
        loss = _plain(model, opt, xb, yb)
        if loss.item() > 100:           # data-dependent control flow
            opt.zero_grad()
        return loss
    _refused(body, "reads a value back into Python")


def test_random_numbers_outside_dropout_are_refused():
    def body(model, opt, xb, yb):
        return _plain(model, opt, xb + 0.01 * cx.randn(xb.shape, dtype=xb.dtype), yb)     # input noise
    _refused(body, "random numbers")


def test_an_op_without_a_captured_kernel_is_refused():
    model_fn = lambda: nn.Sequential(nn.Linear(6, 8, dtype=cx.float64),  # noqa: E731
                                     nn.GroupNorm(2, 8, dtype=cx.float64), nn.Linear(8, 3, dtype=cx.float64))
    _refused(_plain, "an op outside the captured kernels made a tensor", model_fn=model_fn)


@pytest.mark.parametrize("dtype", [cx.float32, cx.float64])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_is_replayed(dtype, affine):
    rng = np.random.default_rng(10)
    x, y = _data(rng, 200, 6, 4, dtype.numpy)
    factory = _model_step(lambda dt: nn.Sequential(nn.Linear(6, 12, dtype=dt), nn.LayerNorm(12, elementwise_affine=affine,
                                                   dtype=dt), nn.GELU(), nn.Linear(12, 4, dtype=dt)), dtype, "adamw")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        eager = _train(factory, False, x, y, 32, 3)
        captured = _train(factory, True, x, y, 32, 3)
    assert captured[2].replays == 19
    _assert_same_training(eager, captured)


def _model_step(model_fn, dtype, optimizer="momentum", scale=None):
    def factory():
        cx.manual_seed(11)
        model = model_fn(dtype)
        opt = _optimizer(optimizer, model.parameters())

        def step(xb, yb):
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            if scale is not None:
                loss = loss * scale
            loss.backward()
            opt.step()
            return loss
        return model, opt, step
    return factory


def _dropout_mlp(dtype):
    return nn.Sequential(nn.Linear(12, 24, dtype=dtype), nn.ReLU(), nn.Dropout(0.3),
                         nn.Linear(24, 16, dtype=dtype), nn.Tanh(), nn.Dropout(0.5), nn.Linear(16, 5, dtype=dtype))


@pytest.mark.parametrize("dtype", [cx.float32, cx.float64])
def test_dropout_replays_the_random_stream(dtype):
    """Dropout's masks in a replay come from the global generator as it stands, so a captured
    run draws exactly the eager run's masks, step after step (the stream is seeded once)."""
    rng = np.random.default_rng(2)
    x, y = _data(rng, 362, 12, 5, dtype.numpy)
    factory = _model_step(_dropout_mlp, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        eager = _train(factory, False, x, y, 32, 9)
        after_eager = cx.rand(3)
        captured = _train(factory, True, x, y, 32, 9)
        after_captured = cx.rand(3)
    assert captured[2].recordings == 2 and captured[2].replays == 106      # two batch shapes
    _assert_same_training(eager, captured)
    np.testing.assert_array_equal(after_eager.numpy(), after_captured.numpy())    # the stream moved alike


def test_reseeding_between_replays_repeats_the_masks():
    model = nn.Sequential(nn.Linear(6, 6, dtype=cx.float64), nn.Dropout(0.5))

    def forward(x):
        return model(x) * 1.0
    run = cx.capture(forward)
    x = cx.ones(4, 6, dtype=cx.float64)
    outs = []
    for _ in range(3):
        cx.manual_seed(7)
        outs.append(run(x).numpy())
    assert run.replays == 2
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


@pytest.mark.parametrize("activation", ["Tanh", "Sigmoid", "GELU", "SiLU", "LeakyReLU", "ELU", "Softplus"])
def test_elementwise_activations_are_replayed(activation):
    rng = np.random.default_rng(3)
    x, y = _data(rng, 160, 7, 4, np.float32)
    factory = _model_step(lambda dt: nn.Sequential(nn.Linear(7, 9, dtype=dt), getattr(nn, activation)(),
                                                   nn.Linear(9, 4, dtype=dt)), cx.float32, "adam", scale=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        eager = _train(factory, False, x, y, 32, 4)
        captured = _train(factory, True, x, y, 32, 4)
    assert captured[2].replays == 19
    _assert_same_training(eager, captured)


def _cnn(pool, dropout):
    def build(dtype):
        return nn.Sequential(
            nn.Conv2d(1, 6, 3, padding=1, dtype=dtype), nn.BatchNorm2d(6, dtype=dtype), nn.ReLU(), pool(),
            nn.Conv2d(6, 8, 3, stride=1, padding=1, bias=False, dtype=dtype), nn.BatchNorm2d(8, dtype=dtype),
            nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Dropout(dropout), nn.Linear(32, 5, dtype=dtype))
    return build


@pytest.mark.parametrize("dtype", [cx.float32, cx.float64])
@pytest.mark.parametrize("pool,optimizer", [(lambda: nn.MaxPool2d(2), "adamw"),
                                            (lambda: nn.AvgPool2d(3, stride=2, padding=1), "momentum")])
def test_a_convolutional_network_replays_to_the_bit(dtype, pool, optimizer):
    """Convolutions, batch norm (its running stats and batch count too), pooling, flatten and
    dropout: 100 captured steps give the eager run's bits."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((330, 1, 7, 9)).astype(dtype.numpy)       # 10 batches of 32, one of 10
    y = rng.integers(0, 5, 330)
    factory = _model_step(_cnn(pool, 0.25), dtype, optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        eager = _train(factory, False, x, y, 32, 10)
        captured = _train(factory, True, x, y, 32, 10)
    assert captured[2].recordings == 2 and captured[2].replays == 108
    _assert_same_training(eager, captured)
    assert int(captured[0][1].num_batches_tracked) == 110


def test_batch_norm_in_eval_mode_records_again_and_momentum_none_runs_eagerly():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 1, 6, 6))
    y = rng.integers(0, 5, 64)

    def train(capture, momentum):
        cx.manual_seed(2)
        model = nn.Sequential(nn.Conv2d(1, 4, 3, dtype=cx.float64), nn.BatchNorm2d(4, momentum=momentum,
                              dtype=cx.float64), nn.Flatten(), nn.Linear(64, 5, dtype=cx.float64))
        run = _sgd_step(model, capture)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CaptureWarning)
            for k in range(6):
                model.train(k % 3 != 2)             # every third step in eval mode: the running stats
                run(cx.from_numpy(x[:32]), cx.from_numpy(y[:32]))
        return model, run
    _same_training_both_ways(lambda capture: train(capture, 0.1))
    model, run = train(True, None)                  # the cumulative average reads the batch count
    assert "reads a value back into Python" in run.reason


_REGRESSION_LOSSES = {
    "mse_loss": lambda o, y: F.mse_loss(o, y),
    "l1_loss, sum": lambda o, y: F.l1_loss(o, y, reduction="sum"),
    "smooth_l1_loss": lambda o, y: F.smooth_l1_loss(o, y, beta=0.5),
    "huber_loss": lambda o, y: F.huber_loss(o, y),
    "bce_with_logits": lambda o, y: F.binary_cross_entropy_with_logits(o, (y > 0).to(o.dtype)),
    "a formula with sum(dim) and mean()": lambda o, y: ((o - y) ** 2).sum(dim=1).mean() + 0.01 * o.abs().sum(),
    "clamp": lambda o, y: (o - y).clamp(-1.0, 1.0).pow(2).mean(),
}


@pytest.mark.parametrize("loss", sorted(_REGRESSION_LOSSES))
@pytest.mark.parametrize("dtype", [cx.float32, cx.float64])
def test_regression_losses_and_reductions_are_replayed(loss, dtype):
    loss_fn = _REGRESSION_LOSSES[loss]
    rng = np.random.default_rng(8)
    x = rng.standard_normal((150, 6)).astype(dtype.numpy)
    y = rng.standard_normal((150, 3)).astype(dtype.numpy)

    def factory():
        cx.manual_seed(5)
        model = nn.Sequential(nn.Linear(6, 10, dtype=dtype), nn.GELU(), nn.Linear(10, 3, dtype=dtype))
        opt = _optimizer("adam", model.parameters())

        def step(xb, yb):
            opt.zero_grad()
            value = loss_fn(model(xb), yb)
            value.backward()
            opt.step()
            return value
        return model, opt, step
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        eager = _train(factory, False, x, y, 32, 3)
        captured = _train(factory, True, x, y, 32, 3)
    assert captured[2].replays == 13
    _assert_same_training(eager, captured)


def test_changing_a_module_setting_records_again():
    """A replay bakes in the Python numbers the step used (dropout's p, a slope), so a change of
    a called module's setting makes the next call record again."""
    rng = np.random.default_rng(4)
    x, y = _data(rng, 64, 6, 3, np.float64)

    def train(capture):
        cx.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8, dtype=cx.float64), nn.LeakyReLU(0.2), nn.Dropout(0.2),
                              nn.Linear(8, 3, dtype=cx.float64))
        run = _sgd_step(model, capture)
        for k in range(6):
            if k == 2:
                model[1].negative_slope = 0.01
            if k == 4:
                model[2].p = 0.6
            run(cx.from_numpy(x[:32]), cx.from_numpy(y[:32]))
        if capture:
            assert run.recordings == 3 and run.replays == 3
        return model, run
    _same_training_both_ways(train)


def test_an_in_place_change_outside_the_optimizer_is_refused():
    def body(model, opt, xb, yb):
        loss = _plain(model, opt, xb, yb)
        with cx.no_grad():
            model[0].weight.mul_(0.999)          # hand-written weight decay
        return loss
    _refused(body, "in-place")


def test_grad_set_by_hand_is_refused():
    def body(model, opt, xb, yb):
        for p in model.parameters():
            p.grad = None
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss
    _refused(body, "sets .grad by hand")


def test_hooks_are_refused():
    def with_module_hook():
        model = _mlp((6, 8, 3), cx.float64, 4)
        model[0].register_forward_hook(lambda m, i, o: None)
        return model
    _refused(_plain, "module hook", model_fn=with_module_hook)

    def with_tensor_hook(model, opt, xb, yb):
        opt.zero_grad()
        out = model(xb)
        out.register_hook(lambda g: g)
        F.cross_entropy(out, yb).backward()
        opt.step()
    _refused(with_tensor_hook, "hook")


def test_a_result_that_is_not_a_computed_tensor_is_refused():
    def body(model, opt, xb, yb):
        _plain(model, opt, xb, yb)
        return {"loss": 1}
    _refused(body, "returns something other than tensors")


def test_arguments_that_require_grad_run_eagerly():
    model, opt, step = _standard_step((6, 3), cx.float64, "sgd", seed=0)()
    run = cx.capture(step)
    x = cx.randn(4, 6, dtype=cx.float64, requires_grad=True)
    with pytest.warns(CaptureWarning, match="requires grad"):
        run(x, cx.tensor([0, 1, 2, 0]))
    assert x.grad is not None                   # the eager step's effect on the caller's tensor


def test_a_hook_added_after_capture_stops_the_replays():
    rng = np.random.default_rng(0)
    x, y = _data(rng, 32, 6, 3, np.float64)
    model, opt, step = _standard_step((6, 8, 3), cx.float64, "sgd", seed=0)()
    run = cx.capture(step)
    run(cx.from_numpy(x), cx.from_numpy(y))
    calls = []
    model[2].register_forward_hook(lambda m, i, o: calls.append(1))
    with pytest.warns(CaptureWarning, match="module hook"):
        run(cx.from_numpy(x), cx.from_numpy(y))
    run(cx.from_numpy(x), cx.from_numpy(y))
    assert calls == [1, 1]


def test_replaced_parameter_data_and_mode_changes_record_again():
    rng = np.random.default_rng(0)
    x, y = _data(rng, 32, 6, 3, np.float64)

    def train(capture):
        model, opt, step = _standard_step((6, 8, 3), cx.float64, "sgd", seed=0)()
        run = cx.capture(step) if capture else step
        run(cx.from_numpy(x), cx.from_numpy(y))
        run(cx.from_numpy(x), cx.from_numpy(y))
        model[0].weight.data = cx.from_numpy(np.full((8, 6), 0.01))      # a new array
        run(cx.from_numpy(x), cx.from_numpy(y))
        model[0].weight.requires_grad_(False)                            # frozen: no gradient now
        run(cx.from_numpy(x), cx.from_numpy(y))
        model.eval()
        run(cx.from_numpy(x), cx.from_numpy(y))
        return model, run
    _same_training_both_ways(train)


def test_other_threads_run_their_ops_while_a_step_records():
    rng = np.random.default_rng(0)
    x, y = _data(rng, 32, 6, 3, np.float64)
    model, opt, step = _standard_step((6, 8, 3), cx.float64, "sgd", seed=0)()
    run = cx.capture(step)
    stop = threading.Event()
    seen = []

    def other():
        while not stop.is_set():
            t = cx.tanh(cx.ones(3))          # no kernel of the step's: must not refuse it
            seen.append(float(t[0]))
    worker = threading.Thread(target=other)
    worker.start()
    try:
        for _ in range(5):
            run(cx.from_numpy(x), cx.from_numpy(y))
    finally:
        stop.set()
        worker.join()
    assert run.reason is None and seen


def test_capture_takes_a_callable():
    with pytest.raises(TypeError, match="callable"):
        cx.capture(3)
