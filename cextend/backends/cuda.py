"""torch.backends.cuda: flags for CUDA matmuls; cextend's CUDA kernels compute in full precision."""
import os

from cextend import cuda as _cuda


class _MatmulFlags:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built():
    """Whether cextend's CUDA library was built (it may still find no GPU)."""
    return os.path.exists(_cuda._LIBRARY)
