"""The engine under threads and re-entrancy, as torch's: accumulation into a
shared leaf's .grad is locked per leaf, and whatever a backward pass needs
lives on that pass (no module-global pass state), so a backward from
another thread, or from inside a hook, never disturbs a running one.

Each program runs in cextend and, where torch is installed, in torch too.
"""
import threading

import numpy as np
import pytest

import cextend
import cextend.nn.functional as cF

try:
    import torch
    import torch.nn.functional as tF
except ImportError:     # the torch runs skip; the exact references still run
    torch = tF = None

with_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: cross-check skipped")
LIBRARIES = [cextend] + ([torch] if torch is not None else [])

THREADS, CALLS, SIZE = 4, 50, 100_000


def _threaded_accumulation(lib):
    """4 threads x 50 backward() calls into one 100,000-element parameter.
    Thread t's gradient is t + 1 everywhere: every partial sum is an integer
    below 2**24, so the total is exact in float32 in any order."""
    p = lib.zeros(SIZE, requires_grad=True)
    weights = [lib.tensor(np.full(SIZE, t + 1.0, np.float32)) for t in range(THREADS)]
    start = threading.Barrier(THREADS)
    errors = []

    def work(t):
        try:
            start.wait()
            for _ in range(CALLS):
                (p * weights[t]).sum().backward()
        except BaseException as e:     # surfaced in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return np.asarray(p.grad.numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.__name__)
def test_backward_from_four_threads_into_one_parameter_loses_no_update(lib):
    expected = CALLS * sum(t + 1.0 for t in range(THREADS))        # 500
    for trial in range(20):
        grad = _threaded_accumulation(lib)
        lost = int((grad != expected).sum())
        assert lost == 0, "trial %d: %d of %d elements lost an update (e.g. %s, expected %s)" % (
            trial, lost, SIZE, grad[grad != expected][:3], expected)


def _conv_double_backward(lib, F, during=None):
    """x.grad and w.grad of sum(dL/dx) + sum(dL/dw), L = sum(conv2d(x, w)**2):
    the second backward runs the nodes that stand for torch's one
    convolution_backward node (freed together).  `during`, if given, runs
    from a hook between them."""
    rng = np.random.default_rng(7)
    x = lib.tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    w = lib.tensor(rng.standard_normal((3, 2, 2, 3)), requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    gx, gw = lib.autograd.grad((y * y).sum(), [x, w], create_graph=True)
    if during is not None:
        def hook(g):
            with lib.enable_grad():
                during()
            return g
        gx.register_hook(hook)
        gw.register_hook(hook)
    (gx.sum() + gw.sum()).backward()
    return x.grad.numpy().copy(), w.grad.numpy().copy()


def _library_pair(lib):
    return (lib, cF) if lib is cextend else (lib, tF)


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.__name__)
def test_reentrant_backward_from_a_hook_leaves_the_running_pass_alone(lib):
    lib, F = _library_pair(lib)
    other = lib.tensor([1.0, 2.0], requires_grad=True)
    plain = _conv_double_backward(lib, F)
    hooked = _conv_double_backward(lib, F, during=lambda: (other * 3).sum().backward())
    for a, b in zip(hooked, plain):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(other.grad.numpy(), [6.0, 6.0])      # two hook calls


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.__name__)
def test_a_whole_backward_in_another_thread_during_a_pass_leaves_it_alone(lib):
    """Thread A's hook waits while thread B runs a complete backward pass of
    its own through the same kind of nodes; then A's pass goes on."""
    lib, F = _library_pair(lib)
    results = {}

    def in_other_thread():
        def other():
            results["other"] = _conv_double_backward(lib, F)
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()

    plain = _conv_double_backward(lib, F)
    interleaved = _conv_double_backward(lib, F, during=in_other_thread)
    for a, b, c in zip(interleaved, plain, results["other"]):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(c, b)


@with_torch
def test_conv_double_backward_matches_torch():
    ours = _conv_double_backward(cextend, cF)
    theirs = _conv_double_backward(torch, tF)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_a_group_freed_by_one_pass_raises_in_the_next():
    """The nodes standing for one torch node stay freed for later passes."""
    rng = np.random.default_rng(3)
    x = cextend.tensor(rng.standard_normal((1, 1, 4, 4)), requires_grad=True)
    w = cextend.tensor(rng.standard_normal((1, 1, 2, 2)), requires_grad=True)
    gx, gw = cextend.autograd.grad((cF.conv2d(x, w) ** 2).sum(), [x, w], create_graph=True)
    gx.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        gw.sum().backward()
    if torch is not None:
        tx, tw = torch.tensor(x.detach().numpy(), requires_grad=True), torch.tensor(w.detach().numpy(),
                                                                                      requires_grad=True)
        gx, gw = torch.autograd.grad((tF.conv2d(tx, tw) ** 2).sum(), [tx, tw], create_graph=True)
        gx.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            gw.sum().backward()
