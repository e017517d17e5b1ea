"""Elementwise functions of one tensor: math, rounding, activations, clamp.

Each op is one Unary entry: the numpy forward, torch's derivative formula
(written with Tensor ops, so it differentiates again) and what that
formula needs saved: the input ("self") or the result ("result").  Ops
marked float_result compute in floating point: integer and bool inputs
become the default float, as in torch.
"""
import math

import numpy as np

from cextend import _backend, _capture
from cextend._fpe import quietly
from cextend.autograd.grad_mode import _state as _grad_state
from cextend._promotion import float_result, result_type
from cextend._ops._layout import torch_layout
from cextend.autograd import record as rec
from cextend._ops import _out
from cextend._ops import samples as S
from cextend._ops._operands import as_array, is_tensor, require_tensor, scalar_value
from cextend._ops.arithmetic import where
from cextend._ops.indexing import inplace_via
from cextend._ops.registry import register
from cextend._ops._kernels import Kernels
from cextend.ops import cuda as _cuda_ops
from cextend._ops.arithmetic import check_broadcasts_into, torch_maximum, torch_minimum
from cextend._ops.registry import Sample
from cextend._ops.indexing import copy_into
from cextend._promotion import _torch_name

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# where torch's node is not the op's name camel-cased
_TORCH_NODE_NAMES = {"log1p": "Log1PBackward0", "square": "PowBackward0"}     # torch's square is pow(x, 2)


class Unary:
    """An elementwise op of one tensor: forward, in-place and out= forms."""

    def __init__(self, name, compute, backward=None, saves=(), float_result=True, integer_ok=True,
                 inplace_differentiable=True, reject=None, host_kernel=None):
        self.name = name
        # host_kernel(array): compute's C kernel for a C-contiguous float array, or None where
        # it does not take one; it sets no numpy error state and records its own capture.
        self.host_kernel = host_kernel
        self.reject = reject or {}          # dtype kind -> (exception class, message)
        self.inplace_node = None if inplace_differentiable else rec.not_implemented(
            _camel(name) + "Backward", "the derivative for 'inplace version of %s' is not implemented." % name,
            NotImplementedError)
        self.compute = compute
        self.saves = saves
        self.float_result = float_result
        self.integer_ok = integer_ok
        self.node = rec.node_class(_TORCH_NODE_NAMES.get(name, _camel(name) + "Backward"), backward) \
            if backward else None

    def dtype(self, x):
        dt = x._data.dtype
        refusal = self.reject.get(dt.kind)
        if refusal is not None:
            raise refusal[0](refusal[1])
        if not self.integer_ok and dt.kind != "f":
            raise RuntimeError("%s: expected a floating point tensor, got %s" % (self.name, dt))
        if self.float_result == "int64_for_bool":
            return np.dtype(np.int64) if dt.kind == "b" else dt
        return float_result(dt) if self.float_result else dt

    def run(self, x, dt):
        source = as_array(x, dt)
        data = computed = quietly(self.compute, source)
        if type(data) is not np.ndarray and not hasattr(data, "to_host"):
            data = np.asarray(data, dt)
        elif data.dtype != dt:
            data = data.astype(dt)
        if type(data) is np.ndarray and data.ndim > 1 and not x._data.flags.c_contiguous:
            data = torch_layout(data, [x._data])     # TensorIterator's order for an expanded or sliced input
        if _capture._active is not None and type(data) is np.ndarray:
            _capture.computed(self.compute, (source,), data, direct=data is computed)
        return data

    def __call__(self, input, out=None):
        array = getattr(input, "_data", None)
        data = None
        if out is None and type(array) is np.ndarray and array.dtype.kind == "f" and "f" not in self.reject:
            x, dt = input, array.dtype        # a float tensor keeps its dtype: self.dtype's answer
            if self.host_kernel is not None:
                # run's steps, each a no-op here: the kernel's result is contiguous and of x's dtype
                data = self.host_kernel(array)
        else:
            x = require_tensor(input, self.name)
            dt = self.dtype(x)
        if data is None:
            data = self.run(x, dt)
        if out is not None:
            _out.check_out(out, self.name, x)
            # Ops that keep the input's dtype (abs, round, sign, ...) are
            # built by torch with check_all_same_dtype: no cast into out.
            return _out.write_out(out, data, self.name, strict=False if self.float_result else "same_dtype")
        result = _wrap(data)
        if self.node is not None and rec.needs_grad(x):
            node = rec.record(self.node, (x,), result)
            saves = self.saves
            if saves:
                node._saved = (rec.save(x) if saves[0] == "self" else rec.save_output(result),) \
                    if len(saves) == 1 else tuple([rec.save(x) if s == "self" else rec.save_output(result)
                                                   for s in saves])
        return result

    def inplace(self, input):
        x = require_tensor(input, self.name + "_")
        dt = self.dtype(x)
        recording = rec.prepare_inplace(x, (), dt)
        node = original = None
        if recording and self.inplace_node is not None:
            x._data[...] = self.run(x, dt)
            return rec.finish_inplace(x, rec.connect(rec.new_node(self.inplace_node), (x,)))
        if recording and self.node is not None:
            original = x.clone() if "self" in self.saves else None
            node = rec.connect(self.node(), (x,))
        x._data[...] = self.run(x, dt)
        rec.finish_inplace(x, node)
        if node is not None:
            node._saved = tuple(rec.save(original) if s == "self" else rec.save_output(x) for s in self.saves)
        return x


def _camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


def _unary(name, compute, backward=None, saves=(), samples=None, inplace=True, aliases=(),
           float_result=True, gradcheck=True, gradgradcheck=True, integer_ok=True,
           inplace_differentiable=True, reject=None, takes_out=True, host_kernel=None, **info):
    op = Unary(name, compute, backward, saves, float_result, integer_ok, inplace_differentiable, reject,
               host_kernel)

    if takes_out:
        def function(input, *, out=None):
            return op(input, out)
    else:       # torch has no out= overload (relu): Python's own TypeError
        def function(input):
            return op(input)
    function.__name__ = name
    function.__doc__ = "Elementwise %s (as torch.%s)." % (name, name)
    register(name, function, aliases=aliases, inplace=(lambda self: op.inplace(self)) if inplace else None,
             samples=samples or S.unary(), gradcheck=gradcheck and backward is not None,
             gradgradcheck=gradgradcheck, family="pointwise", **info)
    return function


def _zero(node, g, *saved):
    return rec.zeros_grad(g)


# -- trigonometric and hyperbolic --------------------------------------------
sin = _unary("sin", np.sin, lambda n, g, x: g * x.cos(), ("self",))
cos = _unary("cos", np.cos, lambda n, g, x: g * -x.sin(), ("self",))
tan = _unary("tan", np.tan, lambda n, g, r: g * (1 + r.pow(2)), ("result",), S.unary(-1.2, 1.2))
asin = _unary("asin", np.arcsin, lambda n, g, x: g * (-x * x + 1).rsqrt(), ("self",),
              S.unary(-0.9, 0.9), aliases=("arcsin",))
acos = _unary("acos", np.arccos, lambda n, g, x: g * -(-x * x + 1).rsqrt(), ("self",),
              S.unary(-0.9, 0.9), aliases=("arccos",))
atan = _unary("atan", np.arctan, lambda n, g, x: g / (x * x + 1), ("self",), aliases=("arctan",))
sinh = _unary("sinh", np.sinh, lambda n, g, x: g * x.cosh(), ("self",))
cosh = _unary("cosh", np.cosh, lambda n, g, x: g * x.sinh(), ("self",))


def _tanh(a):
    # numpy's float32 tanh is up to 1 ulp off (tanh(9.5) -> 0.99999994, not
    # 1.0), which atanh then turns into 8.66 against torch's inf; rounding
    # the float64 result gives the correctly rounded value.
    if type(a) is np.ndarray and a.dtype == np.float32:
        return np.tanh(a.astype(np.float64)).astype(np.float32)
    return np.tanh(a)


tanh = _unary("tanh", _tanh, lambda n, g, r: g * (1 - r * r), ("result",))
asinh = _unary("asinh", np.arcsinh, lambda n, g, x: g * (x.pow(2) + 1).rsqrt(), ("self",),
               aliases=("arcsinh",), inplace_differentiable=False)
acosh = _unary("acosh", np.arccosh, lambda n, g, x: g * (x.pow(2) - 1).rsqrt(), ("self",),
               S.unary(1.2, 3.0), aliases=("arccosh",), inplace_differentiable=False)
atanh = _unary("atanh", np.arctanh, lambda n, g, x: g * (1 / (1 - x.pow(2))), ("self",),
               S.unary(-0.9, 0.9), aliases=("arctanh",), inplace_differentiable=False)

# -- exponentials and logarithms ---------------------------------------------
exp = _unary("exp", np.exp, lambda n, g, r: g * r, ("result",))
expm1 = _unary("expm1", np.expm1, lambda n, g, r: g * (r + 1), ("result",))
exp2 = _unary("exp2", np.exp2, lambda n, g, r: g * r * _LN2, ("result",))
log = _unary("log", np.log, lambda n, g, x: g / x, ("self",), S.unary(0.2, 3.0))
log1p = _unary("log1p", np.log1p, lambda n, g, x: g / (x + 1), ("self",), S.unary(-0.8, 3.0))
log2 = _unary("log2", np.log2, lambda n, g, x: g / (x * _LN2), ("self",), S.unary(0.2, 3.0))
log10 = _unary("log10", np.log10, lambda n, g, x: g / (x * _LN10), ("self",), S.unary(0.2, 3.0))
sqrt = _unary("sqrt", np.sqrt, lambda n, g, r: g / (2 * r), ("result",), S.unary(0.2, 3.0))
rsqrt = _unary("rsqrt", lambda x: 1 / np.sqrt(x), lambda n, g, r: -0.5 * g * r.pow(3), ("result",),
               S.unary(0.2, 3.0))
reciprocal = _unary("reciprocal", np.reciprocal, lambda n, g, r: -g * (r * r), ("result",),
                    S.unary(0.5, 3.0))
square = _unary("square", np.square, lambda n, g, x: g * (x * 2), ("self",), float_result="int64_for_bool")


def _sigmoid(x):
    # exp of a non-positive number only: no overflow for large |x|.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


sigmoid = _unary("sigmoid", _sigmoid, lambda n, g, r: g * (1 - r) * r, ("result",))


def _logit_backward(node, g, x):
    # torch's kernel: at 0 and 1 exactly, g * inf, whose sign is g's (so -0.0
    # counts as +0.0 there); under create_graph torch's differentiable formula
    # divides by x * (1 - x) as it is (-0.0 gives -inf)
    eps = node.eps
    unsigned = x if _grad_state.enabled else x.masked_fill(x == 0, 0.0)
    value = g / (unsigned * (1 - unsigned))
    if eps is None:
        return where((x < 0).logical_or(x > 1), float("nan"), value)
    return where((x < eps).logical_or(x > 1 - eps), 0.0, value)


_LogitNode = rec.node_class("LogitBackward", _logit_backward)


def logit(input, eps=None, *, out=None):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given (as torch.logit)."""
    x = require_tensor(input, "logit")
    dt = float_result(x._data.dtype)
    data = as_array(x, dt)
    if eps is not None:
        data = np.clip(data, eps, 1 - eps)
    result_data = np.asarray(quietly(lambda: np.log(data / (1 - data))), dt)
    return _with_parameter(x, result_data, out, "logit", _LogitNode, eps=eps)


def _with_parameter(x, data, out, name, node_cls, **parameter):
    """The result of a one-input op with a parameter (logit's eps,
    polygamma's n): written to out=, or recorded with x saved."""
    if out is not None:
        _out.check_out(out, name, x)
        return _out.write_out(out, data, name)
    result = _wrap(torch_layout(data, [x._data]))
    if rec.needs_grad(x):
        node = rec.record(node_cls, (x,), result)
        for key, value in parameter.items():
            setattr(node, key, value)
        node._saved = (rec.save(x),)
    return result


register("logit", logit, samples=S.unary(0.1, 0.9), family="pointwise",
         inplace=lambda self, eps=None: _logit_inplace(self, eps))


def _logit_inplace(self, eps=None):
    x = require_tensor(self, "logit_")
    if x._data.dtype.kind != "f":       # a float result into an integer or bool tensor
        raise RuntimeError("result type Float can't be cast to the desired output type %s"
                           % _torch_name(x._data.dtype))
    return _logit_via_copy(x, eps)


_logit_via_copy = inplace_via(logit)


def _sign(x):
    if x.dtype.kind == "f":
        return np.where(np.isnan(x), x.dtype.type(0), np.sign(x))     # torch: sign(NaN) is 0
    if x.dtype.kind == "b":
        return x.copy()
    return np.sign(x)


sign = _unary("sign", _sign, _zero, (), float_result=False)
sgn = _unary("sgn", _sign, _zero, ("self", "result"), float_result=False, inplace=True)   # torch saves both
absolute = _unary("abs", np.abs, lambda n, g, x: g * x.sgn(), ("self",), float_result=False,
                  aliases=("absolute",), integer_inputs=True,
                  reject={"b": (NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'")})

# -- rounding (piecewise constant: zero gradient) ------------------------------

def _no_bool(kernel):
    return {"b": (NotImplementedError, "\"%s\" not implemented for 'Bool'" % kernel)}


floor = _unary("floor", np.floor, _zero, (), float_result=False, gradcheck=False,
               reject=_no_bool("floor_vml_cpu"))
ceil = _unary("ceil", np.ceil, _zero, (), float_result=False, gradcheck=False,
               reject=_no_bool("ceil_vml_cpu"))
trunc = _unary("trunc", np.trunc, _zero, (), float_result=False, gradcheck=False, aliases=("fix",),
               reject=_no_bool("trunc_vml_cpu"))
frac = _unary("frac", lambda x: x - np.trunc(x), lambda n, g: g, (), float_result=False,
              samples=S.unary(0.1, 0.9),
              reject={k: (NotImplementedError, "\"frac_cpu\" not implemented for '%s'" % n)
                      for k, n in (("i", "Long"), ("u", "Byte"), ("b", "Bool"))})


def _round_decimals(x, decimals):
    if decimals == 0:
        return np.round(x)
    scale = 10.0 ** decimals
    return np.round(x * scale) / scale


_ROUND = Unary("round", np.round, _zero, (), float_result=False,
               reject={"b": (NotImplementedError, "\"round_vml_cpu\" not implemented for 'Bool'")})


def round_(input, *, decimals=0, out=None):
    """Round half to even (as torch and numpy), optionally to `decimals` places."""
    if decimals == 0:
        return _ROUND(input, out)
    x = require_tensor(input, "round")
    if x._data.dtype.kind != "f":
        raise RuntimeError("round_cpu not implemented for integer tensors with decimals != 0")
    return Unary("round", lambda a: _round_decimals(a, decimals), _round_backward_zero, (),
                 float_result=False)(x, out)


def _round_backward_zero(node, g):
    return rec.zeros_grad(g)


register("round", round_, inplace=lambda self, decimals=0: (
    _ROUND.inplace(self) if decimals == 0 else self.copy_(round_(self, decimals=decimals))),
    samples=S.unary(), gradcheck=False, family="pointwise")


# -- activations ---------------------------------------------------------------

class _HostRelu:
    """relu's kernels on numpy arrays."""

    @staticmethod
    def relu_forward(x):
        # 0 only where x < 0: NaN propagates and -0.0 stays -0.0, as in torch.
        # The C kernel takes contiguous float32/float64 in one pass.
        out = _backend.relu(x)
        return out if out is not None else np.where(x < 0, x.dtype.type(0), x)

    @staticmethod
    def relu_backward(g, result):
        """torch's threshold_backward: 0 where the result is <= 0 (NaN passes the gradient)."""
        out = _backend.threshold_backward(g, result)
        return out if out is not None else np.where(result <= 0, g.dtype.type(0), g)


RELU = Kernels("relu", cpu=_HostRelu, cuda=_cuda_ops)


def _relu(x):
    return RELU.of(x).relu_forward(x)


def _threshold_backward(g, result):
    return RELU.of(g, result).relu_backward(g, result)


def _relu_backward(node, g, result):
    return rec.masked_backward(_ThresholdBackwardBackward, g, result, _threshold_backward)


_ThresholdBackwardBackward = rec.masked_backward_node("ThresholdBackwardBackward0")


relu = _unary("relu", _relu, _relu_backward, ("result",), float_result=False, integer_inputs=True, takes_out=False,
              reject={"b": (RuntimeError, "Boolean inputs not supported for relu")}, host_kernel=_backend.relu)


def _erf_backward(node, g, x):
    return g * (2.0 / math.sqrt(math.pi)) * (-(x * x)).exp()


def _erfc_backward(node, g, x):
    return g * (-2.0 / math.sqrt(math.pi)) * (-(x * x)).exp()


erf = _unary("erf", lambda x: _backend.special("erf", x), _erf_backward, ("self",))
erfc = _unary("erfc", lambda x: _backend.special("erfc", x), _erfc_backward, ("self",))


def _erfinv_backward(node, g, x):
    # torch saves self and recomputes erfinv (so erfinv_ then a change to the
    # result does not invalidate the gradient)
    return g * (0.5 * math.sqrt(math.pi)) * (x.erfinv().pow(2)).exp()


erfinv = _unary("erfinv", lambda x: _backend.special("erfinv", x), _erfinv_backward, ("self",),
                S.unary(-0.9, 0.9))


def _sinc_backward(node, g, x):
    # torch's sinc_backward: (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 where pi x^2 is 0
    x_pi = x * math.pi
    x_squared_pi = x * x * math.pi
    return where(x_squared_pi == 0.0, 0.0, g * (x_pi * x_pi.cos() - x_pi.sin()) / x_squared_pi)


sinc = _unary("sinc", lambda x: _backend.special("sinc", x), _sinc_backward, ("self",), S.unary(-2.5, 2.5))


def _lgamma_backward(node, g, x):
    return g * x.digamma()


lgamma = _unary("lgamma", lambda x: _backend.special("lgamma", x), _lgamma_backward, ("self",),
                S.unary(0.5, 3.0))
digamma = _unary("digamma", lambda x: _backend.special("digamma", x),
                 lambda node, g, x: g * polygamma(1, x), ("self",), S.unary(0.5, 3.0))


def _polygamma_backward(node, g, x):
    return g * polygamma(node.n + 1, x)


_PolygammaNode = rec.node_class("PolygammaBackward", _polygamma_backward)


def _polygamma_data(n, x, dt):
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError("polygamma(): argument 'n' must be int, not %s" % type(n).__name__)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _backend.polygamma(n, as_array(x, dt))


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma (n = 0 is digamma)."""
    x = require_tensor(input, "polygamma")
    dt = float_result(x._data.dtype)
    data = _polygamma_data(n, x, dt)
    return _with_parameter(x, data, out, "polygamma", _PolygammaNode, n=n)


def _polygamma_inplace(self, n):
    dt = float_result(self._data.dtype)
    recording = rec.prepare_inplace(self, (), dt)
    node = original = None
    if recording:
        original = self.clone()
        node = rec.connect(_PolygammaNode(), (self,))
        node.n = n
    self._data[...] = _polygamma_data(n, self, dt)
    rec.finish_inplace(self, node)
    if node is not None:
        node._saved = (rec.save(original),)
    return self


def _polygamma_samples(rng):
    for n in (0, 1, 2):
        yield Sample(n, rng.uniform(0.5, 3.0, (3, 4)))


register("polygamma", polygamma, method=False, samples=_polygamma_samples, family="pointwise")
from cextend._ops.registry import method as _method  # noqa: E402
from cextend.tensor import _wrap
_method("polygamma", lambda self, n: polygamma(n, self))
_method("polygamma_", _polygamma_inplace)


# -- clamp -----------------------------------------------------------------------

def _bounds(min, max, name):
    """clamp's bounds.  torch has a (Tensor, Tensor) and a (Number, Number)
    overload; a 0-d tensor that does not require grad passes as a Number,
    so any other tensor beside a number matches neither."""
    low, high = _bound(min, "min"), _bound(max, "max")
    if low is None and high is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if low is not None and high is not None and is_tensor(low) != is_tensor(high):
        tensor = low if is_tensor(low) else high
        if tensor._data.ndim or tensor.requires_grad:
            raise TypeError("%s() received an invalid combination of arguments - got (%s, %s), but expected "
                            "one of: (Tensor min, Tensor max) or (Number min, Number max)"
                            % (name, type(min).__name__ if not is_tensor(min) else "Tensor",
                               type(max).__name__ if not is_tensor(max) else "Tensor"))
        # the (Number, Number) overload: the 0-d tensor's value is read now
        # (nothing is saved, so a later in-place change of it does not raise)
        if is_tensor(low):
            low = _bound(low.item(), "min")
        else:
            high = _bound(high.item(), "max")
    return low, high


def _bound(value, name):
    if value is None or is_tensor(value):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)      # torch reads True/False as 1/0 bounds
    return scalar_value(value, "clamp", name)


def _clamp_backward(node, g, x, low, high):
    inside = None
    if low is not None:
        inside = x >= low
    if high is not None:
        inside = (x <= high) if inside is None else inside.logical_and(x <= high)
    grad_x = where(inside, g, 0.0) if node.needs(0) else None
    grad_low = grad_high = None
    if is_tensor(low) and node.needs(1):
        below = (x < low)
        if is_tensor(high):
            below = below.logical_and(low < high)        # torch's: at low == high neither bound gets it
        grad_low = where(below, g, 0.0)
    if is_tensor(high) and node.needs(2):
        above = (x > high) if not is_tensor(low) else (x > high).logical_or(low > high)
        grad_high = where(above, g, 0.0)
    return grad_x, grad_low, grad_high


_ClampNode = rec.node_class("ClampBackward", _clamp_backward)
_CLAMP_NODES = {"clamp": _ClampNode, "clamp_min": rec.renamed(_ClampNode, "ClampMinBackward0"),
                "clamp_max": rec.renamed(_ClampNode, "ClampMaxBackward0")}


def _clamp_values(x, low, high):
    """_clamp_data's values from the arrays (or numbers) in the computing dtype."""
    if low is not None:
        x = torch_maximum(x, low)
    return x if high is None else torch_minimum(x, high)


def _clamp_data(x, low, high, dt):
    """min(max(x, low), high) as torch: x is kept unless it is below low (so
    -0.0 stays -0.0 at a bound of 0); NaN in x or a bound propagates; low >
    high gives high."""
    data = as_array(x, dt)
    if low is not None:
        data = quietly(torch_maximum, data, as_array(low, dt))
    if high is not None:
        data = quietly(torch_minimum, data, as_array(high, dt))
    if type(data) is np.ndarray and (is_tensor(low) or is_tensor(high)):
        # tensor bounds: torch lays the result out as its first input with an opinion
        data = torch_layout(data, [v._data for v in (x, low, high) if is_tensor(v)])
    return data if type(data) is np.ndarray or hasattr(data, "to_host") else np.asarray(data, dt)


def _clamp_dtype(x, low, high):
    dt = result_type(*(v for v in (x, low, high) if v is not None))
    if dt == np.bool_:
        _refuse_bool_clamp(low, high)
    return dt


def _refuse_bool_clamp(low, high):
    """torch's clamp kernels have no bool form; one tensor bound runs
    maximum/minimum instead, which has."""
    given = [b for b in (low, high) if b is not None]
    tensors = [b for b in given if is_tensor(b)]
    if len(given) == 2:
        kernel = "clamp_cpu" if tensors else "clamp_scalar_cpu"
    elif tensors:
        return
    else:
        kernel = "clamp_min_scalar_cpu" if low is not None else "clamp_max_scalar_cpu"
    raise NotImplementedError("\"%s\" not implemented for 'Bool'" % kernel)


def _clamp_node(op, low, high):
    """torch's node for the overload: clamp with tensor bounds is
    ClampBackward0, with numbers 1; clamp_min/max the other way round."""
    tensors = is_tensor(low) or is_tensor(high)
    base = _CLAMP_NODES[op]
    return rec.overload(base, (0 if tensors else 1) if op == "clamp" else (1 if tensors else 0))


def clamp(input, min=None, max=None, *, out=None, _op="clamp"):
    """Elements limited to [min, max]; NaN stays NaN; bounds may be tensors."""
    x = require_tensor(input, "clamp")
    low, high = _bounds(min, max, "clamp")
    dt = _clamp_dtype(x, low, high)
    data = _clamp_data(x, low, high, dt)
    if out is not None:
        _out.check_out(out, "clamp", x, low, high)
        # Number bounds make clamp a unary op that keeps x's dtype (strict);
        # tensor bounds a ternary one that casts into out.
        scalar_bounds = not (is_tensor(low) or is_tensor(high))
        return _out.write_out(out, data, "clamp", strict="same_dtype" if scalar_bounds else False)
    if _capture._active is not None:
        _capture.computed(_clamp_values, [None if v is None else as_array(v, dt) for v in (x, low, high)], data)
    result = _wrap(data)
    if rec.needs_grad(x, low, high) and dt.kind == "f":
        node = rec.record(_clamp_node(_op, low, high), (x, low, high), result)
        node._saved = (rec.save(x), rec.save(low), rec.save(high))
    return result


def _clamp_inplace(self, min=None, max=None, _op="clamp"):
    low, high = _bounds(min, max, "clamp_")
    for bound in (low, high):
        if is_tensor(bound):
            check_broadcasts_into(self, bound)
    dt = _clamp_dtype(self, low, high)
    recording = rec.prepare_inplace(self, (low, high), dt)
    node = None
    if recording:
        node = rec.connect(_clamp_node(_op, low, high)(), (self, low, high))
        # saved before the change: x.clamp_(x, ...) then raises at backward, as in torch
        saved = (rec.save(self.clone()), rec.save(low), rec.save(high))
    self._data[...] = _clamp_data(self, low, high, dt)
    rec.finish_inplace(self, node)
    if node is not None:
        node._saved = saved
    return self


def _clamp_samples(rng):
    values = rng.uniform(-2, 2, (3, 4))
    yield Sample(values, -0.5, 0.7)
    yield Sample(values, min=-0.5)
    yield Sample(values, max=0.25)
    yield Sample(values, rng.uniform(-2, -0.2, (3, 4)), rng.uniform(0.2, 2, (4,)), note="tensor bounds")


register("clamp", clamp, aliases=("clip",), inplace=_clamp_inplace, samples=_clamp_samples, family="pointwise",
         integer_inputs=True)


def clamp_min(input, min, *, out=None):
    return clamp(input, min=min, out=out, _op="clamp_min")


def clamp_max(input, max, *, out=None):
    return clamp(input, max=max, out=out, _op="clamp_max")


def _one_bound_samples(rng):
    yield Sample(rng.uniform(-2, 2, (3, 4)), 0.3)
    yield Sample(rng.uniform(-2, 2, (3, 4)), rng.uniform(-1, 1, (3, 4)))


register("clamp_min", clamp_min, inplace=lambda self, min: _clamp_inplace(self, min=min, _op="clamp_min"),
         samples=_one_bound_samples, family="pointwise")
register("clamp_max", clamp_max, inplace=lambda self, max: _clamp_inplace(self, max=max, _op="clamp_max"),
         samples=_one_bound_samples, family="pointwise")


# -- tests of value (no gradient) -------------------------------------------------

def _predicate(name, compute, takes_out=False):
    def predicate(input, *, out=None):
        x = require_tensor(input, name)
        result = np.asarray(compute(x._data))
        if out is None:
            return _wrap(torch_layout(result, [x._data]))
        if not takes_out:
            _out.no_out(out, name)
        _out.check_out(out, name, differentiable=False)
        if out._data.dtype != np.bool_:
            raise RuntimeError("%s does not support non-boolean outputs." % name)
        return _out.write_out(out, result, name)
    predicate.__name__ = name
    register(name, predicate, samples=S.unary(), gradcheck=False, family="pointwise", integer_inputs=True)
    return predicate


isnan = _predicate("isnan", np.isnan)
isinf = _predicate("isinf", np.isinf)
isfinite = _predicate("isfinite", np.isfinite)
isposinf = _predicate("isposinf", np.isposinf, takes_out=True)
isneginf = _predicate("isneginf", np.isneginf, takes_out=True)
signbit = _predicate("signbit", np.signbit, takes_out=True)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    x = require_tensor(input, "nan_to_num")
    data = np.nan_to_num(x._data, nan=nan, posinf=posinf, neginf=neginf) if x._data.dtype.kind == "f" \
        else x._data.copy()
    result = _wrap(torch_layout(data, [x._data]))
    if rec.needs_grad(x):
        node = rec.record(_NanToNumNode, (x,), result)
        node._saved = (rec.save(x),)       # torch saves self; the mask is recomputed
    if out is not None and out._data.dtype != data.dtype:
        raise RuntimeError("nan_to_num: dtype of out: %s should be same as input: %s"
                           % (_torch_name(out._data.dtype), _torch_name(data.dtype)))
    return result if out is None else _out.finish_out(out, result, "nan_to_num", x)


_NanToNumNode = rec.node_class("NanToNumBackward", lambda node, g, x: g * x.isfinite())
_nan_to_num_via_copy = inplace_via(nan_to_num)


def _nan_to_num_inplace(self, nan=0.0, posinf=None, neginf=None):
    x = require_tensor(self, "nan_to_num_")
    if x._data.dtype.kind != "f":
        # torch copies an integer tensor onto itself: no write (even expanded), a version bump
        return copy_into(x, x, expanded_ok=True)
    return _nan_to_num_via_copy(x, nan, posinf, neginf)


register("nan_to_num", nan_to_num, samples=S.unary(), family="pointwise", inplace=_nan_to_num_inplace)
