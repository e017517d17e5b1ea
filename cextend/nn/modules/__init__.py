"""Legacy import paths (torch.nn.modules.*), re-exporting cextend.nn."""
from cextend.nn.layers import (CrossEntropyLoss, Identity, Linear, MSELoss, NLLLoss, ReLU, Sequential,  # noqa: F401
                               Sigmoid, Tanh)
from cextend.nn.module import Module  # noqa: F401
from cextend.nn.activation import (CELU, ELU, GELU, SELU, Hardtanh, LeakyReLU, LogSigmoid,  # noqa: F401,E402
                                   LogSoftmax, Mish, ReLU6, SiLU, Softmax, Softmin, Softplus)
from cextend.nn.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401,E402
from cextend.nn.flatten import Flatten, Unflatten  # noqa: F401,E402
from cextend.nn.loss import (BCELoss, BCEWithLogitsLoss, HuberLoss, KLDivLoss, L1Loss,  # noqa: F401,E402
                             SmoothL1Loss)
from cextend.nn.normalization import LayerNorm  # noqa: F401,E402
from cextend.nn.sparse import Embedding  # noqa: F401,E402
from cextend.nn.batchnorm import BatchNorm1d, BatchNorm2d  # noqa: F401,E402
from cextend.nn.conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: F401,E402
from cextend.nn.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d  # noqa: F401,E402
