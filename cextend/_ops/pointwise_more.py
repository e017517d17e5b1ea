"""More elementwise binary ops: hypot, logaddexp, logaddexp2, xlogy,
copysign, and the bit shifts (bitwise_left_shift, bitwise_right_shift and
the <<, >> operators).

Each is an arithmetic.Binary (torch's promotion, broadcasting, out= and
in-place forms, TensorIterator's output layout); the forwards follow
torch's CPU kernels (logaddexp: m + log1p(exp(-|a - b|)), with equal
infinities returned as they are; xlogy: NaN where y is NaN, else 0 where x
is 0; shifts: C's shifts on the unsigned bits, with torch's answer for
counts that are negative or at least the bit width), the backwards
torch's derivatives.yaml in Tensor ops, so they differentiate again.
"""
import numpy as np

from cextend._ops import samples as S
from cextend._ops._operands import is_tensor, operand, require_tensor
from cextend._ops.arithmetic import Binary, power
from cextend._ops.registry import Const, Sample, method, register
from cextend._promotion import _torch_name
from cextend.autograd import record as rec


def _reject(kernel, kinds):
    """torch's CPU kernel for the op is not built for these dtype kinds."""
    def check(a, b, rt):
        if rt.kind in kinds:
            raise NotImplementedError("\"%s\" not implemented for '%s'" % (kernel, _torch_name(rt)))
    return check


def _arrays(a, b):
    """Both operands as arrays of the computing dtype (Binary passes a Python number as itself)."""
    dt = a.dtype if isinstance(a, np.ndarray) else b.dtype
    return np.asarray(a, dt), np.asarray(b, dt)


def _keep_both_if_any(need_a, need_b, tensor_a, tensor_b):
    return need_a or need_b, need_a or need_b, False


# -- hypot ---------------------------------------------------------------------------------------

def _hypot_backward(node, g, a, b, result):
    # derivatives.yaml: grad * self / result, grad * other / result
    return (g * a / result if node.needs(0) else None), (g * b / result if node.needs(1) else None)


_HYPOT = Binary("hypot", np.hypot, _hypot_backward, check=_reject("hypot_cpu", "iub"),
                saves=lambda need_a, need_b, ta, tb: (need_a, need_b, need_a or need_b))


def hypot(input, other, *, out=None):
    """sqrt(input**2 + other**2), without overflow; floating-point tensors only."""
    return _HYPOT(require_tensor(input, "hypot"), require_tensor(other, "hypot", "other"), out)


def _hypot_(self, other):
    return _HYPOT.inplace(self, require_tensor(other, "hypot_", "other"))


# -- logaddexp, logaddexp2 -----------------------------------------------------------------------

_INV_LN2 = 1.0 / np.log(2.0)


def _logaddexp(a, b):
    """torch's kernel: a where a and b are the same infinity, else max + log1p(exp(-|a - b|))."""
    a, b = _arrays(a, b)
    out = np.maximum(a, b) + np.log1p(np.exp(-np.abs(a - b)))
    return np.where(np.isinf(a) & (a == b), a, out)


def _logaddexp2(a, b):
    a, b = _arrays(a, b)
    inv_ln2 = a.dtype.type(_INV_LN2)
    out = np.maximum(a, b) + np.log1p(np.exp2(-np.abs(a - b))) * inv_ln2
    return np.where(np.isinf(a) & (a == b), a, out)


def _logaddexp_backward(node, g, a, b, result):
    # derivatives.yaml: grad / (1 + exp(other - self)), grad / (1 + exp(self - other))
    return (g / (1 + (b - a).exp()) if node.needs(0) else None,
            g / (1 + (a - b).exp()) if node.needs(1) else None)


def _logaddexp2_backward(node, g, a, b, result):
    return (g / (1 + power(2, b - a)) if node.needs(0) else None,
            g / (1 + power(2, a - b)) if node.needs(1) else None)


_LOGADDEXP = Binary("logaddexp", _logaddexp, _logaddexp_backward, check=_reject("logaddexp_cpu", "iub"),
                    saves=_keep_both_if_any)
_LOGADDEXP2 = Binary("logaddexp2", _logaddexp2, _logaddexp2_backward, check=_reject("logaddexp2_cpu", "iub"),
                     saves=_keep_both_if_any)


def logaddexp(input, other, *, out=None):
    """log(exp(input) + exp(other)), computed without overflow."""
    return _LOGADDEXP(require_tensor(input, "logaddexp"), require_tensor(other, "logaddexp", "other"), out)


def logaddexp2(input, other, *, out=None):
    """log2(2**input + 2**other), computed without overflow."""
    return _LOGADDEXP2(require_tensor(input, "logaddexp2"), require_tensor(other, "logaddexp2", "other"), out)


# -- xlogy ---------------------------------------------------------------------------------------

def _xlogy(x, y):
    """torch's kernel: NaN where y is NaN, else 0 where x == 0, else x * log(y)."""
    x, y = _arrays(x, y)
    product = x * np.log(y)
    return np.where(np.isnan(y), y.dtype.type(np.nan), np.where(x == 0, x.dtype.type(0), product))


def _xlogy_backward(node, g, a, b, result):
    grad_a = grad_b = None
    if node.needs(0):
        # derivatives.yaml: xlogy(grad, other) masked to 0 where self == 0 and other <= 0
        # (other a number: masked where self == 0 only when other <= 0)
        grad_a = xlogy(g, b)
        if is_tensor(b):
            grad_a = grad_a.masked_fill((a == 0).logical_and(b <= 0), 0.0)
        elif b <= 0:
            grad_a = grad_a.masked_fill(a == 0, 0.0)
    if node.needs(1):
        grad_b = g * a / b
    return grad_a, grad_b


_XLOGY = Binary("xlogy", _xlogy, _xlogy_backward, result="float", saves=_keep_both_if_any)
_XLOGY.overloads = {(True, True): _XLOGY.node, (False, True): rec.overload(_XLOGY.node, 1),
                    (True, False): rec.overload(_XLOGY.node, 2)}


def _require_xlogy_operands(input, other, op):
    a, b = operand(input), operand(other)
    if a is NotImplemented or b is NotImplemented or not (is_tensor(a) or is_tensor(b)):
        raise TypeError("%s() received an invalid combination of arguments - got (%s, %s), but expected one "
                        "of: (Tensor input, Tensor other), (Number self, Tensor other), (Tensor input, Number "
                        "other)" % (op, type(input).__name__, type(other).__name__))
    return a, b


def xlogy(input, other, *, out=None):
    """input * log(other), 0 where input == 0 (unless other is NaN); either may be a number."""
    a, b = _require_xlogy_operands(input, other, "xlogy")
    return _XLOGY(a, b, out)


def _xlogy_(self, other):
    return _XLOGY.inplace(require_tensor(self, "xlogy_"), other)


# -- copysign ------------------------------------------------------------------------------------

def _copysign_backward(node, g, a, b, result):
    grad_a = grad_b = None
    if node.needs(0):
        # torch's copysign_tensor_self_backward: grad * (result / self), 0 where self == 0
        ratio = (result / a).masked_fill(a == 0, 0.0)
        grad_a = g * ratio
    if node.needs(1):
        grad_b = rec.zeros_grad(g)          # zeros_like(other): exact, whatever grad holds
    return grad_a, grad_b


_COPYSIGN = Binary("copysign", np.copysign, _copysign_backward, result="float",
                   saves=lambda need_a, need_b, ta, tb: (need_a, False, need_a))
_COPYSIGN.overloads = {(True, True): _COPYSIGN.node, (True, False): rec.overload(_COPYSIGN.node, 1)}


def copysign(input, other, *, out=None):
    """|input| with the sign of other (integers become floats); other may be a number."""
    a = require_tensor(input, "copysign")
    b = operand(other)
    if b is NotImplemented:
        raise TypeError("copysign(): argument 'other' must be Tensor or Number, not %s" % type(other).__name__)
    return _COPYSIGN(a, b, out)


def _copysign_(self, other):
    return _COPYSIGN.inplace(require_tensor(self, "copysign_"), other)


# -- bit shifts ----------------------------------------------------------------------------------

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _int_operands(a, b):
    """Both operands as arrays of the computing dtype (a Python number wraps into it, as C casts)."""
    dt = a.dtype if isinstance(a, np.ndarray) else b.dtype

    def array(x):
        if isinstance(x, np.ndarray):
            return x
        return np.array(int(x), np.int64).astype(dt)
    return array(a), array(b), dt


def _lshift(a, b):
    """torch's lshift: (unsigned) a << b, 0 for a count below 0 or at least the width."""
    a, b, dt = _int_operands(a, b)
    bits = dt.itemsize * 8
    unsigned = np.dtype(_UNSIGNED[dt.itemsize])
    count = b.astype(_SIGNED[dt.itemsize])         # torch compares the count as a signed value
    valid = (count >= 0) & (count < bits)
    shifted = np.left_shift(a.astype(unsigned), np.where(valid, count, 0).astype(unsigned))
    return np.where(valid, shifted.astype(dt), dt.type(0))


def _rshift(a, b):
    """torch's rshift: a >> b; a count below 0 or at least width - (1 if signed) shifts by that
    limit (the sign's bits for a signed type, nothing left for an unsigned one)."""
    a, b, dt = _int_operands(a, b)
    bits = dt.itemsize * 8
    signed = dt.kind == "i"
    limit = bits - 1 if signed else bits
    count = b.astype(_SIGNED[dt.itemsize])
    count = np.where((count < 0) | (count >= limit), limit, count).astype(np.int64)
    shifted = np.right_shift(a, np.minimum(count, bits - 1).astype(dt))
    return np.where(count >= bits, dt.type(0), shifted).astype(dt)


_LSHIFT = Binary("bitwise_left_shift", _lshift, check=_reject("lshift_cpu", "fb"))
_RSHIFT = Binary("bitwise_right_shift", _rshift, check=_reject("rshift_cpu", "fb"))


def _shift_operands(input, other, op):
    a, b = operand(input), operand(other)
    if a is NotImplemented or b is NotImplemented or not (is_tensor(a) or is_tensor(b)):
        raise TypeError("%s() received an invalid combination of arguments - got (%s, %s), but expected one "
                        "of: (Tensor input, Tensor other), (Tensor input, Number other), (Number self, Tensor "
                        "other)" % (op, type(input).__name__, type(other).__name__))
    return a, b


def bitwise_left_shift(input, other, *, out=None):
    """input << other on integer tensors (either may be a number): bits shifted out are lost,
    a count below 0 or at least the width gives 0."""
    return _LSHIFT(*_shift_operands(input, other, "bitwise_left_shift"), out)


def bitwise_right_shift(input, other, *, out=None):
    """input >> other on integer tensors (arithmetic for signed types); a count below 0 or at
    least the width gives the sign's bits (-1 or 0)."""
    return _RSHIFT(*_shift_operands(input, other, "bitwise_right_shift"), out)


def _shift_operator(op, reflected=False):
    def shift(self, other):
        other = operand(other)
        if other is NotImplemented:
            return NotImplemented
        return op(other, self) if reflected else op(self, other)
    return shift


def _shift_inplace(op):
    def shift_(self, other):
        b = operand(other)
        if b is NotImplemented:
            raise TypeError("%s_(): argument 'other' must be Tensor or Number, not %s"
                            % (op.name, type(other).__name__))
        return op.inplace(require_tensor(self, op.name + "_"), b)
    return shift_


def _inplace_shift_operator(inplace):
    def shift(self, other):
        if operand(other) is NotImplemented:
            return NotImplemented
        return inplace(self, other)
    return shift


# -- samples -------------------------------------------------------------------------------------

def _xlogy_samples(rng):
    for sa, sb in S.BINARY_SHAPES:
        yield Sample(rng.uniform(-2, 2, sa), rng.uniform(0.5, 2, sb))
    yield Sample(rng.uniform(-2, 2, (3, 2)), 1.5, note="Python-number other")
    yield Sample(1.25, rng.uniform(0.5, 2, (2, 3)), note="Python-number self")
    yield Sample(rng.uniform(-2, 2, (2, 3)), np.array(0.75), note="0-d other")


def _away_from_zero(rng, shape):
    return np.asarray(rng.uniform(0.3, 2, shape) * rng.choice([-1.0, 1.0], shape))


def _copysign_samples(rng):
    for sa, sb in S.BINARY_SHAPES:
        yield Sample(_away_from_zero(rng, sa), _away_from_zero(rng, sb))
    yield Sample(_away_from_zero(rng, (3, 2)), -2.0, note="Python-number other")
    yield Sample(_away_from_zero(rng, (2, 3)), np.array(-0.5), note="0-d other")


def _shift_samples(rng):
    yield Sample(Const(rng.integers(-50, 50, (3, 4))), Const(rng.integers(0, 10, (3, 4))))
    yield Sample(Const(rng.integers(-50, 50, (3, 4))), Const(rng.integers(0, 10, (4,))))
    yield Sample(Const(rng.integers(-50, 50, (2, 1, 3))), Const(rng.integers(0, 5, (2, 1))))
    yield Sample(Const(rng.integers(-5, 5, (5,))), Const(np.array([0, 1, 63, 64, 70])), note="count >= width")
    yield Sample(Const(rng.integers(-5, 5, (5,))), Const(np.array([-1, -64, 2, -3, 1])), note="negative count")
    yield Sample(Const(rng.integers(-50, 50, (0, 3))), Const(rng.integers(0, 5, (3,))), note="empty")
    yield Sample(Const(rng.integers(-50, 50, (3, 2))), 3, note="Python-number count")


# -- the table -----------------------------------------------------------------------------------

register("hypot", hypot, inplace=_hypot_, samples=S.binary(tensor_other=True), family="arithmetic")
register("logaddexp", logaddexp, samples=S.binary(tensor_other=True), family="arithmetic")
register("logaddexp2", logaddexp2, samples=S.binary(tensor_other=True), family="arithmetic")
register("xlogy", xlogy, inplace=_xlogy_, samples=_xlogy_samples, family="arithmetic")
register("copysign", copysign, inplace=_copysign_, samples=_copysign_samples, family="arithmetic")
register("bitwise_left_shift", bitwise_left_shift, inplace=_shift_inplace(_LSHIFT), samples=_shift_samples,
         gradcheck=False, integer_inputs=True, family="arithmetic")
register("bitwise_right_shift", bitwise_right_shift, inplace=_shift_inplace(_RSHIFT), samples=_shift_samples,
         gradcheck=False, integer_inputs=True, family="arithmetic")

method("__lshift__", _shift_operator(bitwise_left_shift))
method("__rshift__", _shift_operator(bitwise_right_shift))
method("__rlshift__", _shift_operator(bitwise_left_shift, reflected=True))
method("__rrshift__", _shift_operator(bitwise_right_shift, reflected=True))
method("__ilshift__", _inplace_shift_operator(_shift_inplace(_LSHIFT)))
method("__irshift__", _inplace_shift_operator(_shift_inplace(_RSHIFT)))
