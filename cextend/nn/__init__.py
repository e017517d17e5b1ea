"""Neural-network layers on cextend's autograd and C kernels."""
from cextend.nn import functional
from cextend.nn import _op_entries  # noqa: F401  (the op table's entries for the functional CNN ops)
from cextend.nn.layers import (CrossEntropyLoss, Identity, Linear, MSELoss, NLLLoss, ReLU, Sequential,
                               Sigmoid, Tanh)
from cextend.nn.module import Module
from cextend.nn.parameter import Parameter

from cextend.nn.activation import (CELU, ELU, GELU, SELU, Hardtanh, LeakyReLU, LogSigmoid,  # noqa: E402
                                   LogSoftmax, Mish, ReLU6, SiLU, Softmax, Softmin, Softplus)
from cextend.nn.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: E402
from cextend.nn.flatten import Flatten, Unflatten  # noqa: E402
from cextend.nn.loss import (BCELoss, BCEWithLogitsLoss, HuberLoss, KLDivLoss, L1Loss,  # noqa: E402
                             SmoothL1Loss)
from cextend.nn.normalization import LayerNorm  # noqa: E402
from cextend.nn.sparse import Embedding  # noqa: E402

__all__ = ["Module", "Parameter", "Linear", "ReLU", "Tanh", "Sigmoid", "Identity", "Sequential",
           "MSELoss", "CrossEntropyLoss", "NLLLoss", "functional"]
__all__ += ["Softmax", "LogSoftmax", "Softmin", "GELU", "LeakyReLU", "ELU", "CELU", "SELU", "Softplus",
            "SiLU", "Mish", "Hardtanh", "ReLU6", "LogSigmoid", "LayerNorm", "Dropout", "Dropout1d",
            "Dropout2d", "Dropout3d", "Embedding",
            "Flatten", "Unflatten", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
            "KLDivLoss"]

# CNN layers (cextend/nn/{conv,pooling,batchnorm}.py).
from cextend.nn.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: E402
from cextend.nn.conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: E402
from cextend.nn.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d  # noqa: E402

__all__ += ["Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
            "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
from cextend.nn import init, utils  # noqa: E402

__all__ += ["init", "utils"]
from cextend.nn.container import ModuleDict, ModuleList, ParameterDict, ParameterList  # noqa: E402

__all__ += ["ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]

# 1-D pooling, adaptive max pooling, ConvTranspose1d and the alpha dropouts (cextend/nn/functional_1d.py).
from cextend.nn.conv import ConvTranspose1d  # noqa: E402
from cextend.nn.dropout import AlphaDropout, FeatureAlphaDropout  # noqa: E402
from cextend.nn.pooling import (AdaptiveAvgPool1d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,  # noqa: E402
                                MaxPool1d)

__all__ += ["MaxPool1d", "AvgPool1d", "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
            "ConvTranspose1d", "AlphaDropout", "FeatureAlphaDropout"]

# Attention and transformer layers (cextend/nn/attention.py, cextend/nn/transformer.py).
from cextend.nn.attention import MultiheadAttention  # noqa: E402
from cextend.nn.transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: E402
                                    TransformerEncoder, TransformerEncoderLayer)

__all__ += ["MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
            "TransformerEncoderLayer", "TransformerDecoderLayer"]

# Recurrent layers (cextend/nn/rnn.py; their cells' pointwise math is src/rnn.c).
from cextend.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402

__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

# torch.nn.modules.module's path, where code reaches the global module hooks (cextend/nn/modules/module.py).
from cextend.nn.modules import module as _modules_module  # noqa: E402,F401

# Group, instance and local response norm; distances and the triplet and CTC losses
# (cextend/nn/normalization_more.py, cextend/nn/distance_losses.py).
from cextend.nn.normalization_more import (GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,  # noqa: E402
                                           LocalResponseNorm)
from cextend.nn.distance_losses import (CosineSimilarity, CTCLoss, PairwiseDistance, TripletMarginLoss,  # noqa: E402
                                        TripletMarginWithDistanceLoss)

__all__ += ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm",
            "PairwiseDistance", "CosineSimilarity", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss"]

# Spatial layers: padding, upsampling, Fold/Unfold, pixel and channel shuffles (cextend/nn/spatial.py).
from cextend.nn.spatial import (ChannelShuffle, CircularPad1d, CircularPad2d, CircularPad3d,  # noqa: E402
                                ConstantPad1d, ConstantPad2d, ConstantPad3d, Fold, PixelShuffle, PixelUnshuffle,
                                ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
                                ReplicationPad2d, ReplicationPad3d, Unfold, Upsample, UpsamplingBilinear2d,
                                UpsamplingNearest2d, ZeroPad1d, ZeroPad2d, ZeroPad3d)

__all__ += ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
            "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
            "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "Upsample", "UpsamplingNearest2d",
            "UpsamplingBilinear2d", "Fold", "Unfold", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]
