"""Neural-network layers on cextend's autograd and C kernels."""
from cextend.nn import functional
from cextend.nn.layers import (CrossEntropyLoss, Identity, Linear, MSELoss, NLLLoss, ReLU, Sequential,
                               Sigmoid, Tanh)
from cextend.nn.module import Module
from cextend.nn.parameter import Parameter

__all__ = ["Module", "Parameter", "Linear", "ReLU", "Tanh", "Sigmoid", "Identity", "Sequential",
           "MSELoss", "CrossEntropyLoss", "NLLLoss", "functional"]

# CNN layers (cextend/nn/{conv,pooling,batchnorm}.py).
from cextend.nn.batchnorm import BatchNorm1d, BatchNorm2d  # noqa: E402
from cextend.nn.conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: E402
from cextend.nn.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d  # noqa: E402

__all__ += ["Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
            "BatchNorm1d", "BatchNorm2d"]
from cextend.nn import init, utils  # noqa: E402

__all__ += ["init", "utils"]
from cextend.nn.container import ModuleDict, ModuleList, ParameterDict, ParameterList  # noqa: E402

__all__ += ["ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
