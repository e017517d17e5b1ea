"""A device runtime that keeps "device" memory on the host, for testing
cextend's device layer (DeviceArray, Tensor.cuda(), dispatch, the engine on
device tensors) on machines without a GPU.

It implements the interface of cextend.cuda's runtime with numpy, and
runs the C-backed Functions' kernels through cextend's CPU ops; every
buffer is separate memory, so a path that forgets to copy between host and
"device" fails here as it would on a GPU.  The CUDA kernels themselves are
tested against the CPU in tests/test_cuda.py, on a GPU.
"""
import numpy as np

from cextend import ops


class HostBuffer:
    def __init__(self, nbytes):
        self.data = np.zeros(max(int(nbytes), 1), np.uint8)
        self.nbytes = int(nbytes)
        self.ptr = self.data.ctypes.data


class HostRuntime:
    name = "host-emulated"

    def __init__(self):
        self.allocations = 0

    def alloc(self, nbytes):
        self.allocations += 1
        return HostBuffer(nbytes)

    @staticmethod
    def _view(buffer, dtype, count, offset=0):
        itemsize = np.dtype(dtype).itemsize
        return buffer.data[offset * itemsize:(offset + count) * itemsize].view(dtype)

    def _h(self, array):
        """A live host view of a DeviceArray's buffer."""
        return None if array is None else self._view(array.buffer, array.dtype, array.size).reshape(array.shape)

    def upload(self, buffer, array):
        array = np.ascontiguousarray(array)
        buffer.data[:array.nbytes] = array.reshape(-1).view(np.uint8)

    def download(self, buffer, shape, dtype):
        count = int(np.prod(shape))
        return self._view(buffer, dtype, count).reshape(shape).copy()

    def copy(self, dst, src, nbytes):
        dst.data[:nbytes] = src.data[:nbytes]

    def read(self, buffer, offset, dtype):
        return np.array(self._view(buffer, dtype, 1, offset)[0])

    def write(self, buffer, offset, dtype, value):
        self._view(buffer, dtype, 1, offset)[0] = value

    def fill(self, buffer, dtype, count, value):
        self._view(buffer, dtype, count)[...] = value

    def binary(self, op, dtype, count, a, b, scalar, reversed_, out):
        x = self._view(a, dtype, count)
        y = self._view(b, dtype, count) if b is not None else np.asarray(scalar, dtype)
        if reversed_:
            x, y = y, x
        self._view(out, dtype, count)[...] = (np.add, np.subtract, np.multiply)[op](x, y)

    def sum(self, buffer, dtype, outer, reduce, inner, out):
        x = self._view(buffer, dtype, outer * reduce * inner).reshape(outer, reduce, inner)
        self._view(out, dtype, outer * inner)[...] = x.sum(1).reshape(-1)

    def cast(self, src, src_dtype, dst, dst_dtype, count):
        self._view(dst, dst_dtype, count)[...] = self._view(src, src_dtype, count)

    def strided_copy(self, shape, strides, itemsize, src, dst):
        dtype = {4: np.float32, 8: np.float64, 1: np.uint8}[itemsize]
        count = int(np.prod(shape))
        source = np.lib.stride_tricks.as_strided(src.data.view(dtype), shape=shape,
                                                 strides=[s * itemsize for s in strides])
        self._view(dst, dtype, count).reshape(shape)[...] = source

    def axpy(self, alpha, x, y):
        self._h(y)[...] += alpha * self._h(x)

    def linear_forward(self, x, w, b, y):
        ops.linear_forward(self._h(x), self._h(w), self._h(b), out=self._h(y))

    def linear_backward(self, dy, x, w, dx, dw, db):
        grads = ops.linear_backward(self._h(dy), self._h(x), self._h(w), input=dx is not None,
                                    weight=dw is not None, bias=db is not None)
        for target, grad in zip((dx, dw, db), grads):
            if target is not None:
                self._h(target)[...] = grad

    def add_forward(self, a, b, out):
        ops.add_forward(self._h(a), self._h(b), out=self._h(out))

    def add_backward(self, g, grad_a, grad_b):
        for target in (grad_a, grad_b):
            if target is not None:
                self._h(target)[...] = self._h(g)

    def mul_constant_forward(self, x, c, out):
        ops.mul_constant_forward(self._h(x), c, out=self._h(out))

    def mul_constant_backward(self, g, c, grad_x):
        self._h(grad_x)[...] = ops.mul_constant_backward(self._h(g), c)

    def pool_forward(self, x, planes, plane_size, values, indices):
        v, i = ops.global_max_pool_forward(self._h(x).reshape(planes, 1, plane_size))
        self._h(values).reshape(-1)[...] = v.reshape(-1)
        self._h(indices).reshape(-1)[...] = i.reshape(-1)

    def pool_backward(self, g, indices, planes, plane_size, grad_x):
        result = ops.global_max_pool_backward(self._h(g).reshape(planes), self._h(indices).reshape(planes),
                                              (planes, 1, plane_size))
        self._h(grad_x).reshape(-1)[...] = result.reshape(-1)

    def relu(self, x, out):
        self._h(out)[...] = np.maximum(self._h(x), 0)

    def relu_backward(self, x, g, grad_x):
        self._h(grad_x)[...] = np.where(self._h(x) > 0, self._h(g), 0)
