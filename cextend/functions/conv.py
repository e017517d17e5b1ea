"""Convolution Functions on the C kernels: conv2d and conv_transpose2d.

Three linear maps, closed under differentiation, carry every derivative:

    _Conv(x, w)           y  = A(w) x         (conv2d, no bias)
    _ConvInputGrad(dy, w) dx = A(w)^T dy      (conv_transpose2d, no bias)
    _ConvWeightGrad(dy, x) dw with <dw, H> = <dy, A(H) x>

Each one's backward is made of the other two, so gradients of any order
run on the C kernels.  A backward outside grad mode calls the kernels
directly; with create_graph=True it records these Functions instead.
"""
from cextend.ops import _checks
from cextend._ops._record import ReadGroup, reads_through
from cextend.ops._shapes import conv2d_geometry, conv_transpose2d_geometry
from cextend.ops.conv import bias_grad, conv, conv_input_grad, conv_weight_grad
from cextend.ops.conv import conv_grads as all_conv_grads
from cextend.autograd.function import Function
from cextend.autograd.grad_mode import is_grad_enabled
from cextend.functions._tensors import data, wrap


def cpu_only(op, **tensors):
    """A clear error for CUDA tensors: these ops have CPU kernels only."""
    for name, t in tensors.items():
        if t is not None and getattr(t, "is_cuda", False):
            raise RuntimeError("%s has no CUDA kernel: %s is on %s; move the operands with .cpu()"
                               % (op, name, t.device))


def float_operands(op, **tensors):
    """The numpy arrays of the (non-None) tensors: one float dtype, on the CPU."""
    cpu_only(op, **tensors)
    arrays = {name: None if t is None else data(t, name) for name, t in tensors.items()}
    try:
        _checks.float_dtype(**arrays)
    except TypeError as error:
        raise type(error)("%s: %s" % (op, error)) from None      # a DtypeError stays one
    return [arrays[name] for name in tensors]


def _bias_grad(grad_output):
    return grad_output.sum((0, 2, 3)) if is_grad_enabled() else wrap(bias_grad(grad_output._data))


def _read_by_torch(gx, gw, gb, input, weight):
    """torch's convolution_backward is one recorded op of (grad, input,
    weight): under create_graph each gradient requires grad through both."""
    group = ReadGroup()
    return tuple(None if g is None else reads_through("ConvolutionBackwardBackward", g, input, weight,
                                                     zero_derivative=False, group=group)
                 for g in (gx, gw, gb))


class _Conv(Function):
    """y = conv2d(x, w) for a checked geometry (no bias)."""

    @staticmethod
    def forward(ctx, x, w, geometry):
        ctx.geometry = geometry
        ctx.save_for_backward(x, w)
        return wrap(conv(x._data, w._data, None, geometry))

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        gx, gw = conv_grads(grad, x, w, ctx.geometry, *ctx.needs_input_grad[:2])
        return gx, gw, None


class _ConvInputGrad(Function):
    """dx = A(w)^T dy: the input gradient of conv2d, conv_transpose2d's core."""

    @staticmethod
    def forward(ctx, dy, w, geometry, x_shape):
        ctx.geometry = geometry
        ctx.save_for_backward(dy, w)
        return wrap(conv_input_grad(dy._data, w._data, geometry, tuple(x_shape)))

    @staticmethod
    def backward(ctx, grad):
        dy, w = ctx.saved_tensors
        need_dy, need_w = ctx.needs_input_grad[:2]
        g_dy = _Conv.apply(grad, w, ctx.geometry) if need_dy else None
        g_w = _ConvWeightGrad.apply(dy, grad, ctx.geometry, w.shape) if need_w else None
        return g_dy, g_w, None, None


class _ConvWeightGrad(Function):
    """dw of conv2d: the correlation of dy with x."""

    @staticmethod
    def forward(ctx, dy, x, geometry, w_shape):
        ctx.geometry = geometry
        ctx.save_for_backward(dy, x)
        return wrap(conv_weight_grad(dy._data, x._data, geometry, tuple(w_shape)))

    @staticmethod
    def backward(ctx, grad):
        dy, x = ctx.saved_tensors
        need_dy, need_x = ctx.needs_input_grad[:2]
        g_dy = _Conv.apply(x, grad, ctx.geometry) if need_dy else None
        g_x = _ConvInputGrad.apply(dy, grad, ctx.geometry, x.shape) if need_x else None
        return g_dy, g_x, None, None


def conv_grads(grad, x, w, geometry, need_x, need_w):
    """(dx, dw) of y = A(w) x: recorded Functions in grad mode, else the kernels."""
    if is_grad_enabled():
        return (_ConvInputGrad.apply(grad, w, geometry, x.shape) if need_x else None,
                _ConvWeightGrad.apply(grad, x, geometry, w.shape) if need_w else None)
    g = grad._data
    return (wrap(conv_input_grad(g, w._data, geometry, x.shape)) if need_x else None,
            wrap(conv_weight_grad(g, x._data, geometry, w.shape)) if need_w else None)


class Conv2dFunction(Function):
    """torch's conv2d: input (N, C_in, H, W), weight (C_out, C_in/groups, kH,
    kW), bias (C_out,) or None -> (N, C_out, H_out, W_out)."""

    _torch_node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        x, w, b = float_operands("conv2d", input=input, weight=weight, bias=bias)
        geometry, _ = conv2d_geometry(x.shape, w.shape, None if b is None else b.shape,
                                      stride, padding, dilation, groups)
        ctx.geometry = geometry
        ctx.save_for_backward(input, weight)
        return wrap(conv(x, w, b, geometry))

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        if is_grad_enabled():
            gx, gw = conv_grads(grad_output, input, weight, ctx.geometry, need_x, need_w)
            gb = grad_output.sum((0, 2, 3)) if need_b else None
            gx, gw, gb = _read_by_torch(gx, gw, gb, input, weight)
        else:           # one kernel call for all three
            gx, gw, gb = (wrap(g) for g in all_conv_grads(grad_output._data, input._data, weight._data,
                                                           ctx.geometry, need_x, need_w, need_b))
        return gx, gw, gb, None, None, None, None


class ConvTranspose2dFunction(Function):
    """torch's conv_transpose2d: input (N, C_in, H, W), weight (C_in,
    C_out/groups, kH, kW), bias (C_out,) or None -> (N, C_out, H_out, W_out)."""

    _torch_node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        x, w, b = float_operands("conv_transpose2d", input=input, weight=weight, bias=bias)
        geometry, shape = conv_transpose2d_geometry(x.shape, w.shape, None if b is None else b.shape, stride,
                                                    padding, output_padding, groups, dilation)
        ctx.geometry = geometry
        ctx.save_for_backward(input, weight)
        y = conv_input_grad(x, w, geometry, shape)
        if b is not None:
            y += b.reshape(-1, 1, 1)
        return wrap(y)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        geometry = ctx.geometry
        if is_grad_enabled():
            gx = _Conv.apply(grad_output, weight, geometry) if need_x else None
            gw = _ConvWeightGrad.apply(input, grad_output, geometry, weight.shape) if need_w else None
        else:
            g = grad_output._data
            gx = wrap(conv(g, weight._data, None, geometry)) if need_x else None
            gw = wrap(conv_weight_grad(input._data, g, geometry, weight.shape)) if need_w else None
        gb = _bias_grad(grad_output) if need_b else None
        if is_grad_enabled():
            gx, gw, gb = _read_by_torch(gx, gw, gb, input, weight)
        return gx, gw, gb, None, None, None, None, None
