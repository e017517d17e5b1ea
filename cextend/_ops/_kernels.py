"""An op's kernels per device, and the one question an op asks about devices.

An nn op's table entry names its kernels as `Kernels(op, cpu=..., cuda=...)`:
each value is a namespace (a module, or a class of static methods) of
array-level functions on that device's arrays.  The op body asks
`KERNELS.on(input=x, weight=w)` (Tensors) or `KERNELS.of(a, b)` (arrays)
for the namespace its operands' device gives; it never tests a device itself.
Operands on two devices, or a device with no kernels, raise naming them.
"""
from cextend._device import DeviceArray


def _device(t):
    return "cuda" if type(t._data) is DeviceArray else "cpu"


class Kernels:
    __slots__ = ("op", "per_device")

    def __init__(self, op, cpu, cuda=None):
        self.op = op
        self.per_device = {"cpu": cpu, "cuda": cuda}

    def on(self, **operands):
        """The kernels for the (non-None) Tensor operands' one device."""
        for t in operands.values():          # all on the host: the common case, no dicts built
            if t is not None and type(t._data) is DeviceArray:
                break
        else:
            kernels = self.per_device["cpu"]
            if kernels is not None:
                return kernels
        devices = {name: _device(t) for name, t in operands.items() if t is not None}
        found = set(devices.values())
        if len(found) > 1:
            raise RuntimeError("%s: expected all operands on one device, got %s" % (
                self.op, ", ".join("%s on %s" % (name, operands[name].device) for name in devices)))
        device = found.pop() if found else "cpu"
        kernels = self.per_device[device]
        if kernels is None:
            name = next(n for n, d in devices.items() if d == device)
            raise RuntimeError("%s has no %s kernel: %s is on %s; move the operands with .cpu()"
                               % (self.op, device.upper(), name, operands[name].device))
        return kernels

    def of(self, *arrays):
        """The kernels for arrays (numpy or device) on one device."""
        if DeviceArray not in map(type, arrays):       # the host: the common case, no set built
            kernels = self.per_device["cpu"]
            if kernels is not None:
                return kernels
        devices = {"cuda" if type(a) is DeviceArray else "cpu" for a in arrays if a is not None}
        if len(devices) > 1:
            raise RuntimeError("%s: expected all operands on one device, got cpu and cuda:0" % self.op)
        kernels = self.per_device[devices.pop() if devices else "cpu"]
        if kernels is None:
            raise RuntimeError("%s has no CUDA kernel; move the operands with .cpu()" % self.op)
        return kernels

    def __repr__(self):
        return "<Kernels of %s: %s>" % (self.op, ", ".join(d for d, k in self.per_device.items() if k))
