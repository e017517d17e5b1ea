"""The op table and its families.  Importing this package registers every
op; install() attaches them to Tensor and to the cextend namespace."""
import warnings

# torch computes 0/0, log(0) and overflow silently; numpy warns.  Silence
# numpy's floating-point RuntimeWarnings raised from the op modules only
# (the user's own numpy calls keep their warnings), which costs nothing on
# the hot path, unlike an np.errstate around every op.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"cextend\._ops(\..*)?$")
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"cextend\.(nn|autograd|optim)(\..*)?$")

from cextend._ops import registry  # noqa: E402
from cextend._ops import (arithmetic, conversion, indexing, joining, linalg,  # noqa: E402,F401
                          pointwise, reduction, shape)
from cextend._ops.registry import OPS  # noqa: E402


def install(namespace):
    from cextend.tensor import Tensor
    registry.install(Tensor, namespace)


__all__ = ["OPS", "install"]
