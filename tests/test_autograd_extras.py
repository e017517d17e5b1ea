"""Autograd API that torch's own tests use (issue 24, item 3): saved tensors
hooks and save_on_cpu, anomaly detection, inference_mode, activation
checkpointing (both variants) and grad(materialize_grads=True).

Each program runs on cextend and, where it is installed, on torch 2.13
(`each_lib`); the stated answers hold for both, and gradients are checked
against the same program without the feature (or against a closed form).
"""
import warnings

import numpy as np
import pytest

import cextend as cx
from parity_helpers import each_lib, real_torch


def leaf(lib, array):
    return lib.tensor(np.array(array, dtype=np.float64), requires_grad=True)


# -- saved tensors hooks -----------------------------------------------------------------------

@each_lib
def test_pack_and_unpack_hooks_see_every_saved_tensor(lib):
    x = leaf(lib, [0.5, -1.0, 2.0])
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape), t.grad_fn is not None))
        return t * 1          # a copy: the original may be changed in place afterwards
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda p: log.append("unpack") or p):
        a = x * 1
        y = a.exp()
        z = (y * a).sum()
    z.backward()
    assert log == [("pack", (3,), True), ("pack", (3,), True), ("pack", (3,), True), "unpack", "unpack", "unpack"]
    expected = np.exp([0.5, -1.0, 2.0]) * (1 + np.array([0.5, -1.0, 2.0]))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-15)


@each_lib
def test_hooked_saves_are_not_checked_against_in_place_changes(lib):
    x = leaf(lib, [0.1, 0.2])
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda p: p):
        a = x * 1
        y = a.sin()
    a.add_(1)               # without hooks this makes backward raise; the packed copy is unchanged
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.1, 0.2]), rtol=1e-15)


@each_lib
def test_an_unpack_hook_must_return_a_tensor(lib):
    x = leaf(lib, [1.0])
    with lib.autograd.graph.saved_tensors_hooks(lambda t: 5, lambda p: p):
        y = (x * 1).sin()
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor but got "
                                        "result of type int"):
        y.sum().backward()


@each_lib
def test_double_backward_through_hooked_saves_and_save_on_cpu(lib):
    x = leaf(lib, [0.3, -0.7, 1.1])
    with lib.autograd.graph.save_on_cpu():
        y = (x ** 3).sum()
    g, = lib.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([0.3, -0.7, 1.1]) ** 2, rtol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array([0.3, -0.7, 1.1]), rtol=1e-15)


@each_lib
def test_disable_saved_tensors_hooks_refuses_new_hooks(lib):
    with lib.autograd.graph.disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="no hooks in here"):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
                pass
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):    # allowed again after it
        pass


# -- anomaly detection ---------------------------------------------------------------------------

@each_lib
def test_anomaly_mode_names_the_node_that_made_nan_and_where_it_was_made(lib):
    x = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            y = x.sqrt() * 0          # sqrt's derivative at 0 is inf; inf * 0 is NaN
            with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in its 0th "
                                                   r"output\."):
                y.sum().backward()
    texts = [str(w.message) for w in caught]
    assert any(t.startswith("Anomaly Detection has been enabled") for t in texts)
    trace = [t for t in texts if t.startswith("Error detected in SqrtBackward0. Traceback of forward call")]
    assert trace and __file__.rsplit("/", 1)[-1] in trace[0] and "x.sqrt() * 0" in trace[0]
    assert not lib.is_anomaly_enabled()


@each_lib
def test_set_detect_anomaly_switches_and_restores(lib):
    assert not lib.is_anomaly_enabled()
    with lib.autograd.set_detect_anomaly(True, check_nan=False):
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        x = lib.tensor([0.0], dtype=lib.float64, requires_grad=True)
        (x.sqrt() * 0).sum().backward()          # no NaN check: the NaN gradient goes through
        assert np.isnan(x.grad.numpy()).all()
    assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()


# -- inference_mode ------------------------------------------------------------------------------

@each_lib
def test_inference_mode_records_nothing_as_context_and_decorator(lib):
    x = leaf(lib, [1.0, 2.0])
    with lib.inference_mode():
        assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()

    @lib.inference_mode()
    def double(t):
        return t * 2
    assert not double(x).requires_grad
    with lib.inference_mode(False):
        assert (x * 2).requires_grad and not lib.is_inference_mode_enabled()


# -- checkpoint ----------------------------------------------------------------------------------

def _block_gradients(lib, mode, p=0.0, seed=0):
    rng = np.random.default_rng(3)
    w1, w2, data = rng.standard_normal((5, 7)), rng.standard_normal((7, 3)), rng.standard_normal((4, 5))
    lib.manual_seed(seed)
    w1, w2, x = leaf(lib, w1), leaf(lib, w2), leaf(lib, data)
    checkpoint = lib.utils.checkpoint.checkpoint

    def block(inp, scale=1.0):
        h = lib.nn.functional.dropout(lib.tanh(inp @ w1) * scale, p, training=True)
        return (h.exp() @ w2).sin()
    if mode == "plain":
        out = block(x)
    elif mode == "reentrant":
        out = checkpoint(block, x, use_reentrant=True)
    else:
        out = checkpoint(block, x, use_reentrant=False, scale=1.0)
    (out ** 2).sum().backward()
    return [t.grad.numpy().copy() for t in (x, w1, w2)]


@each_lib
@pytest.mark.parametrize("mode", ["reentrant", "non_reentrant"])
@pytest.mark.parametrize("p", [0.0, 0.5])
def test_checkpoint_gives_the_gradients_of_the_plain_run(lib, mode, p):
    """With dropout too: the recomputation replays the random state the forward saw."""
    plain = _block_gradients(lib, "plain", p)
    for got, expected in zip(_block_gradients(lib, mode, p), plain):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.skipif(real_torch is None, reason="torch 2.13 not installed: cross-check skipped")
def test_checkpoint_matches_torch():
    for mode in ("reentrant", "non_reentrant"):
        for ours, theirs in zip(_block_gradients(cx, mode), _block_gradients(real_torch, mode)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)


@each_lib
def test_checkpoint_arguments(lib):
    checkpoint = lib.utils.checkpoint.checkpoint
    x = leaf(lib, [1.0, 2.0])
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale: t * scale, x, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported when use_reentrant"):
        checkpoint(lambda t: t, x, use_reentrant=True, debug=True)
    seq = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Tanh(), lib.nn.Linear(3, 1))
    out = lib.utils.checkpoint.checkpoint_sequential(seq, 2, x.float().unsqueeze(0), use_reentrant=False)
    out.sum().backward()
    assert all(p.grad is not None for p in seq.parameters())


def test_a_recomputation_that_saves_something_else_is_refused():
    calls = []

    def shifty(t):
        calls.append(1)
        return t.exp() if len(calls) == 1 else t.float().exp()     # the rerun saves a float32 tensor
    x = leaf(cx, [0.5])
    y = cx.utils.checkpoint.checkpoint(shifty, x, use_reentrant=False)
    with pytest.raises(cx.utils.checkpoint.CheckpointError, match="different metadata than during the forward"):
        y.sum().backward()


# -- grad(materialize_grads=True) ----------------------------------------------------------------

@each_lib
def test_grad_materializes_unused_inputs_as_zeros(lib):
    x, unused = leaf(lib, [1.0, 2.0]), leaf(lib, [[3.0]])
    gx, gu = lib.autograd.grad((x * x).sum(), (x, unused), materialize_grads=True)
    assert gx.tolist() == [2.0, 4.0] and gu.tolist() == [[0.0]]
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when "
                                         "materialize_grads=True"):
        lib.autograd.grad((x * x).sum(), (x, unused), materialize_grads=True, allow_unused=False)
