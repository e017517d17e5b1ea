"""Shape operations.  Those that never copy return views sharing the
input's storage and version counter; backward reshapes or sums back."""
import numpy as np

from cextend.autograd.function import Function
from cextend.autograd._functions._util import maybe_view_of, view_of


class View(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = a.shape
        try:
            out = np.reshape(a._data, shape, copy=False)
        except ValueError as error:
            if "copy" not in str(error):
                raise RuntimeError("shape %s is invalid for input of size %d" % (list(shape), a.numel())) from None
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                               "least one dimension spans across two contiguous subspaces). Use "
                               ".reshape(...) instead.") from None
        return view_of(out, a)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


class Reshape(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = a.shape
        try:
            out = np.reshape(a._data, shape)
        except ValueError:
            raise RuntimeError("shape %s is invalid for input of size %d" % (list(shape), a.numel())) from None
        return maybe_view_of(out, a)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


class Unsqueeze(Function):
    @staticmethod
    def forward(ctx, a, dim):
        ctx.in_shape = a.shape
        return view_of(np.expand_dims(a._data, dim), a)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


class Squeeze(Function):
    @staticmethod
    def forward(ctx, a, dims):
        ctx.in_shape = a.shape
        return view_of(np.squeeze(a._data, axis=dims), a)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


class Transpose(Function):
    @staticmethod
    def forward(ctx, a, dim0, dim1):
        ctx.dims = (dim0, dim1)
        return view_of(np.swapaxes(a._data, dim0, dim1), a)

    @staticmethod
    def backward(ctx, g):
        return g.transpose(*ctx.dims), None, None


class Permute(Function):
    @staticmethod
    def forward(ctx, a, dims):
        ctx.inverse = tuple(int(i) for i in np.argsort(dims))
        return view_of(np.transpose(a._data, dims), a)

    @staticmethod
    def backward(ctx, g):
        return g.permute(*ctx.inverse), None


class Expand(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = a.shape
        try:
            out = np.broadcast_to(a._data, shape)
        except ValueError:
            raise RuntimeError("The expanded size %s must match the existing size %s at non-singleton "
                               "dimensions" % (list(shape), list(a.shape))) from None
        return view_of(out, a)

    @staticmethod
    def backward(ctx, g):
        return g._sum_to(ctx.in_shape), None
