"""Legacy import path: `from torch.nn.modules.loss import _Loss, _WeightedLoss, ...`."""
from cextend.nn.loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss,  # noqa: F401
                             L1Loss, MSELoss, NLLLoss, SmoothL1Loss, _Loss, _WeightedLoss)
