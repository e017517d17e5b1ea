"""The global random generator behind randn, rand, uniform_, normal_ ..."""
import numpy as np

from cextend._errors import ArgumentError

# torch's default seed: runs are reproducible even before manual_seed.
_INITIAL_SEED = 67280421310721
_generator = np.random.default_rng(_INITIAL_SEED)
_seed = _INITIAL_SEED


def manual_seed(seed):
    """Seed the global generator; the same seed gives the same tensors."""
    global _generator, _seed
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:      # torch: ValueError (a C++ int64 or uint64)
        raise ArgumentError("manual_seed(): seed must be in [-2**63, 2**64), got %d" % seed)
    _seed = seed % 2 ** 64                  # a negative seed wraps, as torch's does
    _generator = np.random.default_rng(_seed)
    return _generator


def initial_seed():
    return _seed


def generator():
    return _generator
