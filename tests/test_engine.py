"""The backward engine and Function semantics."""
import importlib

import numpy as np
import pytest

import cextend as cx
from cextend.autograd import Function, grad, gradcheck, gradgradcheck, once_differentiable
from helpers import assert_gradients, over_layouts


def leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return cx.from_numpy(rng.standard_normal(shape)).requires_grad_()


def test_diamond_accumulates_both_paths():
    x = leaf(3)
    a, b = x * 2, x * 3
    (a * b).sum().backward()              # d/dx 6x^2 = 12x
    np.testing.assert_allclose(x.grad.numpy(), 12 * x.detach().numpy())


def test_reused_tensor_and_repeated_backward_accumulate():
    x = leaf(4)
    y = (x * x + x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * x.detach().numpy() + 1))


def test_backward_twice_without_retain_graph_raises():
    x = leaf(3)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_non_scalar_backward_needs_a_gradient():
    x = leaf(3)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(cx.ones(3, dtype=cx.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(cx.ones(4, dtype=cx.float64))


def test_backward_on_a_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        cx.ones(2).sum().backward()


def test_no_grad_records_nothing_and_enable_grad_restores():
    x = leaf(2)
    with cx.no_grad():
        y = x * 2
        with cx.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    assert cx.is_grad_enabled()

    @cx.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad


def test_grad_mode_is_per_thread():
    import threading
    seen = {}
    with cx.no_grad():
        thread = threading.Thread(target=lambda: seen.update(enabled=cx.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen["enabled"] is True


def test_broadcast_gradients_are_summed_back():
    a, b = leaf(3, 4), leaf(4, seed=1)
    (a * b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), a.detach().numpy().sum(0))
    assert a.grad.shape == (3, 4)


def test_autograd_grad_leaves_dot_grad_alone_and_allow_unused():
    x, unused = leaf(3), leaf(2, seed=1)
    y = (x ** 2).sum()
    gx, = grad(y, x, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), 2 * x.detach().numpy())
    assert x.grad is None
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        grad(y, [x, unused], retain_graph=True)
    gx, gu = grad(y, [x, unused], allow_unused=True)
    assert gu is None


def test_grad_of_an_intermediate_tensor():
    x = leaf(3)
    h = x * 2
    y = (h * h).sum()
    gh, = grad(y, h)
    np.testing.assert_allclose(gh.numpy(), 2 * h.detach().numpy())


def test_create_graph_gives_higher_derivatives():
    x = leaf(3)
    y = (x ** 3).sum()
    g, = grad(y, x, create_graph=True)          # 3x^2
    gg, = grad(g.sum(), x, create_graph=True)   # 6x
    ggg, = grad(gg.sum(), x)                    # 6
    xs = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), 3 * xs ** 2)
    np.testing.assert_allclose(gg.detach().numpy(), 6 * xs)
    np.testing.assert_allclose(ggg.numpy(), 6 * np.ones(3))


def test_backward_with_create_graph_keeps_grad_differentiable():
    x = leaf(2)
    (x ** 2).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    gg, = grad(x.grad.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [2, 2])


def test_backward_inputs_accumulates_only_there():
    a, b = leaf(2), leaf(2, seed=1)
    (a * b).sum().backward(inputs=[a])
    assert b.grad is None
    np.testing.assert_allclose(a.grad.numpy(), b.detach().numpy())


def test_retain_grad_on_a_non_leaf():
    x = leaf(3)
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), 2 * h.detach().numpy())


def test_modifying_a_saved_tensor_in_place_raises():
    x = leaf(3)
    h = x * 1
    y = h * h                      # saves h
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_modifying_a_saved_view_base_raises():
    x = leaf(2, 3)
    base = x * 1
    view = base[0]
    y = view.exp()                 # saves its output; the view itself is checked too
    z = (view * view).sum()
    base.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    assert y.requires_grad


def test_in_place_on_a_leaf_requiring_grad_raises_outside_no_grad():
    x = leaf(3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x += 1
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.zero_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 5.0
    with cx.no_grad():
        x += 1                     # allowed: e.g. an optimizer step
        x.uniform_(-1, 1)
    assert x.is_leaf


def test_in_place_on_a_view_with_history_rewrites_the_base():
    # As torch: the base's grad_fn becomes CopySlices, the view's is rebuilt.
    x = leaf(3, 2)
    y = x * 1
    v = y[0]
    v.mul_(2)
    assert type(y.grad_fn).__name__ == "CopySlices" and y.grad_fn.name() == "torch::autograd::CopySlices"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 2], [1, 1], [1, 1]])


def test_in_place_on_non_leaf_records_history():
    x = leaf(3)
    y = x * 2
    y += x                          # y = 3x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3, 3])
    assert repr(y.grad_fn) == "<AddBackward0>"


def test_expanded_tensor_cannot_be_written_in_place():
    e = cx.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.add_(1)


class Scale(Function):
    @staticmethod
    def forward(ctx, x, factor, flag):
        ctx.factor = factor
        ctx.flag = flag
        return x * factor

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None, None


def test_non_tensor_arguments_get_none_gradients():
    x = leaf(3)
    Scale.apply(x, 3.0, "anything").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3, 3])


def test_needs_input_grad_reflects_each_argument():
    seen = {}

    class Spy(Function):
        @staticmethod
        def forward(ctx, a, b, c):
            seen["needs"] = ctx.needs_input_grad
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    Spy.apply(leaf(2), cx.ones(2, dtype=cx.float64), 5).sum().backward()
    assert seen["needs"] == (True, False, False)


def test_gradient_for_a_non_tensor_argument_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="different than None at position 2"):
        Bad.apply(leaf(2), 2.0).sum().backward()


def test_wrong_gradient_count_raises_and_trailing_nones_are_dropped():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    class TrailingNones(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 1, got 2\)"):
        TooMany.apply(leaf(2)).sum().backward()
    x = leaf(2)
    TrailingNones.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1])


def test_wrong_gradient_shape_raises():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return cx.ones(5, dtype=cx.float64)

    with pytest.raises(RuntimeError, match=r"invalid gradient at index 0 - got \[5\] but expected shape "
                                           r"compatible with \[2, 3\]"):
        BadShape.apply(leaf(2, 3)).sum().backward()


def test_multiple_outputs_and_non_differentiable_ones():
    class SplitWithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            idx = cx.tensor(np.argmax(x._data))
            ctx.mark_non_differentiable(idx)
            return x * 2, x * 3, idx

        @staticmethod
        def backward(ctx, g2, g3, gidx):
            return g2 * 2 + g3 * 3

    x = leaf(3)
    a, b, idx = SplitWithIndex.apply(x)
    assert not idx.requires_grad and idx.dtype == cx.int64
    a.sum().backward()             # b gets no gradient: materialized as zeros
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])


def test_set_materialize_grads_false_passes_none():
    seen = {}

    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 1

        @staticmethod
        def backward(ctx, g1, g2):
            seen["g2"] = g2
            return g1

    x = leaf(2)
    TwoOut.apply(x)[0].sum().backward()
    assert seen["g2"] is None


def test_mark_dirty_in_place_function():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x._data += 1
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf(3)
    h = x * 2
    version = h._version
    out = AddOneInplace.apply(h)
    assert out is h and h._version == version + 1
    assert "AddOneInplaceBackward" in repr(h.grad_fn)
    h.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])
    with pytest.raises(RuntimeError, match="leaf Variable"):
        AddOneInplace.apply(leaf(2))


def test_returning_an_input_gives_a_new_tensor():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf(2)
    y = Identity.apply(x)
    assert y is not x and y.grad_fn is not None and x.is_leaf


def test_forward_runs_with_grad_recording_off():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen["enabled"] = cx.is_grad_enabled()
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    Probe.apply(leaf(1))
    assert seen["enabled"] is False


def test_saved_tensors_are_the_tensors_themselves():
    class Save(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, None, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            x, none, y = ctx.saved_tensors
            assert none is None
            return g * y, g * x

    x, y = leaf(3), leaf(3, seed=1)
    assert gradcheck(Save.apply, (x, y))
    assert gradgradcheck(Save.apply, (x, y))


def test_save_for_backward_rejects_non_tensors():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

    with pytest.raises(TypeError, match="argument 1 is of type int"):
        Bad.apply(leaf(2))


def test_once_differentiable_blocks_double_backward_only():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x

    x = leaf(3)
    assert gradcheck(Square.apply, (x,))
    # As in torch, the error node hangs off gradients that carry history.
    v = cx.ones(3, dtype=cx.float64, requires_grad=True)
    g, = grad(Square.apply(x), x, grad_outputs=v, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_apply_passes_keyword_arguments_to_forward():
    # torch >= 2.0 accepts keyword arguments (they receive no gradient).
    x = leaf(2)
    Scale.apply(x, factor=2.0, flag=None).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2])


def test_grad_fn_repr_and_tensor_repr():
    y = Scale.apply(cx.tensor([1.], requires_grad=True), 2.0, None)
    assert repr(y.grad_fn) == "<ScaleBackward>"
    assert repr(y) == "tensor([2.], grad_fn=<ScaleBackward>)"
    assert repr(cx.tensor([1.5], requires_grad=True)) == "tensor([1.5000], requires_grad=True)"


def _positive(t):
    return t * t + 1


# In-place ops on a non-leaf (the engine rebases the graph onto the
# modified tensor) and one tensor used twice by one op (its gradients
# accumulate): name -> (function of the inputs, input shapes).  The op
# table's in-place test compares values only; these check the gradients.
REBASED = {
    "iadd": (lambda a, b: (a * 1).add_(b), [(3, 4), (4,)]),
    "isub": (lambda a, b: (a * 1).sub_(b), [(3, 4), (3, 4)]),
    "imul": (lambda a, b: (a * 1).mul_(b), [(3, 4), (3, 4)]),
    "idiv": (lambda a, b: (a * 1).div_(_positive(b)), [(3, 4), (3, 4)]),
    "mul_self": (lambda a: a * a, [(4, 3)]),
}


@over_layouts(REBASED)
def test_inplace_on_a_non_leaf_and_a_repeated_input_gradcheck(name, layout):
    assert_gradients(*REBASED[name], layout)


# -- a leaf's first gradient taken without a copy, only when no one else sees it ---------------

def _writes_through(grad, *others):
    """Whether writing into grad changes any of others (they share its memory)."""
    before = [o.numpy().copy() for o in others]
    grad.add_(1.0)
    changed = any(not np.array_equal(b, o.numpy()) for b, o in zip(before, others))
    grad.sub_(1.0)
    return changed


def test_a_leaf_grad_never_shares_memory_with_a_gradient_someone_holds():
    rng = np.random.default_rng(0)
    w = cx.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    kept = []
    # a tensor hook that keeps the gradient it was given
    y = w * 2.0
    y.register_hook(lambda g: kept.append(g))
    (y * 3.0).sum().backward()
    np.testing.assert_array_equal(kept[0].numpy(), np.full((4, 3), 3.0))
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 3), 6.0))
    assert not _writes_through(w.grad, kept[0])

    # a hook on the leaf itself that keeps what it sees
    w.grad = None
    seen = []
    handle = w.register_hook(lambda g: seen.append(g))
    (w * 5.0).sum().backward()
    handle.remove()
    assert not _writes_through(w.grad, seen[0])
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 3), 5.0))

    # the caller's own gradient, given to the leaf or passed through unchanged (add's backward)
    g = cx.tensor(rng.standard_normal((4, 3)))
    for run in (lambda: w.backward(g), lambda: (w + 0.0).backward(g), lambda: (w + w).backward(g)):
        w.grad = None
        run()
        assert not _writes_through(w.grad, g)
    np.testing.assert_array_equal(w.grad.numpy(), 2 * g.numpy())


def test_two_leaves_fed_one_gradient_get_separate_grads():
    a = cx.ones(5, requires_grad=True)
    b = cx.ones(5, requires_grad=True)
    (a + b).sum().backward()        # add's backward hands the one gradient to both
    assert not _writes_through(a.grad, b.grad)
    a.grad.mul_(3.0)
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(5))


def test_a_gradient_viewing_another_array_is_copied_into_grad():
    # view's backward views the incoming gradient: its memory is the kept gradient's
    x = cx.ones(3, 4, requires_grad=True)
    flat = x.view(12)
    kept = []
    flat.register_hook(lambda g: kept.append(g))
    (flat * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0))
    assert not _writes_through(x.grad, kept[0])
    # a broadcast gradient (sum's backward expands) is made a writable array of its own
    y = cx.ones(3, requires_grad=True)
    y.sum().backward()
    assert y.grad.numpy().flags.writeable
    y.grad.add_(1.0)
    np.testing.assert_array_equal(y.grad.numpy(), np.full(3, 2.0))


def test_a_taken_gradient_keeps_grad_laid_out_as_the_parameter():
    # a channels-last parameter gets a channels-last .grad, copied or not
    w = cx.randn(2, 3, 4, 5).contiguous(memory_format=cx.channels_last).requires_grad_()
    (w * 2.0).sum().backward()
    assert w.grad.stride() == w.stride()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 3, 4, 5), 2.0))
    # a C-order parameter given a transposed gradient gets a C-order .grad
    v = cx.randn(3, 4, requires_grad=True)
    (v.t() * 2.0).sum().backward()
    assert v.grad.is_contiguous()
    np.testing.assert_array_equal(v.grad.numpy(), np.full((3, 4), 2.0))


# -- the compiled loop (cextend._engine): references, errors, order -----------------------------

def _graph_of_a_small_model():
    rng = np.random.default_rng(3)
    model = cx.nn.Sequential(cx.nn.Linear(5, 7), cx.nn.ReLU(), cx.nn.Linear(7, 3))
    x = cx.tensor(rng.standard_normal((4, 5)).astype(np.float32))
    return model, model(x).sum()


def test_a_leaf_takes_the_engines_own_gradient_without_a_copy(monkeypatch):
    # AccumulateGrad counts references to decide that only the engine's list holds the
    # gradient; a loop that kept one more (the node's results, a stale local) would copy
    # every parameter's gradient in every step
    from cextend.autograd import graph
    taken = []
    original = graph.accumulate_into

    def spy(tensor, g, unseen=False):
        taken.append(unseen)
        return original(tensor, g, unseen)

    monkeypatch.setattr(graph, "accumulate_into", spy)
    model, loss = _graph_of_a_small_model()
    loss.backward()
    assert taken == [True] * 4
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    w1, b1, w2, b2 = (p.detach().numpy().astype(np.float64) for p in model.parameters())
    h = x @ w1.T + b1
    gh = np.ones((4, 3)) @ w2 * (h > 0)
    np.testing.assert_allclose(model[0].weight.grad.numpy(), gh.T @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model[2].bias.grad.numpy(), np.full(3, 4.0))


def test_the_loop_keeps_no_node_or_gradient_alive():
    import gc
    import weakref
    model, loss = _graph_of_a_small_model()
    nodes = [weakref.ref(loss.grad_fn)]
    nodes += [weakref.ref(n) for n, _ in loss.grad_fn.next_functions if n is not None]
    grads = []
    loss.grad_fn.register_hook(lambda inputs, outputs: grads.extend(weakref.ref(g) for g in inputs if g is not None))
    loss.backward()
    del loss
    gc.disable()        # freed by reference counts alone, as torch's graph is
    try:
        assert [r() for r in nodes] == [None] * len(nodes)
        assert grads and all(r() is None for r in grads)
    finally:
        gc.enable()


def test_an_error_in_a_node_leaves_no_references_and_grad_mode_as_it_was():
    import gc
    import weakref

    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    x = cx.ones(3, requires_grad=True)
    a = Boom.apply(x * 2.0)
    b = x * 3.0                 # a ready branch still queued when Boom raises
    loss = (a + b).sum()
    queued = [weakref.ref(n) for n, _ in loss.grad_fn.next_functions[0][0].next_functions]
    with pytest.raises(ValueError, match="boom in backward"):
        loss.backward()
    assert cx.is_grad_enabled()
    del loss, a, b
    gc.disable()
    try:
        assert all(r() is None for r in queued)
    finally:
        gc.enable()
    loss = Boom.apply(cx.ones(2, requires_grad=True)).sum()
    with cx.no_grad():          # the pass runs with recording on (create_graph), then restores off
        with pytest.raises(ValueError, match="boom in backward"):
            loss.backward(create_graph=True)
        assert not cx.is_grad_enabled()


def test_nodes_run_most_recent_first_and_accumulators_first():
    # torch's ready queue: the newest node whose inputs are complete, with AccumulateGrad
    # (UINT64_MAX priority) ahead of all; two independent branches interleave by creation
    order = []
    x = cx.ones(2, requires_grad=True)
    y = cx.ones(2, requires_grad=True)
    a = x * 2.0
    b = y * 3.0
    c = a * 4.0
    d = b * 5.0
    for name, t in (("a", a), ("b", b), ("c", c), ("d", d)):
        t.grad_fn.register_prehook(lambda g, name=name: order.append(name))
    x.register_hook(lambda g: order.append("x"))
    y.register_hook(lambda g: order.append("y"))
    (c + d).sum().backward()
    assert order == ["d", "c", "b", "y", "a", "x"]
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 8.0])
    np.testing.assert_array_equal(y.grad.numpy(), [15.0, 15.0])


def _structure(t):
    """The graph behind t as nested (node name, input meta, children); a node met again is its
    number in the order first met (so shared nodes, a leaf's one AccumulateGrad, show)."""
    numbers = {}

    def walk(node):
        if node is None:
            return None
        if node in numbers:
            return numbers[node]
        numbers[node] = len(numbers)
        if type(node).__name__ == "AccumulateGrad":
            return ("AccumulateGrad", id(node.variable))
        metas = tuple(None if m is None else (tuple(m[0]), str(m[1])) for m in node._input_meta)
        return (node.name(), metas, tuple((walk(child), nr) for child, nr in node.next_functions))
    return walk(t.grad_fn)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_compiled_recording_builds_the_graph_the_python_one_does():
    # anomaly detection records through record.py's Python lines; without it the common
    # case is compiled (src/python/engine.c): both must give the same nodes, edges and metas
    rng = np.random.default_rng(5)
    w = cx.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = cx.tensor(rng.standard_normal(4).astype(np.float32), requires_grad=True)
    frozen = cx.tensor(rng.standard_normal((3, 4)))

    def program():
        v = w[1:]                       # a view of a leaf
        y = (w * 2.0 + frozen) * w      # a leaf used twice, a tensor that needs no grad
        z = y.sum(0) + b.double() - v.t().sum(1).sum()
        return (z * z).mean() + cx.relu(v).sum()

    plain = program()
    with cx.autograd.detect_anomaly():
        checked = program()
    assert _structure(plain) == _structure(checked)
    np.testing.assert_array_equal(plain.detach().numpy(), checked.detach().numpy())
    plain.backward()
    first = w.grad.numpy().copy(), b.grad.numpy().copy()
    w.grad = b.grad = None
    with cx.autograd.detect_anomaly():
        checked.backward()
    np.testing.assert_array_equal(w.grad.numpy(), first[0])
    np.testing.assert_array_equal(b.grad.numpy(), first[1])


def test_loss_backward_takes_the_one_root_path_with_backwards_checks():
    # Tensor.backward() with no arguments skips backward()'s tuples; what it checks stays
    x = cx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2.0).backward()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        cx.ones(1).backward()
    y = (x * 3.0).sum()
    y.backward(retain_graph=True)
    y.backward()                    # retained once: a second pass runs, then the graph is freed
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 10.0, 12.0])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    leaf = cx.tensor(2.0, requires_grad=True)
    leaf.backward()                 # a leaf root: its own accumulator
    assert leaf.grad.item() == 1.0


def test_a_builtin_node_applied_by_hand():
    # BuiltinNode.apply (compiled): its backward on grads[0] and the unpacked saved values;
    # no gradient in gives None for every input; a released node refuses
    x = cx.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = cx.tensor([0.5, 0.25, 2.0], requires_grad=True)
    y = x * w
    node = y.grad_fn
    with cx.no_grad():
        gx, gw = node.apply([cx.tensor([1.0, 2.0, 3.0])])
    np.testing.assert_array_equal(gx.numpy(), [0.5, 0.5, 6.0])
    np.testing.assert_array_equal(gw.numpy(), [1.0, -4.0, 9.0])
    assert node.apply([None]) == (None, None)
    assert node.apply((cx.ones(3),))[0] is not None      # any sequence of gradients
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node.apply([cx.ones(3)])
    z = x.exp()                       # one input: a bare result is made a 1-tuple
    out = z.grad_fn.apply([cx.ones(3)])
    assert type(out) is tuple and len(out) == 1
    np.testing.assert_allclose(out[0].detach().numpy(), np.exp([1.0, -2.0, 3.0]), rtol=1e-6)
    assert out[0].requires_grad          # applied with grad mode on: the gradient has history


# -- tensor._wrap in C (cextend._engine.wrap) ----------------------------------------------

_WRAP_SLOTS = ("_requires_grad", "_grad_fn", "_output_nr", "_version_counter", "_base")


def test_wrap_in_c_sets_what_the_python_definition_sets():
    tensor = importlib.import_module("cextend.tensor")      # (cextend.tensor is also the factory)
    assert tensor._wrap is not tensor._python_wrap          # the compiled one is in use
    for array in (np.arange(6.0).reshape(2, 3), np.zeros(0, np.float32), np.array(3, np.int64)):
        ours, reference = tensor._wrap(array), tensor._python_wrap(array)
        assert type(ours) is cx.Tensor and ours._data is array
        def slots(t):       # a counter by its type and value: each tensor has its own
            return [(type(v), v[0]) if s == "_version_counter" else v for s, v in
                    ((s, getattr(t, s)) for s in _WRAP_SLOTS)]
        assert slots(ours) == slots(reference)
        assert type(ours._version_counter) is cx._engine.VersionCounter
        assert not ours.requires_grad and ours.is_leaf and ours.grad is None
    first, second = tensor._wrap(np.ones(2)), tensor._wrap(np.ones(2))
    assert first._version_counter is not second._version_counter     # each tensor its own counter
    first.add_(1)
    assert first._version == 1 and second._version == 0


def test_wrap_in_c_hands_other_calls_to_the_python_definition():
    tensor = importlib.import_module("cextend.tensor")      # (cextend.tensor is also the factory)
    leaf = tensor._wrap(np.ones(3), requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf
    listed = tensor._wrap([1.5, 2.5])                        # not an array: np.asarray, as the definition does
    assert type(listed._data) is np.ndarray and listed.tolist() == [1.5, 2.5]
    with pytest.raises(TypeError):
        tensor._wrap()


def test_wrap_in_c_keeps_no_reference_of_its_own():
    import sys

    tensor = importlib.import_module("cextend.tensor")      # (cextend.tensor is also the factory)
    array = np.ones(4)
    before = sys.getrefcount(array)
    tensors = [tensor._wrap(array) for _ in range(100)]
    assert sys.getrefcount(array) == before + 100
    del tensors
    assert sys.getrefcount(array) == before


def test_the_loop_takes_a_leafs_first_gradient_itself_as_accumulate_into_would(monkeypatch):
    """A step's first gradient into a leaf whose grad lock exists is set as .grad by the
    compiled loop: the engine's own array, no copy, the bits Python's AccumulateGrad.apply
    gives; a later one is added into that .grad (tests/test_leaf_accumulation_in_c.py).  Every
    other case (no lock yet, create_graph) still runs accumulate_into."""
    from cextend import _engine, _grad_state
    from cextend.autograd import graph
    calls = []
    original = graph.accumulate_into

    def spy(tensor, g, unseen=False):
        calls.append(unseen)
        return original(tensor, g, unseen)

    monkeypatch.setattr(graph, "accumulate_into", spy)
    model, loss = _graph_of_a_small_model()
    loss.backward()                     # each leaf's first accumulation ever makes its lock
    assert calls == [True] * 4
    params = list(model.parameters())
    expected = [p.grad.numpy().copy() for p in params]

    def step(create_graph=False):
        """One backward of the model's loss; the ids of the arrays its Addmm nodes hand on."""
        handed = set()
        loss = model(cx.tensor(np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32))).sum()
        stack = [loss.grad_fn]
        while stack:
            node = stack.pop()
            if type(node).__name__ == "AddmmBackward0":
                node.register_hook(lambda inputs, outputs: handed.update(id(g._data) for g in inputs
                                                                         if g is not None))
            stack.extend(n for n, _ in node.next_functions if n is not None)
        loss.backward(create_graph=create_graph)
        return handed

    for p in params:
        p.grad = None
    calls.clear()
    handed = step()
    assert calls == []                                      # the loop set every .grad itself
    for p, want in zip(params, expected):
        np.testing.assert_array_equal(p.grad.numpy(), want)
        assert id(p.grad._data) in handed                   # the engine's array, not a copy
        assert p.grad.grad_fn is None and not p.grad.requires_grad
    arrays = [p.grad._data for p in params]
    step()                                                  # .grad already there: added in place, in C
    assert calls == []
    for p, array in zip(params, arrays):
        assert p.grad._data is array
    for p, want in zip(params, expected):
        np.testing.assert_array_equal(p.grad.numpy(), want + want)

    for p in params:
        p.grad = None
    calls.clear()
    step(create_graph=True)                                 # grad mode on: .grad is a recorded clone
    assert len(calls) == 4
    for p in params:
        p.grad = None
    calls.clear()
    _engine.configure_leaves(None, _grad_state._state)      # the compiled case switched off
    try:
        step()
    finally:
        _engine.configure_leaves(graph.AccumulateGrad.apply, _grad_state._state)
    assert calls == [True] * 4
    for p, want in zip(params, expected):
        np.testing.assert_array_equal(p.grad.numpy(), want)
