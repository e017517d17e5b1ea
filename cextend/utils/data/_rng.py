"""Where the data utilities' randomness comes from.

A `generator` argument may be None (cextend's global generator, seeded by
cextend.manual_seed), a cextend.Generator (as torch's), and, as cextend
took before it had a Generator class, an int seed or a
numpy.random.Generator.  Shuffles are reproducible under a seed but are not
torch's permutations.
"""
import numbers

import numpy as np

from cextend import _random


def numpy_generator(generator):
    """The numpy stream to draw from now.  A cextend.Generator is read at
    each call, not kept: its manual_seed replaces the stream behind it."""
    if generator is None or isinstance(generator, (_random.Generator, np.random.Generator)):
        return _random.numpy_rng(generator, "generator")
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    raise TypeError("generator must be None, an int seed or a numpy.random.Generator, or a cextend.Generator; "
                    "got %s" % type(generator).__name__)


def sampler_stream(generator):
    """What a sampler keeps for its epochs: None to read the generator at
    each epoch (the global one, a cextend.Generator), or the numpy stream of
    an int seed or numpy Generator, whose epochs continue one stream."""
    if generator is None or isinstance(generator, _random.Generator):
        numpy_generator(generator)      # checks it
        return None
    return numpy_generator(generator)
