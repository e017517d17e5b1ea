"""Legacy import paths (torch.nn.modules.*), re-exporting cextend.nn."""
from cextend.nn.layers import (CrossEntropyLoss, Identity, Linear, MSELoss, NLLLoss, ReLU, Sequential,  # noqa: F401
                               Sigmoid, Tanh)
from cextend.nn.module import Module  # noqa: F401
from cextend.nn.batchnorm import BatchNorm1d, BatchNorm2d  # noqa: F401,E402
from cextend.nn.conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: F401,E402
from cextend.nn.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d  # noqa: F401,E402
