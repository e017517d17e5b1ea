"""The backward graph: nodes, edges and leaf gradient accumulation.

Each differentiable op leaves a Node behind.  A node's `next_functions`
holds one edge per forward input: (node, output_nr) of the input's grad_fn,
or of an AccumulateGrad node for a leaf that requires grad, or (None, 0)
where no gradient flows.  Nodes are numbered as created, and the engine
runs the most recent ready node first, as torch's does.
"""
import itertools
import weakref

from cextend.autograd.grad_mode import is_grad_enabled

_sequence = itertools.count()


class Node:
    """A backward function: apply(output_grads) -> one gradient per input."""

    num_outputs = 1
    # Class-level defaults: most nodes never change these, and not setting
    # them per instance keeps node creation (one per op) cheap.
    next_functions = ()
    _input_meta = ()        # per edge: (shape, numpy dtype) of the forward input
    _retained = None        # output_nr -> weakrefs of non-leaf tensors retaining grad

    def __init__(self):
        self._seq = next(_sequence)

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return "<%s>" % self.name()

    def apply(self, grads):
        raise NotImplementedError

    def _release(self):
        """Free what backward needed (saved tensors) once the graph is consumed."""

    def _retain(self, output_nr, tensor):
        if self._retained is None:
            self._retained = {}
        refs = self._retained.setdefault(output_nr, [])
        if not any(ref() is tensor for ref in refs):
            refs.append(weakref.ref(tensor))


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds the incoming gradient to leaf.grad."""

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def apply(self, grads):
        accumulate_into(self.variable, grads[0])
        return ()


def accumulate_into(tensor, grad):
    """tensor.grad += grad, storing a private copy the first time.

    With create_graph (grad mode on) the sum is itself recorded, so .grad
    stays differentiable; otherwise it is added in place.
    """
    if grad is None:
        return
    from cextend.tensor import _wrap
    # The engine has already fitted grad to the tensor's shape and dtype,
    # so the checked .grad setter is bypassed.
    current = tensor._grad
    if current is None:
        tensor._grad = grad if is_grad_enabled() else _wrap(grad._data.copy())
    elif is_grad_enabled():
        tensor._grad = current + grad
    else:
        current._data += grad._data
        current._version_counter.value += 1


def gradient_edge(tensor):
    """The edge a gradient for `tensor` travels along, or None."""
    if tensor._grad_fn is not None:
        return (tensor._grad_fn, tensor._output_nr)
    if tensor._requires_grad:
        if tensor._accumulator is None:
            tensor._accumulator = AccumulateGrad(tensor)
        return (tensor._accumulator, 0)
    return None
