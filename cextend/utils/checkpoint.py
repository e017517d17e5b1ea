"""torch.utils.checkpoint: keep fewer activations, recompute them at backward.

Two variants, as torch's:

- use_reentrant=False (recommended): the forward runs under
  saved_tensors_hooks whose pack hook keeps only a number per saved tensor;
  the first backward that needs one reruns the function (with the random
  state it saw, so dropout draws the same mask) and hands the recomputed
  values back in order.  Works with autograd.grad, keyword arguments,
  inputs that do not require grad, and nested structures.
- use_reentrant=True: a Function whose forward runs the function without
  recording, and whose backward reruns it with recording and backpropagates
  through that graph (the "reentrant" backward).

Not passing use_reentrant warns, and means True, as torch 2.13 does.
"""
import contextlib
import warnings

from cextend import _random
from cextend.autograd.engine import backward as _backward
from cextend.autograd.function import Function
from cextend.autograd.grad_mode import enable_grad, is_grad_enabled
from cextend.autograd.graph import saved_tensors_hooks
from cextend.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation saved different tensors than the forward did."""


def _noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def _random_state():
    return _random.get_rng_state()


def _set_random_state(state):
    _random.set_rng_state(state)


@contextlib.contextmanager
def _random_state_of(state):
    """Run the block with the random state `state` (if any), then go back to the current one."""
    if state is None:
        yield
        return
    current = _random_state()
    _set_random_state(state)
    try:
        yield
    finally:
        _set_random_state(current)


def checkpoint(function, *args, use_reentrant=None, context_fn=_noop_context_fn, determinism_check="default",
               debug=False, **kwargs):
    """function(*args, **kwargs), keeping none of its activations for backward."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default "
                      "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got %s" % determinism_check)
    if use_reentrant:
        if context_fn is not _noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return _CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run functions (a Sequential or a list) in `segments` checkpointed segments; the last one is not
    checkpointed (its activations are needed for backward at once)."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
                      "passed explicitly. use_reentrant=False is recommended, but if you need to preserve the "
                      "current default behavior, you can pass use_reentrant=True.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


class _CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.random_state = _random_state() if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for position, tensor in zip(ctx.tensor_positions, ctx.saved_tensors):
            detached = tensor.detach()
            detached.requires_grad_(tensor.requires_grad)
            inputs[position] = detached
        with _random_state_of(ctx.random_state), enable_grad():
            outputs = ctx.run_function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward(tuple(o for o, _ in pairs), tuple(g for _, g in pairs))
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in inputs)


class _Recomputation:
    """What the forward saved (metadata, by number) and, after the first unpack, the recomputed values."""

    def __init__(self, function, args, kwargs, random_state, recompute_context, check):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.random_state, self.recompute_context, self.check = random_state, recompute_context, check
        self.metadata = []
        self.values = None

    def pack(self, tensor):
        self.metadata.append((tuple(tensor.shape), tensor.dtype))
        return len(self.metadata) - 1

    def unpack(self, number):
        if self.values is None:
            self.values = self._recompute()
        return self.values[number]

    def _recompute(self):
        values = []

        def keep(tensor):
            values.append(tensor.detach())
            return len(values) - 1

        with saved_tensors_hooks(keep, lambda number: values[number]):
            with _random_state_of(self.random_state), enable_grad(), self.recompute_context:
                self.function(*self.args, **self.kwargs)
        if self.check:
            got = [(tuple(v.shape), v.dtype) for v in values]
            if got[:len(self.metadata)] != self.metadata:
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      "different metadata than during the forward pass: the forward saved %d "
                                      "tensors %s, the recomputation %d %s" % (len(self.metadata), self.metadata,
                                                                               len(got), got))
        return values


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs):
    forward_context, recompute_context = context_fn()
    if not is_grad_enabled():
        with forward_context:
            return function(*args, **kwargs)
    state = _Recomputation(function, args, kwargs, _random_state() if preserve else None, recompute_context,
                           determinism_check == "default")
    with saved_tensors_hooks(state.pack, state.unpack), forward_context:
        return function(*args, **kwargs)
