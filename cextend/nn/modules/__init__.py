"""Legacy import paths (torch.nn.modules.*), re-exporting cextend.nn."""
from cextend.nn.layers import (CrossEntropyLoss, Identity, Linear, MSELoss, NLLLoss, ReLU, Sequential,  # noqa: F401
                               Sigmoid, Tanh)
from cextend.nn.module import Module  # noqa: F401
