"""extension-ffi's example ops, written as user code writes a C-backed Function.

Each forward calls a C kernel through cextend.ops (or cextend.ops.cuda
when its inputs are on the GPU, as extension-ffi's `if input.is_cuda:`
did); each backward calls the C backward kernel, or, when a double
backward is being recorded (create_graph=True), an equivalent composition
of C-backed Functions so that second derivatives exist.

Convolution, pooling and batch norm were Functions here once; they are
built-in ops now, and their old names are aliases (_aliases.py).
"""
from cextend.functions.add import Add
from cextend.functions.linear import LinearFunction, linear
from cextend.functions.mul_constant import MulConstant
from cextend.functions.pool import GlobalMaxPool

__all__ = ["LinearFunction", "linear", "MulConstant", "Add", "GlobalMaxPool"]

from cextend.functions._aliases import (AdaptiveAvgPool2dFunction, AvgPool2dFunction, BatchNormFunction,  # noqa: E402
                                        Conv2dFunction, ConvTranspose2dFunction, MaxPool2dFunction)

__all__ += ["Conv2dFunction", "ConvTranspose2dFunction", "MaxPool2dFunction", "AvgPool2dFunction",
            "AdaptiveAvgPool2dFunction", "BatchNormFunction"]
