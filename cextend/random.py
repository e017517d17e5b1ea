"""torch.random: the global generator's seed and state, and fork_rng."""
from cextend._random import (default_generator, fork_rng, get_rng_state, initial_seed, manual_seed, seed,  # noqa: F401
                             set_rng_state)

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]
