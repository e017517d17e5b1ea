"""A fixture that gives a test module its own use of cextend's global generator.

Tests that seed or draw from the global generator (nn.Linear's init,
randn, manual_seed) would otherwise change the random numbers every later
test in the session sees.  With `pytestmark =
pytest.mark.usefixtures("keep_global_rng")` the generator (object, state
and recorded seed) is put back after each test.
"""
import pytest

from cextend import _random


@pytest.fixture
def keep_global_rng():
    generator, seed = _random._generator, _random._seed
    state = generator.bit_generator.state
    yield
    generator.bit_generator.state = state
    _random._generator, _random._seed = generator, seed
