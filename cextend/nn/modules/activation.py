"""Legacy import path: `from torch.nn.modules.activation import ...`."""
from cextend.nn.activation import (CELU, ELU, GELU, SELU, Hardtanh, LeakyReLU, LogSigmoid,  # noqa: F401
                                   LogSoftmax, Mish, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus,
                                   Tanh)
