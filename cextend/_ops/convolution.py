"""Convolution as built-in ops: torch's convolution and convolution_backward.

Two ops carry every derivative of conv1d/conv2d and their transposes, as
in torch's derivatives.yaml:

    convolution(x, w, b)                 node ConvolutionBackward0 (saves x, w)
    convolution_backward(g, x, w, mask)  node ConvolutionBackwardBackward0
                                         (saves g, x, w), outputs (gx, gw, gb)

ConvolutionBackward0's formula is convolution_backward, which records
itself only under create_graph; its own formula is made of convolution and
convolution_backward again, so derivatives of any order run on the C
kernels.  The same formulas hold for the transposed convolution (y = A(w)^T x
where the convolution is y = A(w) x), as in torch's
_convolution_double_backward.

A 1-D convolution runs its 2-D kernels over a height of 1 (reshaping the
arrays, not recording views), so it stays one node as torch's.
"""
from cextend.autograd import record as rec
from cextend._ops._kernels import Kernels
from cextend.ops import conv as _cpu_conv
from cextend.tensor import _wrap

CONVOLUTION = Kernels("convolution", cpu=_cpu_conv)


class ConvParams:
    """What a convolution keeps besides its tensors: the checked 2-D
    geometry (cextend.ops._shapes), whether it is transposed, the operands'
    shapes (their own rank: 3 for 1-D) and the transposed output's shape."""

    __slots__ = ("geometry", "transposed", "input_shape", "weight_shape", "output_shape", "spatial")

    def __init__(self, geometry, transposed, input_shape, weight_shape, output_shape=None):
        self.geometry = geometry
        self.transposed = transposed
        self.input_shape = tuple(input_shape)
        self.weight_shape = tuple(weight_shape)
        self.spatial = len(input_shape) - 2
        self.output_shape = None if output_shape is None else tuple(output_shape)

    def planar(self, array):
        """array as the 2-D kernels take it: (N, C, 1, L) for a 1-D one."""
        return array if self.spatial == 2 else array.reshape(array.shape[:2] + (1,) + array.shape[2:])

    def planar_shape(self, shape):
        return tuple(shape) if self.spatial == 2 else tuple(shape[:2]) + (1,) + tuple(shape[2:])

    def own_rank(self, array):
        return array if self.spatial == 2 or array is None else array.reshape(array.shape[:2] + array.shape[3:])


def convolution(input, weight, bias, params):
    """y = A(w) x + b (or A(w)^T x + b, transposed) for floating operands of one dtype."""
    kernels = CONVOLUTION.on(input=input, weight=weight, bias=bias)
    x, w = params.planar(input._data), params.planar(weight._data)
    b = None if bias is None else bias._data
    if params.transposed:
        y = kernels.conv_input_grad(x, w, params.geometry, params.planar_shape(params.output_shape))
        if b is not None:
            y += b.reshape(-1, 1, 1)
    else:
        y = kernels.conv(x, w, b, params.geometry)
    result = _wrap(params.own_rank(y))
    if rec.needs_grad(input, weight, bias):
        node = rec.record(ConvolutionBackward0, (input, weight, bias), result)
        node.params = params
        node._saved = (rec.save(input), rec.save(weight))
    return result


class ConvolutionBackward0(rec.BuiltinNode):
    def backward(self, grad, input, weight):
        return convolution_backward(grad, input, weight, self.params, (self.needs(0), self.needs(1), self.needs(2)))


def convolution_backward(grad, input, weight, params, mask):
    """(gx, gw, gb) of convolution(x, w, b) for the output gradient grad,
    None where mask says not wanted.  gx reads only weight and gw only input:
    either may be None where its gradient is not asked."""
    kernels = CONVOLUTION.on(grad=grad, input=input, weight=weight)
    need_x, need_w, need_b = mask
    g = params.planar(grad._data)
    x = None if input is None else params.planar(input._data)
    w = None if weight is None else params.planar(weight._data)
    geometry = params.geometry
    w_shape = params.planar_shape(params.weight_shape)
    if params.transposed:       # gx = A(w) g, gw from the correlation of x with g
        gx = kernels.conv(g, w, None, geometry) if need_x else None
        gw = kernels.conv_weight_grad(x, g, geometry, w_shape) if need_w else None
        gb = kernels.bias_grad(g) if need_b else None
    elif x is not None and w is not None:       # one kernel call for all three
        gx, gw, gb = kernels.conv_grads(g, x, w, geometry, need_x, need_w, need_b)
    else:
        gx = kernels.conv_input_grad(g, w, geometry, params.planar_shape(params.input_shape)) if need_x else None
        gw = kernels.conv_weight_grad(g, x, geometry, w_shape) if need_w else None
        gb = kernels.bias_grad(g) if need_b else None
    grads = (None if gx is None else _wrap(params.own_rank(gx)),
             None if gw is None else _wrap(params.own_rank(gw)),
             None if gb is None else _wrap(gb))
    if rec.needs_grad(grad, input, weight):
        node = rec.record(ConvolutionBackwardBackward0, (grad, input, weight), grads)
        node.params = params
        node._saved = (rec.save(grad), None if input is None else rec.save(input),
                       None if weight is None else rec.save(weight))
    return grads


class ConvolutionBackwardBackward0(rec.BuiltinNode):
    """gx = A(w)^T g, gw = W(g, x), gb = sum g are bilinear: each input's
    gradient pairs the incoming ones with the other factor."""

    multi_output = True

    def backward(self, grads, grad, input, weight):
        ggx, ggw, ggb = grads
        params = self.params
        d_grad = d_input = d_weight = None
        if self.needs(0):
            terms = []
            if ggx is not None:
                terms.append(convolution(ggx, weight, None, params))
            if ggw is not None:
                terms.append(convolution(input, ggw, None, params))
            if ggb is not None:
                per_channel = ggb.reshape((1, -1) + (1,) * params.spatial)
                terms.append(per_channel if terms else per_channel.expand(grad.shape).contiguous())
            for term in terms:
                d_grad = term if d_grad is None else d_grad + term
        if self.needs(1) and ggw is not None:
            d_input = convolution_backward(grad, None, ggw, params, (True, False, False))[0]
        if self.needs(2) and ggx is not None:
            d_weight = convolution_backward(grad, ggx, None, params, (False, True, False))[1]
        return d_grad, d_input, d_weight
