"""The backward graph: nodes, edges, saved tensors and leaf accumulation.

Each differentiable op leaves a Node behind.  A node's `next_functions`
holds one edge per forward input: (node, output_nr) of the input's grad_fn,
or of an AccumulateGrad node for a leaf that requires grad, or (None, 0)
where no gradient flows.  Nodes are numbered as created, and the engine
runs the most recent ready node first, as torch's does.

Ownership follows torch: a tensor owns its grad_fn, a node owns the nodes
it feeds into, and nothing points back up.  A saved *output* is kept as
its data and version counter, not as the Tensor (whose grad_fn is the node
saving it), so no ctx <-> output reference cycle keeps a graph alive; a
leaf's AccumulateGrad node is held by the graph, the leaf only keeps a
weak reference to it.
"""
import itertools
import sys
import threading
import weakref

import numpy as np

from cextend import _bfloat16
from cextend._fpe import quietly
from cextend._overlap import check_not_self_overlapping, non_overlapping_and_dense

from cextend import _capture, _engine, _grad_state
from cextend._grad_state import _set_enabled, is_grad_enabled
from cextend.utils.hooks import ListHookHandle
from cextend.tensor import Tensor, _wrap

_sequence = itertools.count()
_next_seq = _sequence.__next__


class Node:
    """A backward function: apply(output_grads) -> one gradient per input edge."""

    num_outputs = 1
    # Class-level defaults: most nodes never change these, and not setting
    # them per instance keeps node creation (one per op) cheap.
    next_functions = ()
    _input_meta = ()        # per edge: (shape, numpy dtype) of the forward input, or None
    _retained = None        # output_nr -> weakrefs of non-leaf tensors retaining grad
    _tensor_hooks = None    # output_nr -> hooks registered with Tensor.register_hook
    _pre_hooks = None       # Node.register_prehook: fn(grad_outputs) -> None or new grads
    _post_hooks = None      # Node.register_hook: fn(grad_inputs, grad_outputs) -> None or new
    _fused = None           # a copy_ standing for x.op_(): the node of op(x) it copied
    _runs_first = False     # ahead of every other ready node (see engine.execute)
    _anomaly_trace = None   # the forward call's stack, kept while anomaly detection is on
    _wanted = None          # while a pass that computes some inputs' gradients runs it: the nodes
                            # on the way to them (BuiltinNode.needs)

    def __init__(self):
        self._seq = next(_sequence)

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return "<%s>" % type(self).__name__     # as torch's (CopySlices's name() is qualified)

    def apply(self, grads):
        raise NotImplementedError

    # A custom Function's backward runs even when no gradient it returns is
    # wanted (torch calls it); a builtin node then only unpacks what it saved.
    computes_unwanted_outputs = True

    def _unpack_saved(self):
        """Read the saved tensors (their version checks) without computing."""

    def _release(self):
        """Free what backward needed (saved tensors) once the graph is consumed."""

    def _retain(self, output_nr, tensor):
        if self._retained is None:
            self._retained = {}
        refs = self._retained.setdefault(output_nr, [])
        if not any(ref() is tensor for ref in refs):
            refs.append(weakref.ref(tensor))

    def _add_tensor_hook(self, output_nr, hook):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        hooks = self._tensor_hooks.setdefault(output_nr, [])
        hooks.append(hook)
        return ListHookHandle(hooks, hook)

    def register_prehook(self, hook):
        """hook(grad_outputs) runs before this node; it may return replacement grads."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(hook)
        return ListHookHandle(self._pre_hooks, hook)

    def register_hook(self, hook):
        """hook(grad_inputs, grad_outputs) runs after this node; it may return replacements."""
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(hook)
        return ListHookHandle(self._post_hooks, hook)


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds the incoming gradient to leaf.grad."""

    _runs_first = True

    def __init__(self, variable):
        self._seq = _next_seq()         # Node.__init__, inline: one per leaf in every graph
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def apply(self, grads):
        # A leaf detached (detach_, requires_grad_(False)) after the graph was
        # built no longer accumulates, as in torch.
        variable = self.variable
        if variable._requires_grad:
            if variable._grad_fn is not None:
                # an in-place op after detach_() gave the leaf a history
                raise RuntimeError("leaf variable has been moved into the graph interior")
            if _capture._active is None:
                grad = grads[0]
                # Only the engine's list of this node's inputs holds the gradient: its array
                # becomes .grad with no copy, as torch's AccumulateGrad steals a gradient
                # whose use count says no one else can see it.
                unseen = grad is not None and _references(grad) == _ENGINE_ONLY_REFERENCES \
                    and _owns_writable(grad._data)
                accumulate_into(variable, grad, unseen)
            else:
                # a captured step replays the accumulation itself
                _capture.leaf_accumulated(variable)
                _capture.eager(ReplayedAccumulation(), variable, grads[0])
            hooks = variable._post_accumulate_hooks
            if hooks:
                if _capture._active is not None:
                    _capture.refuse("a post-accumulate-grad hook runs")
                for hook in list(hooks):
                    hook(variable)
        return ()


_LOCK_FOR_LOCKS = threading.Lock()


def grad_lock(tensor):
    """The lock guarding tensor.grad, made on first use (torch's
    AccumulateGrad holds one mutex per variable): backward() in several
    threads into one shared parameter must not lose an update while numpy
    adds with the GIL released."""
    lock = tensor.__dict__.get("_grad_lock")
    if lock is None:
        with _LOCK_FOR_LOCKS:
            lock = tensor.__dict__.get("_grad_lock")
            if lock is None:
                lock = tensor.__dict__["_grad_lock"] = threading.Lock()
    return lock


def accumulate_into(tensor, grad, unseen=False):
    """tensor.grad += grad, as torch's AccumulateGrad does it, under the
    leaf's grad lock.

    The first gradient is stored as a private copy (never the incoming
    object, which the caller or another leaf may hold), or, when the
    caller knows no one else holds grad or its array (`unseen`), as a new
    Tensor around that array where it is laid out as .grad must be.  Later
    ones are added in place, or, while a graph of the gradient is being
    recorded (create_graph=True), added out of place so .grad stays
    differentiable.
    """
    if grad is None:
        return
    lock = tensor.__dict__.get("_grad_lock") or grad_lock(tensor)      # grad_lock's lookup, inline
    with lock:
        current = tensor._grad
        if current is None:
            if is_grad_enabled():
                tensor._grad = grad.clone()     # recorded: .grad differentiates through it
            elif unseen and _obeys_layout_contract(grad._data, tensor._data):
                tensor._grad = _wrap(grad._data)
            else:
                tensor._grad = _wrap(_obeying_layout_contract(grad._data, tensor._data))
        elif is_grad_enabled() or not current._data.flags.writeable:
            tensor._grad = current + grad
        else:
            check_not_self_overlapping(current._data)       # an expanded .grad, set by hand
            if current._data.dtype.kind == "V":
                current._data[...] = _bfloat16.add_arrays(current._data, grad._data)
            else:
                quietly(np.add, current._data, grad._data, current._data)
            current._version_counter.bump()


def _accumulate_as_the_engine(tensor, grad):
    """accumulate_into with grad recording off, as a backward() without create_graph runs it
    (a captured step's replay calls it from wherever the step was called)."""
    previous = is_grad_enabled()
    _set_enabled(False)
    try:
        accumulate_into(tensor, grad)
    finally:
        _set_enabled(previous)


class ReplayedAccumulation:
    """A captured step's accumulation into one leaf: the engine's, except that a .grad it made
    on an earlier call that nothing holds any more (zero_grad() dropped it) is refilled instead
    of made again, so a replayed step allocates no gradients.  torch's AccumulateGrad likewise
    reuses a buffer no one else can see."""

    __slots__ = ("spare",)

    def __init__(self):
        self.spare = None

    def __call__(self, tensor, grad):
        spare = self.spare
        if tensor._grad is None and spare is not None and _unseen(spare) \
                and spare._data.shape == grad._data.shape and spare._data.dtype == grad._data.dtype:
            with grad_lock(tensor):
                if tensor._grad is None:
                    np.copyto(spare._data, grad._data)
                    spare._version_counter.bump()
                    tensor._grad = spare
                    return
        _accumulate_as_the_engine(tensor, grad)
        self.spare = tensor._grad


def _references(t):
    """(references to Tensor t, references to its array): who else can see a gradient.  A view
    of the array holds the array too.  The counts a caller expects depend on its own frames and
    on the Python version, so each caller's are counted at import, through this function, by
    code shaped like the caller."""
    return sys.getrefcount(t), sys.getrefcount(t._data)


def _unseen(t):
    """Whether no one but a ReplayedAccumulation holds t, its array or a view of either, and
    it is still a plain gradient (no history, hooks or attributes of its own)."""
    if type(t._data) is not np.ndarray:
        return False
    counts = _references(t)
    if _UNSEEN_REFERENCES is None:
        return counts           # calibrating
    return (counts == _UNSEEN_REFERENCES and t._base is None and t._grad_fn is None and not t._requires_grad
            and not t.__dict__ and t._data.flags.writeable)


def _references_when_unseen():
    """What _unseen counts for a spare no one else holds, called as ReplayedAccumulation.__call__
    calls it (the counts differ across Python versions)."""
    holder = ReplayedAccumulation()
    holder.spare = _wrap(np.zeros(1))
    spare = holder.spare
    return _unseen(spare)


_UNSEEN_REFERENCES = None
_UNSEEN_REFERENCES = _references_when_unseen()


def _owns_writable(data):
    """Whether data is a writable numpy array of its own memory (no other array's view)."""
    return type(data) is np.ndarray and data.base is None and data.flags.writeable


def _obeys_layout_contract(grad, variable):
    """Whether grad is laid out as _obeying_layout_contract would copy it."""
    if type(variable) is not np.ndarray or variable.ndim <= 1 or variable.flags.c_contiguous \
            or not non_overlapping_and_dense(variable):
        return grad.flags.c_contiguous
    return grad.strides == variable.strides


def _references_of_engine_only_gradient():
    """What AccumulateGrad.apply counts for a gradient only the engine's list of its inputs
    holds, counted as apply counts it."""
    def apply_like(grads):
        grad = grads[0]
        return _references(grad)
    return apply_like([_wrap(np.zeros(1))])


_ENGINE_ONLY_REFERENCES = _references_of_engine_only_gradient()

# The backward loop (src/python/engine.c) runs apply's most common case itself while
# AccumulateGrad keeps this apply: a leaf's first gradient of a step, taken uncopied.
_engine.configure_leaves(AccumulateGrad.apply, _grad_state._state)


def _obeying_layout_contract(grad, variable):
    """A private copy of grad laid out as torch's "gradient layout
    contract": with the variable's strides where it is non-overlapping and
    dense (a channels-last weight gets a channels-last .grad), else C order."""
    if (type(grad) is np.ndarray and type(variable) is np.ndarray and variable.ndim > 1
            and not variable.flags.c_contiguous and non_overlapping_and_dense(variable)):
        out = np.empty_like(variable, dtype=grad.dtype, order="K")
        out[...] = grad
        return out
    return grad.copy()


def gradient_edge(tensor):
    """The edge a gradient for `tensor` travels along, or None."""
    grad_fn = tensor._grad_fn if tensor._base is None else tensor._current_grad_fn()
    if grad_fn is not None:
        return (grad_fn, tensor._output_nr)
    if tensor._requires_grad:
        ref = tensor._accumulator
        node = ref() if ref is not None else None
        if node is None:
            node = AccumulateGrad(tensor)
            tensor._accumulator = weakref.ref(node)
        return (node, 0)
    return None


def grad_accumulator(tensor):
    """The leaf's AccumulateGrad node, alive as long as some graph uses it."""
    ref = tensor._accumulator
    return ref() if ref is not None else None


# -- saved tensors hooks (torch.autograd.graph.saved_tensors_hooks) ----------------------------
# Per thread, as torch's.  _hooks_in_use counts the threads that have any, so a save outside
# them costs one list test.
_hooks_local = threading.local()
_hooks_in_use = [0]


def _hook_stack():
    stack = getattr(_hooks_local, "stack", None)
    if stack is None:
        stack = _hooks_local.stack = []
        _hooks_local.disabled = []
    return stack


class saved_tensors_hooks:
    """Within this context, every tensor a node saves for backward goes through
    pack_hook(tensor) -> anything, and comes back at backward through
    unpack_hook(that) -> a tensor with the same values (torch's semantics:
    the unpacked tensor is not checked against in-place changes)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        stack = _hook_stack()
        if _hooks_local.disabled:
            raise RuntimeError(_hooks_local.disabled[-1])
        stack.append((self.pack_hook, self.unpack_hook))
        with _hooks_lock:
            _hooks_in_use[0] += 1
        return self

    def __exit__(self, *exc):
        _hook_stack().pop()
        with _hooks_lock:
            _hooks_in_use[0] -= 1
        return False


_hooks_lock = threading.Lock()


class disable_saved_tensors_hooks:
    """Within this context, entering saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        _hook_stack()
        _hooks_local.disabled.append(self.error_message)
        return self

    def __exit__(self, *exc):
        _hooks_local.disabled.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept in host memory and moved back to their device at
    backward (pin_memory is accepted; cextend has no pinned memory)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            return tensor.device, tensor.cpu()

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)
        super().__init__(pack_to_cpu, unpack_from_cpu)


def _current_hooks():
    stack = getattr(_hooks_local, "stack", None)
    return stack[-1] if stack else None


class SavedTensor:
    """A tensor kept for backward, checked against in-place changes on unpack.

    Inputs are kept as the Tensor itself.  An output of the node saving it
    is kept as data + version counter and rebuilt on unpack with the node
    as its grad_fn (torch's SavedVariable), which avoids the cycle.  Under
    saved_tensors_hooks, only what pack_hook returned is kept (with the
    edge a gradient of the unpacked tensor must take).
    """

    __slots__ = ("tensor", "data", "version_counter", "version", "output_nr", "requires_grad", "packed",
                 "unpack_hook", "edge")

    def __init__(self, tensor, is_output=False, check_detached=True):
        self.unpack_hook = None
        if _hooks_in_use[0]:
            hooks = _current_hooks()
            if hooks is not None:
                self._pack(tensor, is_output, hooks)
                return
        self.version_counter = tensor._version_counter
        self.version = tensor._version_counter[0]
        if is_output:
            self.tensor = None
            self.data = tensor._data
            self.output_nr = tensor._output_nr
            self.requires_grad = tensor._requires_grad
        else:
            self.tensor = tensor
            # for inputs: whether unpacking refuses a tensor detached in place since
            self.requires_grad = check_detached and tensor._grad_fn is not None

    def _pack(self, tensor, is_output, hooks):
        pack_hook, self.unpack_hook = hooks
        self.tensor = self.data = None
        self.version_counter = tensor._version_counter
        self.version = None
        self.output_nr = tensor._output_nr
        self.requires_grad = tensor._requires_grad
        # The gradient path of the unpacked tensor: the saving node itself for an output,
        # else the input's own edge (its grad_fn, or its leaf's AccumulateGrad).
        self.edge = None if is_output or not tensor._requires_grad else gradient_edge(tensor)
        self.packed = pack_hook(tensor)          # outputs too, with their grad_fn, as torch passes them

    def _unpack_hooked(self, node):
        unpacked = self.unpack_hook(self.packed)
        if not isinstance(unpacked, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of type %s"
                            % type(unpacked).__name__)
        out = _wrap(unpacked._data)
        out._version_counter = unpacked._version_counter
        if self.edge is None and self.requires_grad:
            out._grad_fn, out._output_nr, out._requires_grad = node, self.output_nr, True
        elif self.edge is not None:
            edge_node, output_nr = self.edge
            if isinstance(edge_node, AccumulateGrad):
                out._accumulator = weakref.ref(edge_node)
            else:
                out._grad_fn, out._output_nr = edge_node, output_nr
            out._requires_grad = True
        return out

    def unpack(self, node):
        if self.unpack_hook is not None:
            return self._unpack_hooked(node)
        tensor = self.tensor
        if tensor is not None and tensor._view_fn is not None:
            # torch's unpack asks the input for its grad_fn first: a view whose
            # base changed in place is rebuilt then, or refused (a view made
            # under no_grad) before the version check
            tensor._current_grad_fn()
        if self.version_counter[0] != self.version:
            raise RuntimeError(_modified_message(self, node))
        if self.tensor is not None:
            if self.requires_grad and self.tensor._grad_fn is None:
                raise RuntimeError("Trying to use a saved tensor that has been detached in-place, i.e. with "
                                   ".detach_().This is not supported, please use out-of-place `.detach()` "
                                   "instead")
            return self.tensor
        out = _wrap(self.data)
        out._version_counter = self.version_counter
        if self.requires_grad:
            out._grad_fn = node
            out._output_nr = self.output_nr
            out._requires_grad = True
        return out

    def describe(self, node):
        if self.unpack_hook is not None:
            return "[a tensor packed by saved_tensors_hooks]"
        data = self.data if self.tensor is None else self.tensor._data
        if self.tensor is None:
            producer = ", which is output %d of %s" % (self.output_nr, node.name())
        elif self.tensor._grad_fn is not None:
            producer = ", which is output %d of %s" % (self.tensor._output_nr, self.tensor._grad_fn.name())
        else:
            producer = ""
        return "[%s %s]%s" % (data.dtype, list(data.shape), producer)


def _modified_message(saved, node):
    return ("one of the variables needed for gradient computation has been modified by an inplace "
            "operation: %s, is at version %d; expected version %d instead. Hint: the backward of %s "
            "needs it unchanged: clone() it before modifying it in place."
            % (saved.describe(node), saved.version_counter[0], saved.version, node.name()))


FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")
