"""nn activations as builtin ops: softmax, log_softmax, gelu, leaky_relu,
elu / celu / selu, softplus, silu, mish, hardtanh / relu6, logsigmoid.

Each computes its forward with numpy (stable forms: shifted exponentials,
log1p of exp of a non-positive number) and records one node whose backward
is torch's derivative formula written in Tensor ops, so it differentiates
again.  Parameters (slope, alpha, beta, ...) ride on the node.
"""
import functools
import math

import numpy as np

from cextend import _backend, _capture, _dtype
from cextend._fpe import quietly
from cextend.autograd import record as rec
from cextend._ops import nn_samples as S
from cextend._ops._nn_checks import functional_call, host_tensor, require_float
from cextend._ops.arithmetic import where
from cextend._ops.conversion import to_dtype
from cextend._ops._layout import empty_like_preserve
from cextend._ops.registry import register
from cextend.tensor import _wrap as _new_tensor
from cextend._ops.arithmetic import torch_maximum, torch_minimum
from cextend.tensor import _dim

_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_K = math.sqrt(2.0 / math.pi)
_TANH_C = 0.044715
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


class Activation:
    """An elementwise op with parameters, its in-place form and its node.

    compute(array, **params) returns the result in the array's dtype;
    backward(node, grad, saved) reads the parameters from node.params;
    saves is "self" (the input) or "result".
    """

    def __init__(self, name, kernel, compute, backward, saves="self", node_name=None,
                 inplace_saves=None, integer_ok=False):
        self.name = name
        self.kernel = kernel
        self.compute = compute
        self.saves = saves
        self.inplace_saves = inplace_saves or saves
        self.integer_ok = integer_ok
        self.node = rec.node_class(node_name or _camel(name) + "Backward", backward)

    def _run(self, x, params):
        data = quietly(lambda: self.compute(x._data, **params))
        data = data if data.dtype == x._data.dtype else data.astype(x._data.dtype)
        if type(data) is np.ndarray and data.ndim > 1:
            if not x._data.flags.c_contiguous:      # laid out as the input (TensorIterator)
                wanted = empty_like_preserve(x._data, data.dtype)
                if wanted.strides != data.strides:
                    wanted[...] = data
                    data = wanted
        if _capture._active is not None and type(data) is np.ndarray:
            _capture.computed(functools.partial(self.compute, **params), (x._data,), data)
        return data

    def __call__(self, input, **params):
        x = host_tensor(input, self.name)
        if not self.integer_ok:
            require_float(x, self.kernel)
        result = _wrap(self._run(x, params))
        if rec.needs_grad(x):
            node = rec.record(self.node, (x,), result)
            node.params = params
            node.from_result = False
            node._saved = (rec.save(x) if self.saves == "self" else rec.save_output(result),)
        return result

    def inplace(self, input, **params):
        x = host_tensor(input, self.name + "_")
        if not self.integer_ok:
            require_float(x, self.kernel)
        recording = rec.prepare_inplace(x, (), x._data.dtype)
        node = original = None
        if recording:
            if self.inplace_saves == "self":
                original = x.clone()
            node = rec.connect(self.node(), (x,))
            node.params = params
            node.from_result = self.inplace_saves == "result"
        x._data[...] = self._run(x, params)
        rec.finish_inplace(x, node)
        if node is not None:
            node._saved = (rec.save(original) if original is not None else rec.save_output(x),)
        return x


def _camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


def _float_compute(fn):
    """Run fn in float32 for half inputs (the C erf and numpy's expm1 want 32/64 bits)."""
    def compute(a, **params):
        if a.dtype == np.float16:
            return fn(a.astype(np.float32), **params).astype(np.float16)
        return fn(a, **params)
    return compute


def _softplus_array(a):
    """log(1 + exp(a)) without overflow: max(a, 0) + log1p(exp(-|a|))."""
    return np.maximum(a, 0) + np.log1p(np.exp(-np.abs(a)))


def _sigmoid_array(a):
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e))


# -- softmax and log_softmax -------------------------------------------------------------------

def _plain_rows_backward(node, g, result, log_softmax):
    """The gradient from the C kernel when nothing records (a plain backward) and the dim is
    the last one; None otherwise (float16, other layouts: the Tensor formula, whose result's
    layout follows torch's rules)."""
    gd, rd = g._data, result._data
    if node.dim is None or node.dim != gd.ndim - 1 or rec.needs_grad(g, result):
        return None
    out = _backend.softmax_backward_rows(gd, rd, log_softmax)
    return None if out is None else _wrap(out)


def _softmax_backward(node, g, result):
    grad = _plain_rows_backward(node, g, result, False)
    if grad is not None:
        return grad
    return result * (g - (g * result).sum(node.dim, keepdim=True))


def _log_softmax_backward(node, g, result):
    grad = _plain_rows_backward(node, g, result, True)
    if grad is not None:
        return grad
    gd, rd = g._data, result._data
    if type(gd) is np.ndarray and type(rd) is np.ndarray and gd.dtype is rd.dtype \
            and gd.dtype.kind == "f" and gd.itemsize >= 4 and gd.flags.c_contiguous \
            and rd.flags.c_contiguous and not rec.needs_grad(g, result):
        # Nothing records (a plain backward) over a dim that is not the last: the same
        # formula on the arrays, without a Tensor and a dispatch per step.
        return _wrap(quietly(_log_softmax_grad_array, gd, rd, node.dim))
    return g - result.exp() * g.sum(node.dim, keepdim=True)


def _log_softmax_grad_array(g, result, dim):
    return g - np.exp(result) * g.sum(axis=dim, keepdims=True)


_SoftmaxNode = rec.node_class("SoftmaxBackward", _softmax_backward)
_LogSoftmaxNode = rec.node_class("LogSoftmaxBackward", _log_softmax_backward)


def _shifted(data, axis):
    """data minus its max along axis (a 0-d array counts as one element)."""
    if data.size == 0:
        return data
    peak = np.max(data, axis=axis, keepdims=True)
    # An all -inf slice would give -inf - -inf = NaN, as torch's does; a
    # slice with +inf gives NaN too.  Nothing to special-case.
    return data - peak


def _softmax_array(data, axis, log):
    shifted = _shifted(data, axis)
    exp = np.exp(shifted)
    total = exp.sum(axis=axis, keepdims=True)
    return shifted - np.log(total) if log else exp / total


def _softmax_like(input, dim, dtype, log, name):
    x = host_tensor(input, name)
    if dtype is not None:
        x = to_dtype(x, _dtype.as_dtype(dtype).numpy)
    d = _dim(dim, x._data.ndim)
    ndim = x._data.ndim
    kernel = "%s_lastdim_kernel_impl" if d == max(ndim, 1) - 1 else "%s_kernel_impl"
    if x._data.size:        # torch returns an empty input of any dtype before its kernel's dispatch
        require_float(x, kernel % name)
    data = x._data.reshape(1) if ndim == 0 else x._data
    # over the last dim of a contiguous float32/float64 array: one C call per row set
    out = _backend.softmax_rows(data, log) if d == data.ndim - 1 else None
    if out is None:
        out = quietly(_softmax_array, data, d, log)
    out = out.reshape(()) if ndim == 0 else out
    return _recorded_softmax(x, np.asarray(out, x._data.dtype, order="C"), d, log)     # torch's is contiguous


def log_softmax_rows(x):
    """log_softmax over dim 1 of a 2-D C-contiguous float32/float64 tensor with rows
    (cross_entropy's common case, checked by its caller): one C call, recorded."""
    return _recorded_softmax(x, _backend.softmax_rows(x._data, True), 1, True)


def _recorded_softmax(x, out, d, log):
    """out (softmax's values, contiguous) as a Tensor, recorded as x's softmax over d."""
    ndim = x._data.ndim
    result = _wrap(out)
    if rec.needs_grad(x):
        node = rec.record(_LogSoftmaxNode if log else _SoftmaxNode, (x,), result)
        node.dim = d if ndim else None     # a 0-d tensor's one "dim" is all of it
        node._saved = (rec.save_output(result),)
    return result


def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along dim (cast to dtype first when given)."""
    return _softmax_like(input, dim, dtype, False, "softmax")


def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) along dim (cast to dtype first when given)."""
    return _softmax_like(input, dim, dtype, True, "log_softmax")


register("softmax", softmax, family="nn", samples=S.softmax_samples())
register("log_softmax", log_softmax, family="nn", samples=S.softmax_samples())


# -- gelu --------------------------------------------------------------------------------------

def _erf(a):
    return _backend.special("erf", np.require(a, requirements="C"))


def _gelu_compute(a, approximate):
    if approximate == "tanh":
        inner = _TANH_K * (a + _TANH_C * a * a * a)
        return 0.5 * a * (1 + np.tanh(inner))
    return 0.5 * a * (1 + _erf(a * a.dtype.type(_SQRT1_2)))


def _gelu_backward(node, g, x):
    if node.params["approximate"] == "tanh":
        x_sq = x * x
        inner = (x + x_sq * x * _TANH_C) * _TANH_K
        t = inner.tanh()
        left = (t + 1) * 0.5
        right = x * 0.5 * (1 - t * t) * ((x_sq * (3 * _TANH_C) + 1) * _TANH_K)
        return g * (left + right)
    cdf = ((x * _SQRT1_2).erf() + 1) * 0.5
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return g * (cdf + x * pdf)


# ATen's kernel's formula, 0.5 * x * (1 + erf(x / sqrt 2)), on every input.
# torch sends some float32 inputs to oneDNN instead, whose answers at the
# float32 overflow edge (x >= 2**127, +inf) and zero signs (gelu(-0.0),
# gelu(-40)) depend on the CPU: those are unspecified, never imitated.
_GELU_FLOAT_COMPUTE = _float_compute(_gelu_compute)
_GELU = Activation("gelu", "GeluKernelImpl", _GELU_FLOAT_COMPUTE, _gelu_backward)


def gelu(input, approximate="none"):
    """x * Phi(x); approximate='tanh' uses the tanh form of Phi."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _GELU(input, approximate=approximate)


# -- leaky_relu ---------------------------------------------------------------------------------

def _leaky_compute(a, negative_slope):
    return np.where(a > 0, a, a * a.dtype.type(negative_slope))


def _leaky_backward(node, g, saved):
    slope = node.params["negative_slope"]
    if node.from_result and slope < 0:
        raise RuntimeError("In-place leakyReLu backward calculation is triggered with a negative slope "
                           "which is not supported. This is caused by calling in-place forward function "
                           "with a negative slope, please call out-of-place version instead. File an "
                           "issue at https://github.com/pytorch/pytorch if you do require supporting "
                           "in-place leakRelu backward calculation with negative slope")
    return rec.masked_backward(_LeakyReluBackwardBackward, g, saved,
                               lambda g, s: np.where(s > 0, g, g * g.dtype.type(slope)))


_LeakyReluBackwardBackward = rec.masked_backward_node("LeakyReluBackwardBackward0")


_LEAKY = Activation("leaky_relu", "leaky_relu_cpu", _leaky_compute, _leaky_backward,
                    node_name="LeakyReluBackward", inplace_saves="result")


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x."""
    if inplace:
        return _LEAKY.inplace(input, negative_slope=negative_slope)
    return _LEAKY(input, negative_slope=negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _LEAKY.inplace(input, negative_slope=negative_slope)


# -- elu, celu, selu ----------------------------------------------------------------------------

def _elu_compute(a, alpha, scale, input_scale, grad_input_scale=None):
    negative = np.expm1(a * a.dtype.type(input_scale)) * (alpha * scale)
    return np.where(a > 0, a * a.dtype.type(scale), negative)


def _elu_backward(node, g, saved):
    alpha, scale, input_scale = node.params["alpha"], node.params["scale"], node.params["input_scale"]
    input_scale = node.params.get("grad_input_scale") or input_scale
    if node.from_result and alpha < 0:
        raise RuntimeError("In-place elu backward calculation is triggered with a negative slope "
                           "which is not supported. This is caused by calling in-place forward "
                           "function with a negative slope, please call out-of-place version "
                           "instead.")
    return elu_backward(g, saved, (alpha * scale, scale, input_scale), node.from_result)


def _elu_grad_value(go, x, coefficients, from_result):
    """torch's elu_backward kernel: x <= 0 takes the negative branch."""
    negcoef, poscoef, negiptcoef = coefficients
    if from_result:
        negative = go * negiptcoef * (x + negcoef)
    else:
        negative = go * negiptcoef * negcoef * np.exp(x * negiptcoef)
    return np.asarray(np.where(x <= 0, negative, go * poscoef), go.dtype)


def _elu_backward_backward(node, gg, go, x):
    coefficients, from_result = node.coefficients, node.from_result
    grad_go = elu_backward(gg, x, coefficients, from_result) if node.needs(0) else None
    grad_x = None
    if node.needs(1):
        # torch's elu_double_backward: masked with x < 0 (the first
        # derivative took x <= 0), the mask multiplied in (NaN there gives 0)
        below = (x < 0).to(gg.dtype)
        scaled = gg * go * coefficients[2]
        grad_x = scaled * below if from_result else elu_backward(scaled, x, coefficients, False) * below
    return grad_go, grad_x


_EluBackwardNode = rec.node_class("EluBackwardBackward", _elu_backward_backward)


def elu_backward(go, x, coefficients, from_result):
    """elu's derivative as one recorded op (of go and x), as torch's
    elu_backward: its own backward is torch's, not the derivative of a where()."""
    value = quietly(_elu_grad_value, go._data, x._data, coefficients, from_result)
    if _capture._active is not None:
        _capture.computed(_elu_grad_value, (go._data, x._data, coefficients, from_result), value)
    result = _wrap(value)
    if rec.needs_grad(go, x):
        node = rec.record(_EluBackwardNode, (go, x), result)
        node.coefficients, node.from_result = coefficients, from_result
        node._saved = (rec.save(go), rec.save(x))
    return result


_elu_kernel = _float_compute(_elu_compute)
_ELU = Activation("elu", "elu_cpu", _elu_kernel, _elu_backward, inplace_saves="result")
_CELU = Activation("celu", "elu_cpu", _elu_kernel, _elu_backward, inplace_saves="result")


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    params = dict(alpha=alpha, scale=1.0, input_scale=1.0)
    return _ELU.inplace(input, **params) if inplace else _ELU(input, **params)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def _celu_params(alpha):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    # torch's celu derivative takes 1 / float32(alpha) (alpha.toFloat()), its forward
    # 1 / alpha in double: the float64 gradient differs by ~1e-8 relative, as torch's does.
    return dict(alpha=alpha, scale=1.0, input_scale=1.0 / alpha,
                grad_input_scale=1.0 / float(np.float32(alpha)))


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    params = _celu_params(alpha)
    return _CELU.inplace(input, **params) if inplace else _CELU(input, **params)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


_SELU_PARAMS = dict(alpha=SELU_ALPHA, scale=SELU_SCALE, input_scale=1.0)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _ELU.inplace(input, **_SELU_PARAMS) if inplace else _ELU(input, **_SELU_PARAMS)


def selu_(input):
    return selu(input, inplace=True)


# -- softplus, silu, mish, logsigmoid ----------------------------------------------------------

def _softplus_compute(a, beta, threshold):
    scaled = a * a.dtype.type(beta)
    return np.where(scaled > threshold, a, _softplus_array(scaled) / a.dtype.type(beta))


def _softplus_backward(node, g, x):
    scaled = x * node.params["beta"]
    threshold = node.params["threshold"]
    slope = scaled.sigmoid()
    if rec.needs_grad(x):
        # torch's softplus_double_backward masks with beta * x < threshold,
        # strictly, while the first derivative is sigmoid up to and at the
        # threshold: at beta * x == threshold the slope is a constant there.
        slope = where(scaled < threshold, slope, slope.detach())
    return where(scaled > threshold, g, g * slope)


_SOFTPLUS = Activation("softplus", "softplus_cpu", _softplus_compute, _softplus_backward)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""
    return _SOFTPLUS(input, beta=beta, threshold=threshold)


def _silu_backward(node, g, x):
    s = x.sigmoid()
    return g * s * (1 + x * (1 - s))


_SILU = Activation("silu", "silu_cpu", lambda a: a * _sigmoid_array(a), _silu_backward)


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    return _SILU.inplace(input) if inplace else _SILU(input)


def _mish_backward(node, g, x):
    t = softplus(x).tanh()
    return g * (t + x * x.sigmoid() * (1 - t * t))


_MISH = Activation("mish", "mish_cpu", lambda a: a * np.tanh(_softplus_array(a)), _mish_backward)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return _MISH.inplace(input) if inplace else _MISH(input)


def _log_sigmoid_forward(a):
    """torch's log_sigmoid_forward: the result and the buffer exp(-|x|) its
    backward reads (torch saves the buffer, not recomputing it from the input)."""
    buffer = np.exp(-np.abs(a))
    return np.minimum(a, 0) - np.log1p(buffer), buffer


def _log_sigmoid_grad_value(go, x, buffer):
    """torch's log_sigmoid_backward kernel: (max_deriv - sign * z / (1 + z)) * go."""
    negative = x < 0
    max_deriv = negative.astype(x.dtype)
    sign = np.where(negative, x.dtype.type(1), x.dtype.type(-1))
    return np.asarray((max_deriv - sign * (buffer / (1 + buffer))) * go, go.dtype)


def _logsigmoid_backward(node, g, x):
    return log_sigmoid_backward(g, x, node.buffer)


def _log_sigmoid_backward_backward(node, gg, go, x):
    grad_go = log_sigmoid_backward(gg, x, node.buffer) if node.needs(0) else None
    grad_x = None
    if node.needs(1):          # torch's log_sigmoid_double_backward
        z = x.sigmoid()
        grad_x = gg * go * (z - 1) * z
    return grad_go, grad_x


_LogSigmoidNode = rec.node_class("LogSigmoidBackward", _logsigmoid_backward)
_LogSigmoidBackwardNode = rec.node_class("LogSigmoidBackwardBackward", _log_sigmoid_backward_backward)


def log_sigmoid_backward(go, x, buffer):
    """logsigmoid's derivative as one recorded op (of go and x), as torch's."""
    result = _wrap(quietly(_log_sigmoid_grad_value, go._data, x._data, buffer))
    if rec.needs_grad(go, x):
        node = rec.record(_LogSigmoidBackwardNode, (go, x), result)
        node.buffer = buffer
        node._saved = (rec.save(go), rec.save(x))
    return result


def logsigmoid(input):
    """log(sigmoid(x)), stable for large |x|."""
    x = host_tensor(input, "logsigmoid")
    require_float(x, "log_sigmoid_cpu")
    out, buffer = quietly(_log_sigmoid_forward, x._data)
    # torch's kernel writes contiguous result and buffer
    result = _wrap(np.asarray(out, x._data.dtype, order="C"))
    if rec.needs_grad(x):
        node = rec.record(_LogSigmoidNode, (x,), result)
        node.buffer = np.asarray(buffer, x._data.dtype, order="C")
        node._saved = (rec.save(x),)
    return result


# -- hardtanh and relu6 -------------------------------------------------------------------------

def _hardtanh_compute(a, min_val, max_val):
    if a.dtype.kind != "f":
        # ATen truncates the limits to integers (Scalar.toLong) so they do not promote.
        return np.clip(a, math.trunc(min_val), math.trunc(max_val)).astype(a.dtype)
    # torch's clamp: NaN stays NaN, and -0.0 stays -0.0 at a bound of 0.
    return torch_minimum(torch_maximum(a, a.dtype.type(min_val)), a.dtype.type(max_val))


def _hardtanh_backward(node, g, saved):
    low, high = node.params["min_val"], node.params["max_val"]
    return rec.masked_backward(_HardtanhBackwardBackward, g, saved,
                               lambda g, s: np.where((s <= low) | (s >= high), g.dtype.type(0), g))


_HardtanhBackwardBackward = rec.masked_backward_node("HardtanhBackwardBackward0")


_HARDTANH = Activation("hardtanh", "hardtanh_cpu", _hardtanh_compute, _hardtanh_backward,
                       inplace_saves="result", integer_ok=True)


def _hardtanh_bounds(input, min_val, max_val):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    # ATen's hardtanh refuses what clamp would accept (bool; negative limits
    # for unsigned types); F.hardtanh checks the bounds first.
    data = getattr(input, "_data", None)
    if data is not None and data.dtype == np.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if data is not None and data.dtype == np.uint8 and (math.trunc(min_val) < 0 or math.trunc(max_val) < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return dict(min_val=min_val, max_val=max_val)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x limited to [min_val, max_val]; gradient zero outside the open interval."""
    params = _hardtanh_bounds(input, min_val, max_val)
    return _HARDTANH.inplace(input, **params) if inplace else _HARDTANH(input, **params)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(0, x), 6): hardtanh(x, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


# -- the table entries (F-only ops: torch has them in torch.nn.functional alone) --------------

def _nn_only(name, function, samples, **info):
    register(name, function, method=False, module=False, family="nn", samples=samples,
             call=functional_call(name), **info)


_nn_only("gelu", gelu, S.activation([0.0]))
_nn_only("leaky_relu", leaky_relu, S.leaky_relu_samples())
_nn_only("elu", elu, S.elu_samples())
_nn_only("softplus", softplus, S.softplus_samples())
_nn_only("silu", silu, S.activation([]))
_nn_only("mish", mish, S.activation([]))
_nn_only("hardtanh", hardtanh, S.hardtanh_samples(), integer_inputs=True)
_nn_only("relu6", relu6, S.activation([0.0, 6.0], low=-3.0, high=9.0), integer_inputs=True)
_nn_only("logsigmoid", logsigmoid, S.activation([]))
# torch.celu and torch.selu exist beside F.celu / F.selu (no Tensor methods).


def _torch_celu(input, alpha=1.0):
    """torch.celu: F.celu without the inplace flag."""
    return celu(input, alpha)


def _torch_selu(input):
    """torch.selu: F.selu without the inplace flag."""
    return selu(input)


_torch_celu.__name__, _torch_selu.__name__ = "celu", "selu"
register("celu", _torch_celu, method=False, family="nn", samples=S.celu_samples())
register("selu", _torch_selu, method=False, family="nn", samples=S.activation([0.0]))
