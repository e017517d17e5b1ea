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
