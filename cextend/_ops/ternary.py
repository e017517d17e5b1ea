"""Three-operand pointwise ops: lerp, addcmul, addcdiv (fused as torch's
kernels are, so the rounding is theirs)."""
import numpy as np

from cextend._fpe import quietly
from cextend.autograd import record as rec
from cextend._ops import _deprecated, _out
from cextend._ops._layout import torch_layout
from cextend._ops._operands import as_array, broadcast_shapes, is_tensor, operand, require_operand, require_tensor
from cextend._ops.arithmetic import check_broadcasts_into
from cextend._ops.registry import Sample, register
from cextend._promotion import result_type
from cextend.tensor import _wrap as _new_tensor
from cextend._promotion import _torch_name


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


def _c_name(t):
    """torch names dtypes by their C type in these messages."""
    return {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "uint8": "unsigned char",
            "bool": "bool", "float16": "c10::Half"}.get(t._data.dtype.name, t._data.dtype.name)


def _lerp_data(a, b, w):
    """torch's lerp kernel: from the nearer end (lerp(a, b, 1) is exactly b),
    one fused multiply-add over (b - a) rounded to the dtype:
        w < 0.5:  a + w * (b - a)      else:  b - (b - a) * (1 - w)
    (its CPU kernels are built with FMA, vectorised and scalar alike).  A
    number weight is rounded to the dtype first.  The fused step is computed
    in a wider type and rounded once."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):        # device arrays
        return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))
    dtype = np.result_type(a, b)
    if not isinstance(w, np.ndarray) or w.dtype != dtype:
        w = np.asarray(w, dtype)
    wide = np.float64 if dtype == np.float32 else np.longdouble
    diff = (b - a).astype(wide)
    small = np.abs(w) < 0.5
    coeff = np.where(small, w, w - dtype.type(1)).astype(wide)
    base = np.where(small, a, b).astype(wide)
    return (coeff * diff + base).astype(dtype)


def _lerp_backward(node, g, start, end, weight):
    grad_start = g * (1 - weight) if node.needs(0) else None
    grad_end = g * weight if node.needs(1) else None
    # (weight is None when torch would not have kept it: no gradient reads it;
    # a number weight has no edge)
    grad_weight = g * (end - start) if node.needs(2) else None
    return grad_start, grad_end, grad_weight


_LerpNode = rec.node_class("LerpBackward", _lerp_backward)


def _lerp_saved(node, a, b, w):
    """A number weight needs no saved tensor (torch's lerp.Scalar saves none,
    so its backward can run twice); a tensor weight is kept for start's and
    end's gradients, start and end only for the weight's (a callable a: the
    start to keep, made only then)."""
    if not is_tensor(w):
        return (None, None, w)
    keep_ends = node.needs(2)
    start = (a() if callable(a) else a) if keep_ends else None
    return (rec.save(start) if keep_ends else None, rec.save(b) if keep_ends else None,
            rec.save(w) if node.needs(0) or node.needs(1) else None)


def _lerp(start, end, weight, inplace=False):
    a = require_tensor(start, "lerp")
    b = require_tensor(end, "lerp", "end")
    w = require_operand(weight, "lerp", "weight")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("expected dtype %s for `end` but got dtype %s" % (_c_name(a), _c_name(b)))
    if is_tensor(w) and w._data.ndim and w._data.dtype != a._data.dtype:     # a 0-d weight may be any dtype
        raise RuntimeError("expected dtype %s for `weight` but got dtype %s" % (_c_name(a), _c_name(w)))
    if a._data.dtype.kind != "f":
        raise NotImplementedError("\"lerp_kernel_scalar\" not implemented for '%s'" % _torch_name(a._data.dtype))
    dt = result_type(a, b, w)
    broadcast_shapes(a._data.shape, b._data.shape, w._data.shape if is_tensor(w) else ())
    if inplace:
        check_broadcasts_into(a, b)
        if is_tensor(w):
            check_broadcasts_into(a, w)
        recording = rec.prepare_inplace(a, (b, w), dt)
        node = rec.connect(_LerpNode(), (a, b, w)) if recording else None
        saved = _lerp_saved(node, a.clone, b, w) if node is not None else None
        a._data[...] = quietly(_lerp_data, as_array(a, dt), as_array(b, dt), as_array(w, dt))
        rec.finish_inplace(a, node)
        if node is not None:
            node._saved = saved
        return a
    data = np.asarray(quietly(_lerp_data, as_array(a, dt), as_array(b, dt), as_array(w, dt)), dt)
    if data.ndim > 1:       # laid out by the first input with an opinion, as torch's TensorIterator
        data = torch_layout(data, [t._data for t in (a, b, w) if is_tensor(t)])
    result = _wrap(data)
    if rec.needs_grad(a, b, w):
        node = rec.record(_LerpNode, (a, b, w), result)
        node._saved = _lerp_saved(node, a, b, w)
    return result


def lerp(input, end, weight, *, out=None):
    result = _lerp(input, end, weight)
    if out is None:
        return result
    # torch's lerp with a dimensioned weight wants out in the result's dtype;
    # with a number (or a 0-d weight) it casts where it can
    w = operand(weight)
    strict = "Found dtype %(out)s but expected %(result)s" if is_tensor(w) and w._data.ndim else False
    return _out.finish_out(out, result, "lerp", input, end, weight, strict=strict)


register("lerp", lerp, inplace=lambda self, end, weight: _lerp(self, end, weight, inplace=True),
         family="pointwise",
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), 0.3),
                                   Sample(rng.standard_normal((3, 4)), rng.standard_normal((4,)), 0.8),
                                   Sample(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)),
                                          rng.uniform(0, 1, (3, 4)))]))


def _addcmul_backward(node, g, t1, t2):
    v = node.value
    return (g if node.needs(0) else None,
            g * (t2 * v) if node.needs(1) else None,
            g * (t1 * v) if node.needs(2) else None)


def _addcdiv_backward(node, g, t1, t2):
    v = node.value
    if node.needs(1) and t2._data.dtype.kind in "iub":
        # torch's formula computes value / tensor2 in tensor2's dtype, in place
        raise RuntimeError("result type %s can't be cast to the desired output type %s"
                           % (_torch_name(result_type(1.0, t2)), _torch_name(t2._data.dtype)))
    return (g if node.needs(0) else None,
            g * (v / t2) if node.needs(1) else None,
            -g * v * t1 / (t2 * t2) if node.needs(2) else None)


_AddcmulNode = rec.node_class("AddcmulBackward", _addcmul_backward)
_AddcdivNode = rec.node_class("AddcdivBackward", _addcdiv_backward)


def _addc_saved(node, name, t1, t2):
    """torch saves only what the wanted gradients read (tensor2 for tensor1's,
    tensor1 for tensor2's; addcdiv's tensor2 always), so an addcmul whose
    backward needs neither can run twice."""
    need1, need2 = node.needs(1), node.needs(2)
    keep1 = need2
    # addcdiv's tensor2 is read by two formulas (tensor1's and its own):
    # torch's generated code saves such a tensor whatever is wanted
    keep2 = need1 or name == "addcdiv"
    return (rec.save(t1) if keep1 else None), (rec.save(t2) if keep2 else None)


def _addc(name, node_cls, combine, input, tensor1, tensor2, value, inplace=False):
    x = require_tensor(input, name)
    t1 = require_tensor(tensor1, name, "tensor1")
    t2 = require_tensor(tensor2, name, "tensor2")
    dt = result_type(x, t1, t2)
    broadcast_shapes(x._data.shape, t1._data.shape, t2._data.shape)
    if name == "addcmul" and dt.kind == "b":
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    if name == "addcdiv" and t1._data.dtype.kind in "iub" and t2._data.dtype.kind in "iub":
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future "
                           "release addcdiv will perform a true division of tensor1 and tensor2.")
    if dt.kind in "iu" and isinstance(value, float):
        value = _integer_value(value, dt)      # torch casts value to the integer type first

    def compute():
        v = np.asarray(value, dt) if dt.kind == "f" else value
        return as_array(x, dt) + combine(v * as_array(t1, dt), as_array(t2, dt))
    if inplace:
        check_broadcasts_into(x, t1)
        check_broadcasts_into(x, t2)
        recording = rec.prepare_inplace(x, (t1, t2), dt)
        node = rec.connect(node_cls(), (x, t1, t2)) if recording else None
        saved = _addc_saved(node, name, t1, t2) if node is not None else None
        x._data[...] = quietly(compute)
        rec.finish_inplace(x, node)
        if node is not None:
            node.value = value
            node._saved = saved
        return x
    data = np.asarray(quietly(compute), dt)
    if data.ndim > 1:       # torch's TensorIterator: the first input with an opinion lays it out
        data = torch_layout(data, [t._data for t in (x, t1, t2)])
    result = _wrap(data)
    if rec.needs_grad(x, t1, t2):
        node = rec.record(node_cls, (x, t1, t2), result)
        node.value = value
        node._saved = _addc_saved(node, name, t1, t2)
    return result


def _integer_value(value, dtype):
    info = np.iinfo(dtype)
    if not (np.isfinite(value) and info.min <= int(value) <= info.max):
        raise RuntimeError("value cannot be converted to type %s without overflow"
                           % {"int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t",
                              "uint8": "uint8_t"}.get(dtype.name, dtype.name))
    return int(value)


def addcmul(input, tensor1, tensor2, *deprecated, value=1, out=None):
    if deprecated:      # addcmul(input, Number value, Tensor tensor1, Tensor tensor2)
        tensor1, tensor2, value = _deprecated.value_first("addcmul", tensor1, tensor2, deprecated, value)
    result = _addc("addcmul", _AddcmulNode, np.multiply, input, tensor1, tensor2, value)
    return result if out is None else _out.finish_out(out, result, "addcmul", input, tensor1, tensor2)


def addcdiv(input, tensor1, tensor2, *deprecated, value=1, out=None):
    if deprecated:
        tensor1, tensor2, value = _deprecated.value_first("addcdiv", tensor1, tensor2, deprecated, value)
    result = _addc("addcdiv", _AddcdivNode, np.true_divide, input, tensor1, tensor2, value)
    return result if out is None else _out.finish_out(out, result, "addcdiv", input, tensor1, tensor2)


def _addc_samples(positive=False):
    def samples(rng):
        third = (lambda s: rng.uniform(0.5, 2, s)) if positive else rng.standard_normal
        yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), third((3, 4)))
        yield Sample(rng.standard_normal((3, 4)), rng.standard_normal((4,)), third((3, 1)), value=-0.5)
    return samples


def _addcmul_(self, t1, t2, *deprecated, value=1):
    if deprecated:      # addcmul_(Number value, Tensor tensor1, Tensor tensor2)
        t1, t2, value = _deprecated.value_first("addcmul_", t1, t2, deprecated, value)
    return _addc("addcmul", _AddcmulNode, np.multiply, self, t1, t2, value, inplace=True)


def _addcdiv_(self, t1, t2, *deprecated, value=1):
    if deprecated:
        t1, t2, value = _deprecated.value_first("addcdiv_", t1, t2, deprecated, value)
    return _addc("addcdiv", _AddcdivNode, np.true_divide, self, t1, t2, value, inplace=True)


register("addcmul", addcmul, family="pointwise", samples=_addc_samples(), inplace=_addcmul_)
register("addcdiv", addcdiv, family="pointwise", samples=_addc_samples(positive=True), inplace=_addcdiv_)
