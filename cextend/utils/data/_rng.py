"""Where the data utilities' randomness comes from.

cextend has no Generator class: a `generator` argument may be None
(cextend's global generator, seeded by cextend.manual_seed), an int seed,
or a numpy.random.Generator.  Shuffles are reproducible under a seed but
are not torch's permutations.
"""
import numbers

import numpy as np

from cextend import _random


def numpy_generator(generator):
    if generator is None:
        return _random.generator()
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    raise TypeError("generator must be None, an int seed or a numpy.random.Generator (cextend has no "
                    "Generator class), got %s" % type(generator).__name__)
