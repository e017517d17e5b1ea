"""Elementwise binary ops with broadcasting and torch's type promotion.

Each op: promote (torch.result_type), compute with numpy in the result
dtype, record one node whose backward is written with Tensor ops (so it
is differentiable again).  Gradients of broadcast operands come back at
the broadcast shape; the engine sums them to each input's shape and casts
them to its dtype.  The formulas follow torch's derivatives.yaml, operand
order included, so results agree to the last bit where numpy's kernels do.
"""
import math
import numbers

import numpy as np

from cextend import _capture, _engine
from cextend._overlap import check_no_partial
from cextend.autograd import views
from cextend._fpe import NUMPY_ERROR_STATE, quietly, restore, silence
from cextend._scalars import checked_scalar
from cextend.autograd.grad_mode import _state as _grad_state
from cextend.tensor import _wrap
from cextend._promotion import binary_result_type, float_result
from cextend.autograd import record as rec
from cextend._ops import _deprecated, _out, bfloat16
from cextend._ops._layout import empty_like_preserve, torch_layout, with_number_layout
from cextend._ops import samples as S
from cextend._ops._operands import (as_array, broadcast_shapes, is_tensor, operand, require_operand,
                                    require_tensor)
from cextend._ops.registry import method, register
from cextend._promotion import result_type
from cextend._dtype import from_numpy
from cextend._promotion import _torch_name
from cextend import _sizes


def _raise_size_error(error, op):
    """cextend's error for numpy's failure to make the result (too big to lay
    out, out of memory), instead of numpy's words; nothing for other errors."""
    translated = _sizes.translated(error, op)
    if translated is not None:
        raise translated from None



def _holds_bfloat16(x):
    data = getattr(x, "_data", None)
    return type(data) is np.ndarray and data.dtype.kind == "V"


# Binary.__call__'s common case compiled (src/python/engine.c): the same calls, in the same
# order, as the fast path below; None when that path (or the general one) must run.
_binary_in_c = _engine.binary
if NUMPY_ERROR_STATE is not None:
    _engine.configure_binary(tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64)), *NUMPY_ERROR_STATE,
                             torch_layout, with_number_layout, np.asarray)


class Binary:
    """One elementwise binary op: forward, in-place and out= forms.

    compute(x, y) gets numpy arrays (or Python numbers) already in the
    computing dtype; backward(node, grad, a, b, result) returns (grad_self,
    grad_other).  saves(need_a, need_b, a_is_tensor, b_is_tensor) says which
    of self, other and the result to keep, as torch's generated code decides
    (what is not kept arrives as None, a Python number as itself), so a
    later in-place change raises exactly where torch's would.
    result: "promote" (the common dtype), "float" (integers become the
    default float), "bool" (comparisons).  inplace_saves_result(other):
    whether the in-place form keeps its result whatever the needs (pow_).
    """

    def __init__(self, name, compute, backward=None, saves=None, result="promote", check=None,
                 inplace_saves_result=None):
        self.name = name
        self.inplace_saves_result = inplace_saves_result
        self.compute = compute
        self.saves = saves
        self.result = result
        self.check = check
        self.node = rec.node_class(_camel(name) + "Backward", backward) if backward else None
        # torch names its nodes by overload: (is self a tensor, is other) -> node class
        self.overloads = None
        self.differentiable_out = backward is not None
        self.out_keeps_history = False      # floor_divide: torch records its node on out= anyway

    def dtypes(self, a, b):
        """(computing dtype, output dtype)."""
        rt = binary_result_type(a, b)
        if self.result == "float":
            rt = float_result(rt)
            return rt, rt
        if self.result == "bool":
            return rt, np.dtype(np.bool_)
        return rt, rt

    def run(self, a, b, rt):
        if self.check is not None:
            self.check(a, b, rt)
        try:
            arrays = [as_array(x, rt) for x in (a, b)]
            value = quietly(self.compute, *arrays)
            operands = [x for x in arrays if type(x) is np.ndarray]
            if len(operands) == 2 and type(value) is np.ndarray and value.ndim > 1:
                value = torch_layout(value, [_cast_layout(x._data, rt) for x in (a, b)])
            elif len(operands) == 1 and type(value) is np.ndarray and value.ndim > 1 and \
                    not (self.name == "pow" and type(arrays[0]) is not np.ndarray):
                # (pow(number, Tensor) is contiguous: see _power); a tensor of
                # another dtype is ordered as its .to() copy (an expanded one: dense)
                tensor = a if is_tensor(a) else b
                value = with_number_layout(value, _cast_layout(tensor._data, rt))
            return value
        except (ValueError, MemoryError) as error:
            shapes = [x._data.shape for x in (a, b) if is_tensor(x)]
            if len(shapes) == 2:
                broadcast_shapes(*shapes)       # raises torch's RuntimeError if that was it
            _raise_size_error(error, self.name)
            raise

    def _node(self, a, b):
        if self.overloads is None:
            return self.node
        return self.overloads.get((is_tensor(a), is_tensor(b)), self.node)

    def __call__(self, input, other, out=None):
        if out is None:
            result = _binary_in_c(self, input, other)
            if result is not None:
                return result
        return self._call_in_python(input, other, out)

    def _call_in_python(self, input, other, out=None):
        """__call__ without the compiled attempt (made already, or declined)."""
        # The common case first: a CPU tensor with a tensor of its dtype or a
        # Python number that cannot change its dtype.  No promotion work, no
        # extra checks; the result is the same as the general path's.
        data = getattr(input, "_data", None)
        result = None
        if out is None and type(data) is np.ndarray:
            dt = data.dtype
            kind = dt.kind
            t = type(other)
            if t is float:
                same = kind == "f"
                raw = other
            elif t is int:
                same = kind == "f" or kind == "i" and dt.itemsize == 8
                raw = other
            else:
                raw = getattr(other, "_data", None)
                same = type(raw) is np.ndarray and raw.dtype == dt
            if same and (kind == "f" or self.result == "promote" and kind != "V"):     # V: bfloat16
                if self.check is not None:
                    self.check(input, other, dt)
                token = silence()
                try:
                    value = self.compute(data, raw)
                except (ValueError, MemoryError) as error:
                    if raw.__class__ is np.ndarray:
                        broadcast_shapes(data.shape, raw.shape)
                    _raise_size_error(error, self.name)
                    raise
                finally:
                    restore(token)
                computed = value
                if data.ndim > 1 and type(value) is np.ndarray:
                    if type(raw) is np.ndarray:
                        value = torch_layout(value, (data, raw))
                    elif not data.flags.c_contiguous or 1 in data.shape:
                        value = with_number_layout(value, data)
                if type(value) is not np.ndarray:
                    value = np.asarray(value)
                if _capture._active is not None:
                    _capture.computed(self.compute, (data, raw), value, direct=value is computed)
                result = _wrap(value)
                if not (self.node is not None and _grad_state.enabled and (
                        input._requires_grad or input._base is not None or
                        t is not float and t is not int and (other._requires_grad or other._base is not None))):
                    return result       # nothing to record: the recording's own tests are skipped
                a, b = input, other
        if result is None:
            if _holds_bfloat16(input) or _holds_bfloat16(other):
                return bfloat16.binary(self, input, other, out)
            a = require_operand(input, self.name, "input")
            b = require_operand(other, self.name, "other")
            result = self._general(a, b, out)
            if out is not None:
                return result
        # The one recording path, for both.  An op torch has no derivative
        # for (floor_divide) gives an integer result no history (and no error).
        if self.node is not None and rec.needs_grad(a, b) and (
                result._data.dtype.kind == "f" or not getattr(self.node, "not_implemented", False)):
            node = rec.record(self.node if self.overloads is None else self._node(a, b), (a, b), result)
            if self.saves is not None:
                node._saved = self._saved(node, a, b, result, a)
        return result

    def _general(self, a, b, out):
        """Any operands: promotion, checks, out= (written, with its history)."""
        rt, ot = self.dtypes(a, b)
        data = self.run(a, b, rt)
        if ot != rt:
            data = data.astype(ot, copy=False)
        if out is not None:
            # comparisons, logical ops and floor_divide have no derivative:
            # torch accepts their out= even when an input requires grad
            _out.check_out(out, self.name, a, b, differentiable=self.differentiable_out)
            # torch refuses only a leaf that requires grad as out= (a
            # non-leaf one takes the op's history, as an in-place op)
            if self.out_keeps_history and out.requires_grad and _grad_state.enabled and (
                    out.is_leaf or (out._base is not None and out._base.is_leaf)):
                # (a view of a leaf that requires grad is refused alike)
                raise RuntimeError("aten::%s(): functions with out=... arguments don't support automatic "
                                   "differentiation, but one of the arguments requires grad." % self.name)
            written = _out.write_out(out, _as_ndarray(data, ot), self.name)
            if self.out_keeps_history and out._data.dtype.kind == "f" and (
                    rec.needs_grad(a, b) or (_grad_state.enabled and out.requires_grad)):
                # torch records its not-implemented node on a float out= too
                views.rebase_history(out, rec.connect(rec.new_node(self._node(a, b)), self._edge_inputs(a, b)), 0)
            return written
        data = _as_ndarray(data, ot)
        if _capture._active is not None:
            _capture.computed(self.compute, [as_array(x, rt) for x in (a, b)], data)
        return _wrap(data)

    def _edge_inputs(self, a, b):
        """The inputs an in-place or out= node gets edges to.  torch's
        NotImplemented node ("derivative for aten::... is not implemented")
        has edges to the inputs that require grad only: a CopySlices around
        it, which drops its fn's first edge as self's, then drops the
        divisor's when only the divisor requires grad."""
        if getattr(self.node, "computes_unwanted_outputs", False):
            return tuple(x for x in (a, b) if is_tensor(x) and x.requires_grad)
        return (a, b)

    def _keep(self, node, a, b):
        """(keep self, keep other, keep result) for this call.  needs(i) is
        whether input i has an edge: a tensor that requires grad without one
        (a view made under no_grad of one that does) has none, so what
        torch guards by should_compute_output is not saved for it."""
        return self.saves(node.needs(0), node.needs(1), is_tensor(a), is_tensor(b))

    def _saved(self, node, a, b, result, original, keep=None):
        keep_a, keep_b, keep_r = keep or self._keep(node, a, b)
        if (keep_a and not is_tensor(a)) or (keep_b and not is_tensor(b)):
            # torch wraps the number in a tensor and saves that (mul, div):
            # freed after backward like any saved tensor
            node._keeps_wrapped_number = True
        return ((rec.save(original) if keep_a else None) if is_tensor(a) else a,
                (rec.save(b) if keep_b else None) if is_tensor(b) else b,
                rec.save_output(result) if keep_r else None)

    def inplace(self, input, other):
        a = require_tensor(input, self.name + "_")
        b = require_operand(other, self.name + "_")
        rt, ot = self.dtypes(a, b)
        check_broadcasts_into(a, b)
        recording = rec.prepare_inplace(a, (b,), ot)
        node = None
        if recording and self.node is not None:
            node = rec.connect(rec.new_node(self._node(a, b)), self._edge_inputs(a, b))
            if self.saves is not None:
                # Saved before the change: self's old value (a recorded clone,
                # so its own history stays differentiable) and other at its
                # current version, which is why y.mul_(y) raises as in torch.
                keep = self._keep(node, a, b)
                if self.inplace_saves_result is not None and self.inplace_saves_result(b):
                    keep = (keep[0], keep[1], True)
                original = a.clone() if keep[0] else a
                before = self._saved(node, a, b, None, original, (keep[0], keep[1], False))
        a._data[...] = self.run(a, b, rt)
        rec.finish_inplace(a, node)
        if node is not None and self.saves is not None:
            node._saved = before[:2] + ((rec.save_output(a) if keep[2] else None),)
        return a


def _cast_layout(array, dtype):
    """The operand as torch's TensorIterator sees it when ordering dims: one
    of another dtype is first cast with .to(), a preserve_format copy (an
    expanded or sliced operand becomes dense; a 0-d one is left alone)."""
    if array.dtype == dtype or array.ndim == 0:
        return array
    return empty_like_preserve(array, dtype)


def check_broadcasts_into(a, b):
    """An in-place op's operand must broadcast to the tensor's own shape."""
    shape = a._data.shape
    other_shape = b._data.shape if is_tensor(b) else ()
    if other_shape == shape or not other_shape:
        return
    result = broadcast_shapes(shape, other_shape)
    if result != shape:
        raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                           % (list(shape), list(result)))


def _as_ndarray(data, dtype):
    """numpy returns 0-d results as numpy scalars; keep them arrays."""
    if type(data) is np.ndarray or hasattr(data, "to_host"):
        return data
    return np.asarray(data, dtype)


def _camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


def _zeros_like(t):
    return t.new_zeros(t.shape)


# -- the ops -------------------------------------------------------------

def _add_backward(node, g, *unused):
    return (g if node.needs(0) else None), (g if node.needs(1) else None)


def _sub_backward(node, g, *unused):
    return (g if node.needs(0) else None), (-g if node.needs(1) else None)


def _mul_backward(node, g, a, b, result):
    return (g * b if node.needs(0) else None), (g * a if node.needs(1) else None)


def _div_backward(node, g, a, b, result):
    grad_a = g / b if node.needs(0) else None
    grad_b = -g * ((a / b) / b) if node.needs(1) else None
    return grad_a, grad_b


def _remainder_backward(node, g, a, b, result):
    return (g if node.needs(0) else None), (-g * div(a, b, rounding_mode="floor") if node.needs(1) else None)


def _fmod_backward(node, g, a, b, result):
    return (g if node.needs(0) else None), (-g * div(a, b, rounding_mode="trunc") if node.needs(1) else None)


def _atan2_backward(node, g, a, b, result):
    # torch masks the reciprocal at the origin, so the gradient there is 0
    denominator = a * a + b * b
    recip = where(denominator == 0, 0.0, denominator.reciprocal())
    return (g * b * recip if node.needs(0) else None), (g * -a * recip if node.needs(1) else None)


def _maximum_backward(node, g, a, b, result):
    half = where(a == b, g / 2, g)
    return (half.masked_fill(a < b, 0) if node.needs(0) else None,
            half.masked_fill(a > b, 0) if node.needs(1) else None)


def _minimum_backward(node, g, a, b, result):
    half = where(a == b, g / 2, g)
    return (half.masked_fill(a > b, 0) if node.needs(0) else None,
            half.masked_fill(a < b, 0) if node.needs(1) else None)


def _fmax_backward(node, g, a, b, result):
    # fmax ignores NaN: the gradient goes to the operand that was chosen.
    pick_a = (a >= b).logical_or(b.isnan()) if is_tensor(b) else (a >= b)
    return (g.masked_fill(pick_a.logical_not(), 0) if node.needs(0) else None,
            g.masked_fill(pick_a, 0) if node.needs(1) else None)


def _fmin_backward(node, g, a, b, result):
    pick_a = (a <= b).logical_or(b.isnan()) if is_tensor(b) else (a <= b)
    return (g.masked_fill(pick_a.logical_not(), 0) if node.needs(0) else None,
            g.masked_fill(pick_a, 0) if node.needs(1) else None)


def _is_bool_tensor(x):
    return is_tensor(x) and x._data.dtype.kind == "b"


def _is_bool_operand(x):
    """A bool tensor, or a Python bool (torch wraps it as a bool tensor)."""
    return isinstance(x, (bool, np.bool_)) or _is_bool_tensor(x)


def _sub_check(a, b, rt):
    if _is_bool_operand(a) and _is_bool_operand(b):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                           "`^` or `logical_xor()` operator instead.")
    if _is_bool_operand(a) or _is_bool_operand(b):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _reject_bool(op):
    """torch's CPU kernels for these ops are not built for bool."""
    def check(a, b, rt):
        if rt.kind == "b":
            raise NotImplementedError("\"%s\" not implemented for 'Bool'" % op)
    return check


def _integer_division_check(a, b, rt, op="div_floor_cpu"):
    if rt.kind == "b":
        raise NotImplementedError("\"%s\" not implemented for 'Bool'" % op)
    if rt.kind in "iu":
        a_shape = a._data.shape if is_tensor(a) else ()
        b_shape = b._data.shape if is_tensor(b) else ()
        if 0 in broadcast_shapes(a_shape, b_shape):
            return          # nothing is divided
        zero = (b._data == 0).any() if is_tensor(b) else b == 0
        if zero:
            raise RuntimeError("ZeroDivisionError")


def _remainder_check(a, b, rt):
    _integer_division_check(a, b, rt, "remainder_cpu")


def _fmod_check(a, b, rt):
    _integer_division_check(a, b, rt, "fmod_cpu")


def _pow_check(a, b, rt):
    # torch refuses only a negative *number* exponent for integers; a tensor
    # exponent follows C's integer rules (see _power).
    if rt.kind in "iu" and not is_tensor(b) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if rt.kind == "b" and is_tensor(b):     # only bool ** Python bool has a kernel
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


_ADD = Binary("add", np.add, _add_backward)
_SUB = Binary("sub", np.subtract, _sub_backward, check=_sub_check)
_SUB.overloads = {(True, False): _SUB.node, (True, True): _SUB.node,
                  (False, True): rec.renamed(_SUB.node, "RsubBackward1")}      # 1 - x is torch's rsub(x, 1)
def _keep_for_mul(need_a, need_b, tensor_a, tensor_b):
    return need_b, need_a, False            # d/da needs b, d/db needs a


def _keep_for_div(need_a, need_b, tensor_a, tensor_b):
    # other is read by both formulas: torch's generated code saves it
    # unguarded (even when no input has an edge: a view made under no_grad)
    return need_b, True, False


def _keep_for_other(need_a, need_b, tensor_a, tensor_b):
    return need_b, need_b, False            # only the divisor's gradient needs values


def _keep_both(need_a, need_b, tensor_a, tensor_b):
    return True, True, False


_MUL = Binary("mul", np.multiply, _mul_backward, saves=_keep_for_mul)
_DIV = Binary("div", np.true_divide, _div_backward, saves=_keep_for_div, result="float")
def _remainder(x, y):
    """Python-style remainder as torch computes it for floats: fmod, then
    shifted by the divisor when the signs differ (so 1.25 % -0.25 is +0.0,
    where numpy gives -0.0)."""
    if (type(x) is np.ndarray and x.dtype.kind == "f") or (type(y) is np.ndarray and y.dtype.kind == "f"):
        m = np.fmod(x, y)
        return np.where((m != 0) & ((np.asarray(y) < 0) != (m < 0)), m + y, m)
    return np.remainder(x, y)


_REMAINDER = Binary("remainder", _remainder, _remainder_backward, saves=_keep_for_other,
                    check=_remainder_check)
_FMOD = Binary("fmod", np.fmod, _fmod_backward, saves=_keep_for_other, check=_fmod_check)
for _binary in (_REMAINDER, _FMOD):      # torch: x % 2 is overload 0 (Scalar), x % y 1 (Tensor)
    _binary.overloads = {(True, False): _binary.node, (True, True): rec.overload(_binary.node, 1)}
_ATAN2 = Binary("atan2", np.arctan2, _atan2_backward, saves=_keep_both, result="float")
def torch_maximum(a, b):
    """torch's maximum: b only where it is larger (so of 0.0 and -0.0 the
    first operand wins, where numpy's maximum may pick either); NaN wins."""
    if np.asarray(a).dtype.kind != "f" and np.asarray(b).dtype.kind != "f":
        return np.maximum(a, b)
    out = np.where(b > a, b, a)
    return np.where(b != b, b, out)        # a NaN in b (a NaN in a is kept above)


def torch_minimum(a, b):
    if np.asarray(a).dtype.kind != "f" and np.asarray(b).dtype.kind != "f":
        return np.minimum(a, b)
    out = np.where(b < a, b, a)
    return np.where(b != b, b, out)


def torch_fmax(a, b):
    """fmax: NaN is ignored; otherwise as torch_maximum."""
    if np.asarray(a).dtype.kind != "f" and np.asarray(b).dtype.kind != "f":
        return np.fmax(a, b)
    return np.where((b > a) | (a != a), b, a)


def torch_fmin(a, b):
    if np.asarray(a).dtype.kind != "f" and np.asarray(b).dtype.kind != "f":
        return np.fmin(a, b)
    return np.where((b < a) | (a != a), b, a)


_MAXIMUM = Binary("maximum", torch_maximum, _maximum_backward, saves=_keep_both)
_MINIMUM = Binary("minimum", torch_minimum, _minimum_backward, saves=_keep_both)
_FMAX = Binary("fmax", torch_fmax, _fmax_backward, saves=_keep_both)
_FMIN = Binary("fmin", torch_fmin, _fmin_backward, saves=_keep_both)


def _alpha(input, other, alpha, op):
    """other * alpha for add/sub's alpha=, checked as torch checks it."""
    if alpha == 1 and type(alpha) is int:
        return other
    if not isinstance(alpha, (int, float)):
        raise TypeError("%s(): argument 'alpha' must be a number, not %s" % (op, type(alpha).__name__))
    other = require_operand(other, op)
    if op.endswith("_") and is_tensor(input):
        check_no_partial(input._data, (other,))    # torch's fused kernel reads other itself
    if op.startswith(("sub", "rsub")):
        _sub_check(input, other, None)      # before other * alpha hides a bool operand
    bool_result = _is_bool_tensor(input) and (_is_bool_tensor(other) or isinstance(other, bool))
    if isinstance(alpha, bool) and not bool_result:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, int) and bool_result:
        alpha = bool(alpha)     # a bool result: torch reads alpha as a bool
        if not is_tensor(other):
            return bool(other) and alpha
    if isinstance(alpha, float):
        kinds = [t._data.dtype.kind for t in (input, other) if is_tensor(t)]
        if all(k in "iub" for k in kinds):
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                               "point number.")
    # torch scales other in the result's dtype: 0 * -1 is -0.0 there, and a
    # float64 0-d other is rounded to float32 before it is scaled.
    rt = binary_result_type(input, other) if is_tensor(input) else None
    if rt is not None and rt.kind == "f":
        if not is_tensor(other):
            return float(rt.type(other) * rt.type(alpha))
        if other._data.dtype != rt:
            other = other.to(from_numpy(rt))
    scaled = other * alpha
    if getattr(scaled, "_grad_fn", None) is not None:
        # torch's add/sub keep alpha as a number: nothing to free after backward
        scaled._grad_fn._keeps_wrapped_number = False
    return scaled


def _add_(self, other, *deprecated, alpha=1):
    if deprecated:      # add_(Number alpha, Tensor other)
        other, alpha = _deprecated.alpha_first("add_", other, deprecated, alpha)
    return _ADD.inplace(self, _alpha(self, other, alpha, "add_"))


def _sub_(self, other, *deprecated, alpha=1):
    if deprecated:
        other, alpha = _deprecated.alpha_first("sub_", other, deprecated, alpha)
    return _SUB.inplace(self, _alpha(self, other, alpha, "sub_"))


@register("add", inplace=_add_, samples=S.binary(), family="arithmetic", integer_inputs=True)
def add(input, other, *deprecated, alpha=1, out=None):
    if deprecated:      # add(input, Number alpha, Tensor other)
        other, alpha = _deprecated.alpha_first("add", other, deprecated, alpha)
    return _ADD(input, _alpha(input, other, alpha, "add"), out)


@register("sub", aliases=("subtract",), inplace=_sub_, samples=S.binary(), family="arithmetic",
          integer_inputs=True)
def sub(input, other, *deprecated, alpha=1, out=None):
    if deprecated:
        other, alpha = _deprecated.alpha_first("sub", other, deprecated, alpha)
    return _SUB(input, _alpha(input, other, alpha, "sub"), out)


@register("rsub", method=False, samples=S.binary(), family="arithmetic")
def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    return _SUB(require_operand(other, "rsub"), _alpha(other, input, alpha, "rsub"))


@register("mul", aliases=("multiply",), inplace=lambda self, other: _MUL.inplace(self, other),
          samples=S.binary(), family="arithmetic", integer_inputs=True)
def mul(input, other, *, out=None):
    return _MUL(input, other, out)


_ROUNDING = (None, "trunc", "floor")


def _div_rounded(a, b, mode, out=None, inplace=False):
    """div with rounding_mode: integer results stay integer; no gradient flows."""
    if mode not in _ROUNDING:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           "found '%s'" % (mode,))
    op = _FLOOR_DIV if mode == "floor" else _TRUNC_DIV
    if inplace:
        return op.inplace(a, b)
    return op(a, b, out)


def _trunc_divide(x, y):
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu" or isinstance(y, np.ndarray) and y.dtype.kind in "iu":
        q = np.floor_divide(x, y)
        # floor -> trunc: negative non-exact quotients round up by one.
        fix = (np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0))
        return q + fix
    return np.trunc(np.true_divide(x, y))


def _zero_backward(node, g, *saved):
    """Piecewise-constant ops (rounding division, comparisons stored in place)."""
    return (rec.zeros_grad(g) if node.needs(0) else None), (rec.zeros_grad(g) if node.needs(1) else None)


_ZeroGradNode = rec.node_class("ZeroGradBackward", _zero_backward)


_FLOOR_DIV = Binary("floor_divide", np.floor_divide, _zero_backward, saves=_keep_both,
                    check=_integer_division_check)
_TRUNC_DIV = Binary("div", _trunc_divide, _zero_backward, saves=_keep_both,
                    check=_integer_division_check)
# floor_divide itself has no derivative in torch: backward through it raises.
_FLOOR_DIVIDE = Binary("floor_divide", np.floor_divide, None, check=_integer_division_check)
_FLOOR_DIVIDE.node = rec.not_implemented("FloorDivideBackward",
                                         "derivative for aten::floor_divide is not implemented", whole_node=True)
_FLOOR_DIVIDE.out_keeps_history = True
# nor does remainder with a number as the dividend
_RREMAINDER = Binary("remainder", _remainder, None, check=_remainder_check)
_RREMAINDER.node = rec.not_implemented("RemainderBackward", "derivative for aten::remainder is not implemented",
                                       whole_node=True)


@register("div", aliases=("divide", "true_divide"), samples=S.binary(positive_other=True),
          inplace=lambda self, other, rounding_mode=None: (
              _DIV.inplace(self, other) if rounding_mode is None
              else _div_rounded(self, other, rounding_mode, inplace=True)),
          family="arithmetic")
def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None:
        return _DIV(input, other, out)
    return _div_rounded(input, other, rounding_mode, out)


@register("floor_divide", inplace=lambda self, other: _FLOOR_DIVIDE.inplace(self, other),
          samples=S.binary(positive_other=True), gradcheck=False, family="arithmetic",
          integer_inputs=True)
def floor_divide(input, other, *, out=None):
    return _FLOOR_DIVIDE(input, other, out)


@register("remainder", inplace=lambda self, other: _REMAINDER.inplace(self, other),
          samples=S.binary(positive_other=True, smooth_mod=True), family="arithmetic",
          integer_inputs=True)
def remainder(input, other, *, out=None):
    if not is_tensor(input):
        return _RREMAINDER(require_operand(input, "remainder", "self"), other, out)
    return _REMAINDER(input, other, out)


@register("fmod", inplace=lambda self, other: _FMOD.inplace(self, other),
          samples=S.binary(positive_other=True, smooth_mod=True), family="arithmetic",
          integer_inputs=True)
def fmod(input, other, *, out=None):
    return _FMOD(input, other, out)


@register("atan2", aliases=("arctan2",),
          inplace=lambda self, other: _ATAN2.inplace(self, require_tensor(other, "atan2_", "other")),
          samples=S.binary(tensor_other=True), family="arithmetic")
def atan2(input, other, *, out=None):
    return _ATAN2(input, require_tensor(other, "atan2", "other"), out)


@register("maximum", samples=S.binary(tensor_other=True), family="arithmetic", integer_inputs=True)
def maximum(input, other, *, out=None):
    return _MAXIMUM(input, require_tensor(other, "maximum", "other"), out)


@register("minimum", samples=S.binary(tensor_other=True), family="arithmetic", integer_inputs=True)
def minimum(input, other, *, out=None):
    return _MINIMUM(input, require_tensor(other, "minimum", "other"), out)


@register("fmax", samples=S.binary(tensor_other=True), family="arithmetic")
def fmax(input, other, *, out=None):
    return _FMAX(input, require_tensor(other, "fmax", "other"), out)


@register("fmin", samples=S.binary(tensor_other=True), family="arithmetic")
def fmin(input, other, *, out=None):
    return _FMIN(input, require_tensor(other, "fmin", "other"), out)


# -- pow ----------------------------------------------------------------

def _log_of_number(x):
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def _integer_power(x, y):
    """Integer powers as torch's kernel: a negative exponent gives 1 for a
    base of 1, +-1 for -1, and 0 otherwise (numpy refuses)."""
    y_arr = np.asarray(y)
    if not (y_arr < 0).any():
        return np.power(x, y)
    safe = np.power(x, np.where(y_arr < 0, 0, y_arr))
    x_arr = np.asarray(x)
    negative = np.where(x_arr == 1, 1, np.where(x_arr == -1, np.where(y_arr % 2 == 0, 1, -1), 0))
    return np.where(y_arr < 0, negative, safe).astype(safe.dtype)


_SCALAR_POWERS = {
    # torch's pow(Tensor, number) kernel computes these exponents this way
    0.5: np.sqrt,
    -0.5: lambda x: 1 / np.sqrt(x),
    2: lambda x: x * x,
    3: lambda x: x * x * x,
    -1: lambda x: 1 / x,
    -2: lambda x: 1 / (x * x),
}


def _power_values(x, y):
    """np.power where it agrees with torch; torch's special kernels for the
    exponents 0.5, -0.5, 2, 3, -1, -2 (a number); C's pow at -inf and at 0
    (numpy's SIMD power gives NaN for (-inf) ** 0.5 and -0.0 for (-0.0) ** 0.5)."""
    x_kind, y_kind = np.asarray(x).dtype.kind, np.asarray(y).dtype.kind
    if x_kind == "b" and y_kind == "b":
        return np.logical_or(x, np.logical_not(y))     # x ** True is x, x ** False is True
    if x_kind in "iub" and y_kind in "iub":
        return _integer_power(x, y)
    if type(y) in (int, float) and type(x) is np.ndarray and x.dtype.kind == "f":
        special = _SCALAR_POWERS.get(y)
        if special is not None:
            return special(x)
    out = np.power(x, y)
    if type(x) is np.ndarray and x.dtype.kind == "f" and type(y) is np.ndarray:
        if (x == 0).any():
            # C's pow: (+-0) ** odd integer keeps the zero's sign, any other positive power is +0
            odd_integer = (np.floor(y) == y) & (np.remainder(y, 2) == 1)
            zero_power = np.where(odd_integer, x, np.zeros_like(out)).astype(out.dtype, copy=False)
            out = np.where((x == 0) & (y > 0), zero_power, out)
    if type(x) is np.ndarray and x.dtype.kind == "f":
        negative_inf = np.isneginf(x)
        if negative_inf.any():
            y_arr = np.asarray(y, dtype=x.dtype)
            odd_integer = (np.floor(y_arr) == y_arr) & (np.remainder(y_arr, 2) == 1)
            fixed = np.where(y_arr > 0, np.where(odd_integer, -np.inf, np.inf),
                             np.where(y_arr < 0, np.where(odd_integer, -0.0, 0.0), 1.0))
            out = np.where(negative_inf & ~np.isnan(y_arr), fixed.astype(x.dtype), out)
    return out


def _power(x, y):
    out = _power_values(x, y)
    if type(x) in (int, float, bool) and type(out) is np.ndarray and out.ndim > 1:
        # torch's pow(number, Tensor) makes a contiguous output (its meta
        # function gives no strides), where a number times a tensor follows
        # the tensor's layout
        out = np.ascontiguousarray(out)
    return out


def _pow_backward(node, g, a, b, result):
    grad_a = grad_b = None
    tensor_a, tensor_b = is_tensor(a), is_tensor(b)
    if node.needs(0):
        if tensor_b:
            grad_a = where(b == 0.0, 0.0, g * (b * a.pow(b - 1)))
        elif b == 0:
            grad_a = _zeros_like(a)
        else:
            grad_a = g * (b * a.pow(b - 1))
    if node.needs(1):
        if tensor_a:
            a_ = a if a._data.dtype == result._data.dtype else a.to(result.dtype)
            zero = (a == 0).logical_and(b >= 0)
            grad_b = g * where(zero, 0.0, result * a_.log())
        else:
            log_a = _log_of_number(a)
            if a == 0:
                grad_b = g * where(b >= 0, 0.0, result * log_a)
            else:
                grad_b = g * (result * log_a)
    return grad_a, grad_b


def _keep_for_pow(need_a, need_b, tensor_a, tensor_b):
    # torch's generated code guards a saved input only where one of several
    # differentiable inputs alone reads it; pow's are all read unguarded
    if not tensor_b:                        # pow(Tensor, number): self only
        return True, False, False
    if not tensor_a:                        # pow(number, Tensor): exponent and result
        return False, True, True
    return True, True, True                 # torch's PowBackward1 keeps its result always


_POW = Binary("pow", _power, _pow_backward, saves=_keep_for_pow, check=_pow_check,
              # torch's pow_ with a tensor exponent keeps its result even when the
              # exponent needs no gradient: a later in-place change then raises at backward
              inplace_saves_result=is_tensor)
_POW.overloads = {(True, False): _POW.node, (True, True): rec.overload(_POW.node, 1),    # x ** y
                  (False, True): rec.overload(_POW.node, 2)}                          # 2 ** x


@register("pow", inplace=lambda self, exponent: _POW.inplace(self, exponent),
          samples=S.pow_samples(), family="arithmetic")
def power(input, exponent, *, out=None):
    """input ** exponent; either may be a number (not both)."""
    if not is_tensor(input):
        return _POW(require_operand(input, "pow", "self"), require_tensor(exponent, "pow", "exponent"), out)
    return _POW(input, exponent, out)


# -- comparisons and logic (no gradient) ---------------------------------

def _comparison(name, ufunc, aliases=()):
    op = Binary(name, ufunc, result="bool")

    def compare(input, other, *, out=None):
        return op(input, other, out)
    compare.__name__ = name
    register(name, compare, aliases=aliases, inplace=lambda self, other: _compare_inplace(op, self, other),
             samples=S.binary(distinct=True), gradcheck=False, family="comparison", integer_inputs=True)
    return compare


def _compare_inplace(op, self, other):
    """x.lt_(y): the comparison stored back into x's dtype.  Differentiable
    in torch (a zero gradient), so it records, even on an integer tensor."""
    b = require_operand(other, op.name + "_")
    rt = binary_result_type(self, b)
    check_broadcasts_into(self, b)
    recording = rec.prepare_inplace(self, (b,))
    node = rec.connect(_ZeroGradNode(), (self, b)) if recording else None
    self._data[...] = op.run(self, b, rt)
    return rec.finish_inplace(self, node)


def _logical_inplace(op, self, other):
    """x.logical_or_(y): not differentiable in torch, so no checks and no
    history: x keeps the grad_fn it had (its gradient flows as before)."""
    b = require_tensor(other, op.name + "_", "other")
    rt = binary_result_type(self, b)
    check_broadcasts_into(self, b)
    rec.check_writable(self)
    check_no_partial(self._data, (b,))
    self._data[...] = op.run(self, b, rt)
    self._version_counter.bump()
    if _capture._active is not None:
        _capture.in_place(self)
    return self


eq = _comparison("eq", np.equal)
ne = _comparison("ne", np.not_equal, aliases=("not_equal",))
lt = _comparison("lt", np.less, aliases=("less",))
le = _comparison("le", np.less_equal, aliases=("less_equal",))
gt = _comparison("gt", np.greater, aliases=("greater",))
ge = _comparison("ge", np.greater_equal, aliases=("greater_equal",))


def _logical(name, ufunc):
    op = Binary(name, lambda x, y: ufunc(x, y), result="bool")

    def logical(input, other, *, out=None):
        return op(input, require_tensor(other, name, "other"), out)
    logical.__name__ = name
    register(name, logical, inplace=lambda self, other: _logical_inplace(op, self, other),
             samples=S.binary(distinct=True, tensor_other=True), gradcheck=False, family="comparison",
             integer_inputs=True)
    return logical


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


def _bitwise_check(name):
    def check(a, b, rt):
        if rt.kind == "f":
            raise RuntimeError("\"%s_cpu\" not implemented for '%s'"
                               % (name, {"float32": "Float", "float64": "Double"}.get(rt.name, rt.name)))
    return check


def _bitwise(name, ufunc):
    op = Binary(name, ufunc, check=_bitwise_check(name))

    def bitwise(input, other, *, out=None):
        return op(input, other, out)
    bitwise.__name__ = name
    register(name, bitwise, inplace=lambda self, other: op.inplace(self, other), gradcheck=False,
             difftest=False, family="comparison")
    return bitwise


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)


# -- where and masked_fill (ternary) --------------------------------------

def _where_backward(node, g, condition):
    return (None,
            where(condition, g, 0.0) if node.needs(1) else None,
            where(condition, 0.0, g) if node.needs(2) else None)


_WhereNode = rec.node_class("WhereBackward", _where_backward)


@register("where", method=False, samples=S.where_samples(), family="arithmetic")
def where(condition, input=None, other=None, *, out=None):
    """Elements of input where condition holds, else of other (numbers allowed)."""
    if input is None and other is None:
        _out.no_out(out, "where")
        return require_tensor(condition, "where", "condition").nonzero(as_tuple=True)
    cond = require_tensor(condition, "where", "condition")
    if cond._data.dtype.kind != "b":
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with "
                           "dtype %s" % cond.dtype.name.capitalize())
    if out is not None:
        # only where(Tensor, Tensor, Tensor) has an out= overload
        require_tensor(input, "where", "input")
        require_tensor(other, "where", "other")
    a = require_operand(input, "where", "input")
    b = require_operand(other, "where", "other")
    rt = result_type(a, b)
    broadcast_shapes(cond._data.shape, *[x._data.shape for x in (a, b) if is_tensor(x)])
    data = quietly(np.where, cond._data, as_array(a, rt), as_array(b, rt))
    if getattr(data, "ndim", 0) > 1:        # torch's TensorIterator: condition, self, other
        data = torch_layout(data, [t._data for t in (cond, a, b) if is_tensor(t)])
    if out is not None:
        _out.check_out(out, "where", a, b)
        if out._data.dtype != rt:
            raise RuntimeError("Expected out type to be %s but got %s" % (_torch_name(rt), _torch_name(out._data.dtype)))
        return _out.write_out(out, data, "where")
    data = _as_ndarray(data, rt)
    if _capture._active is not None:
        _capture.computed(np.where, (cond._data, as_array(a, rt), as_array(b, rt)), data)
    result = _wrap(data)
    if rec.needs_grad(a, b):
        node = rec.record(_WhereNode, (cond, a, b), result)
        node._saved = (rec.save(cond),)
    return result


def _tensor_where(self, condition, other):
    return where(condition, self, other)


method("where", _tensor_where)


def _masked_fill_backward(node, g, mask):
    return (where(mask, 0.0, g) if node.needs(0) else None, None,
            where(mask, g, 0.0).sum() if node.needs(2) else None)


_MaskedFillNode = rec.node_class("MaskedFillBackward", _masked_fill_backward)


def _fill_value(value, op):
    if is_tensor(value):
        if value._data.ndim != 0:
            raise RuntimeError("%s only supports a 0-dimensional value tensor, but got tensor with %d "
                               "dimension(s)." % (op, value._data.ndim))
        return value
    return require_operand(value, op, "value")


def _check_mask(mask, op):
    require_tensor(mask, op, "mask")
    if mask._data.dtype.kind != "b":
        raise RuntimeError("%s only supports boolean masks, but got mask with dtype %s"
                           % (op, mask.dtype.name))


def _masked_fill_inplace(self, mask, value):
    _check_mask(mask, "masked_fill_")
    value = _fill_value(value, "masked_fill_")
    shape = self._data.shape
    if broadcast_shapes(shape, mask._data.shape) != shape:
        raise RuntimeError("masked_fill_: mask of shape %s cannot be broadcast to the tensor's shape %s"
                           % (list(mask._data.shape), list(shape)))
    # torch writes through an expanded self (with a deprecation warning) and
    # reads value with item(): only the mask may not partially overlap
    recording = rec.prepare_inplace(self, (value,), check_overlap=False)
    check_no_partial(self._data, (mask,))
    node = rec.connect(_MaskedFillNode(), (self, mask, value)) if recording else None
    fill = _fill_scalar(value._data if is_tensor(value) else value, self._data.dtype)
    self._data[np.broadcast_to(mask._data, shape)] = fill
    rec.finish_inplace(self, node)
    if node is not None:
        node._saved = (rec.save(mask),)
    return self


@register("masked_fill", inplace=_masked_fill_inplace, samples=S.masked_fill_samples(),
          family="indexing")
def masked_fill(input, mask, value):
    _check_mask(mask, "masked_fill")
    x = require_tensor(input, "masked_fill")
    value = _fill_value(value, "masked_fill")
    shape = broadcast_shapes(x._data.shape, mask._data.shape)
    data = np.array(np.broadcast_to(x._data, shape), order="C")       # torch's result is contiguous
    data[np.broadcast_to(mask._data, shape)] = _fill_scalar(value._data if is_tensor(value) else value,
                                                            data.dtype)
    result = _wrap(data)
    if rec.needs_grad(x, value):
        node = rec.record(_MaskedFillNode, (x, mask, value), result)
        node._saved = (rec.save(mask),)
    return result


def _fill_scalar(fill, dtype):
    """torch reads masked_fill's and index_fill's value as a Scalar (a 0-d
    tensor's item()) and converts it checked: inf into int64 raises."""
    return checked_scalar(np.asarray(fill).item() if not isinstance(fill, numbers.Number) else fill, dtype)


# -- unary minus and friends ---------------------------------------------

_NegNode = rec.node_class("NegBackward", lambda node, g: -g)


def _neg_array(t, op):
    if t._data.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return np.negative(t._data)


@register("neg", aliases=("negative",), samples=S.unary(), family="arithmetic", integer_inputs=True,
          inplace=lambda self: _unary_inplace(self, _neg_array(self, "neg_"), _NegNode))
def neg(input, *, out=None):
    data = _neg_array(require_tensor(input, "neg"), "neg")
    if out is not None:
        _out.check_out(out, "neg", input)
        return _out.write_out(out, data, "neg", strict="same_dtype")
    data = _as_ndarray(data, input._data.dtype)
    if not input._data.flags.c_contiguous:
        data = torch_layout(data, [input._data])
    result = _wrap(data)
    if rec.needs_grad(input):
        rec.record(_NegNode, (input,), result)
    return result


def _unary_inplace(self, data, node_cls):
    recording = rec.prepare_inplace(self)
    node = rec.connect(node_cls(), (self,)) if recording else None
    self._data[...] = data
    return rec.finish_inplace(self, node)


def _logical_not(input, *, out=None):
    data = np.logical_not(require_tensor(input, "logical_not")._data)
    if out is not None:
        _out.check_out(out, "logical_not", input, differentiable=False)
        return _out.write_out(out, data, "logical_not")
    return _wrap(_as_ndarray(data, np.bool_))


register("logical_not", _logical_not, samples=S.unary(), gradcheck=False, family="comparison",
         integer_inputs=True)
logical_not = _logical_not


def _bitwise_not(input, *, out=None):
    data = require_tensor(input, "bitwise_not")._data
    if data.dtype.kind == "f":
        raise RuntimeError("\"bitwise_not_cpu\" not implemented for '%s'"
                           % {"float32": "Float", "float64": "Double"}.get(data.dtype.name, data.dtype.name))
    result = _as_ndarray(np.invert(data), data.dtype)
    if out is None:
        return _wrap(result)
    _out.check_out(out, "bitwise_not", differentiable=False)
    return _out.write_out(out, result, "bitwise_not", strict="same_dtype")


register("bitwise_not", _bitwise_not, gradcheck=False, difftest=False, family="comparison")


# -- operators --------------------------------------------------------------

def _operator(function, reflected=False, binary=None):
    """A Tensor operator method; `binary` (a Binary) is called directly for
    tensors and Python numbers, skipping the keyword handling of `function`."""
    if binary is not None and not reflected:
        def op(self, other):
            result = _binary_in_c(binary, self, other)
            if result is not None:
                return result
            t = type(other)
            if t is float or t is int or getattr(other, "_data", None) is not None:
                return binary._call_in_python(self, other)
            other = operand(other)
            if other is NotImplemented:
                return NotImplemented
            return function(self, other)
        op._handles_bfloat16 = True     # Binary's general path computes bfloat16 in float32
        return op

    def op(self, other):
        other = operand(other)
        if other is NotImplemented:
            return NotImplemented
        return function(other, self) if reflected else function(self, other)
    return op


def _rpow(self, other):
    other = operand(other)
    if other is NotImplemented:
        return NotImplemented
    return power(other, self)


def _rtruediv(self, other):
    other = operand(other)
    if other is NotImplemented:
        return NotImplemented
    if is_tensor(other):
        return _DIV(other, self)
    # torch's Tensor.__rtruediv__ is self.reciprocal() * other: its rounding,
    # and its backward, which reads the reciprocal, not self
    return mul(self.reciprocal(), other)


for _name, _function, _binary in (("add", add, _ADD), ("sub", sub, _SUB), ("mul", mul, _MUL),
                                  ("truediv", div, _DIV), ("floordiv", floor_divide, _FLOOR_DIVIDE),
                                  ("mod", remainder, _REMAINDER), ("pow", power, _POW),
                                  ("and", bitwise_and, None), ("or", bitwise_or, None),
                                  ("xor", bitwise_xor, None)):
    method("__%s__" % _name, _operator(_function, binary=_binary))
for _name, _function in (("add", add), ("sub", sub), ("mul", mul), ("floordiv", floor_divide),
                         ("mod", remainder), ("and", bitwise_and), ("or", bitwise_or),
                         ("xor", bitwise_xor)):
    method("__r%s__" % _name, _operator(_function, reflected=True))
method("__rpow__", _rpow)
method("__rtruediv__", _rtruediv)
for _name, _function in (("lt", lt), ("le", le), ("gt", gt), ("ge", ge), ("eq", eq), ("ne", ne)):
    method("__%s__" % _name, _operator(_function))
method("__neg__", neg)
def _invert(self):
    kind = self._data.dtype.kind
    if kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return logical_not(self) if kind == "b" else _bitwise_not(self)


method("__invert__", _invert)
def _positive(self):
    if self._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


method("__pos__", _positive)
method("__abs__", lambda self: self.abs())


def _inplace_operator(name):
    def op(self, other):
        other = operand(other)
        if other is NotImplemented:
            return NotImplemented
        return getattr(self, name)(other)
    return op


for _name, _inplace in (("iadd", "add_"), ("isub", "sub_"), ("imul", "mul_"), ("itruediv", "div_"),
                        ("ifloordiv", "floor_divide_"), ("imod", "remainder_"), ("ipow", "pow_"),
                        ("iand", "bitwise_and_"), ("ior", "bitwise_or_"), ("ixor", "bitwise_xor_")):
    method("__%s__" % _name, _inplace_operator(_inplace))
