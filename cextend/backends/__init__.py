"""torch.backends: the flags scripts set, with the answers of a build without those backends.

cextend has no cuDNN, MPS or oneDNN; their flags exist so code written for
torch can set and read them (they change nothing here).
"""
from cextend.backends import cuda, cudnn, mha, mkldnn, mps  # noqa: F401
