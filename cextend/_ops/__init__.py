"""The op table and its families.  Importing this package registers every
op; install() attaches them to Tensor and to the cextend namespace."""
from cextend._ops import registry
from cextend._ops import (arithmetic, closeness, conversion, einsum, gather_scatter, indexing,  # noqa: F401
                          joining, linalg, pointwise, rearrange, reduction, scan, shape, sorting,
                          statistics, ternary)
from cextend._ops import nn_functional  # noqa: F401  (the nn family)
from cextend._ops import spatial, spatial_resample  # noqa: F401  (pad, interpolate, fold, grid_sample, ...)
from cextend._ops import recurrent  # noqa: F401  (the recurrent cells, on src/rnn.c)
from cextend._ops import pointwise_more, splitting  # noqa: F401  (hypot, logaddexp, xlogy, copysign, shifts; tensor_split)
from cextend._ops import distance, nn_ctc, nn_norms  # noqa: F401  (group/instance/local response norm, distances, ctc_loss)
from cextend._ops import bfloat16
from cextend._ops.registry import OPS
from cextend.tensor import Tensor


def install(namespace):
    bfloat16.install(OPS, registry._EXTRA_METHODS, Tensor)     # before the methods are attached
    registry.install(Tensor, namespace)


__all__ = ["OPS", "install"]
