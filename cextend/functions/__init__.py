"""C-backed Functions: extension-ffi's ops on cextend's kernels.

Each forward calls a C kernel through cextend.ops; each backward calls the
C backward kernel, or, when a double backward is being recorded
(create_graph=True), an equivalent composition of C-backed Functions so
that second derivatives exist.
"""
from cextend.functions.add import Add
from cextend.functions.linear import LinearFunction, linear
from cextend.functions.mul_constant import MulConstant
from cextend.functions.pool import GlobalMaxPool

__all__ = ["LinearFunction", "linear", "MulConstant", "Add", "GlobalMaxPool"]

# CNN layers: convolution, pooling and batch norm on their C kernels.
from cextend.functions.batchnorm import BatchNormFunction  # noqa: E402
from cextend.functions.conv import Conv2dFunction, ConvTranspose2dFunction  # noqa: E402
from cextend.functions.pooling import AdaptiveAvgPool2dFunction, AvgPool2dFunction, MaxPool2dFunction  # noqa: E402

__all__ += ["Conv2dFunction", "ConvTranspose2dFunction", "MaxPool2dFunction", "AvgPool2dFunction",
            "AdaptiveAvgPool2dFunction", "BatchNormFunction"]
