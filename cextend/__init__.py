"""cextend: hand-written C kernels as differentiable, gradchecked ops.

PyTorch's legacy extension-ffi pattern rebuilt on cffi and numpy:
C kernels (src/) -> one cffi door (cextend._backend) -> numpy-level ops
(cextend.ops) -> autograd Functions -> nn Modules.
"""
from cextend import ops

__version__ = "0.1.0"
