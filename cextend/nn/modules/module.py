"""Legacy import path: `from torch.nn.modules.module import Module`."""
from cextend.nn.module import Module  # noqa: F401
