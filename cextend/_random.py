"""The global random generator behind randn, rand, uniform_, normal_ ..."""
import numpy as np

# torch's default seed: runs are reproducible even before manual_seed.
_INITIAL_SEED = 67280421310721
_generator = np.random.default_rng(_INITIAL_SEED)
_seed = _INITIAL_SEED


def manual_seed(seed):
    """Seed the global generator; the same seed gives the same tensors."""
    global _generator, _seed
    _seed = int(seed)
    _generator = np.random.default_rng(_seed)
    return _generator


def initial_seed():
    return _seed


def generator():
    return _generator
