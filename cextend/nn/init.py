"""nn.init: parameter initialisation with torch.nn.init's bounds and fans.

Every function fills its tensor in place under no_grad (so parameters that
require grad can be initialised) and returns it.  Random draws come from
cextend's global generator (see cextend.manual_seed) or from `generator`
(a cextend.Generator): reproducible under a seed, but not torch's numbers.
"""
import math
import warnings

import numpy as np

from cextend import _random
from cextend.autograd.grad_mode import no_grad
from cextend.tensor import _wrap

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


def _rng(generator, op):
    """The numpy stream to draw from: generator's (a cextend.Generator, or a
    numpy Generator as cextend took before it had its own), or the global one."""
    return _random.numpy_rng(generator, "nn.init." + op)


def _fill_from(tensor, array):
    """tensor[...] = array (cast to tensor's dtype), in place and outside the graph."""
    with no_grad():
        tensor.copy_(_wrap(np.asarray(array).astype(tensor._data.dtype, copy=False)))
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch's table: relu sqrt(2), tanh 5/3, ...)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError("negative_slope {} not a valid number".format(param))
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError("Unsupported nonlinearity {}".format(nonlinearity))


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=_rng(generator, "uniform_"))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std**2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=_rng(generator, "normal_"))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std**2) truncated to [a, b] (values outside are redrawn).

    As torch's: when [a, b] holds more than 30% of the mass, out-of-range
    normal draws are redrawn; otherwise uniform proposals on [a, b] are
    accepted with the normal density (rejection sampling).  The bounds are
    first rounded to the tensor's dtype, so every value lies in them.
    """
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of "
                      "values may be incorrect.", stacklevel=2)
    rng = _rng(generator, "trunc_normal_")
    dtype = tensor._data.dtype
    lo, hi = dtype.type(a), dtype.type(b)
    shape = tensor._data.shape
    mass = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
    if mass > 0.3:
        result = rng.normal(mean, std, shape).astype(dtype)
        pending = (result < lo) | (result > hi)
        while pending.any():
            result[pending] = rng.normal(mean, std, int(pending.sum())).astype(dtype)
            pending = (result < lo) | (result > hi)
    else:
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2
        result = np.empty(shape, dtype)
        pending = np.ones(shape, bool)
        while pending.any():
            count = int(pending.sum())
            candidates = rng.uniform(a, b, count)
            log_pdf = -0.5 * ((candidates - mean) / std) ** 2 - log_peak
            accept = np.log(rng.uniform(0.0, 1.0, count)) <= log_pdf
            values = np.clip(candidates.astype(dtype), lo, hi)
            where = np.flatnonzero(pending.reshape(-1))[accept]
            result.reshape(-1)[where] = values[accept]
            pending.reshape(-1)[where] = False
    return _fill_from(tensor, result)


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """The identity matrix (a 2-D tensor only)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill_from(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """The Dirac delta for {3,4,5}-D conv weights: each group's channels pass through unchanged."""
    dimensions = tensor.ndimension()
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    values = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            values[(g * out_chans_per_grp + d, d) + centre] = 1
    return _fill_from(tensor, values)


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError("Mode {} not supported, please use one of {}".format(mode, valid_modes))
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std**2) with std = gain / sqrt(fan) (He)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix, trailing dimensions flattened, scaled by gain (Saxe et al.)."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flattened = _rng(generator, "orthogonal_").normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q *= np.sign(np.diag(r))           # makes Q uniformly distributed (Mezzadri 2006)
    if rows < cols:
        q = q.T
    return _fill_from(tensor, gain * q.reshape(tensor.shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D tensor with ceil(sparsity * rows) zeros per column, the rest N(0, std**2)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    rng = _rng(generator, "sparse_")
    values = rng.normal(0.0, std, (rows, cols))
    for col_idx in range(cols):
        values[rng.permutation(rows)[:num_zeros], col_idx] = 0
    return _fill_from(tensor, values)


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn("`nn.init.{}` is now deprecated in favor of `nn.init.{}`.".format(old_name, new_name),
                      FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = "{}(...): deprecated, use nn.init.{}.".format(old_name, new_name)
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
