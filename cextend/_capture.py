"""Captured training steps: `cextend.capture(step_fn)`.

A training step of a small model spends most of its time in Python: each
op checks its arguments, allocates, records a node; the engine walks the
graph.  The kernels are a fraction.  A captured step records, while
step_fn runs eagerly once, every C kernel call its ops make (the function
and its pointer arguments) and the calls that must run as they are (the
optimizer's step() and zero_grad(), and the accumulation of each leaf's
gradient).  Later calls whose arguments have the same shapes and dtypes
replay that list: the same kernels on the same buffers, with the new
arguments copied into the recorded ones.  The kernels are the eager ops'
own, called in the same order, so a replay computes the eager step's bits.

What cannot be replayed is refused while recording, and the step then runs
eagerly, saying why once (CaptureWarning): a tensor made by anything but a
logged kernel (a numpy formula, a factory, an op with no capturable
kernel), a kernel reading an array no kernel wrote (a temporary copy), an
in-place change outside the optimizer, .grad set by hand, a value read
back into Python (.item(), bool(), .tolist(), .numpy()), random numbers
other than dropout's (a replay draws those from the global stream as it
stands), hooks, anomaly mode, an argument that requires grad.  Python
numbers and control flow in step_fn that depend on anything but its
arguments' shapes, dtypes and plain values, or the called modules' plain
settings, are not seen: the recorded values and branch are replayed, as
with torch's CUDA graphs.

The recording is per thread: only the thread that calls the captured step
records; other threads' ops run as usual.
"""
import functools
import sys
import threading
import warnings

import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:         # numpy < 2
    _byte_bounds = np.byte_bounds

_active = None              # the _Recording in progress, or None (read by the sites)

# Set by the modules that own them when they are imported, so that this
# module imports nothing of cextend's (every op module imports it).
Tensor = None               # cextend.tensor: the Tensor class and its internal constructor
wrap = None
grad_enabled = None         # cextend._grad_state.is_grad_enabled
module_hooks_exist = None   # cextend.nn.module: whether any global module hook is registered


class CaptureWarning(UserWarning):
    """A captured step runs eagerly; the message says why."""


def _bounds(array):
    low, high = _byte_bounds(array)
    return low, max(high, low + 1)      # an empty array still sits somewhere


class _Ranges:
    """Byte ranges of arrays, for "is this array inside one of those"."""

    __slots__ = ("ranges", "arrays")

    def __init__(self):
        self.ranges = []
        self.arrays = []        # kept alive: a range must not be reused by another array

    def add(self, array):
        if type(array) is np.ndarray:
            self.ranges.append(_bounds(array))
            self.arrays.append(array)

    def covers(self, array):
        low, high = _bounds(array)
        return any(lo <= low and high <= hi for lo, hi in self.ranges)


class _Recording:
    """What one eager run of a step did, as a list of replayable actions."""

    def __init__(self):
        self.thread = threading.get_ident()
        self.actions = []            # (function, args, check) in the order they ran
        self.reads = []              # (action index, array) a kernel read
        self.writes = []             # (action index, [arrays]) a kernel wrote
        self.written = _Ranges()     # arrays a logged kernel wrote
        self.wrapped = []            # (array, the code that made it) made into Tensors during the step
        self.optimizers = []
        self.modules = []
        self.leaves = []             # (tensor, its array, requires_grad) the step accumulated into
        self.eager_depth = 0
        self.formulas = False        # a numpy formula was logged: replays silence its warnings
        self.reason = None

    def here(self):
        """Whether a site should note what it does: the recording thread, outside an eager call."""
        return self.eager_depth == 0 and threading.get_ident() == self.thread

    def refuse(self, why):
        if self.reason is None:
            self.reason = why


# -- what the sites call (only while a recording is active: `_active is not None`) ----------

def kernel(function, args, reads, writes, check):
    """A C kernel call that ran: `function(*args)` wrote `writes` from `reads` (arrays); a
    replay passes its return value to check(), which raises on a failure."""
    recording = _active
    if recording is None or not recording.here():
        return
    index = len(recording.actions)
    recording.actions.append((function, tuple(args), check))
    for array in reads:
        if array is not None:
            recording.reads.append((index, array))
    writes = [a for a in writes if a is not None]
    recording.writes.append((index, writes))
    for array in writes:
        recording.written.add(array)


def copy(destination, source):
    """np.copyto(destination, source) ran inside a kernel wrapper (a contiguous copy for C)."""
    kernel(np.copyto, (destination, source), (source,), (destination,), check=no_check)


def computed(function, args, out, direct=False):
    """out holds function(*args) (numpy arrays and constants), cast to out's dtype and laid out as
    out is: an op's numpy formula.  A replay recomputes it into out, the same bits.  out may be a
    tuple of arrays, one for each value function returns; direct: out is the array the ufunc
    `function` returned, so the replay passes it as out=."""
    recording = _active
    if recording is None or not recording.here():
        return
    if type(out) is tuple:          # several outputs: function returns one value for each
        if all(type(o) is np.ndarray for o in out):
            recording.formulas = True
            kernel(_into_each, (function, tuple(args), out), [a for a in args if type(a) is np.ndarray], out,
                   no_check)
        return
    if type(out) is not np.ndarray:
        return
    if recording.writes and any(w is out for w in recording.writes[-1][1]):
        return          # the formula called a logged kernel that wrote out (relu's)
    recording.formulas = True
    if direct and type(function) is np.ufunc:
        kernel(function, tuple(args) + (out,), [a for a in args if type(a) is np.ndarray], (out,), no_check)
    else:
        kernel(_into, (function, tuple(args), out), [a for a in args if type(a) is np.ndarray], (out,), no_check)


def _into(function, args, out):
    np.copyto(out, function(*args), casting="unsafe")


def _into_each(function, args, outs):
    for out, value in zip(outs, function(*args)):
        np.copyto(out, value, casting="unsafe")


def fill(array, value):
    """array was made full of value (the root gradient of backward())."""
    kernel(np.copyto, (array, value), (), (array,), check=no_check)


def eager(function, *args):
    """Run function(*args), and replay it as a call (not its kernels): the optimizer's step and
    zero_grad, a leaf's gradient accumulation.  Tensor arguments must be replayable arrays."""
    recording = _active
    if recording is None or not recording.here():
        return function(*args)
    index = len(recording.actions)
    recording.actions.append((function, args, no_check))
    for a in args:
        data = getattr(a, "_data", None)
        if type(data) is np.ndarray:
            recording.reads.append((index, data))
    recording.eager_depth += 1
    try:
        return function(*args)
    finally:
        recording.eager_depth -= 1


def refuse(why):
    """What just happened cannot be replayed."""
    recording = _active
    if recording is not None and recording.here():
        recording.refuse(why)


def wrapped(array):
    """A Tensor was made around array."""
    recording = _active
    if recording is not None and recording.here() and type(array) is np.ndarray:
        caller = sys._getframe(2).f_code        # the op that made it, for the refusal's message
        recording.wrapped.append((array, caller))


def in_place(tensor):
    """tensor's version moved: an in-place change."""
    recording = _active
    if recording is not None and recording.here():
        code = sys._getframe(2).f_code          # the op, for the message
        recording.refuse("an in-place op changed a tensor outside the optimizer: %s in %s"
                         % (code.co_name, _short_path(code.co_filename)))


def module_called(module):
    recording = _active
    if recording is not None and recording.here():
        recording.modules.append(module)


def optimizer_used(optimizer):
    recording = _active
    if recording is not None and recording.eager_depth == 0 and threading.get_ident() == recording.thread:
        if all(o is not optimizer for o in recording.optimizers):
            recording.optimizers.append(optimizer)


def leaf_accumulated(tensor):
    recording = _active
    if recording is not None and recording.here():
        recording.leaves.append((tensor, tensor._data, tensor._requires_grad))


def no_check(_):
    pass


# -- the plan ----------------------------------------------------------------------------------

def _module_tensors(module):
    """(store, name, tensor, its array) of a module's own parameters and buffers."""
    out = []
    for store in ("_parameters", "_buffers"):
        for name, t in getattr(module, store, {}).items():
            if t is not None:
                out.append((store, name, t, t._data))
    return out


def _persistent(recording):
    """Arrays that live across steps and that only replayed calls change: the optimizers'
    parameters and state, and the parameters and buffers of the modules the step called (a
    loss's class weights).  An in-place change of one by anything else refuses the capture."""
    ranges = _Ranges()
    for module in recording.modules:
        for _, _, _, data in _module_tensors(module):
            ranges.add(data)
    for optimizer in recording.optimizers:
        for group in optimizer.param_groups:
            for p in group["params"]:
                ranges.add(p._data)
        for state in optimizer.state.values():
            for value in state.values():
                ranges.add(getattr(value, "_data", None))
    for tensor, data, _ in recording.leaves:
        ranges.add(data)
    return ranges


_SETTING_TYPES = (bool, int, float, str, type(None))


def _settings(module):
    """A module's plain settings (training, p, eps, momentum, negative_slope, ...): a replay
    uses the values its recording saw, so changing one records again."""
    return [(k, v) for k, v in module.__dict__.items()
            if type(v) in _SETTING_TYPES or type(v) is tuple and all(type(e) in _SETTING_TYPES for e in v)]


class _Plan:
    __slots__ = ("actions", "inputs", "outputs", "guards", "keep", "formulas")

    def __init__(self, actions, inputs, outputs, guards, keep, formulas):
        self.formulas = formulas
        self.actions = actions
        self.inputs = inputs
        self.outputs = outputs
        self.guards = guards
        self.keep = keep


def _build(recording, input_arrays, result):
    """The plan of a finished recording, or the reason there is none."""
    if recording.reason is not None:
        return recording.reason
    if not recording.optimizers and not recording.actions:
        return "the step ran no capturable kernel"
    inputs = _Ranges()
    for array in input_arrays:
        inputs.add(array)
    persistent = _persistent(recording)
    for array, code in recording.wrapped:
        if not (inputs.covers(array) or recording.written.covers(array) or persistent.covers(array)):
            return ("an op outside the captured kernels made a tensor (a numpy formula, a factory, ...): "
                    "%s in %s" % (code.co_name, _short_path(code.co_filename)))
    # each read comes from an argument, a parameter or optimizer state, or an earlier kernel
    written_before = _Ranges()
    writes = dict(recording.writes)
    reads = iter(recording.reads)
    pending = next(reads, None)
    for index in range(len(recording.actions)):
        while pending is not None and pending[0] == index:
            array = pending[1]
            if not (inputs.covers(array) or written_before.covers(array) or persistent.covers(array)):
                return "a kernel reads an array that no captured kernel wrote (a temporary or a constant)"
            pending = next(reads, None)
        for array in writes.get(index, ()):
            written_before.add(array)
    outputs = _outputs(result, inputs, recording.written)
    if isinstance(outputs, str):
        return outputs
    guards = [(m, _settings(m), _module_tensors(m)) for m in recording.modules]
    # every parameter the optimizers hold, as it was: a replay computes no gradient for a
    # parameter unfrozen since, and reads the recorded array of one whose .data was replaced
    leaves = list(recording.leaves)
    for optimizer in recording.optimizers:
        for group in optimizer.param_groups:
            leaves.extend((p, p._data, p._requires_grad) for p in group["params"])
    return _Plan(recording.actions, list(input_arrays), outputs, (guards, leaves),
                 (recording.written.arrays, recording.wrapped), recording.formulas)


def _short_path(filename):
    parts = filename.replace("\\", "/").split("/")
    return "/".join(parts[parts.index("cextend"):]) if "cextend" in parts else parts[-1]


def _outputs(result, inputs, written):
    """How to return step_fn's result from a replay: a structure of detached copies."""
    def spec(value):
        if isinstance(value, Tensor):
            data = value._data
            if type(data) is not np.ndarray or not (written.covers(data) or inputs.covers(data)):
                return None
            return ("tensor", data)
        if value is None:
            return ("none",)
        if isinstance(value, (tuple, list)):
            parts = [spec(v) for v in value]
            return None if any(p is None for p in parts) else (type(value).__name__, parts)
        return None
    out = spec(result)
    if out is None:
        return "step_fn returns something other than tensors computed by the step (or tuples of them)"
    return out


def _materialize(spec):
    kind = spec[0]
    if kind == "tensor":
        return wrap(spec[1].copy())
    if kind == "none":
        return None
    parts = [_materialize(p) for p in spec[1]]
    return tuple(parts) if kind == "tuple" else parts


# -- cextend.capture ---------------------------------------------------------------------------

def _signature(args, kwargs):
    """The arguments' shapes and dtypes (tensors) and values (the rest), or a reason."""
    parts = []
    for value in list(args) + [kwargs[k] for k in sorted(kwargs)]:
        if isinstance(value, Tensor):
            if type(value._data) is not np.ndarray:
                return "an argument is not on the CPU"
            if value._requires_grad:
                return "an argument requires grad"
            parts.append(("tensor", value._data.shape, value._data.dtype))
        else:
            try:
                hash(value)
            except TypeError:
                return "an argument is neither a tensor nor a hashable value"
            parts.append(("value", type(value), value))
    return tuple(sorted(kwargs)), tuple(parts)


class CapturedStep:
    """step_fn, replayed from a recording when its arguments match (see the module docstring).

    `reason` is None while the step is captured, else why it runs eagerly; `recordings` and
    `replays` count the calls that recorded and that replayed."""

    _MAX_PLANS = 8      # argument signatures kept (a ragged last batch is a second one)

    def __init__(self, step_fn):
        functools.update_wrapper(self, step_fn)
        self.step_fn = step_fn
        self.reason = None
        self._plans = {}
        self.recordings = 0
        self.replays = 0
        self._warned = False
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        if self.reason is not None:
            return self.step_fn(*args, **kwargs)
        key = _signature(args, kwargs)
        if isinstance(key, str):
            return self._eager(key, args, kwargs)
        if not self._lock.acquire(blocking=False):
            return self.step_fn(*args, **kwargs)        # another thread is replaying: run eagerly
        try:
            plan = self._plans.get(key)
            if plan is not None and _guards_hold(plan):
                self.replays += 1
                return _replay(plan, args, kwargs)
            return self._record(key, args, kwargs)
        finally:
            self._lock.release()

    def _eager(self, reason, args, kwargs):
        self.reason = reason
        self._plans.clear()
        if not self._warned:
            self._warned = True
            warnings.warn("cextend.capture: %s runs eagerly: %s" % (getattr(self.step_fn, "__name__", "step"),
                                                                    reason), CaptureWarning, stacklevel=3)
        return self.step_fn(*args, **kwargs)

    def _record(self, key, args, kwargs):
        global _active
        if _active is not None:
            return self._eager("a captured step runs inside another one's recording", args, kwargs)
        # The recorded arguments are private copies: a replay copies the next arguments into
        # them, never into the caller's tensors.
        private = []
        copies = []
        for value in args:
            if isinstance(value, Tensor):
                data = np.array(value._data, order="C", copy=True)
                private.append(data)
                value = wrap(data)
            copies.append(value)
        kw = {}
        for name, value in kwargs.items():
            if isinstance(value, Tensor):
                data = np.array(value._data, order="C", copy=True)
                private.append(data)
                value = wrap(data)
            kw[name] = value
        enabled = grad_enabled()
        self.recordings += 1
        recording = _Recording()
        _active = recording
        try:
            result = self.step_fn(*copies, **kw)
        finally:
            _active = None
        if grad_enabled() != enabled:
            recording.refuse("the step changes the grad mode")
        plan = _build(recording, private, result)
        if isinstance(plan, str):
            self.reason = plan
            self._plans.clear()
            if not self._warned:
                self._warned = True
                warnings.warn("cextend.capture: %s runs eagerly: %s"
                              % (getattr(self.step_fn, "__name__", "step"), plan), CaptureWarning, stacklevel=3)
            return result
        if len(self._plans) >= self._MAX_PLANS and key not in self._plans:
            self._plans.pop(next(iter(self._plans)))
        self._plans[key] = plan
        return _materialize(plan.outputs)


def _guards_hold(plan):
    """Whether what the recording relied on still holds: each module's mode and its lack of
    hooks, and each parameter's array, requires_grad and lack of hooks."""
    modules, leaves = plan.guards
    for m, settings, tensors in modules:
        if _settings(m) != settings or m._forward_hooks or m._forward_pre_hooks or m._backward_hooks \
                or m._backward_pre_hooks:
            return False
        for store, name, t, data in tensors:          # replaced, or its .data replaced
            if getattr(m, store).get(name) is not t or t._data is not data:
                return False
    if module_hooks_exist is not None and module_hooks_exist():
        return False
    for tensor, data, requires_grad in leaves:
        if tensor._data is not data or tensor._requires_grad != requires_grad or tensor._hooks \
                or tensor._post_accumulate_hooks:
            return False
    return True


def _replay(plan, args, kwargs):
    values = list(args) + [kwargs[k] for k in sorted(kwargs)]
    buffers = iter(plan.inputs)
    for value in values:
        if isinstance(value, Tensor):
            np.copyto(next(buffers), value._data)
    if plan.formulas:
        errors = np.seterr(all="ignore")        # as the eager ops' numpy formulas run
        try:
            for function, call_args, check in plan.actions:
                check(function(*call_args))
        finally:
            np.seterr(**errors)
    else:
        for function, call_args, check in plan.actions:
            check(function(*call_args))
    return _materialize(plan.outputs)


def capture(step_fn):
    """A training step that replays its kernels (see cextend._capture).

        step = cextend.capture(train_step)      # or @cextend.capture
        loss = step(x, y)                       # records, then replays

    The result holds detached copies of the tensors step_fn returns."""
    if not callable(step_fn):
        raise TypeError("capture() expects a callable step function, got %s" % type(step_fn).__name__)
    return CapturedStep(step_fn)
