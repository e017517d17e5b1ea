"""torch.accelerator: which accelerator this build can use.

cextend's accelerator is CUDA, when its CUDA build sees a GPU; otherwise
there is none, and the answers are those of torch's CPU build.
"""
from cextend import cuda
from cextend.device import device as _device


def is_available():
    return cuda.is_available()


def current_accelerator(check_available=False):
    """device('cuda') when CUDA is usable, else None (torch's CPU build answers None too)."""
    return _device("cuda") if cuda.is_available() else None


def device_count():
    return cuda.device_count() if cuda.is_available() else 0


def _require_accelerator():
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def current_device_index():
    _require_accelerator()
    return 0


current_device_idx = current_device_index


def set_device_index(device):
    _require_accelerator()
    index = device.index if hasattr(device, "index") else device
    if index not in (None, -1, 0):
        raise RuntimeError("set_device_index(%r): cextend uses one device, cuda:0" % (device,))


set_device_idx = set_device_index


def synchronize(device=None):
    _require_accelerator()
    cuda.synchronize()
