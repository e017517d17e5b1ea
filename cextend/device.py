"""Devices.  This build computes on the CPU; cextend.cuda adds GPU tensors
when built with CUDA."""
from cextend import _device


class device:
    """A device name, as torch.device: device('cpu')."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        name, _, number = str(type).partition(":")
        if name not in ("cpu", "cuda"):
            raise RuntimeError("Expected one of cpu, cuda device type at start of device string: %s" % type)
        self.type = name
        self.index = int(number) if number else index

    def __repr__(self):
        return "device(type='%s'%s)" % (self.type, "" if self.index is None else ", index=%d" % self.index)

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index or 0) == (other.type, other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))

    def require_cpu(self, op):
        if self.type != "cpu":
            raise RuntimeError("%s: only CPU tensors are supported here, not %s" % (op, self))

    def require_available(self, op):
        """Raise, saying why, if this device cannot be used."""
        if self.type == "cuda":
            if not _device.available():
                raise RuntimeError("%s: device %s is not available: %s" % (op, self, _device.unavailable_reason()))


CPU = device("cpu")
CUDA = device("cuda", 0)


def as_device(value):
    return value if isinstance(value, device) else device(value)
