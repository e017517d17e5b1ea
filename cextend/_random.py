"""Random number generators: cextend.Generator and the global one behind
randn, rand, uniform_, normal_, dropout, ...

A Generator draws from numpy's PCG64 (np.random.default_rng(seed)), not
torch's Mersenne Twister, so the same seed gives cextend's own numbers, not
torch's; what carries over is the contract: the same seed repeats the same
values, two generators are independent streams, and an op given
generator=g leaves the global stream alone.

The global generator's numpy stream and seed live in the module globals
`_generator` and `_seed` (tests/rng_isolation.py saves and restores them),
which `default_generator` reads and writes.
"""
import contextlib
import numbers
import os

import numpy as np

from cextend import _capture
from cextend._errors import ArgumentError, ArgumentTypeError
from cextend.device import CPU, as_device
from cextend.tensor import Tensor, _wrap

# torch's default seed: runs are reproducible even before manual_seed.
_INITIAL_SEED = 67280421310721
_generator = np.random.default_rng(_INITIAL_SEED)
_seed = _INITIAL_SEED

# get_state()'s byte layout (little-endian): magic, the initial seed, then
# PCG64's state: the 128-bit state and increment, and the buffered 32-bit
# half (numpy hands out the second half of a 64-bit draw on the next 32-bit one).
_MAGIC = b"CXG1"
_STATE_BYTES = len(_MAGIC) + 8 + 16 + 16 + 1 + 4


def _checked_seed(seed, who):
    """seed as torch's C++ uint64: [-2**63, 2**64), a negative one wrapping."""
    if not -2 ** 63 <= seed < 2 ** 64:      # torch: ValueError (a C++ int64 or uint64)
        raise ArgumentError("%s: seed must be in [-2**63, 2**64), got %d" % (who, seed))
    return seed % 2 ** 64


class Generator:
    """torch.Generator: an independent stream of random numbers.

    Pass it as generator= to a factory or sampler; manual_seed(s) makes it
    repeat the same stream.  Only CPU generators exist (see module docstring)."""

    def __init__(self, device="cpu"):
        dev = as_device(device)
        if dev.type != "cpu":
            # cextend's samplers draw on the host and copy, so a device
            # generator would have no stream of its own to hold.
            raise RuntimeError("Generator(device='%s'): cextend has CPU generators only; create "
                               "Generator('cpu') (factories with device='cuda' accept it)" % dev)
        self._device = dev
        self._set_stream(np.random.default_rng(_INITIAL_SEED), _INITIAL_SEED)

    # The stream and seed, behind two hooks so default_generator can keep
    # them in the module globals.
    def _stream(self):
        if _capture._active is not None:
            _capture.refuse("the step draws random numbers")
        return self._rng

    def _set_stream(self, rng, seed):
        if _capture._active is not None:
            _capture.refuse("the step reseeds a generator")
        self._rng, self._seed = rng, seed

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        """Seed this generator; returns it, so Generator().manual_seed(0) chains."""
        if isinstance(seed, np.integer):
            seed = int(seed)
        if not isinstance(seed, numbers.Integral):
            # torch: RuntimeError ("manual_seed expected a long")
            raise ArgumentTypeError("manual_seed(): argument 'seed' must be int, not %s" % type(seed).__name__)
        seed = _checked_seed(int(seed), "manual_seed()")
        self._set_stream(np.random.default_rng(seed), seed)
        return self

    def seed(self):
        """Seed from the operating system's entropy; returns the seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self._set_stream(np.random.default_rng(seed), seed)
        return seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The state as a uint8 Tensor (cextend's layout, not torch's 5056 bytes)."""
        return _wrap(np.frombuffer(_state_bytes(self._stream(), self.initial_seed()), np.uint8).copy())

    def set_state(self, new_state):
        """Restore a state from get_state() (this or another CPU generator's)."""
        seed, bit_state = _parse_state(new_state)
        rng = np.random.Generator(np.random.PCG64(0))     # its state is replaced at once
        rng.bit_generator.state = bit_state
        self._set_stream(rng, seed)
        return self

    def __reduce__(self):
        # deepcopy and pickle give a generator at the same point of the stream.
        return (_restored, (bytes(_state_bytes(self._stream(), self.initial_seed())),))

    def __repr__(self):
        return "<cextend.Generator object at %#x>" % id(self)


def _restored(state):
    return Generator().set_state(_wrap(np.frombuffer(state, np.uint8).copy()))


class _DefaultGenerator(Generator):
    """The global generator; its stream is the module's _generator."""

    def __init__(self):
        self._device = CPU

    def _stream(self):
        if _capture._active is not None:
            _capture.refuse("the step draws random numbers")
        return _generator

    def _set_stream(self, rng, seed):
        global _generator, _seed
        if _capture._active is not None:
            _capture.refuse("the step reseeds a generator")
        _generator, _seed = rng, seed

    def initial_seed(self):
        return _seed


def _state_bytes(rng, seed):
    bit = rng.bit_generator
    if type(bit) is not np.random.PCG64:
        raise RuntimeError("get_state(): cextend generators hold a PCG64 stream, not %s" % type(bit).__name__)
    state = bit.state
    return (_MAGIC + seed.to_bytes(8, "little")
            + state["state"]["state"].to_bytes(16, "little") + state["state"]["inc"].to_bytes(16, "little")
            + bytes([state["has_uint32"]]) + int(state["uinteger"]).to_bytes(4, "little"))


def _parse_state(new_state):
    if not isinstance(new_state, Tensor):
        raise TypeError("set_state(): new_state must be a uint8 Tensor (from get_state()), not %s"
                        % type(new_state).__name__)
    if new_state.dtype.name != "uint8":
        raise TypeError("set_state(): new_state must be a uint8 Tensor (from get_state()), not %s"
                        % new_state.dtype.name)
    data = new_state.detach().cpu()._data.reshape(-1).tobytes()
    if len(data) != _STATE_BYTES:
        raise RuntimeError("set_state(): expected a state of %d bytes (cextend's layout, from get_state()), "
                           "got %d" % (_STATE_BYTES, len(data)))
    if not data.startswith(_MAGIC):
        raise RuntimeError("set_state(): new_state is not a cextend generator state (it does not start "
                           "with %r)" % _MAGIC)
    at = len(_MAGIC)
    seed = int.from_bytes(data[at:at + 8], "little")
    state = int.from_bytes(data[at + 8:at + 24], "little")
    inc = int.from_bytes(data[at + 24:at + 40], "little")
    has_uint32, uinteger = data[at + 40], int.from_bytes(data[at + 41:], "little")
    # PCG64's increment is odd by construction: an even one is a corrupted state.
    if inc % 2 == 0 or has_uint32 > 1:
        raise RuntimeError("set_state(): new_state is corrupted (not a state get_state() returns)")
    return seed, {"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
                  "has_uint32": has_uint32, "uinteger": uinteger}


default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seed the global generator; the same seed gives the same tensors.
    Returns the global generator, as torch's does."""
    seed = _checked_seed(int(seed), "manual_seed()")   # torch.manual_seed takes int(seed)
    default_generator._set_stream(np.random.default_rng(seed), seed)
    return default_generator


def seed():
    """Seed the global generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed():
    return _seed


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Run the block on the global generator and put its state back after."""
    if not enabled:
        yield
        return
    if devices:
        raise RuntimeError("%s(%s=%r): cextend has no device generators to fork; only the CPU state is "
                           "saved and restored" % (_caller, _devices_kw, list(devices)))
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def generator():
    """The global stream, a numpy Generator (what internal draws use)."""
    if _capture._active is not None:
        _capture.refuse("the step draws random numbers")
    return _generator


def uniform_draws(shape):
    """float64 draws in [0, 1) of shape from the global stream (dropout's masks).  A captured
    step replays the draw from the global stream as it is then, as an eager step would."""
    draws = _generator.random(shape)
    if _capture._active is not None:
        _capture.kernel(_redraw, (draws,), (), (draws,), _capture.no_check)
    return draws


def _redraw(out):
    _generator.random(out=out)      # the same stream position and values as random(shape)


def numpy_rng(generator, op):
    """The numpy stream behind an op's generator= argument: the global one
    for None; a cextend.Generator's, or a numpy Generator as it is (an older
    spelling cextend keeps).  TypeError for anything else, as torch's."""
    if _capture._active is not None:
        _capture.refuse("the step draws random numbers")
    if generator is None:
        return _generator
    if isinstance(generator, Generator):
        return generator._stream()
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError("%s(): argument 'generator' must be cextend.Generator (or a numpy.random.Generator), "
                    "not %s" % (op, type(generator).__name__))
