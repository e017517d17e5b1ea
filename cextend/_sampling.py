"""Random sampling into and out of tensors: the in-place samplers
(uniform_, normal_, random_, bernoulli_, exponential_, geometric_, cauchy_,
log_normal_) and bernoulli, multinomial, poisson.

Each takes torch's arguments and checks them as torch does (its exception
types); values come from cextend's generators (see cextend._random), so
they follow torch's distributions but are not torch's numbers.  Samples are
drawn in float64 or int64 and then cast to the tensor's dtype.
"""
import math
import numbers
import warnings

import numpy as np

from cextend import _dtype, _random
from cextend._errors import ArgumentError
from cextend._ops._out import check_out, write_out
from cextend.tensor import Tensor, _wrap

_MISSING = object()


def _bind(op, args, kwargs, names, defaults):
    """Positional and keyword arguments onto names, as Python binds them; here
    because torch's names include `from`, which a Python signature cannot."""
    if len(args) > len(names):
        raise TypeError("%s() takes from 0 to %d positional arguments but %d were given"
                        % (op, len(names), len(args)))
    values = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError("%s() got an unexpected keyword argument '%s'" % (op, key))
        if key in values:
            raise TypeError("%s() got multiple values for argument '%s'" % (op, key))
        values[key] = value
    out = []
    for name, default in zip(names, defaults):
        value = values.get(name, default)
        if value is _MISSING:
            raise TypeError("%s() missing 1 required positional argument: '%s'" % (op, name))
        out.append(value)
    return out


def _real(value, name, op):
    if isinstance(value, Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError("%s(): argument '%s' must be float, not %s" % (op, name, type(value).__name__))
    return float(value)


def _integer(value, name, op):
    if isinstance(value, Tensor) and value.numel() == 1 and value.dtype.name != "bool" \
            and not value.dtype.is_floating_point:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError("%s(): argument '%s' must be int, not %s" % (op, name, type(value).__name__))
    value = int(value)
    if not -2 ** 63 <= value < 2 ** 63:     # torch: ValueError ("Overflow when unpacking long long")
        raise ArgumentError("%s(): argument '%s' must be within int64's range, got %d" % (op, name, value))
    return value


def _floating_only(t, op, error=NotImplementedError):
    if not t.dtype.is_floating_point:
        raise error("%s(): needs a floating point tensor (a continuous distribution), not %s"
                    % (op, t.dtype.name))


def _float64(t):
    """t's values as a float64 numpy array (from any dtype or device)."""
    return t.detach().to("cpu", dtype=_dtype.float64)._data


def _like(values, input):
    """A new tensor of the samples `values`, in input's dtype and on its device."""
    return _wrap(np.asarray(values)).to(input.device, dtype=input.dtype)


def _fill(t, values):
    """Write the samples into t (cast to its dtype), as one recorded in-place copy."""
    values = np.asarray(values)
    if t._data.dtype.kind != "V":           # bfloat16 (stored as V2) is cast by copy_ itself
        with np.errstate(over="ignore"):    # float16 takes a large sample as inf, as torch's cast does
            values = values.astype(t._data.dtype, copy=False)
    return t.copy_(_wrap(values))


# -- in-place samplers ----------------------------------------------------

def uniform_(self, *args, generator=None, **kwargs):
    """U(from, to) samples (torch's uniform_(from=0, to=1))."""
    low, high = _bind("uniform_", args, kwargs, ("from", "to"), (0.0, 1.0))
    low, high = _real(low, "from", "uniform_"), _real(high, "to", "uniform_")
    _floating_only(self, "uniform_")
    rng = _random.numpy_rng(generator, "uniform_")
    limit = _float_limits(self.dtype)[1]
    for name, v in (("from", low), ("to", high)):
        if not math.isfinite(v) or abs(v) > limit:
            raise RuntimeError("uniform_(): %s=%s is out of bounds for %s" % (name, v, self.dtype.name))
    if low > high:
        raise RuntimeError("uniform_ expects to return a [from, to) range, but found from=%g > to=%g"
                           % (low, high))
    if high - low > limit:
        raise RuntimeError("uniform_ expects to-from <= the largest %s, but found to=%g and from=%g"
                           % (self.dtype.name, high, low))
    return _fill(self, rng.uniform(low, high, self._data.shape))


def normal_(self, *args, generator=None, **kwargs):
    mean, std = _bind("normal_", args, kwargs, ("mean", "std"), (0.0, 1.0))
    mean, std = _real(mean, "mean", "normal_"), _real(std, "std", "normal_")
    _floating_only(self, "normal_")
    if not std >= 0:
        raise RuntimeError("normal expects std >= 0.0, but found std %g" % std)
    rng = _random.numpy_rng(generator, "normal_")
    return _fill(self, rng.normal(mean, std, self._data.shape))


def _float_limits(dtype):
    """(binary digits, largest finite value) of a float dtype."""
    if dtype.name == "bfloat16":            # no numpy finfo for it (see cextend._bfloat16)
        return 8, 3.3895313892515355e38
    info = np.finfo(dtype.numpy)
    return info.nmant + 1, float(info.max)


def _dtype_bounds(dtype):
    """The integers `dtype` holds exactly, as torch's random_ bounds them:
    [lowest, highest] of an integer dtype, +-2**digits of a float one."""
    if dtype.name == "bool":
        return 0, 1
    if dtype.is_floating_point:
        digits = _float_limits(dtype)[0]
        return -2 ** digits, 2 ** digits
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def _check_in_range(t, value, what):
    """torch's check_from_to_in_range: an error outside what the dtype can
    hold at all; for a float dtype, a warning outside the integers it holds
    exactly."""
    dtype = t.dtype
    low, high = _dtype_bounds(dtype)
    if dtype.is_floating_point:
        if abs(value) > _float_limits(dtype)[1]:
            raise RuntimeError("random_(): %s is out of bounds for %s" % (what, dtype.name))
        if not low <= value <= high:
            warnings.warn("random_(): %s is out of bounds [-(2^%d), 2^%d]: %s holds every integer only "
                          "within it" % (what, high.bit_length() - 1, high.bit_length() - 1, dtype.name),
                          UserWarning, stacklevel=4)
    elif not low <= value <= high:
        raise RuntimeError("random_(): %s is out of bounds for %s [%d, %d]" % (what, dtype.name, low, high))


def random_(self, *args, generator=None, **kwargs):
    """Integers uniform in [from, to): random_() over the dtype's integers
    ([0, 2**digits] for a float dtype, [0, max] for an integer one),
    random_(to) from 0, random_(from, None) up to that bound."""
    if len(args) > 2:
        raise TypeError("random_() takes from 0 to 2 positional arguments but %d were given" % len(args))
    # torch's three overloads: random_(), random_(to), random_(from, to) where to may be None
    if not args and not kwargs:
        low, high = 0, None
    elif (len(args) == 1 and not kwargs) or (not args and set(kwargs) == {"to"}):
        low, high = 0, _integer(args[0] if args else kwargs["to"], "to", "random_")
    else:
        low, high = _bind("random_", args, kwargs, ("from", "to"), (_MISSING, _MISSING))
        low = _integer(low, "from", "random_")
        high = None if high is None else _integer(high, "to", "random_")
    rng = _random.numpy_rng(generator, "random_")
    if high is not None:
        if low >= high:
            raise RuntimeError("random_ expects 'from' to be less than 'to', but got from=%d >= to=%d"
                               % (low, high))
        _check_in_range(self, low, "from")
        _check_in_range(self, high - 1, "to - 1")
        top = high - 1
    elif low == -2 ** 63:
        # torch's full 64-bit range, which it offers only where int64's range fits the dtype's
        name = self.dtype.name
        if name not in ("int64", "float32", "float64"):
            error = NotImplementedError if name in ("float16", "bool") else RuntimeError
            raise error("random_(from=-2**63, to=None) draws int64's whole range, which only int64, float32 "
                        "and float64 hold, not %s" % name)
        top = 2 ** 63 - 1
    else:
        top = _dtype_bounds(self.dtype)[1]
        _check_in_range(self, low, "from")
        # as torch's: a float dtype needs from < 2**digits (its message says <=), an integer one from <= max
        if low > top or (self.dtype.is_floating_point and low == top):
            raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to_inc' casted to dtype, "
                               "but got from=%d >= to_inc=%d" % (low, top))
    # endpoint=True reaches int64's largest value, which [low, top + 1) cannot name.
    return _fill(self, rng.integers(low, top, self._data.shape, dtype=np.int64, endpoint=True))


def _probability(p, op):
    if isinstance(p, Tensor):
        return p
    p = _real(p, "p", op)
    if not 0 <= p <= 1:
        raise RuntimeError("%s expects p to be in [0, 1], but got p=%g" % (op, p))
    return p


def _tensor_probabilities(p, op):
    """The float64 values of a probability tensor, checked to lie in [0, 1]."""
    if not p.dtype.is_floating_point:
        raise NotImplementedError("%s(): the probability tensor p must be floating point, not %s"
                                  % (op, p.dtype.name))
    values = _float64(p)
    if not np.all((values >= 0) & (values <= 1)):
        raise RuntimeError("%s(): every probability in p must be in [0, 1]" % op)
    return values


def bernoulli_(self, *args, generator=None, **kwargs):
    """1 with probability p, else 0: p a number or a tensor broadcast to self."""
    p, = _bind("bernoulli_", args, kwargs, ("p",), (0.5,))
    p = _probability(p, "bernoulli_")
    rng = _random.numpy_rng(generator, "bernoulli_")
    if isinstance(p, Tensor):
        values = _tensor_probabilities(p, "bernoulli_")
        try:
            fits = values.ndim <= self._data.ndim and \
                np.broadcast_shapes(values.shape, self._data.shape) == self._data.shape
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError("bernoulli_(): p of shape %s cannot be broadcast to self's shape %s"
                               % (list(values.shape), list(self._data.shape)))
        p = values
    return _fill(self, rng.random(self._data.shape) < p)


def exponential_(self, *args, generator=None, **kwargs):
    lambd, = _bind("exponential_", args, kwargs, ("lambd",), (1.0,))
    lambd = _real(lambd, "lambd", "exponential_")
    _floating_only(self, "exponential_", RuntimeError)
    if not lambd > 0:
        raise RuntimeError("exponential_ expects lambda > 0.0, but found lambda=%g" % lambd)
    rng = _random.numpy_rng(generator, "exponential_")
    return _fill(self, rng.standard_exponential(self._data.shape) / lambd)


def geometric_(self, *args, generator=None, **kwargs):
    """The number of Bernoulli(p) trials up to the first success: 1, 2, ..."""
    p, = _bind("geometric_", args, kwargs, ("p",), (_MISSING,))
    p = _real(p, "p", "geometric_")
    if self.dtype.name == "bool":
        raise NotImplementedError("geometric_(): not implemented for bool")
    if not 0 < p < 1:
        raise RuntimeError("geometric_ expects p to be in (0, 1), but got p=%g" % p)
    rng = _random.numpy_rng(generator, "geometric_")
    return _fill(self, rng.geometric(p, self._data.shape))


def cauchy_(self, *args, generator=None, **kwargs):
    median, sigma = _bind("cauchy_", args, kwargs, ("median", "sigma"), (0.0, 1.0))
    median, sigma = _real(median, "median", "cauchy_"), _real(sigma, "sigma", "cauchy_")
    _floating_only(self, "cauchy_", RuntimeError)
    if not sigma > 0:
        raise RuntimeError("cauchy_ expects sigma > 0.0, but found sigma=%g" % sigma)
    rng = _random.numpy_rng(generator, "cauchy_")
    return _fill(self, median + sigma * rng.standard_cauchy(self._data.shape))


def log_normal_(self, *args, generator=None, **kwargs):
    """exp(N(mean, std)) samples."""
    mean, std = _bind("log_normal_", args, kwargs, ("mean", "std"), (1.0, 2.0))
    mean, std = _real(mean, "mean", "log_normal_"), _real(std, "std", "log_normal_")
    _floating_only(self, "log_normal_")
    if not std > 0:
        raise RuntimeError("log_normal_ expects std > 0.0, but found std=%g" % std)
    rng = _random.numpy_rng(generator, "log_normal_")
    return _fill(self, rng.lognormal(mean, std, self._data.shape))


# -- sampling functions ---------------------------------------------------

def _out(result, out, op):
    if out is None:
        return result
    check_out(out, op, differentiable=False)
    return write_out(out, result.cpu()._data, op, cast=True)


def bernoulli(input, *args, generator=None, out=None, **kwargs):
    """1 with each element's probability (input's values, or p), else 0, in input's dtype."""
    if not isinstance(input, Tensor):
        raise TypeError("bernoulli(): argument 'input' must be Tensor, not %s" % type(input).__name__)
    p, = _bind("bernoulli", args, kwargs, ("p",), (None,))
    if p is None:
        probabilities = _tensor_probabilities(input, "bernoulli")
        rng = _random.numpy_rng(generator, "bernoulli")
        result = _like(rng.random(probabilities.shape) < probabilities, input)
        return _out(result, out, "bernoulli")
    result = bernoulli_(input.detach().clone(), p, generator=generator)
    return _out(result, out, "bernoulli")


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """num_samples category indices per row of input (unnormalised probabilities).

    Without replacement it takes the largest p / E, E ~ Exp(1) per
    category: the order in which categories would be drawn one at a time,
    as torch computes it too."""
    if not isinstance(input, Tensor):
        raise TypeError("multinomial(): argument 'input' must be Tensor, not %s" % type(input).__name__)
    num_samples = _integer(num_samples, "num_samples", "multinomial")
    if not isinstance(replacement, (bool, np.bool_)):
        raise TypeError("multinomial(): argument 'replacement' must be bool, not %s" % type(replacement).__name__)
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: %s" % input.dtype.name)
    if input.dim() not in (1, 2):
        raise RuntimeError("multinomial(): prob_dist must be 1 or 2 dim, got %d" % input.dim())
    if num_samples <= 0:
        raise RuntimeError("multinomial(): cannot sample n_sample <= 0 samples (num_samples=%d)" % num_samples)
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("multinomial(): cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement (num_samples=%d, %d categories)" % (num_samples, categories))
    rng = _random.numpy_rng(generator, "multinomial")
    probabilities = _float64(input).reshape(-1, categories)
    if not np.all(np.isfinite(probabilities) & (probabilities >= 0)):
        raise RuntimeError("multinomial(): probability tensor contains either `inf`, `nan` or element < 0")
    totals = probabilities.sum(axis=1, keepdims=True)
    if probabilities.shape[0] and np.any(totals <= 0):
        raise RuntimeError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)")
    rows = probabilities.shape[0]
    if replacement:
        cumulative = np.cumsum(probabilities / totals, axis=1)
        draws = rng.random((rows, num_samples))
        # searchsorted on each row: the first category whose cumulative mass exceeds the draw;
        # a zero-mass category never does, and the clip guards a cumulative sum that rounds below 1.
        indices = np.stack([np.searchsorted(c, d, side="right") for c, d in zip(cumulative, draws)]) \
            if rows else np.empty((0, num_samples), np.int64)
        # rounding may leave the cumulative sum below 1 and a draw past it:
        # that draw takes the last category with mass
        last = categories - 1 - np.argmax(probabilities[:, ::-1] > 0, axis=1) if rows else np.empty(0, np.int64)
        indices = np.minimum(indices, last[:, None])
    else:
        keys = probabilities / rng.standard_exponential((rows, categories))
        indices = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    result = indices.astype(np.int64).reshape(tuple(input.shape[:-1]) + (num_samples,))
    result = _wrap(result)
    if input.device.type != "cpu":
        result = result.to(input.device)
    return _out(result, out, "multinomial")


def poisson(input, generator=None):
    """Poisson(rate) samples, one per element of input (the rates), in input's dtype."""
    if not isinstance(input, Tensor):
        raise TypeError("poisson(): argument 'input' must be Tensor, not %s" % type(input).__name__)
    _floating_only(input, "poisson")
    rates = _float64(input)
    if not np.all(rates >= 0):
        raise RuntimeError("poisson(): invalid Poisson rate, expected rate to be non-negative")
    rng = _random.numpy_rng(generator, "poisson")
    return _like(rng.poisson(rates), input)


# Tensor's sampler methods: torch's arguments (`from` among them, which a
# Python signature cannot name) bound by each function above.
for _method in (uniform_, normal_, random_, bernoulli_, exponential_, geometric_, cauchy_, log_normal_,
                bernoulli, multinomial):
    setattr(Tensor, _method.__name__, _method)
del _method
